"""The robustness figure: per phenomenon, every model's p′ beside its test
accuracy p, one box per population and option (:func:`analysis.stats.robustness.robustness`
computes the populations)."""

from __future__ import annotations

from ..stats.robustness import Robustness
from .figurekit import axes_grid, empty_figure, fast_figure, option_color

__all__ = ["robustness_figure"]


def robustness_figure(rob: Robustness, fig_id: str = "robustness"):
    """Per phenomenon, every model's p′ as a point (and p, the test accuracy, as the first
    panel), one box per population and option; options coloured as in every figure."""
    if not rob.rows:
        return empty_figure(fig_id, "robustness: no evaluation-set scores (evaluate: in the study file)")
    panels = ["test accuracy (p)"] + [f"{p} (p′)" for p in rob.phenomena]
    layout, notes, ref = axes_grid(1, len(panels), panels, hspace=0.04)
    options = list(dict.fromkeys(r.option for r in rob.rows))
    data = []
    for k, phenomenon in enumerate([None] + rob.phenomena):
        x, y = ref(1, k + 1)
        for option in options:
            mine = [r for r in rob.rows if r.option == option and r.phenomenon == (phenomenon or rob.phenomena[0])]
            values = [v for r in mine for v in (r.p if phenomenon is None else r.p_prime)]
            groups = [r.group for r in mine for _ in range(r.n)]
            data.append({"type": "box", "x": groups, "y": [float(v) for v in values], "name": option,
                         "legendgroup": option, "showlegend": k == 0, "boxpoints": "all", "jitter": 0.4,
                         "pointpos": 0, "marker": {"color": option_color(options, option), "size": 4},
                         "line": {"width": 1}, "xaxis": x, "yaxis": y, "meta": {"phenomenon": phenomenon or "test",
                                                                                "option": option}})
        layout["yaxis" + y[1:]].update({"range": [0, 1.02], "showticklabels": k == 0})
        layout["xaxis" + x[1:]].update({"tickangle": 30})
    layout.update({"boxmode": "group", "annotations": notes, "height": 480, "meta": {"id": fig_id, "tau": rob.tau},
                   "title": {"text": f"robustness of {rob.choice}: every model's accuracy (points), per population"},
                   "margin": {"t": 90, "b": 120}})
    return fast_figure(data, layout)
