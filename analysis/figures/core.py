"""Plotly figures of a run directory, shared by the live dashboard and the
self-contained HTML report, so both show the same numbers as the tables.

Every figure has a stable id (:data:`FIGURE_IDS`); the report suffixes the
per-choice ones with the choice (``winshares-classifier``). Scores are
plotted as stored (fractions, e.g. 0.91 F1), not in points.

* ``progress`` -- trials stored by status against the plan, running trials
  (from the driver's ``progress.json``) and an ETA;
* ``distribution`` -- per task and option, the violin of the paired
  configurations' scores (mean over seeds: the values the win shares and Δ
  are computed from), medians marked;
* ``differences`` -- per task, the histogram of paired differences
  score(option) − score(best) with the median Δ and its bootstrap CI;
* ``winshares`` -- win shares per task and option, the 1/k line (no
  difference) and the † marks;
* ``sigma`` -- the σ table with its marks;
* ``seeds`` -- ECDF of the seed-to-seed spread (max − min per configuration);
* ``seed-distribution`` -- per option: n, min, median, max, σ over every
  finished run, and the gap between the best test epoch and the best dev
  epoch's test score (what peeking at the test set would add);
* ``curves`` -- dev and test score per epoch of selected trials, the best dev
  epoch marked;
* ``confusion`` -- the test confusion matrix at the best dev epoch, summed
  over the selected trials (classifying families);
* ``problems`` -- every diverged and failed trial with its reason.
"""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots


from ..reading.view import RunView, load_view
from ..specs import ComparisonSpec
from ..stats.paired import Comparison, compare_spec
from ..stats.pairing import as_text
from ..stats.seeds import option_distributions, seed_spreads
from .figurekit import TABLE_MARGIN, empty_figure, fast_figure, option_color, table_height
from .violins import violin_traces

__all__ = ["FIGURE_IDS", "RunView", "load_view", "compare_view", "progress_figure",
           "distribution_figure", "differences_figure", "winshares_figure", "sigma_figure", "seeds_figure",
           "seed_distribution_figure", "curves_figure", "confusion_figure", "problems_figure", "default_trials",
           "difference_bins", "MAX_BINS"]

FIGURE_IDS = ("progress", "distribution", "differences", "winshares", "sigma", "seeds", "seed-distribution",
              "curves", "confusion", "problems")
LIVE_S = 60          # a progress.json older than this means no driver is running
STATUS_COLORS = {"ok": "#2ca02c", "diverged": "#ff7f0e", "failed": "#d62728", "running": "#1f77b4",
                  "pending": "#c7c7c7"}


def compare_view(view: RunView, spec: ComparisonSpec, df: pd.DataFrame | None = None, *,
                 n_bootstrap: int = 1000, seed: int = 0, paired: tuple | None = None) -> dict[str, Comparison]:
    """The comparison ``spec`` per task, as the report's tables compute it."""
    return compare_spec(view.df if df is None else df, spec, view.results, n_bootstrap=n_bootstrap, seed=seed,
                        paired=paired)


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}"


# ------------------------------------------------------------------ progress

def progress_summary(view: RunView, now: datetime | None = None) -> dict:
    """Counts by status, running and pending trials, and the ETA in seconds (or None)."""
    now = now or datetime.now(timezone.utc)
    counts = as_text(view.df["status"]).value_counts().to_dict() if len(view.df) else {}
    stored = int(len(view.df))
    running = 0
    p = view.progress
    if p.get("updated_at"):
        age = (now - datetime.fromisoformat(p["updated_at"])).total_seconds()
        if age <= LIVE_S:
            running = int(p.get("running", 0))
    pending = max(view.planned - stored - running, 0)
    eta = None
    if not view.imported and stored and view.planned > stored and {"started_at", "finished_at"} <= set(view.df):
        start = pd.to_datetime(view.df["started_at"]).min()
        end = pd.to_datetime(view.df["finished_at"]).max()
        span = (end - start).total_seconds() if pd.notna(start) and pd.notna(end) else 0
        if span > 0:
            eta = (view.planned - stored) * span / stored
    return {"stored": stored, "planned": view.planned, "ok": int(counts.get("ok", 0)),
            "diverged": int(counts.get("diverged", 0)), "failed": int(counts.get("failed", 0)),
            "running": running, "pending": pending, "eta_s": eta}


