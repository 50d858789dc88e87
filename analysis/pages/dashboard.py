"""``seedsweep dashboard DIR``: a live Dash app over a run directory.

It binds to 127.0.0.1 by default (a study's results are not for the whole
network: on a cluster head, reach it through an SSH tunnel). Bound to any
other address, it requires a token on every request (``--token new`` makes and prints one;
:func:`require_token`). A thread watches the run directory (a new trial part, a compaction, the
driver's progress file) and reads what changed, at most about once per ``--interval``; every
``--interval`` seconds the page asks whether it read a new view, and only then are the figures
redrawn, so a study running over a weekend can be watched without reloading.

The figures are those of :mod:`analysis.figures.core` and
:mod:`analysis.figures.statfigures`, with the same ids; the comparison shown is
chosen with the ``choice`` selector, and rows can be narrowed by task and by
the values of one other hyperparameter. The statistics behind a selection
are computed once (:class:`Views`) and shared by its figures; the
importance figure's forests grow in a background thread and the figure
appears when they are done, without holding up the others.
"""

from __future__ import annotations

import functools
from pathlib import Path

from seedsweep.study.store.rundir import RunDir

from ..figures import core as F
from ..figures import statfigures as SF
from ..figures.budgetfigure import budget_figure
from ..figures.claimsfigure import claims_figure
from ..figures.figurekit import empty_figure
from ..figures.robustnessfigure import robustness_figure
from ..figures.seqfigure import sequence_figure
from ..reading.load import study_tau
from ..reading.rundirs import study_decided, study_tuned
from ..specs import rows_where
from ..stats.robustness import robustness_of
from .dashaccess import require_token
from .liveview import Views, freeze_startup, keep_freed_memory, only_changed, signature

__all__ = ["create_app", "serve", "signature", "Views", "trial_options", "only_changed"]

ALL = "(all tasks)"
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


