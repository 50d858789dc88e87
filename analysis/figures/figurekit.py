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


def fast_figure(data: list[dict], layout: dict) -> go.Figure:
    """A figure from plain trace and layout dicts, without plotly's per-value
    validation (the large figures of the R&G report spend seconds in it); the
    dicts must be valid plotly JSON, which the browser tests check."""
    return go.Figure(data=data, layout=layout, _validate=False)


def axes_grid(rows: int, cols: int, titles: list[str], *, hspace: float = 0.08, vspace: float = 0.1
              ) -> tuple[dict, list[dict], callable]:
    """Layout axes for a rows × cols grid of subplots (row-major titles),
    their title annotations and ``ref(r, c) -> ("x3", "y3")`` (1-based)."""
    width = (1 - hspace * (cols - 1)) / cols
    height = (1 - vspace * (rows - 1)) / rows
    layout: dict = {}
    notes = []

    def ref(r: int, c: int) -> tuple[str, str]:
        i = (r - 1) * cols + c
        return ("x" if i == 1 else f"x{i}"), ("y" if i == 1 else f"y{i}")

    for r in range(1, rows + 1):
        for c in range(1, cols + 1):
            x, y = ref(r, c)
            x0 = (c - 1) * (width + hspace)
            y1 = 1 - (r - 1) * (height + vspace)
            clip = lambda v: min(1.0, max(0.0, round(v, 6)))  # noqa: E731
            layout["xaxis" + x[1:]] = {"domain": [clip(x0), clip(x0 + width)], "anchor": y}
            layout["yaxis" + y[1:]] = {"domain": [clip(y1 - height), clip(y1)], "anchor": x}
            k = (r - 1) * cols + c - 1
            if k < len(titles):
                notes.append({"text": titles[k], "x": x0 + width / 2, "y": y1, "xref": "paper", "yref": "paper",
                              "xanchor": "center", "yanchor": "bottom", "showarrow": False, "font": {"size": 14}})
    return layout, notes, ref
