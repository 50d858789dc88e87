"""How much the random seed alone moves a score (the paper's Tables 1 and 2).

* :func:`seed_variance` -- Table 2: for every configuration run with at least
  two finished seeds, max − min of its scores; per task the median, the 95th
  percentile and the maximum of that spread.
* :func:`seed_distribution` / :func:`seed_distributions` -- Table 1: for one
  fixed configuration run with many seeds: n, min, median, max, σ (ddof = 1).
* :func:`ks_test` -- Kolmogorov–Smirnov between two systems' seed
  distributions.

A "configuration" here is a trained network: in seedsweep's own run
directories (config_id, choice, option); in imported data, rows that agree on
every column except the score and the result columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from .pairing import RESULT_COLUMNS, as_text, finished, pair_ids

__all__ = ["seed_variance", "seed_distribution", "seed_distributions", "ks_test", "SeedDistribution", "selection_scores"]


def _network_ids(df: pd.DataFrame, score: str, results: Iterable[str]) -> np.ndarray:
    if "config_id" in df.columns and len(df) and df["config_id"].notna().all():
        keys = ["config_id"] + [c for c in ("choice", "option") if c in df.columns]
    else:
        drop = {score, *results, *RESULT_COLUMNS}
        keys = [c for c in df.columns if c not in drop]
    return pair_ids(df, keys)


def seed_variance(df: pd.DataFrame, *, by: str = "task", score: str = "test_score",
                  results: Iterable[str] = ()) -> pd.DataFrame:
    """Seed variance per task: one row per task with ``configurations`` (run
    with ≥ 2 finished seeds), ``median``, ``p95`` and ``max`` of their
    max − min score spread (fractions, like the scores).

    >>> seed_variance(load(run_dir))[["task", "configurations"]].to_dict("records")
    [{'task': 'synthetic', 'configurations': 12}]
    """
    out = []
    for task, spread in seed_spreads(df, by=by, score=score, results=results).items():
        out.append({"task": str(task), "configurations": int(len(spread)),
                    "median": float(np.median(spread)) if len(spread) else float("nan"),
                    "p95": float(np.percentile(spread, 95)) if len(spread) else float("nan"),
                    "max": float(spread.max()) if len(spread) else float("nan")})
    return pd.DataFrame(out, columns=["task", "configurations", "median", "p95", "max"])


def seed_spreads(df: pd.DataFrame, *, by: str = "task", score: str = "test_score",
                 results: Iterable[str] = ()) -> dict[str, np.ndarray]:
    """Per task, the sorted max − min score spread of every configuration
    (network) with ≥ 2 finished seeds: what the seed-variance table and the
    dashboard's ECDF summarise."""
    ok = finished(df, score)
    groups = ok[by].fillna("").astype(str) if by in ok.columns else pd.Series("", index=ok.index)
    out = {}
    for task, sub in ok.groupby(groups, sort=True):
        ids = _network_ids(sub, score, results)
        g = pd.DataFrame({"id": ids, "s": sub[score].to_numpy(dtype=float)}).groupby("id")["s"]
        out[str(task)] = np.sort((g.max() - g.min())[g.size() >= 2].to_numpy())
    return out


@dataclass(frozen=True)
class SeedDistribution:
    """n, min, median, max and σ (ddof = 1) of one configuration's seed scores."""

    n: int
    min: float
    median: float
    max: float
    sd: float


