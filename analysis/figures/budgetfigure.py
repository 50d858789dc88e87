"""The ``budget-<choice>`` figure of a tuned study: per option the median and
IQR over replicates of the tuned outcome (the best-dev trial's test score so
far) against the budget b, with the one-search estimate of Dodge et al.
dashed beside it, and below, each option's win share over paired replicates
at every b (its ``meta`` also holds the median Δ to the best and P(best >
option) at every b)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..stats.tuned import TunedComparison
from .figurekit import COLORS, empty_figure

__all__ = ["budget_figure"]


def _finite(values) -> list[float | None]:
    return [float(v) if np.isfinite(v) else None for v in values]


def budget_figure(tc: TunedComparison | None, fig_id: str = "budget") -> go.Figure:
    """The figure (see the module docstring); ``meta`` holds every plotted number."""
    if tc is None:
        return empty_figure(fig_id, "not a tuned study (no tune: in its study file)")
    b = np.arange(1, tc.budget + 1)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.68, 0.32], vertical_spacing=0.06)
    meta = {"id": fig_id, "choice": tc.choice, "budget": tc.budget, "sampler": tc.sampler, "median": {},
            "q25": {}, "q75": {}, "expected": {}, "shares": {},
            "best": tc.full.best, "delta": {}, "p_better": {}}
    for i, option in enumerate(tc.options):
        color = COLORS[i % len(COLORS)]
        mine = tc.outcomes.index.get_level_values("option") == option
        runs = tc.outcomes[mine].to_numpy(dtype=float)
        have = np.isfinite(runs).any(axis=0) if len(runs) else np.zeros(len(b), bool)
        with np.errstate(all="ignore"):
            q = np.full((3, len(b)), np.nan)
            if have.any():
                q[:, have] = np.nanquantile(runs[:, have], [0.25, 0.5, 0.75], axis=0)
        meta["median"][option], meta["q25"][option], meta["q75"][option] = (_finite(q[1]), _finite(q[0]),
                                                                            _finite(q[2]))
        fig.add_trace(go.Scatter(x=b, y=q[2], mode="lines", line={"width": 0, "color": color}, showlegend=False,
                                 legendgroup=option, hoverinfo="skip"), row=1, col=1)
        fig.add_trace(go.Scatter(x=b, y=q[0], mode="lines", line={"width": 0, "color": color}, fill="tonexty",
                                 opacity=0.25, showlegend=False, legendgroup=option, hoverinfo="skip"), row=1, col=1)
        fig.add_trace(go.Scatter(x=b, y=q[1], mode="lines+markers", line={"color": color}, name=option,
                                 legendgroup=option, hovertemplate=f"{option}: median %{{y:.4f}} at b = %{{x}}"),
                      row=1, col=1)
        if option in tc.expected:
            meta["expected"][option] = _finite(tc.expected[option])
            fig.add_trace(go.Scatter(x=b, y=tc.expected[option], mode="lines", line={"color": color, "dash": "dash"},
                                     name=f"{option}: one-search estimate", legendgroup=option,
                                     hovertemplate=f"{option}: E[max] %{{y:.4f}} at b = %{{x}}"), row=1, col=1)
        share = tc.shares[option].to_numpy(dtype=float)
        meta["shares"][option] = _finite(share)
        meta["delta"][option] = _finite(tc.delta[option].to_numpy(dtype=float))
        meta["p_better"][option] = _finite(tc.p_better[option].to_numpy(dtype=float))
        fig.add_trace(go.Scatter(x=b, y=share, mode="lines", line={"color": color}, showlegend=False,
                                 legendgroup=option, hovertemplate=f"{option}: win share %{{y:.2f}} at b = %{{x}}"),
                      row=2, col=1)
    fig.update_xaxes(type="log", row=1, col=1)
    fig.update_xaxes(type="log", title_text="budget b (trials per search)", row=2, col=1)
    fig.update_yaxes(title_text="tuned test score (median, IQR)", row=1, col=1)
    fig.update_yaxes(title_text="win share", range=[0, 1], row=2, col=1)
    c = tc.full                 # the tuned table's headline, so that the live dashboard shows it too
    at_full = "; ".join(f"{o} − {c.best}: Δ {100 * c.delta[o]:+.2f} pts [{100 * c.delta_ci[o][0]:+.2f}, "
                        f"{100 * c.delta_ci[o][1]:+.2f}], P({c.best} > {o}) {tc.improvement[o].p:.2f}"
                        for o in tc.options if o != c.best and o in c.delta and o in tc.improvement)
    fig.update_layout(title=f"{tc.choice}: tuned outcome against the budget ({tc.sampler}, "
                      f"{tc.outcomes.index.get_level_values('replicate').nunique()} replicates per option)"
                      + (f"<br><sub>at b = {tc.budget}, {c.n} paired replicates: {at_full}</sub>" if at_full else ""),
                      height=580, meta=meta)
    return fig