#: The callbacks whose figures are sent only when they changed (:func:`only_changed`).
DRAWN = ("claims", "sequence", "robustness", "comparison", "insights", "importance", "single")


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
        *[dcc.Store(id=f"drawn-{name}") for name in DRAWN],      # what the page shows (only_changed)
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
        graph("sequence"),              # an adaptive study's sequences, a tuned one's budget curves (else hidden)
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

    def computing(callback):
        """A callback that reads the view: counted while it runs (the poll waits for it)."""
        @functools.wraps(callback)
        def run(*args):
            with views.working():
                return callback(*args)
        return run

    @app.callback(Output("version", "data"), Input("tick", "n_intervals"), State("version", "data"))
    def _poll(_, current):
        """The page asks for the view the watcher read last, not the directory's
        newest signature: while trials land every few milliseconds, the page then
        draws each view the watcher prepared, whole, instead of starting a
        refresh again on a newer one it would read and compute itself."""
        if views.busy:          # a refresh is being computed; the page would drop it for a newer one: the next poll
            return dash.no_update
        failed = views.failed
        if failed is not None and failed[0] != current:
            return failed[0]    # the page says what could not be read (_overview), over the last view
        key = views.key
        return dash.no_update if key is None or key == current else key

    @app.callback(Output("progress", "figure"), Output("summary", "children"), Output("task", "options"),
                  Output("filter-column", "options"), Input("version", "data"))
    @computing
    def _overview(version):
        failed = views.failed
        if failed is not None and version == failed[0]:
            return dash.no_update, f"The run directory could not be read: {failed[1]}", dash.no_update, dash.no_update
        view = views.get(version)
        s = F.progress_summary(view)
        text = (f"{s['stored']} of {s['planned']} trials stored: ok {s['ok']}, diverged {s['diverged']}, "
                f"failed {s['failed']}; running {s['running']}")
        return F.progress_figure(view), text, [ALL] + view.tasks, view.filter_columns()

    def changed(figures: list, shown: dict | None) -> list:
        """The figures to send (:func:`only_changed`), then what the page shows."""
        out, shown = only_changed(figures, shown, dash.no_update)
        return [*out, shown]

    def with_style(fig, hidden: bool, shown: dict | None) -> tuple:
        """A figure hidden when it has nothing to show; its style follows it."""
        out, shown = only_changed([fig], shown, dash.no_update)
        style = dash.no_update if out[0] is dash.no_update else ({"display": "none"} if hidden else {})
        return out[0], style, shown

    @app.callback(Output("claims", "figure"), Output("claims", "style"), Output("drawn-claims", "data"),
                  Input("version", "data"), State("drawn-claims", "data"))
    @computing
    def _claims(version, shown):
        """The sealed claims' verdicts; the figure is hidden when no claims are
        sealed (and shown, saying so, when a broken seal left nothing to judge)."""
        view = views.get(version)
        fig = claims_figure(view, view.df, view.specs, view.results)
        meta = fig.layout.meta
        return with_style(fig, meta.get("empty") and meta.get("sealed", True), shown)

    @app.callback(Output("sequence", "figure"), Output("sequence", "style"), Output("drawn-sequence", "data"),
                  Input("version", "data"), Input("choice", "value"), State("drawn-sequence", "data"))
    @computing
    def _sequence(version, choice, shown):
        """The confidence sequences (until:) or budget curves (tune:), live; hidden for other studies."""
        view = views.get(version)
        spec = view.spec(choice)
        if (tuned := None if view.imported or spec is None else study_tuned(view, view.df)) is not None:
            return with_style(budget_figure(tuned, "budget"), False, shown)
        decided = None if view.imported or spec is None else study_decided(view, view.df)
        return with_style(sequence_figure(decided, None if spec is None else spec.choice), decided is None, shown)

    @app.callback(Output("robustness", "figure"), Output("robustness", "style"), Output("drawn-robustness", "data"),
                  Input("version", "data"), Input("choice", "value"), State("drawn-robustness", "data"))
    @computing
    def _robustness(version, choice, shown):
        """Every model's accuracy on the evaluation sets; hidden when the study scored none."""
        view = views.get(version)
        spec = view.spec(choice)
        rob = None if spec is None else robustness_of(view.df, spec, view.results, study_tau(view))
        if rob is None:
            return with_style(empty_figure("robustness", "no evaluation sets"), True, shown)
        return with_style(robustness_figure(rob), False, shown)

    @app.callback(Output("filter-values", "options"), Output("filter-values", "value"),
                  Input("filter-column", "value"), State("version", "data"))
    @computing
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

    last_shown = {}     # the comparison the page showed last, computed as soon as the directory changes

    def prepare(view) -> None:
        if "selection" in last_shown:
            choice, task, column, values = last_shown["selection"]
            spec = view.spec(choice)
            if spec is not None:
                views.selection(spec, lambda v: _rows(v, task, column, values),
                                (choice, task, column, tuple(values or ())))

    views.watch(min(0.05, interval_s / 4), 0.8 * interval_s, prepare)

    @app.callback(Output("winshares", "figure"), Output("distribution", "figure"), Output("differences", "figure"),
                  Output("sigma", "figure"), Output("seed-distribution", "figure"), Output("seeds", "figure"),
                  Output("problems", "figure"), Output("drawn-comparison", "data"),
                  Input("version", "data"), Input("choice", "value"), Input("task", "value"),
                  Input("filter-column", "value"), Input("filter-values", "value"), State("drawn-comparison", "data"))
    @computing
    def _comparison(version, choice, task, column, values, drawn):
        view = views.get(version)
        last_shown["selection"] = (choice, task, column, values)
        spec = view.spec(choice)
        if spec is None:
            df = _rows(view, task, column, values)
            empty = F.empty_figure("winshares", "this run directory names no comparisons")
            return changed([empty, F.empty_figure("distribution", ""), F.empty_figure("differences", ""),
                            F.empty_figure("sigma", ""), F.seed_distribution_figure(df, None),
                            F.seeds_figure(df, view.results), F.problems_figure(df)], drawn)
        view, df, by_task, _ = views.selection(spec, lambda v: _rows(v, task, column, values),
                                               (choice, task, column, tuple(values or ())))
        return changed([F.winshares_figure(by_task, spec), F.distribution_figure(by_task, spec),
                        F.differences_figure(by_task, spec), F.sigma_figure(by_task, spec),
                        F.seed_distribution_figure(df, spec), F.seeds_figure(df, view.results),
                        F.problems_figure(df)], drawn)

    @app.callback(Output("evp", "figure"), Output("dominance", "figure"), Output("parallel", "figure"),
                  Output("drawn-insights", "data"),
                  Input("version", "data"), Input("choice", "value"), Input("task", "value"),
                  Input("filter-column", "value"), Input("filter-values", "value"), Input("parallel-color", "value"),
                  State("drawn-insights", "data"))
    @computing
    def _insights(version, choice, task, column, values, color, shown):
        view = views.get(version)
        spec = view.spec(choice)
        if spec is None:
            why = "this run directory names no comparisons"
            return changed([F.empty_figure("evp", why), F.empty_figure("dominance", why),
                            F.empty_figure("parallel", why)], shown)
        *_, stats = views.selection(spec, lambda v: _rows(v, task, column, values),
                                    (choice, task, column, tuple(values or ())))
        return changed([SF.evp_figure(stats), SF.dominance_figure(stats), SF.parallel_figure(stats, color or "score")],
                       shown)

    @app.callback(Output("importance", "figure"), Output("importance-poll", "disabled"),
                  Output("drawn-importance", "data"),
                  Input("version", "data"), Input("choice", "value"), Input("task", "value"),
                  Input("filter-column", "value"), Input("filter-values", "value"),
                  Input("importance-poll", "n_intervals"), State("drawn-importance", "data"))
    @computing
    def _importance(version, choice, task, column, values, _, shown):
        """Started in the background; polled every half second until it is done."""
        view = views.get(version)
        spec = view.spec(choice)
        if spec is None:
            fig, shown = changed([F.empty_figure("importance", "this run directory names no comparisons")], shown)
            return fig, True, shown
        df = _rows(view, task, column, values)
        future = views.importance_of(version, view, spec, df, (choice, task, column, tuple(values or ())))
        if not future.done():
            fig = F.empty_figure("importance", f"{spec.name}: computing the importance of the hyperparameters …")
            fig.layout.meta = {"id": "importance", "empty": True, "pending": True}
            fig, shown = changed([fig], shown)
            return fig, False, shown
        fig, shown = changed([SF.importance_figure(future.result(), spec.name)], shown)
        return fig, True, shown

    @app.callback(Output("trials", "options"), Output("trials", "value"), Input("choice", "value"),
                  Input("version", "data"), Input("trials", "search_value"), State("trials", "value"))
    @computing
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

    @app.callback(Output("curves", "figure"), Output("confusion", "figure"), Output("drawn-single", "data"),
                  Input("trials", "value"), Input("version", "data"), State("drawn-single", "data"))
    @computing
    def _single(keys, version, shown):
        view = views.get(version)
        keys = keys or []
        return changed([F.curves_figure(view.epochs, view.df, keys), F.confusion_figure(view.confusion, view.df, keys)],
                       shown)

    app.views = views           # the app's state, for tools and tests
    return app