def progress_figure(view: RunView) -> go.Figure:
    """Trials by status (ok, diverged, failed, running, pending) as one stacked bar."""
    s = progress_summary(view)
    fig = go.Figure()
    for status in ("ok", "diverged", "failed", "running", "pending"):
        fig.add_bar(x=[s[status]], y=["trials"], orientation="h", name=f"{status} {s[status]}",
                    marker_color=STATUS_COLORS[status], meta=status)
    eta = "" if s["eta_s"] is None else f", ETA {_clock(s['eta_s'])}"
    fig.update_layout(barmode="stack", height=170, margin={"l": 60, "r": 20, "t": 50, "b": 30},
                      title=f"{view.study}: {s['stored']} of {s['planned']} trials stored{eta}",
                      meta={"id": "progress", **{k: v for k, v in s.items() if k != "eta_s"}},
                      legend={"orientation": "h", "y": 1.25, "x": 1, "xanchor": "right"})
    return fig


# --------------------------------------------------------------- comparisons

def distribution_figure(by_task: dict[str, Comparison], spec: ComparisonSpec, fig_id: str = "distribution"
                        ) -> go.Figure:
    """Violins of the paired configurations' scores (mean over seeds) per task and option."""
    if not by_task or not any(c.n for c in by_task.values()):
        return empty_figure(fig_id, f"{spec.name}: no paired configurations yet (an imported search whose "
                            "configurations do not pair is judged unpaired: 'seedsweep report DIR' shows its tables)")
    options = next(iter(by_task.values())).options
    tasks = list(by_task)
    samples = {o: {t: np.asarray(c.scores(o), dtype=float) for t, c in by_task.items()} for o in options}
    medians = {t: {o: float(np.median(samples[o][t])) for o in options if len(samples[o][t])} for t in tasks}
    data, xaxis = violin_traces(samples, options, tasks, {o: option_color(options, o) for o in options})
    layout = {"title": {"text": f"{spec.name}: scores of the paired configurations<br><sup>mean over seeds; "
                                "the values win shares and Δ are computed from</sup>"},
              "xaxis": xaxis, "yaxis": {"title": {"text": next(iter(by_task.values())).score}},
              "meta": {"id": fig_id, "choice": spec.choice, "medians": medians,
                       "n": {t: c.n for t, c in by_task.items()}}}
    return fast_figure(data, layout)


#: The differences figure's histograms have at most this many bins.
MAX_BINS = 100


def difference_bins(d: np.ndarray) -> np.ndarray:
    """Bin edges for the histograms of one task's paired differences: numpy's
    ``"auto"`` rule (the larger of the Sturges and Freedman-Diaconis bin
    counts), at most :data:`MAX_BINS` equal bins over the range. Each bin
    holds ``left ≤ d < right``, the last one its right edge too (``np.histogram``).

    >>> difference_bins(np.array([0.0, 0.1, 0.2, 0.4])).round(3).tolist()
    [0.0, 0.133, 0.267, 0.4]
    """
    d = np.asarray(d, dtype=float)
    d = d[np.isfinite(d)]
    if len(d) == 0:
        return np.array([-0.5, 0.5])
    edges = np.histogram_bin_edges(d, bins="auto")
    if len(edges) - 1 > MAX_BINS:
        edges = np.linspace(d.min(), d.max(), MAX_BINS + 1)
    return edges


