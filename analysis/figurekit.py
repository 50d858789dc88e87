"""What every figure shares: option colours, the empty state, table sizes."""

from __future__ import annotations

import plotly.graph_objects as go

__all__ = ["COLORS", "TABLE_MARGIN", "option_color", "empty_figure", "table_height"]

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
          "#17becf")

def option_color(options: list[str], option: str) -> str:
    """An option's colour: the same in every figure of a comparison."""
    return COLORS[options.index(option) % len(COLORS)]


def empty_figure(fig_id: str, message: str) -> go.Figure:
    """A figure that says why it has nothing to show (its id still present)."""
    fig = go.Figure()
    fig.update_layout(title=message, meta={"id": fig_id, "empty": True}, height=200,
                      xaxis={"visible": False}, yaxis={"visible": False})
    return fig


TABLE_MARGIN = {"t": 90, "b": 20, "l": 40, "r": 40}


def table_height(rows: int) -> int:
    """Title, header (two lines at most) and rows of a go.Table figure."""
    return 90 + 20 + 60 + 30 * rows