def serve(run_dir: str | Path, *, host: str = "127.0.0.1", port: int = 8050, interval_s: float = 2.0,
          token: str | None = None) -> None:
    """Serve the dashboard until interrupted; with ``token``, every request
    must carry it (:func:`require_token`) -- the command line insists on one
    when ``host`` is not loopback.

    A refresh of a 50,000-trial directory allocates and frees a few hundred
    megabytes of arrays; handed back to the system each time, every refresh
    faults them in again. So this process keeps them: its Arrow buffers come
    from the system allocator unless ``ARROW_DEFAULT_MEMORY_POOL`` says
    otherwise (Arrow's default, mimalloc, returns freed pages within
    milliseconds), and glibc's malloc keeps up to 1 GiB of freed memory and
    serves arrays up to 512 MiB from its heap (:func:`analysis.pages.liveview.keep_freed_memory`).
    The objects alive once the app is made are left out of the cycle
    collector's full passes (:func:`analysis.pages.liveview.freeze_startup`)."""
    import os

    import pyarrow as pa

    if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:
        pa.set_memory_pool(pa.system_memory_pool())
    keep_freed_memory()
    app = create_app(run_dir, interval_s=interval_s)
    if token:
        require_token(app.server, token)
    freeze_startup()            # the cycle collector's full passes skip the start-up objects
    query = f"?token={token}" if token else ""
    print(f"seedsweep dashboard for {run_dir}: http://{host}:{port}/{query}  (Ctrl-C stops it)", flush=True)
    app.run(host=host, port=port, debug=False)
