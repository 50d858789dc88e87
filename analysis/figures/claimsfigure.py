"""The claims figure of the dashboard: the sealed claims and their verdicts
as a table figure, marked unsealed when the seal is broken
(:func:`analysis.reading.claimverdicts.claim_verdicts` judges them)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import plotly.graph_objects as go

if TYPE_CHECKING:                 # the annotations' pandas; the figure itself needs none
    import pandas as pd

from ..reading.claimverdicts import claim_verdicts, claim_verdict_tables
from .figurekit import TABLE_MARGIN, empty_figure, table_height

__all__ = ["claims_figure"]


def claims_figure(run_dir: str | Path, df: pd.DataFrame, specs=(), results=(), fig_id: str = "claims"):
    """The claims and their verdicts as a table figure (the dashboard's), or
    an empty figure saying that no claims are sealed."""
    led = claim_verdicts(run_dir, df, specs, results)
    if led is None:
        return empty_figure(fig_id, "no claims are sealed into this run directory (seedsweep run --claims FILE, "
                                    "or seedsweep claims seal FILE DIR)")
    tables = dict(claim_verdict_tables(led))
    warning = ("<b style='color:#b00020'>THE SEAL IS BROKEN: these verdicts are unsealed.</b> "
               + " ".join(led.problems) + "<br>") if not led.sealed else ""
    meta = {"id": fig_id, "outcome": led.outcome, "sealed": led.sealed, "problems": led.problems,
            "verdicts": {r.claim.id: r.verdict.verdict for r in led.results}}
    if "claims and verdicts" not in tables:
        fig = empty_figure(fig_id, "THE SEAL IS BROKEN: " + " ".join(led.problems))
        fig.update_layout(meta={**fig.layout.meta, **meta})
        return fig
    table = tables["claims and verdicts"]
    columns = [list(col) for col in zip(*table.rows)] if table.rows else [[] for _ in table.header]
    colors = {"reproduced": "#d8f0d8", "not reproduced": "#f6d5d5", "inconclusive": "#f3ecd0"}
    fill = [[colors.get(v, "white") if led.sealed else "#eeeeee" for v in columns[6]]] * len(table.header)
    fig = go.Figure(go.Table(header={"values": table.header}, cells={"values": columns, "fill_color": fill,
                                                                     "align": "left"},
                             columnwidth=[1.2, 0.6, 0.8, 1.3, 0.8, 1.6, 1.0, 0.5, 4.0]))
    fig.update_layout(title=f"{warning}{led.claims.source}: {led.outcome}<br><sup>{table.notes[1]}</sup>",
                      height=table_height(len(table.rows)) + 40 * len(table.rows) + (60 if warning else 0),
                      margin=TABLE_MARGIN, meta=meta)
    return fig
