"""Judging the claims of a claims file (docs/reference/statistics.md, "Claims and verdicts") on a
run directory's trials; the file format itself is :mod:`study.spec.claimsfile`.

A claim's estimate, by kind (confidence from the claim or the file, 0.95 by
default):

* ``value`` -- ``statistic`` (mean or median) of ``score`` over every run
  matching ``where``, collapsed and diverged runs included when they have a
  score (:func:`analysis.stats.verdict.value_estimate`);
* ``share`` -- ``option``'s win share in the comparison of ``choice`` on the
  rows matching ``where``, with a percentile bootstrap over the paired
  configurations;
* ``delta`` -- with ``score: [a, b]`` the median over runs of a − b (the
  paired difference of two score columns per run); with ``choice``,
  ``option`` and ``other`` the median over paired configurations of
  score(option) − score(other); percentile bootstrap intervals. ``unit:
  seed`` pairs each seed of a configuration instead (the same initialisation
  and data order under every option): for populations, where one
  configuration is run over many seeds;
* ``rank`` -- per block (``blocks``, default ``task``) the options' mean
  scores (``statistic``: mean, median, or sd -- then the largest spread
  ranks first) ranked, ties averaged; ``option``'s mean rank over blocks as an
  exact fraction, interval by bootstrap over blocks; rule ``best``.

In an adaptive study (``until:``) the intervals are anytime-valid
(``judge(..., anytime=True)``, :mod:`analysis.stats.anytime`): the same
estimates, with intervals that hold at a data-dependent stop. A rank claim
then shows no interval (its ``best`` rule judges the mean ranks alone and has
no gate to wait for).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pandas as pd

from seedsweep.study.errors import UserError
from seedsweep.study.spec.claimsfile import Claim

from ..specs import rows_where
from .anytime import ClaimPath, claim_path
from .paired import compare
from .significance import bootstrap_median
from .verdict import (INCONCLUSIVE, Verdict, mean_ranks, percentile_interval, rank_interval, rank_verdict,
                      value_estimate, verdict)

__all__ = ["ClaimResult", "judge", "claim_sequence", "gated", "GATED_RULES", "EMPTY_WHY"]

#: the rules that can say "inconclusive": a claim with one of them has a gate that an
#: ``until.claims: true`` study waits for (band and best judge the estimate alone)
GATED_RULES = ("interval", "above", "below")

@dataclass(frozen=True)
class ClaimResult:
    claim: Claim
    verdict: Verdict
    n: int                                  # runs, paired configurations or blocks behind the estimate
    collapsed: int = 0                      # value claims: collapsed or diverged runs with a score, counted in
    without: float = float("nan")           # value claims: the statistic without them
    rank: Fraction | None = None            # rank claims: the exact mean rank
    collapsed_keys: tuple[str, ...] = ()    # value claims: the trial keys of the collapsed or diverged runs
    anytime: str = ""                       # anytime-valid judging: which sequence gave the interval
    reached_at: int | None = None           # anytime-valid judging: configurations from which the verdict is final


def gated(claim: Claim) -> bool:
    """Whether ``claim``'s rule has a gate (it can say inconclusive), which ``until.claims`` waits for."""
    return claim.rule.kind in GATED_RULES