def differences_figure(by_task: dict[str, Comparison], spec: ComparisonSpec, fig_id: str = "differences"
                       ) -> go.Figure:
    """Histograms of paired differences to the best option, median Δ with its CI."""
    tasks = [t for t, c in by_task.items() if c.n and c.best is not None]
    if not tasks:
        return empty_figure(fig_id, f"{spec.name}: no paired configurations yet (an imported search whose "
                            "configurations do not pair is judged unpaired: 'seedsweep report DIR' shows its tables)")
    fig = make_subplots(rows=len(tasks), cols=1, subplot_titles=[t or "(all)" for t in tasks],
                        vertical_spacing=min(0.12, 0.5 / len(tasks)))
    deltas: dict[str, dict[str, list[float]]] = {}
    for r, task in enumerate(tasks, 1):
        c = by_task[task]
        others = [o for o in c.options if o != c.best]
        diffs = {o: c.scores(o) - c.scores(c.best) for o in others}
        edges = difference_bins(np.concatenate(list(diffs.values())))
        for o in others:
            # counted here, not by the browser: 25,000 differences would be 0.3 MB of JSON per refresh
            counts = np.histogram(diffs[o], edges)[0]
            fig.add_bar(x=(edges[:-1] + edges[1:]) / 2, y=counts, width=np.diff(edges), name=f"{o} − {c.best}",
                        legendgroup=str(o), showlegend=r == 1, opacity=0.6,
                        marker_color=option_color(c.options, o), row=r, col=1,
                        meta={"histogram": str(o), "task": task, "edges": edges.tolist()},
                        customdata=np.column_stack([edges[:-1], edges[1:]]),
                        hovertemplate=f"{o} − {c.best} in [%{{customdata[0]:.4f}}, %{{customdata[1]:.4f}}): "
                                      f"%{{y}} configurations<extra>{task}</extra>")
            lo, hi = c.delta_ci[o]
            fig.add_scatter(x=[c.delta[o]], y=[0], mode="markers", marker={"symbol": "diamond", "size": 12,
                            "color": option_color(c.options, o), "line": {"color": "black", "width": 1}},
                            error_x={"type": "data", "symmetric": False, "array": [hi - c.delta[o]],
                                     "arrayminus": [c.delta[o] - lo]},
                            name=f"median Δ {o}", legendgroup=str(o), showlegend=False, row=r, col=1,
                            meta={"median_delta": str(o), "task": task},
                            hovertemplate=f"median Δ {o} − {c.best}: %{{x:.4f}} "
                                          f"[{lo:.4f}, {hi:.4f}]<extra>{task}</extra>")
            deltas.setdefault(task, {})[str(o)] = [c.delta[o], lo, hi]
        fig.add_vline(x=0, line_dash="dot", line_color="grey", row=r, col=1)
    fig.update_layout(barmode="overlay", bargap=0, height=max(320, 220 * len(tasks)),
                      title=f"{spec.name}: paired differences to the best option<br><sup>◆ median Δ and its "
                            f"{int(100 * next(iter(by_task.values())).confidence)}% bootstrap CI</sup>",
                      meta={"id": fig_id, "choice": spec.choice, "delta": deltas})
    return fig


def winshares_figure(by_task: dict[str, Comparison], spec: ComparisonSpec, fig_id: str = "winshares"
                     ) -> go.Figure:
    """Win shares per task and option, with the 1/k line and the † marks."""
    tasks = [t for t, c in by_task.items() if c.n]
    if not tasks:
        return empty_figure(fig_id, f"{spec.name}: no paired configurations yet (an imported search whose "
                            "configurations do not pair is judged unpaired: 'seedsweep report DIR' shows its tables)")
    options = by_task[tasks[0]].options
    fig = go.Figure()
    for o in options:
        shares = [by_task[t].shares[o] for t in tasks]
        text = [f"{s:.0%}" + (" †" if o in by_task[t].marks else "") for s, t in zip(shares, tasks)]
        fig.add_bar(x=tasks, y=shares, name=str(o), text=text, textposition="outside", meta=str(o),
                    marker_color=option_color(options, o),
                    customdata=[[by_task[t].n] for t in tasks],
                    hovertemplate="%{x}: " + str(o) + " wins %{y:.1%} of %{customdata[0]} configurations"
                                  "<extra></extra>")
    fig.add_hline(y=1 / len(options), line_dash="dash", line_color="grey",
                  annotation_text=f"1/k = {1 / len(options):.2f}", annotation_position="top left")
    fig.update_layout(barmode="group", yaxis={"range": [0, 1.15], "tickformat": ".0%", "title": "win share"},
                      title=f"{spec.name}: win shares<br><sup>†: not significantly worse than the best "
                            f"(sign test, p < {by_task[tasks[0]].alpha:g})</sup>",
                      meta={"id": fig_id, "choice": spec.choice,
                            "shares": {t: by_task[t].shares for t in tasks}, "n": {t: by_task[t].n for t in tasks}})
    return fig


