"""The statistics behind the report's and the dashboard's evp, importance,
dominance and parallel figures and tables, computed once per comparison and
task (:class:`ChoiceStats`) and shared by both.

* **evp** -- per task and option, expected validation performance
  (:func:`analysis.stats.evp.expected_selected`): the draws are the option's
  finished runs of the comparison (one configuration and seed each, status
  ``ok`` with a dev and a test score); the best-dev run of n draws is
  selected and its test score plotted, n on a log grid from 1 to N, without
  replacement (n = 1: the mean test score; n = N: the best-dev run's).
* **importance** -- per task, fANOVA main-effect importance
  (:func:`analysis.stats.importance.fanova`) of every hyperparameter that varies
  among the comparison's rows, the compared choice included; at most
  :data:`IMPORTANCE_ROWS` rows per task, 32 trees (the figure and the table
  say how many rows).
* **dominance** -- per task, :func:`analysis.stats.dominance.dominance` of the
  comparison.
* **parallel** -- per task, one line per (paired configuration, option):
  the option, the configuration's hyperparameters, its mean score over seeds
  (the comparison's table) and the configuration's winning option; at most
  :data:`PARALLEL_CONFIGS` configurations per task: those with the smallest
  hashes of their labels (``pandas.util.hash_array`` keyed by ``seed``), so a
  running study's new configuration joins only if its hash is among them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..specs import ComparisonSpec, rows_where
from .dominance import Dominance, dominance
from .evp import expected_selected, log_grid
from .importance import Importance, fanova
from .paired import Comparison, compare_spec
from .pairing import RESULT_COLUMNS, PairedRows, by_config, paired_rows

__all__ = ["EVPCurve", "ChoiceStats", "choice_stats", "paired_of", "Computed", "compute", "ImportanceGroup",
           "importance_groups", "start_importance", "evp_curves", "importance_by_task", "parallel_table", "hyperparameters",
           "comparison_rows", "IMPORTANCE_ROWS", "IMPORTANCE_TREES", "PARALLEL_CONFIGS"]

IMPORTANCE_ROWS = 2000
IMPORTANCE_TREES = 32
PARALLEL_CONFIGS = 200
MAX_CATEGORIES = 500          # a text column with more distinct values is an identifier, not a setting


@dataclass(frozen=True)
class EVPCurve:
    """Expected test score of the best-dev run after ``n`` draws, ± ``sd``."""

    option: str
    N: int
    n: np.ndarray
    mean: np.ndarray
    sd: np.ndarray


@dataclass
class ChoiceStats:
    """Everything the new figures and tables of one comparison show."""

    spec: ComparisonSpec
    evp: dict[str, list[EVPCurve]] = field(default_factory=dict)           # task -> curves
    dominance: dict[str, Dominance | None] = field(default_factory=dict)   # task -> pairs
    parallel: dict[str, pd.DataFrame] = field(default_factory=dict)        # task -> lines
    parallel_configs: dict[str, tuple[int, int]] = field(default_factory=dict)  # task -> (shown, paired)
    hyperparameters: list[str] = field(default_factory=list)


def comparison_rows(df: pd.DataFrame, spec: ComparisonSpec) -> pd.DataFrame:
    """The rows a comparison is computed from: its row filter, and in
    seedsweep's layout the rows of its choice."""
    rows = rows_where(df, spec.where)
    if by_config(rows, spec.choice):
        rows = rows[(rows["choice"] == spec.choice).fillna(False).to_numpy(dtype=bool)]
    return rows


def hyperparameters(rows: pd.DataFrame, spec: ComparisonSpec, results=()) -> list[str]:
    """The settings that vary among ``rows``, the compared choice first: every
    column but identity, outcome and result columns and the row filter's."""
    skip = set(RESULT_COLUMNS) | set(results) | {"study", "task", "metric"} | set(spec.where)
    out = []
    for c in rows.columns:
        if c in skip or c == spec.choice:
            continue
        s = rows[c]
        distinct = s.nunique(dropna=False)
        if distinct <= 1:
            continue
        numeric = pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)
        if not numeric and distinct > MAX_CATEGORIES:
            continue
        out.append(c)
    return ([spec.choice] if spec.choice in rows.columns else []) + out


def _sign(spec: ComparisonSpec) -> float:
    return -1.0 if spec.mode == "min" else 1.0


def _rows(df: pd.DataFrame, spec: ComparisonSpec, results) -> tuple[PairedRows, list[str]]:
    return paired_rows(df, spec.choice, spec.options, "test_score", tuple(spec.ignore), tuple(results), by="task")