def judge(claim: Claim, df: pd.DataFrame, *, results=(), specs=(), n_bootstrap: int = 2000,
          seed: int = 0, anytime: bool = False, bounds: tuple[float, float] | None = None) -> ClaimResult:
    """The estimate, interval and verdict of one claim on a trials table.
    ``results`` and ``specs``: the run directory's result columns and
    comparisons (:func:`analysis.reading.load.comparisons_of`); a share or delta
    claim on a choice the directory compares pairs as that comparison does
    (its row filter, ignored columns and options). ``anytime``: the
    intervals of an adaptive study (module docstring); ``bounds``: the
    scores' [lo, hi], which a value claim's mean needs there."""
    spec = next((s for s in specs if s.choice == claim.choice), None)
    rows = rows_where(rows_where(df, spec.where) if spec is not None else df, claim.where)
    if anytime:
        return _judge_anytime(claim, rows, spec, results=results, n_bootstrap=n_bootstrap, seed=seed,
                              bounds=bounds)
    c = claim.confidence
    if claim.kind == "value":
        bad = np.zeros(len(rows), dtype=bool)
        if "status" in rows:
            bad = bad | (rows["status"].astype(str) == "diverged").to_numpy(dtype=bool)
        if "reason" in rows:
            bad = bad | rows["reason"].astype(str).str.startswith("collapsed").to_numpy(dtype=bool)
        scores = rows[claim.score[0]].to_numpy(dtype=float)
        v = value_estimate(scores, statistic=claim.statistic, confidence=c, collapsed=bad, n_bootstrap=n_bootstrap,
                           seed=seed)
        keys = tuple(rows["trial_key"].astype(str).to_numpy()[bad & np.isfinite(scores)]) if "trial_key" in rows else ()
        return ClaimResult(claim, verdict(v.estimate, v.interval, claim.target, claim.rule), v.n, v.collapsed,
                           v.without, collapsed_keys=keys)
    if claim.kind == "delta" and claim.choice is None:
        a, b = (rows[s].to_numpy(dtype=float) for s in claim.score)
        d = (a - b)[np.isfinite(a) & np.isfinite(b)]
        e = float(np.median(d)) if len(d) else float("nan")
        lo, hi = bootstrap_median(d, n_bootstrap=n_bootstrap, confidence=c, seed=seed)
        return ClaimResult(claim, verdict(e, (lo, hi), claim.target, claim.rule), len(d))
    if claim.kind in ("share", "delta"):
        cmp, table = _paired(claim, rows, spec, results=results, n_bootstrap=n_bootstrap, seed=seed)
        if claim.kind == "share":
            wins = _wins(claim, cmp, table)
            rng = np.random.default_rng(seed)
            boots = wins[rng.integers(0, len(wins), size=(n_bootstrap, len(wins)))].mean(axis=1) if len(wins) else \
                np.array([np.nan])
            return ClaimResult(claim, verdict(cmp.shares[claim.option], percentile_interval(boots, c), claim.target,
                                              claim.rule), cmp.n)
        d = (table[claim.option] - table[claim.other]).to_numpy(dtype=float)
        lo, hi = bootstrap_median(d, n_bootstrap=n_bootstrap, confidence=c, seed=seed)
        return ClaimResult(claim, verdict(float(np.median(d)), (lo, hi), claim.target, claim.rule), len(d))
    # rank
    ok = rows[(rows["status"] == "ok") if "status" in rows else slice(None)]
    column = claim.choice if claim.choice in ok else "option"
    groups = ok.assign(_o=ok[column].astype(str)).groupby([claim.blocks, "_o"])[claim.score[0]]
    means = groups.agg("std" if claim.statistic == "sd" else claim.statistic).unstack("_o")
    if claim.option not in means:
        raise UserError(f"claim {claim.id}", f"option {claim.option!r} has no finished run in these rows.",
                        "Fix the claim's option or its where filter.")
    ranks = mean_ranks(means)
    interval = rank_interval(means, claim.option, confidence=c, n_bootstrap=n_bootstrap, seed=seed)
    return ClaimResult(claim, rank_verdict(ranks, claim.option, interval), len(means.dropna()), rank=ranks[claim.option])


def _paired(claim: Claim, rows: pd.DataFrame, spec, *, results, n_bootstrap: int, seed: int):
    """The comparison of a share or delta claim's choice on ``rows`` and its table of paired units."""
    if claim.unit == "seed":          # the seed as a setting: (configuration, seed) is the paired unit
        run_seed = rows["seed"].astype(str)
        rows = rows.assign(config_id=rows["config_id"].astype(str) + "/seed=" + run_seed, pair_seed=run_seed)
    cmp = compare(rows, claim.choice, score=claim.score[0], n_bootstrap=n_bootstrap, seed=seed,
                  confidence=claim.confidence, options=spec.options if spec is not None else None, results=results,
                  ignore=spec.ignore if spec is not None else (), mode=spec.mode if spec is not None else "max")
    table = cmp.table if cmp.table is not None else pd.DataFrame()
    if claim.option not in table or (claim.kind == "delta" and claim.other not in table):
        missing = claim.option if claim.option not in table else claim.other
        raise UserError(f"claim {claim.id}", f"option {missing!r} is not an option of {claim.choice!r} "
                        f"in these rows (options: {', '.join(cmp.options)}).", "Fix the claim's option.")
    return cmp, table


def _wins(claim: Claim, cmp, table: pd.DataFrame) -> np.ndarray:
    """Per paired unit: the option's win (1, a share of a tie, or 0)."""
    values = table.to_numpy(dtype=float) * (1.0 if cmp.mode == "max" else -1.0)
    top = values == values.max(axis=1, keepdims=True)
    return (top / top.sum(axis=1, keepdims=True))[:, list(table.columns).index(claim.option)]


def _configurations(labels) -> np.ndarray:
    """The configuration of each unit label, pooled across studies and tasks: a
    pair's label is ``[study/][task/]config_id`` and a seed unit's ends in
    /seed=K; both give ``config_id`` (the anytime unit, module docstring of
    :mod:`analysis.stats.anytime`)."""
    return np.array([str(x).split("/seed=")[0].rsplit("/", 1)[-1] for x in labels], dtype=object)


def _run_clusters(rows: pd.DataFrame) -> np.ndarray:
    """Each run's configuration, pooled across the rows' studies and tasks (a
    row of its own where rows have no config_id)."""
    if "config_id" in rows:
        return rows["config_id"].astype(str).to_numpy(object)
    return np.array([f"r{i:08d}" for i in range(len(rows))], dtype=object)


