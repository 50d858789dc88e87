"""The ``sequence-<choice>`` figure of an adaptive study: each tracked
confidence sequence narrowing against the configurations counted, with the
centre (½ for win shares, 0 for differences) and the equivalence margin."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..reading.rundirs import StudyDecisions
from .figurekit import COLORS, empty_figure

__all__ = ["sequence_figure"]


def sequence_figure(decided: StudyDecisions | None, choice: str | None, fig_id: str = "sequence") -> go.Figure:
    """One band per (pair, task) of ``choice``: the interval after each
    configuration; the title gives each decision and where it was reached."""
    if decided is None:
        return empty_figure(fig_id, "not an adaptive study (no until: in its study file)")
    rows = [t for t in decided.tracked if t.choice == choice]
    if not rows:
        return empty_figure(fig_id, f"{choice}: no tracked sequence (until.decide names other choices)")
    fig = go.Figure()
    meta = []
    for i, t in enumerate(rows):
        color = COLORS[i % len(COLORS)]
        x = np.arange(1, t.n + 1)
        lo = np.where(np.isfinite(t.sequence.lower), t.sequence.lower, np.nan)
        hi = np.where(np.isfinite(t.sequence.upper), t.sequence.upper, np.nan)
        name = f"{t.a} vs {t.b}, {t.task}: {t.decision}" + (f" at {t.decided_at}" if t.decided_at else "")
        fig.add_trace(go.Scatter(x=x, y=hi, mode="lines", line={"color": color, "width": 1}, name=name,
                                 legendgroup=name, showlegend=False, hovertemplate="upper %{y:.4f} at %{x}"))
        fig.add_trace(go.Scatter(x=x, y=lo, mode="lines", line={"color": color, "width": 1}, name=name,
                                 legendgroup=name, fill="tonexty", hovertemplate="lower %{y:.4f} at %{x}"))
        meta.append({"a": t.a, "b": t.b, "task": t.task, "n": t.n, "decision": t.decision,
                     "decided_at": t.decided_at, "lower": [float(v) for v in t.sequence.lower],
                     "upper": [float(v) for v in t.sequence.upper]})
    centre, delta = rows[0].centre, rows[0].delta
    for y, dash in ((centre, "solid"), (centre - delta, "dot"), (centre + delta, "dot")):
        fig.add_hline(y=y, line={"color": "#555", "dash": dash, "width": 1})
    scale = "win share of A" if decided.until.statistic == "share" else "mean difference A − B"
    fig.update_layout(title=f"{choice}: the confidence sequences ({decided.until.method}, {scale}) against "
                      f"configurations", xaxis_title="configurations counted", yaxis_title=scale, height=420,
                      meta={"id": fig_id, "choice": choice, "sequences": meta})
    return fig