def evp_curves(df: pd.DataFrame, spec: ComparisonSpec, results=(), *, points: int = 60,
               rows: tuple[PairedRows, list[str]] | None = None) -> dict[str, list[EVPCurve]]:
    """Per task, the EVP curve of every option (module docstring); {} when the
    rows have no dev score. ``rows``: ``df``'s paired rows, if computed already."""
    if "dev_score" not in df.columns or "test_score" not in df.columns:
        return {}
    rows, options = rows or _rows(df, spec, results)
    dev = df["dev_score"].to_numpy(dtype=float)[rows.index]
    ok = (rows.status == "ok") & np.isfinite(rows.score) & np.isfinite(dev)
    sign = _sign(spec)
    out: dict[str, list[EVPCurve]] = {}
    for task in sorted(set(rows.group)):
        curves = []
        for i, o in enumerate(options):
            m = ok & (rows.group == task) & (rows.opt == i)
            N = int(m.sum())
            if N == 0:
                continue
            n = log_grid(N, points)
            mean, sd = expected_selected(sign * dev[m], sign * rows.score[m], n)
            curves.append(EVPCurve(o, N, n, sign * mean, sd))
        if curves:
            out[str(task)] = curves
    return out


def parallel_table(df: pd.DataFrame, spec: ComparisonSpec, by_task: dict[str, Comparison], results=(), *,
                   max_configs: int = PARALLEL_CONFIGS, seed: int = 0,
                   rows: tuple[PairedRows, list[str]] | None = None
                   ) -> tuple[dict[str, pd.DataFrame], dict[str, tuple[int, int]], list[str]]:
    """Per task, one row per (paired configuration, option): the option (column
    ``spec.choice``), the hyperparameters, ``score`` and ``winner``; the
    (shown, paired) configuration counts; the hyperparameter columns."""
    params = [p for p in hyperparameters(comparison_rows(df, spec), spec, results)
              if p != spec.choice and p not in spec.ignore]
    prs, _ = rows or _rows(df, spec, results)
    labels_all = prs.label.astype(str)
    out, counts = {}, {}
    for task, c in by_task.items():
        if not c.n or c.table is None:
            continue
        table = c.table
        labels = np.sort(table.index.to_numpy(dtype=object).astype(str))
        shown = labels
        if len(labels) > max_configs:
            # the configurations with the smallest seeded hashes of their labels: a new
            # configuration joins only if its hash is among them, so the lines of a running
            # study stay the same from one refresh to the next
            hashed = pd.util.hash_array(labels, hash_key=f"{seed:016d}")
            shown = np.sort(labels[np.argsort(hashed, kind="stable")[:max_configs]])
        keep = table[table.index.astype(str).isin(shown)]
        values = keep.to_numpy(dtype=float)
        better = values if c.mode == "max" else -values
        winner = np.asarray(c.options, dtype=object)[np.argmax(better, axis=1)]
        in_task = np.flatnonzero(prs.group == task)
        uniq, first = np.unique(labels_all[in_task], return_index=True)      # each label's first row
        where = prs.index[in_task[first[np.searchsorted(uniq, keep.index.to_numpy(dtype=object).astype(str))]]]
        settings = df.iloc[where][params].reset_index(drop=True)
        frames = []
        for i, o in enumerate(c.options):
            f = settings.copy()
            f.insert(0, spec.choice, o)
            f["score"] = values[:, i]
            f["winner"] = winner
            f["configuration"] = keep.index.astype(str)
            frames.append(f)
        out[task] = pd.concat(frames, ignore_index=True)
        counts[task] = (len(keep), int(c.n))
    return out, counts, params


def importance_by_task(df: pd.DataFrame, spec: ComparisonSpec, results=(), *, seed: int = 0,
                       max_rows: int = IMPORTANCE_ROWS, n_trees: int = IMPORTANCE_TREES
                       ) -> dict[str, Importance | str]:
    """Per task, fANOVA importance of the comparison's hyperparameters, or the
    reason there is none (fewer than two finished rows, nothing varies)."""
    rows = comparison_rows(df, spec)
    out: dict[str, Importance | str] = {}
    tasks = rows["task"].astype(object).where(rows["task"].notna(), "").astype(str) if "task" in rows else None
    for task in (sorted(tasks.unique()) if tasks is not None else [""]):
        sub = rows[(tasks == task).to_numpy()] if tasks is not None else rows
        params = hyperparameters(sub, spec, results)
        if len(params) == 0:
            out[task] = "no hyperparameter varies"
            continue
        try:
            out[task] = fanova(sub, params, seed=seed, max_rows=max_rows, n_trees=n_trees)
        except ValueError as exc:
            out[task] = str(exc)
    return out