def claim_sequence(claim: Claim, rows: pd.DataFrame, spec=None, *, results=(), bounds=None, n_bootstrap: int = 200,
                   seed: int = 0) -> ClaimPath | None:
    """The anytime-valid path of a claim's estimate and interval over its
    configurations in order (:func:`analysis.stats.anytime.claim_path`);
    None for a rank claim (no interval). ``rows`` are already filtered."""
    alpha = 1.0 - claim.confidence
    if claim.kind == "rank":
        return None
    if claim.kind == "value":
        values, clusters = rows[claim.score[0]].to_numpy(dtype=float), _run_clusters(rows)
        statistic = claim.statistic
    elif claim.kind == "delta" and claim.choice is None:
        a, b = (rows[s].to_numpy(dtype=float) for s in claim.score)
        values, clusters, statistic = a - b, _run_clusters(rows), "median"
    else:
        cmp, table = _paired(claim, rows, spec, results=results, n_bootstrap=n_bootstrap, seed=seed)
        clusters = _configurations(table.index)
        if claim.kind == "share":
            values, statistic, bounds = _wins(claim, cmp, table), "mean", (0.0, 1.0)
        else:
            values, statistic = (table[claim.option] - table[claim.other]).to_numpy(dtype=float), "median"
    order = np.argsort(clusters.astype(str), kind="stable")            # configuration order
    return claim_path(values[order], clusters[order], statistic=statistic, alpha=alpha, bounds=bounds)


def _judge_anytime(claim: Claim, rows: pd.DataFrame, spec, *, results, n_bootstrap: int, seed: int,
                   bounds) -> ClaimResult:
    """:func:`judge` with anytime-valid intervals (the module docstring)."""
    if claim.kind == "rank":
        result = judge(claim, rows, n_bootstrap=n_bootstrap, seed=seed)
        v = result.verdict
        return ClaimResult(claim, Verdict(v.verdict, v.why, v.estimate, (float("nan"), float("nan")), v.target,
                                          v.rule, v.warning), result.n, rank=result.rank,
                           anytime="no interval: the best rule judges the mean ranks alone")
    path = claim_sequence(claim, rows, spec, results=results, bounds=bounds, n_bootstrap=n_bootstrap, seed=seed)
    if not path.n:
        v = verdict(float("nan"), (float("nan"), float("nan")), claim.target, claim.rule)
        return ClaimResult(claim, v, 0, anytime=path.how)
    if claim.kind == "value" and claim.statistic == "mean" and bounds is None:
        e = float(path.estimate[-1])
        v = Verdict(INCONCLUSIVE, "an anytime-valid interval of a mean needs the scores' bounds, and this study "
                    "declares none: give until.range [lo, hi] in the study file (or judge the median).", e,
                    (float("nan"), float("nan")), float(claim.target), claim.rule)
        return ClaimResult(claim, v, path.n, anytime=path.how)
    empty = path.empty if path.empty is not None else np.zeros(path.n, dtype=bool)
    steps = [_empty_verdict(claim, float(e), path.n) if gone else
             verdict(float(e), (float(lo), float(hi)), claim.target, claim.rule)
             for e, lo, hi, gone in zip(path.estimate, path.lower, path.upper, empty)]
    final = steps[-1]
    reached = None
    if final.verdict != INCONCLUSIVE:
        reached = path.n
        while reached > 1 and steps[reached - 2].verdict != INCONCLUSIVE:
            reached -= 1
    if empty[-1]:
        reached = None
    extra = {}
    if claim.kind == "value":
        fixed = judge(claim, rows, n_bootstrap=n_bootstrap, seed=seed)
        extra = dict(collapsed=fixed.collapsed, without=fixed.without, collapsed_keys=fixed.collapsed_keys)
    return ClaimResult(claim, final, path.n, anytime=path.how, reached_at=reached, **extra)


#: why an anytime claim is inconclusive when its sequence rejected every value
EMPTY_WHY = ("inconclusive: the data disagree with every value (the anytime-valid sequence's running intersection "
             "is empty).")


def _empty_verdict(claim: Claim, estimate: float, n: int) -> Verdict:
    """The verdict of a claim whose anytime-valid sequence rejected every value: inconclusive, with a warning."""
    warning = (f"claim {claim.id}: after {n} configurations every candidate value was rejected, which happens with "
               "probability at most 1 - confidence when the configurations are independent draws of one law; "
               "check that the claim's rows do not drift (a filter mixing studies run at different times, a "
               "change of code between waves)")
    return Verdict(INCONCLUSIVE, EMPTY_WHY, estimate, (float("nan"), float("nan")),
                   float(claim.target) if claim.target is not None else float("nan"), claim.rule, warning)
