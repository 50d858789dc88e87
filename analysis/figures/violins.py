"""Violins whose shape and box are computed here, not in the browser.

Plotly's own violin trace sends every score to the page and computes the
kernel density and the box there: at 25,000 paired configurations that is
about a megabyte per refresh and a quarter of a second of the browser's
time, on every refresh of a running study. Here the page gets a density
polygon of a few hundred points and a box whose statistics are computed
from all the scores:

* the box: quartiles and median by :func:`numpy.quantile` (linear
  interpolation), Tukey's whiskers (the most extreme scores within 1.5 IQR of
  the box), and the mean;
* the shape: a Gaussian kernel density with Plotly's default bandwidth
  (Silverman's rule as Plotly applies it, :func:`bandwidth`), over
  Plotly's span (two bandwidths beyond the extremes); it is evaluated by
  linear binning on a fine grid, whose error is far below what a figure can
  show (the tests compare it with :class:`scipy.stats.gaussian_kde`).

Each violin is drawn at ``task index + option offset`` on a numeric axis
labelled with the task names, as Plotly's ``violinmode="group"`` would.
"""

from __future__ import annotations

import numpy as np

__all__ = ["bandwidth", "box_stats", "density", "violin_traces", "POINTS_UP_TO"]

#: Up to this many scores per violin, the scores themselves are drawn too.
POINTS_UP_TO = 400
#: Fine-grid points of the binned density (its error is O((span / GRID)²)).
GRID = 4096


def bandwidth(v: np.ndarray) -> float:
    """Plotly's default violin bandwidth: ``1.059 · min(σ, IQR / 1.349) · n^(-1/5)``
    (σ with n − 1), at least a hundredth of the range; 0 for a constant sample."""
    v = np.asarray(v, dtype=float)
    span = float(v.max() - v.min()) if len(v) else 0.0
    if span == 0.0:
        return 0.0
    q1, q3 = np.quantile(v, [0.25, 0.75])
    rule = 1.059 * min(float(np.std(v, ddof=1)), float(q3 - q1) / 1.349) * len(v) ** -0.2
    return max(rule, span / 100)


def density(v: np.ndarray, bw: float) -> tuple[np.ndarray, np.ndarray]:
    """``(t, f(t))``: the Gaussian kernel density of ``v`` with bandwidth
    ``bw`` on Plotly's grid (span ``[min − 2 bw, max + 2 bw]``, step about bw / 3)."""
    v = np.asarray(v, dtype=float)
    lo, hi = float(v.min()) - 2 * bw, float(v.max()) + 2 * bw
    m = int(np.ceil((hi - lo) / (bw / 3)))
    t = np.linspace(lo, hi, m + 1)
    # linear binning: each score's unit weight split between its two grid neighbours
    fine = np.linspace(lo, hi, GRID)
    step = fine[1] - fine[0]
    pos = (v - lo) / step
    left = np.clip(np.floor(pos).astype(np.int64), 0, GRID - 2)
    frac = pos - left
    counts = np.bincount(left, weights=1 - frac, minlength=GRID) + np.bincount(left + 1, weights=frac, minlength=GRID)
    half = int(np.ceil(6 * bw / step))
    offsets = np.arange(-half, half + 1) * step
    kernel = np.exp(-0.5 * (offsets / bw) ** 2) / (np.sqrt(2 * np.pi) * bw * len(v))
    smooth = np.convolve(counts, kernel, mode="full")[half:half + GRID]
    return t, np.interp(t, fine, smooth)


def box_stats(v: np.ndarray) -> dict[str, float]:
    """Quartiles, median, Tukey's whiskers (``lowerfence``, ``upperfence``),
    mean, extremes and n of ``v``, as the box of a violin shows them."""
    v = np.sort(np.asarray(v, dtype=float))
    q1, med, q3 = np.quantile(v, [0.25, 0.5, 0.75])
    iqr = q3 - q1
    inside = v[(v >= q1 - 1.5 * iqr) & (v <= q3 + 1.5 * iqr)]
    return {"q1": float(q1), "median": float(med), "q3": float(q3), "lowerfence": float(inside[0]),
            "upperfence": float(inside[-1]), "mean": float(v.mean()), "min": float(v[0]), "max": float(v[-1]),
            "n": int(len(v))}


