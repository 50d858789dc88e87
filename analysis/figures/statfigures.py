"""The figures of :mod:`analysis.stats.insights`: which choices matter, how much
tuning each option needs, whether one option dominates another.

* ``evp`` -- expected test score of the best-dev run against the number of
  configurations tried (log axis), per option with its ±1 sd band, tasks
  side by side;
* ``importance`` -- fANOVA importance of every hyperparameter per task,
  sorted bars (the subsample's size in the title when there is one);
* ``dominance`` -- per task, two heatmaps with the values in the cells:
  ASO ε_min of "row dominates column" (corrected confidence) and
  P(row > column) with its CI;
* ``parallel`` -- parallel coordinates of the paired configurations, one
  line per (configuration, option), the compared choice's axis first,
  coloured by the mean score over seeds or by the configuration's winning
  option.

Every number plotted is in the figure's ``layout.meta`` as well, as the
other figures do, so tests and users can read it back.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..stats.importance import Importance
from ..stats.insights import ChoiceStats
from .figurekit import axes_grid, empty_figure, fast_figure, option_color

__all__ = ["evp_figure", "importance_figure", "dominance_figure", "parallel_figure", "STAT_FIGURE_IDS",
           "PARALLEL_COLORS"]

STAT_FIGURE_IDS = ("evp", "importance", "dominance", "parallel")
PARALLEL_COLORS = ("score", "winner")


def _band_color(hex_color: str, alpha: float = 0.18) -> str:
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def evp_figure(stats: ChoiceStats, fig_id: str = "evp") -> go.Figure:
    """Expected validation performance per task and option, with its ±1 sd band."""
    spec = stats.spec
    if not stats.evp:
        return empty_figure(fig_id, f"{spec.name}: expected validation performance needs finished runs with a "
                                    "dev and a test score")
    tasks = list(stats.evp)
    options = list(spec.options or dict.fromkeys(c.option for cs in stats.evp.values() for c in cs))
    axes, notes, ref = axes_grid(1, len(tasks), [t or "(all)" for t in tasks],
                                 hspace=min(0.08, 0.4 / len(tasks)))
    data: list[dict] = []
    meta: dict[str, dict] = {}
    for col, task in enumerate(tasks, 1):
        x_ref, y_ref = ref(1, col)
        for c in stats.evp[task]:
            color = option_color(options, c.option) if c.option in options else "#444"
            x = c.n.astype(float)
            lo, hi = c.mean - c.sd, c.mean + c.sd
            data.append({"type": "scatter", "x": np.concatenate([x, x[::-1]]), "y": np.concatenate([hi, lo[::-1]]),
                         "mode": "lines", "fill": "toself", "fillcolor": _band_color(color), "line": {"width": 0},
                         "hoverinfo": "skip", "showlegend": False, "legendgroup": c.option,
                         "meta": {"band": c.option, "task": task}, "xaxis": x_ref, "yaxis": y_ref})
            data.append({"type": "scatter", "x": x, "y": c.mean, "mode": "lines", "name": c.option,
                         "legendgroup": c.option, "showlegend": col == 1, "line": {"color": color},
                         "meta": {"option": c.option, "task": task, "N": c.N}, "xaxis": x_ref, "yaxis": y_ref,
                         "hovertemplate": f"{c.option}: best-dev run of %{{x}} → test %{{y:.4f}}<extra>{task}</extra>"})
            meta.setdefault(task, {})[c.option] = {"N": c.N}
        axes["xaxis" + x_ref[1:]].update(type="log", title={"text": "configurations tried"})
    axes["yaxis"]["title"] = {"text": "test score of the best-dev run"}
    layout = {**axes, "annotations": notes, "height": 420, "meta": {"id": fig_id, "choice": spec.choice, "evp": meta},
              "title": {"text": f"{spec.name}: expected validation performance<br><sup>expected test score of the "
                                "run with the best dev score among n drawn (without replacement), ±1 sd; "
                                "n = 1: the mean</sup>"}}
    return fast_figure(data, layout)


def importance_figure(by_task: dict[str, Importance | str], name: str, fig_id: str = "importance") -> go.Figure:
    """fANOVA importance of every varying hyperparameter, per task, largest first."""
    done = {t: r for t, r in by_task.items() if isinstance(r, Importance)}
    if not done:
        why = next(iter(by_task.values()), "no finished trials yet") if by_task else "no finished trials yet"
        return empty_figure(fig_id, f"{name}: hyperparameter importance: {why}")
    tasks = list(done)
    axes, notes, ref = axes_grid(1, len(tasks), [t or "(all)" for t in tasks], hspace=min(0.12, 0.5 / len(tasks)))
    longest = max(len(r.importance) for r in done.values())
    data = []
    for col, task in enumerate(tasks, 1):
        x_ref, y_ref = ref(1, col)
        items = sorted(done[task].importance.items(), key=lambda kv: (kv[1], kv[0]))   # tallest on top
        data.append({"type": "bar", "x": [v for _, v in items], "y": [k for k, _ in items], "orientation": "h",
                     "name": task, "showlegend": False, "marker": {"color": "#1f77b4"},
                     "text": [f"{v:.1%}" for _, v in items], "textposition": "outside", "meta": {"task": task},
                     "hovertemplate": "%{y}: %{x:.1%}<extra>" + task + "</extra>", "xaxis": x_ref, "yaxis": y_ref})
        axes["xaxis" + x_ref[1:]].update(range=[0, 1.15], tickformat=".0%")
        axes["yaxis" + y_ref[1:]].update(type="category", automargin=True)
    sub = [f"{t or 'all'}: {r.used} of {r.finished} finished rows" for t, r in done.items() if r.subsampled]
    note = ("fANOVA main effects of a 32-tree random forest; subsample: " + "; ".join(sub)) if sub else \
        "fANOVA main effects of a 32-tree random forest on every finished row"
    skipped = {t: r for t, r in by_task.items() if not isinstance(r, Importance)}
    if skipped:
        note += "; no importance for " + ", ".join(f"{t} ({r})" for t, r in skipped.items())
    layout = {**axes, "annotations": notes, "height": max(360, 120 + 22 * longest),
              "title": {"text": f"{name}: which hyperparameters matter<br><sup>{note}</sup>"},
              "meta": {"id": fig_id, "importance": {t: r.importance for t, r in done.items()},
                       "rows": {t: [r.used, r.finished] for t, r in done.items()}}}
    return fast_figure(data, layout)


def _cells(matrix, fmt) -> list[list[str]]:
    return [["" if v is None else fmt(v) for v in row] for row in matrix]


def dominance_figure(stats: ChoiceStats, fig_id: str = "dominance") -> go.Figure:
    """Per task, heatmaps of ASO ε_min and of P(row > column) between every two options."""
    spec = stats.spec
    done = {t: d for t, d in stats.dominance.items() if d is not None}
    if not done:
        return empty_figure(fig_id, f"{spec.name}: dominance needs two options with at least two paired "
                                    "configurations")
    tasks = list(done)
    titles = []
    for t in tasks:
        titles += [f"{t or 'all'}: ε_min(row ≻ column)", f"{t or 'all'}: P(row > column)"]
    vspace = min(0.12, 0.5 / len(tasks))
    axes, notes, ref = axes_grid(len(tasks), 2, titles, hspace=0.18, vspace=vspace)
    data = []
    meta = {}
    for r, task in enumerate(tasks, 1):
        d = done[task]
        eps = d.matrix("eps_min")
        p = d.matrix("p")
        ci = {(x.a, x.b): x.p_ci for x in d.pairs}
        p_text = [["" if a == b else f"{p[i][j]:.2f}<br>[{ci[(a, b)][0]:.2f}, {ci[(a, b)][1]:.2f}]"
                   for j, b in enumerate(d.options)] for i, a in enumerate(d.options)]
        for col, (z, text, stat, scale, bar) in enumerate(
                ((eps, _cells(eps, "{:.3f}".format), "eps_min", "RdBu", {"title": {"text": "ε_min"}, "x": 0.41}),
                 (p, p_text, "p", "RdBu_r", {"title": {"text": "P"}})), 1):
            x_ref, y_ref = ref(r, col)
            data.append({"type": "heatmap", "z": z, "x": d.options, "y": d.options, "zmin": 0, "zmax": 1,
                         "colorscale": scale, "text": text, "texttemplate": "%{text}", "showscale": r == 1,
                         "colorbar": {**bar, "len": 0.4, "y": 1, "yanchor": "top"},
                         "meta": {"task": task, "stat": stat}, "xaxis": x_ref, "yaxis": y_ref,
                         "hovertemplate": ("ε_min(%{y} ≻ %{x}) = %{z:.3f}" if stat == "eps_min"
                                           else "P(%{y} > %{x}) = %{z:.3f}") + "<extra>" + task + "</extra>"})
            axes["yaxis" + y_ref[1:]].update(autorange="reversed", type="category")
            axes["xaxis" + x_ref[1:]].update(type="category")
        meta[task] = {"options": d.options, "eps_min": eps, "p": p, "n": d.n}
    first = next(iter(done.values()))
    layout = {**axes, "annotations": notes, "height": max(380, 80 + 330 * len(tasks)),
              "meta": {"id": fig_id, "choice": spec.choice, "dominance": meta},
              "title": {"text": f"{spec.name}: does one option dominate another?<br><sup>ASO ε_min at "
                                f"{100 * first.level:.3g}% (Bonferroni over the ordered pairs; ε_min < {first.tau:g}: "
                                f"the row dominates) and paired P(row > column) with its {100 * first.confidence:g}% "
                                "CI, on the configurations' mean scores</sup>"}}
    return fast_figure(data, layout)


def _dimension(label: str, values: pd.Series, first: list[str] | None = None) -> dict:
    """A parcoords axis: numbers as they are, anything else (and numbers a
    ``when`` condition left unset somewhere) as labelled level codes."""
    numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
    if numeric and not values.isna().any():
        return {"label": label, "values": values.to_numpy(dtype=float)}
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    names = [f"{v:.4g}" if numeric else str(v) for v in uniques] + ["(not set)"]     # code −1: the last
    present = sorted(set(codes.tolist()))
    if first:
        rank = {o: i for i, o in enumerate(first)}
        order = sorted(present, key=lambda c: (rank.get(names[c], len(rank)), names[c]))
    else:
        order = sorted(present, key=lambda c: (c == -1, _as_number(names[c]) is None,
                                               _as_number(names[c]) or 0.0, names[c]))
    position = np.zeros(len(names), dtype=np.int32)           # level codes travel as small integers
    position[np.array(order)] = np.arange(len(order))           # code −1 indexes the last slot
    levels = [names[c] for c in order]
    return {"label": label, "values": position[codes], "tickvals": list(range(len(levels))),
            "ticktext": levels, "range": [-0.5, len(levels) - 0.5] if len(levels) > 1 else [-1, 1]}


def _as_number(s: str) -> float | None:
    try:
        return float(s)
    except ValueError:
        return None


def parallel_figure(stats: ChoiceStats, color: str = "score", fig_id: str = "parallel") -> go.Figure:
    """One parcoords trace (each is a WebGL canvas, and a browser keeps only
    about 16 alive, so tasks are an axis rather than traces of their own)."""
    spec = stats.spec
    if color not in PARALLEL_COLORS:
        raise ValueError(f"color must be one of {PARALLEL_COLORS}, got {color!r}")
    tables = {t: f for t, f in stats.parallel.items() if len(f)}
    if not tables:
        return empty_figure(fig_id, f"{spec.name}: no paired configurations yet")
    tasks = list(tables)
    f = pd.concat([t.assign(task=task) for task, t in tables.items()], ignore_index=True)
    options = list(dict.fromkeys(o for t in tables.values() for o in t[spec.choice]))
    dims = [_dimension(spec.choice, f[spec.choice], options)]
    if len(tasks) > 1:
        dims.append(_dimension("task", f["task"], tasks))
    dims += [_dimension(p, f[p]) for p in stats.hyperparameters if p in f]
    dims.append({"label": "score", "values": f["score"].to_numpy(dtype=float)})
    if color == "score":
        line = {"color": f["score"].to_numpy(dtype=float), "colorscale": "Viridis", "showscale": True,
                "colorbar": {"title": {"text": "score"}}}
    else:
        codes = np.array([options.index(w) for w in f["winner"]], dtype=np.int32)
        k = len(options)
        scale = []
        for j, o in enumerate(options):
            scale += [[j / k, option_color(options, o)], [(j + 1) / k, option_color(options, o)]]
        line = {"color": codes, "colorscale": scale, "cmin": -0.5, "cmax": k - 0.5, "showscale": True,
                "colorbar": {"title": {"text": "winner"}, "tickvals": list(range(k)), "ticktext": options}}
    counts = {t: stats.parallel_configs[t] for t in tasks}
    # the shown count only, not the paired one: the figure then stays the same while a study adds
    # configurations outside the sample, and the page need not redraw its WebGL canvas
    shown = "; ".join(f"{t or 'all'}: {'all ' if a == b else ''}{a}" for t, (a, b) in counts.items())
    by = "the mean score over seeds" if color == "score" else "the configuration's winning option"
    layout = {"height": 560, "margin": {"l": 90, "r": 90, "t": 150, "b": 40},
              "title": {"text": f"{spec.name}: the configurations<br><sup>one line per configuration and option, "
                                f"coloured by {by}; paired configurations shown: {shown}"
                                + (f" (a fixed sample of at most {max(a for a, _ in counts.values())}, by a seeded hash of "
                                   "their labels)" if any(a < b for a, b in counts.values()) else "") + "</sup>"},
              "meta": {"id": fig_id, "choice": spec.choice, "color": color,
                       "parallel": {t: {"shown": c[0]} for t, c in counts.items()},
                       "axes": [d["label"] for d in dims]}}
    data = [{"type": "parcoords", "dimensions": dims, "line": line, "labelangle": -20, "meta": {"choice": spec.choice}}]
    return fast_figure(data, layout)
