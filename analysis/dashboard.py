"""``seedsweep dashboard DIR``: a live Dash app over a run directory.

It binds to 127.0.0.1 by default (a study's results are not for the whole
network; use ``--host 0.0.0.0`` deliberately, e.g. on a cluster head reached
through an SSH tunnel). Every ``--interval`` seconds the page asks whether
the run directory changed (a new trial part, a compaction, the driver's
progress file); only then are the trials read again and the figures redrawn,
so a study running over a weekend can be watched without reloading.

The figures are those of :mod:`analysis.figures` and
:mod:`analysis.statfigures`, with the same ids; the comparison shown is
chosen with the ``choice`` selector, and rows can be narrowed by task and by
the values of one other hyperparameter. The statistics behind a selection
are computed once (:class:`Views`) and shared by its figures; the
importance figure's forests grow in a background thread and the figure
appears when they are done, without holding up the others.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from study.shards import Cached
from study.store import RunDir

from . import figures as F
from . import statfigures as SF
from .figurekit import empty_figure
from .insights import choice_stats, importance_by_task
from .report import rows_where

__all__ = ["create_app", "serve", "signature", "Views", "trial_options"]

ALL = "(all tasks)"
#: The importance forests are refit at least this often while rows change.
REFIT_S = 30.0


def signature(run_dir: str | Path) -> str:
    """Changes whenever a trial is stored, the directory is compacted or the
    driver's progress file is rewritten (the store's :meth:`RunDir.signature`)."""
    return RunDir(run_dir).signature()


class Views:
    """One :class:`~analysis.figures.RunView` per directory signature, shared by callbacks."""

    def __init__(self, run_dir: str) -> None:
        self.run_dir = run_dir
        self.cached = Cached(RunDir(run_dir))          # a refresh reads only the files that changed
        self.lock = threading.Lock()
        self.key: str | None = None
        self.view: F.RunView | None = None
        self.computed: dict[tuple, tuple] = {}          # selection -> (by_task, ChoiceStats), this view only
        self.compute_lock = threading.Lock()
        self.background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="seedsweep-importance")
        self.importance: dict[tuple, Future] = {}
        self.importance_last: dict[tuple, tuple[int, float, Future]] = {}    # selection -> (rows, when, forests)

    def get(self, key: str | None = None) -> F.RunView:
        with self.lock:
            key = key or signature(self.run_dir)
            if self.view is None or key != self.key:
                self.view = F.load_view(self.run_dir, cached=self.cached)
                self.key = key
                self.computed = {}
            return self.view

    def selection(self, view: F.RunView, spec, df, selection: tuple) -> tuple:
        """(by_task, ChoiceStats) of ``spec`` on the selected rows ``df``, computed once per view."""
        with self.compute_lock:
            computed = self.computed if view is self.view else {}
            if selection not in computed:
                by_task = F.compare_view(view, spec, df)
                computed[selection] = (by_task, choice_stats(df, spec, by_task, view.results))
            return computed[selection]

    def importance_of(self, version: str | None, view: F.RunView, spec, df, selection: tuple) -> Future:
        """The importance of ``spec`` on ``df`` per task, computing in the background.

        The forests are grown again when the selection's rows changed by at
        least 1% (and by one row at least) or :data:`REFIT_S` seconds passed
        since they were: a study of 50,000 trials stores one every few
        milliseconds, and one more row does not move a forest fitted on a
        seeded subsample of 2,000 per task."""
        key = (version, selection)
        with self.compute_lock:
            if key not in self.importance:
                if len(self.importance) > 32:
                    self.importance = {k: f for k, f in self.importance.items() if not f.done()}
                last = self.importance_last.get(selection)
                if (last is not None and last[2].done() and time.monotonic() - last[1] < REFIT_S
                        and abs(len(df) - last[0]) < max(1.0, 0.01 * last[0])):
                    self.importance[key] = last[2]
                else:
                    future = self.background.submit(importance_by_task, df, spec, view.results)
                    self.importance[key] = future
                    self.importance_last[selection] = (len(df), time.monotonic(), future)
            return self.importance[key]


#: Trial keys the trials list offers at once (typing narrows them).
TRIAL_OPTIONS = 200


def trial_options(df, search: str | None, chosen: list[str] | None) -> list[str]:
    """The chosen keys, then up to :data:`TRIAL_OPTIONS` stored keys containing ``search``.

    >>> import pandas as pd
    >>> trial_options(pd.DataFrame({"trial_key": ["c1/x=a/seed=1", "c2/x=b/seed=1"]}), "x=b", ["c1/x=a/seed=1"])
    ['c1/x=a/seed=1', 'c2/x=b/seed=1']
    """
    chosen = list(chosen or [])
    if "trial_key" not in df:
        return chosen
    keys = df["trial_key"].dropna().astype(str)
    if search:
        keys = keys[keys.str.contains(search, regex=False)]
    picked = set(chosen)
    return chosen + [k for k in keys.head(TRIAL_OPTIONS + len(chosen)) if k not in picked][:TRIAL_OPTIONS]


def create_app(run_dir: str | Path, *, interval_s: float = 2.0):
    """The Dash app for ``run_dir`` (not started; see :func:`serve`)."""
    import dash
    from dash import Input, Output, State, dcc, html

    run_dir = str(run_dir)
    RunDir(run_dir).require()
    views = Views(run_dir)
    first = views.get()
    choices = [s.name for s in first.specs]

    app = dash.Dash(__name__, title=f"seedsweep: {first.study}", update_title=None,
                    serve_locally=True, assets_ignore=".*")
    graph = lambda fig_id, **kw: dcc.Graph(id=fig_id, config={"displaylogo": False}, **kw)  # noqa: E731
    control = {"minWidth": "220px", "flex": "1"}
    grid = {"display": "grid", "gridTemplateColumns": "repeat(auto-fit, minmax(560px, 1fr))", "gap": "0.5rem"}
    app.layout = html.Div(style={"fontFamily": "system-ui, sans-serif", "margin": "1rem 2rem"}, children=[
        html.H2(f"seedsweep: {first.study}", id="title"),
        html.Div(id="summary", style={"color": "#444"}),
        dcc.Interval(id="tick", interval=int(interval_s * 1000)),
        dcc.Store(id="version", data=None),      # the first poll fills it, and every view follows
        graph("progress"),
        graph("claims"),
        html.Div(style={"display": "flex", "gap": "1rem", "flexWrap": "wrap"}, children=[
            html.Div(style=control, children=[html.Label("choice"), dcc.Dropdown(
                id="choice", options=choices, value=choices[0] if choices else None, clearable=False)]),
            html.Div(style=control, children=[html.Label("task"), dcc.Dropdown(
                id="task", options=[ALL] + first.tasks, value=ALL, clearable=False)]),
            html.Div(style=control, children=[html.Label("filter by"), dcc.Dropdown(
                id="filter-column", options=first.filter_columns(), placeholder="a hyperparameter")]),
            html.Div(style=control, children=[html.Label("keep values"), dcc.Dropdown(
                id="filter-values", options=[], multi=True, placeholder="all values")]),
        ]),
        html.Div(style=grid, children=[graph("winshares"), graph("distribution"), graph("differences"),
                                       graph("sigma"), graph("seed-distribution"), graph("seeds")]),
        graph("robustness"),
        html.H3("tuning budget, importance and dominance"),
        html.Div(style=grid, children=[graph("evp"), graph("importance")]),
        dcc.Interval(id="importance-poll", interval=500, disabled=True),
        graph("dominance"),
        html.Div(children=[html.Label("colour the configurations by "), dcc.RadioItems(
            id="parallel-color", options=list(SF.PARALLEL_COLORS), value="score", inline=True)]),
        graph("parallel"),
        html.H3("single trials"),
        dcc.Dropdown(id="trials", options=[], multi=True, placeholder="trials for curves and confusion"),
        html.Div(style=grid, children=[graph("curves"), graph("confusion")]),
        graph("problems"),
    ])

    @app.callback(Output("version", "data"), Input("tick", "n_intervals"), State("version", "data"))
    def _poll(_, current):
        key = signature(run_dir)
        return dash.no_update if key == current else key

    @app.callback(Output("progress", "figure"), Output("summary", "children"), Output("task", "options"),
                  Output("filter-column", "options"), Input("version", "data"))
    def _overview(version):
        view = views.get(version)
        s = F.progress_summary(view)
        text = (f"{s['stored']} of {s['planned']} trials stored: ok {s['ok']}, diverged {s['diverged']}, "
                f"failed {s['failed']}; running {s['running']}")
        return F.progress_figure(view), text, [ALL] + view.tasks, view.filter_columns()

    @app.callback(Output("claims", "figure"), Output("claims", "style"), Input("version", "data"))
    def _claims(version):
        """The sealed claims' verdicts; the figure is hidden when no claims are sealed."""
        from .ledger import claims_figure

        view = views.get(version)
        fig = claims_figure(run_dir, view.df, view.specs, view.results)
        return fig, ({"display": "none"} if fig.layout.meta.get("empty") else {})

    @app.callback(Output("robustness", "figure"), Output("robustness", "style"), Input("version", "data"),
                  Input("choice", "value"))
    def _robustness(version, choice):
        """Every model's accuracy on the evaluation sets; hidden when the study scored none."""
        from .robustness import robustness_figure, robustness_of, study_tau

        view = views.get(version)
        spec = view.spec(choice)
        rob = None if spec is None else robustness_of(view.df, spec, view.results, study_tau(run_dir))
        if rob is None:
            return empty_figure("robustness", "no evaluation sets"), {"display": "none"}
        return robustness_figure(rob), {}

    @app.callback(Output("filter-values", "options"), Output("filter-values", "value"),
                  Input("filter-column", "value"), State("version", "data"))
    def _filter_values(column, version):
        view = views.get(version)
        if not column or column not in view.df:
            return [], []
        values = sorted(view.df[column].dropna().astype(str).unique())
        return values, []

    def _rows(view, task, column, values):
        where = {"task": [task]} if task and task != ALL else {}
        if column and values:
            where[column] = values
        return rows_where(view.df, where)

    @app.callback(Output("winshares", "figure"), Output("distribution", "figure"), Output("differences", "figure"),
                  Output("sigma", "figure"), Output("seed-distribution", "figure"), Output("seeds", "figure"),
                  Output("problems", "figure"),
                  Input("version", "data"), Input("choice", "value"), Input("task", "value"),
                  Input("filter-column", "value"), Input("filter-values", "value"))
    def _comparison(version, choice, task, column, values):
        view = views.get(version)
        df = _rows(view, task, column, values)
        spec = view.spec(choice)
        if spec is None:
            empty = F.empty_figure("winshares", "this run directory names no comparisons")
            return (empty, F.empty_figure("distribution", ""), F.empty_figure("differences", ""), F.empty_figure("sigma", ""),
                    F.seed_distribution_figure(df, None), F.seeds_figure(df, view.results), F.problems_figure(df))
        by_task, _ = views.selection(view, spec, df, (choice, task, column, tuple(values or ())))
        return (F.winshares_figure(by_task, spec), F.distribution_figure(by_task, spec),
                F.differences_figure(by_task, spec), F.sigma_figure(by_task, spec),
                F.seed_distribution_figure(df, spec), F.seeds_figure(df, view.results), F.problems_figure(df))

    @app.callback(Output("evp", "figure"), Output("dominance", "figure"), Output("parallel", "figure"),
                  Input("version", "data"), Input("choice", "value"), Input("task", "value"),
                  Input("filter-column", "value"), Input("filter-values", "value"), Input("parallel-color", "value"))
    def _insights(version, choice, task, column, values, color):
        view = views.get(version)
        spec = view.spec(choice)
        if spec is None:
            why = "this run directory names no comparisons"
            return (F.empty_figure("evp", why), F.empty_figure("dominance", why), F.empty_figure("parallel", why))
        df = _rows(view, task, column, values)
        _, stats = views.selection(view, spec, df, (choice, task, column, tuple(values or ())))
        return SF.evp_figure(stats), SF.dominance_figure(stats), SF.parallel_figure(stats, color or "score")

    @app.callback(Output("importance", "figure"), Output("importance-poll", "disabled"),
                  Input("version", "data"), Input("choice", "value"), Input("task", "value"),
                  Input("filter-column", "value"), Input("filter-values", "value"),
                  Input("importance-poll", "n_intervals"))
    def _importance(version, choice, task, column, values, _):
        """Started in the background; polled every half second until it is done."""
        view = views.get(version)
        spec = view.spec(choice)
        if spec is None:
            return F.empty_figure("importance", "this run directory names no comparisons"), True
        df = _rows(view, task, column, values)
        future = views.importance_of(version, view, spec, df, (choice, task, column, tuple(values or ())))
        if not future.done():
            fig = F.empty_figure("importance", f"{spec.name}: computing the importance of the hyperparameters …")
            fig.layout.meta = {"id": "importance", "empty": True, "pending": True}
            return fig, False
        return SF.importance_figure(future.result(), spec.name), True

    @app.callback(Output("trials", "options"), Output("trials", "value"), Input("choice", "value"),
                  Input("version", "data"), Input("trials", "search_value"), State("trials", "value"))
    def _trials(choice, version, search, current):
        """Every stored trial can be chosen by typing part of its key: the list
        holds the chosen trials and the first :data:`TRIAL_OPTIONS` keys that
        match (50,000 keys sent to the page on every refresh would stall it).
        The median trial of each option is shown until the user chooses (a new
        trial row keeps the choice)."""
        view = views.get(version)
        trigger = dash.callback_context.triggered_id
        if trigger == "trials":                 # typing narrows the list; the choice stays
            return trial_options(view.df, search, current), dash.no_update
        value = current if current and trigger == "version" else F.default_trials(view.df, view.spec(choice))
        return trial_options(view.df, search, value), value

    @app.callback(Output("curves", "figure"), Output("confusion", "figure"), Input("trials", "value"),
                  Input("version", "data"))
    def _single(keys, version):
        view = views.get(version)
        keys = keys or []
        return (F.curves_figure(view.epochs, view.df, keys),
                F.confusion_figure(view.confusion, view.df, keys))

    return app


def serve(run_dir: str | Path, *, host: str = "127.0.0.1", port: int = 8050, interval_s: float = 2.0) -> None:
    """Serve the dashboard until interrupted."""
    app = create_app(run_dir, interval_s=interval_s)
    print(f"seedsweep dashboard for {run_dir}: http://{host}:{port}/  (Ctrl-C stops it)", flush=True)
    app.run(host=host, port=port, debug=False)