def importance_key(df: pd.DataFrame, spec: ComparisonSpec) -> tuple:
    """Comparisons with the same key are computed from the same rows, so
    their importance is the same (the R&G import's eight comparisons share one)."""
    return (repr(sorted(spec.where.items())), spec.choice if by_config(df, spec.choice) else None)


def paired_of(df: pd.DataFrame, spec: ComparisonSpec, results=()) -> tuple[PairedRows, list[str]]:
    """The paired rows of ``spec`` among ``df``'s rows its filter keeps: what
    :func:`analysis.stats.paired.compare_spec` and :func:`choice_stats` both start from."""
    return _rows(rows_where(df, spec.where), spec, results)


def choice_stats(df: pd.DataFrame, spec: ComparisonSpec, by_task: dict[str, Comparison], results=(), *,
                 n_bootstrap: int = 1000, seed: int = 0, paired: tuple | None = None) -> ChoiceStats:
    """evp, dominance and parallel of one comparison (importance, slower and
    shared between comparisons of the same rows, is :func:`importance_by_task`);
    ``paired``: :func:`paired_of` of the same arguments, if computed already."""
    df = rows_where(df, spec.where)
    paired = paired or _rows(df, spec, results)
    stats = ChoiceStats(spec)
    stats.evp = evp_curves(df, spec, results, rows=paired)
    stats.dominance = {t: dominance(c, confidence=c.confidence, n_bootstrap=n_bootstrap, seed=seed)
                       for t, c in by_task.items()}
    stats.parallel, stats.parallel_configs, stats.hyperparameters = parallel_table(df, spec, by_task, results,
                                                                                  seed=seed, rows=paired)
    return stats


@dataclass
class ImportanceGroup:
    """One importance computation and the comparisons whose rows it covers."""

    names: list[str]
    spec: ComparisonSpec
    by_task: dict[str, Importance | str]


@dataclass
class Computed:
    """Every comparison per task, its :class:`ChoiceStats` and the importance
    groups: what the report's tables and figures are drawn from, computed once."""

    df: pd.DataFrame
    results: list[str]
    by_task: dict[str, dict[str, Comparison]]         # comparison name -> task -> Comparison
    stats: dict[str, ChoiceStats]
    importance: list[ImportanceGroup]


def importance_groups(df: pd.DataFrame, specs: list[ComparisonSpec], results=(), *, seed: int = 0
                      ) -> list[ImportanceGroup]:
    """Importance once per set of rows (:func:`importance_key`)."""
    groups: dict[tuple, ImportanceGroup] = {}
    for spec in specs:
        key = importance_key(df, spec)
        if key in groups:
            groups[key].names.append(spec.name)
        else:
            groups[key] = ImportanceGroup([spec.name], spec, {})
    for g in groups.values():
        g.by_task = importance_by_task(df, g.spec, results, seed=seed)
    return list(groups.values())


def start_importance(df: pd.DataFrame, specs: list[ComparisonSpec], results=(), *, seed: int = 0):
    """:func:`importance_groups`, started beside the caller (a Future).

    The forests and the effects hold the GIL for much of their time, so in a
    thread they would slow the rest of the report down. When the caller is
    the process's only thread (``seedsweep report``, a script), the work runs
    in a forked worker process on another core; forking is safe there
    because no other thread can hold a lock. Otherwise (a notebook kernel, the
    dashboard's server) it runs in a thread. Spawning is avoided: it would
    re-import the caller's main module, which breaks scripts without a
    ``__main__`` guard."""
    import multiprocessing
    import threading
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

    args = (df, list(specs), list(results))
    if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"))
    else:
        pool = ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(importance_groups, *args, seed=seed)
    finally:
        pool.shutdown(wait=False)                # the worker ends once its one job is done


def compute(df: pd.DataFrame, specs: list[ComparisonSpec], results=(), *, n_bootstrap: int = 1000,
            seed: int = 0, by_task: dict[str, dict[str, Comparison]] | None = None) -> Computed:
    """Everything of :class:`Computed`; the importance groups are computed
    meanwhile in a worker process (:func:`start_importance`)."""

    results = list(results)
    pending = start_importance(df, specs, results, seed=seed)
    comparisons = dict(by_task or {})
    stats = {}
    for spec in specs:
        if spec.name not in comparisons:
            comparisons[spec.name] = compare_spec(df, spec, results, n_bootstrap=n_bootstrap, seed=seed)
        stats[spec.name] = choice_stats(df, spec, comparisons[spec.name], results, n_bootstrap=n_bootstrap,
                                        seed=seed)
    return Computed(df, results, comparisons, stats, pending.result())