def seed_distribution(scores: Sequence[float]) -> SeedDistribution:
    """The paper's Table 1 row for one configuration's scores over seeds.

    >>> d = seed_distribution([0.90, 0.91, 0.93])
    >>> d.n, d.min, d.median, d.max, round(d.sd, 6)
    (3, 0.9, 0.91, 0.93, 0.015275)
    """
    v = np.asarray(scores, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return SeedDistribution(0, float("nan"), float("nan"), float("nan"), float("nan"))
    return SeedDistribution(n=int(len(v)), min=float(v.min()), median=float(np.median(v)), max=float(v.max()),
                            sd=float(np.std(v, ddof=1)) if len(v) > 1 else float("nan"))


def seed_distributions(df: pd.DataFrame, by: Sequence[str], *, score: str = "test_score") -> pd.DataFrame:
    """:func:`seed_distribution` of every group of ``by`` (e.g. ``["config_id",
    "option"]`` or ``["option"]``), finished rows only; one row per group."""
    ok = finished(df, score)
    rows = []
    for key, sub in ok.groupby(list(by), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        d = seed_distribution(sub[score].to_numpy(dtype=float))
        rows.append(dict(zip(by, key)) | {"n": d.n, "min": d.min, "median": d.median, "max": d.max, "sd": d.sd})
    return pd.DataFrame(rows, columns=list(by) + ["n", "min", "median", "max", "sd"])


def option_distributions(df: pd.DataFrame, choice: str, *, by: str = "task", score: str = "test_score"
                         ) -> pd.DataFrame:
    """Per task and option of ``choice``: n, min, median, max, sd of every
    finished run's score, ``peeking_gain`` (median of ``test_score_max`` −
    ``test_score``: what choosing the epoch by the test set would have added)
    and ``not_ok`` (rows of that option that diverged or failed)."""
    cols = [by, "option", "n", "min", "median", "max", "sd", "peeking_gain", "not_ok"]
    if choice not in df.columns or not len(df):
        return pd.DataFrame(columns=cols)
    ok = finished(df, score)
    task = (lambda d: as_text(d[by])) if by in df.columns else (lambda d: pd.Series("", index=d.index))
    not_ok = df[~df.index.isin(ok.index)].groupby([task(df[~df.index.isin(ok.index)]),
                                                  as_text(df.loc[~df.index.isin(ok.index), choice])]).size()
    rows = []
    for (t, option), sub in ok.groupby([task(ok), as_text(ok[choice])], sort=True):
        d = seed_distribution(sub[score].to_numpy(dtype=float))
        gain = (sub["test_score_max"] - sub[score]).to_numpy(dtype=float) if "test_score_max" in sub else np.empty(0)
        gain = gain[np.isfinite(gain)]
        rows.append({by: t, "option": option, "n": d.n, "min": d.min, "median": d.median, "max": d.max, "sd": d.sd,
                     "peeking_gain": float(np.median(gain)) if len(gain) else float("nan"),
                     "not_ok": int(not_ok.get((t, option), 0))})
    return pd.DataFrame(rows, columns=cols)


def selection_scores(df: pd.DataFrame, choice: str, *, by: str = "task") -> pd.DataFrame:
    """Per task and option of ``choice``, the mean test score of its finished
    runs under three epoch-selection rules: the best dev epoch's
    (``test_score``, what seedsweep reports), the last epoch's
    (``test_score_last``: no model selection) and the best test epoch's
    (``test_score_max``: peeking at the test set). Empty when the trials do
    not record the last epoch's score (imported data, older run directories);
    trials whose program tests once, at its end (``test_protocol``
    ``program``), are left out: they have no test score per epoch."""
    cols = [by, "option", "n", "best_dev", "last", "best_test"]
    need = {"test_score", "test_score_last", "test_score_max", choice}
    if "test_protocol" in df.columns:       # a program that tests once, at its end: no epoch to select
        df = df[df["test_protocol"].astype("string").fillna("") != "program"]
    if not need <= set(df.columns) or df["test_score_last"].isna().all():
        return pd.DataFrame(columns=cols)
    ok = finished(df, "test_score")
    task = ok[by].astype(str) if by in ok.columns else pd.Series("", index=ok.index)
    rows = []
    for (t, option), sub in ok.groupby([task, ok[choice].astype(str)], sort=True):
        mean = lambda c: float(np.nanmean(sub[c].to_numpy(dtype=float)))  # noqa: E731
        rows.append({by: t, "option": option, "n": len(sub), "best_dev": mean("test_score"),
                     "last": mean("test_score_last"), "best_test": mean("test_score_max")})
    return pd.DataFrame(rows, columns=cols)


def ks_test(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Two-sample Kolmogorov–Smirnov test of two seed distributions: (D, p)."""
    res = stats.ks_2samp(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    return float(res.statistic), float(res.pvalue)