def sigma_figure(by_task: dict[str, Comparison], spec: ComparisonSpec, fig_id: str = "sigma") -> go.Figure:
    """The σ table of a comparison per task, with its Brown–Forsythe marks."""
    tasks = [t for t, c in by_task.items() if c.n]
    if not tasks:
        return empty_figure(fig_id, f"{spec.name}: no paired configurations yet (an imported search whose "
                            "configurations do not pair is judged unpaired: 'seedsweep report DIR' shows its tables)")
    options = by_task[tasks[0]].options
    cells = [tasks] + [[("–" if np.isnan(by_task[t].sigma[o]) else f"{by_task[t].sigma[o]:.4f}")
                        + (" †" if o in by_task[t].sigma_marks else "") for t in tasks] for o in options]
    fig = go.Figure(go.Table(header={"values": ["task"] + [f"σ {o}" for o in options]}, cells={"values": cells}))
    fig.update_layout(title=f"{spec.name}: σ of the paired rows (all seeds)<br><sup>†: not significantly larger "
                            f"than the smallest (Brown–Forsythe, p < {by_task[tasks[0]].alpha:g})</sup>",
                      height=table_height(len(tasks)),
                      margin=TABLE_MARGIN,
                      meta={"id": fig_id, "choice": spec.choice,
                            "sigma": {t: by_task[t].sigma for t in tasks}})
    return fig


# --------------------------------------------------------------------- seeds

def seeds_figure(df: pd.DataFrame, results: list[str] = (), fig_id: str = "seeds") -> go.Figure:
    """ECDF of the max − min spread of the test score over seeds, per task."""
    fig = go.Figure()
    spreads: dict[str, int] = {}
    for task, spread in seed_spreads(df, results=results).items():
        if not len(spread):
            continue
        spreads[str(task)] = len(spread)
        fig.add_scatter(x=spread, y=np.arange(1, len(spread) + 1) / len(spread), mode="lines", line_shape="hv",
                        name=f"{task} ({len(spread)} configurations)", meta=str(task))
    if not spreads:
        return empty_figure(fig_id, "seed variance: no configuration has two finished seeds yet")
    fig.update_layout(title="seed-to-seed spread<br><sup>ECDF of max − min test score per configuration</sup>",
                      xaxis_title="max − min test score over seeds", yaxis={"title": "fraction of configurations",
                                                                           "range": [0, 1.02]},
                      meta={"id": fig_id, "configurations": spreads})
    return fig


def seed_distribution_figure(df: pd.DataFrame, spec: ComparisonSpec | None, fig_id: str = "seed-distribution"
                             ) -> go.Figure:
    """Per task and option: n, min, median, max, σ of the finished runs' test
    scores and the median peeking gain (:func:`analysis.stats.seeds.option_distributions`)."""
    frame = option_distributions(df, spec.choice) if spec is not None else None
    if frame is None or not len(frame):
        return empty_figure(fig_id, "seed distribution: no finished runs yet")
    fmt = lambda v: "–" if pd.isna(v) else f"{v:.4f}"  # noqa: E731
    cols = [frame["task"].tolist(), frame["option"].tolist(), frame["n"].tolist()]
    cols += [[fmt(v) for v in frame[c]] for c in ("min", "median", "max", "sd", "peeking_gain")]
    cols.append(frame["not_ok"].tolist())
    fig = go.Figure(go.Table(header={"values": ["task", spec.choice, "n", "min", "median", "max", "σ",
                                                "peeking gain", "not ok"]}, cells={"values": cols}))
    fig.update_layout(title="seed distribution of every finished run<br><sup>test score at the best dev epoch; "
                            "peeking gain: best test epoch's score − that score (median)</sup>",
                      height=table_height(len(frame)), margin=TABLE_MARGIN,
                      meta={"id": fig_id, "choice": spec.choice,
                            "rows": frame[["task", "option", "n", "median"]].values.tolist()})
    return fig


# the figures of single trials (curves, confusion, problems) live in trialfigures
from .trialfigures import confusion_figure, curves_figure, default_trials, problems_figure  # noqa: E402