def _joined(parts: list) -> np.ndarray:
    return np.concatenate(parts).astype(float) if parts else np.array([], dtype=float)


def _fill(color: str) -> str:
    """``color`` (``#rrggbb``) at 40% opacity."""
    r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},0.4)"


def violin_traces(samples: dict[str, dict[str, np.ndarray]], options: list[str], tasks: list[str],
                  colors: dict[str, str], hover_format: str = ".4f") -> tuple[list[dict], dict]:
    """Plotly traces (plain dicts) and x-axis layout for one violin per task
    and option: ``samples[option][task]`` are the scores. Per option: the
    outline (its legend entry), the box (its hover: the statistics of every
    score; the box's ``meta`` also holds each violin's task, n and mean) and,
    for at most :data:`POINTS_UP_TO` scores, the scores themselves."""
    k = len(options)
    width = 0.8 / k                                   # of one option's slot
    rng = np.random.default_rng(0)                    # the points' jitter: the same on every redraw
    traces: list[dict] = []
    boxes: list[dict] = []
    points: list[dict] = []
    for j, o in enumerate(options):
        xs: list[np.ndarray] = []                     # polygons, NaN between them (a gap: each closes on its own)
        ys: list[np.ndarray] = []
        box = {k_: [] for k_ in ("x", "q1", "median", "q3", "lowerfence", "upperfence", "mean")}
        n: list[int] = []
        where: list[str] = []
        px, py = [], []
        for i, task in enumerate(tasks):
            v = np.asarray(samples.get(o, {}).get(task, ()), dtype=float)
            if not len(v):
                continue
            centre = i + (j - (k - 1) / 2) * width
            bw = bandwidth(v)
            if bw > 0:
                t, f = density(v, bw)
                half = 0.45 * width * f / f.max()
                xs += [centre - half, centre + half[::-1], [centre - half[0], np.nan]]
                ys += [t, t[::-1], [t[0], np.nan]]
            s = box_stats(v)
            box["x"].append(centre)
            for key in ("q1", "median", "q3", "lowerfence", "upperfence", "mean"):
                box[key].append(s[key])
            n.append(s["n"])
            where.append(task)
            if len(v) <= POINTS_UP_TO:
                px.append(centre + rng.uniform(-0.3, 0.3, len(v)) * width)
                py.append(v)
        name = str(o)
        traces.append({"type": "scatter", "x": _joined(xs), "y": _joined(ys), "mode": "lines", "fill": "toself",
                       "name": name, "legendgroup": name, "line": {"color": colors[o],
                                                                   "width": 1}, "fillcolor": _fill(colors[o]),
                       "hoverinfo": "skip", "meta": {"option": name, "part": "violin"}})
        boxes.append({"type": "box", "x": box["x"], "q1": box["q1"], "median": box["median"], "q3": box["q3"],
                      "lowerfence": box["lowerfence"], "upperfence": box["upperfence"], "width": 0.12 * width,
                      "name": name, "legendgroup": name, "showlegend": False, "yhoverformat": hover_format,
                      "line": {"color": colors[o], "width": 1.5}, "fillcolor": "white",
                      "meta": {"option": name, "part": "box", "tasks": where, "n": n, "mean": box["mean"]}})
        if px:
            points.append({"type": "scatter", "x": _joined(px), "y": _joined(py), "mode": "markers", "name": name,
                           "legendgroup": name, "showlegend": False, "marker": {"color": colors[o], "size": 4,
                                                                                "opacity": 0.6},
                           "hovertemplate": f"{name}: %{{y:{hover_format}}}<extra></extra>",
                           "meta": {"option": name, "part": "points"}})
    xaxis = {"tickvals": list(range(len(tasks))), "ticktext": [t or "(all)" for t in tasks],
             "range": [-0.5, len(tasks) - 0.5], "zeroline": False, "showgrid": False}
    return traces + boxes + points, xaxis
