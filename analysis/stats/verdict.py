"""Verdicts on claims (docs/reference/statistics.md, "Claims and verdicts"): pure functions of an
estimate, its interval, a target and a rule.

Rules, with e the estimate, [lo, hi] its interval and w = max(e − lo, hi − e):

* ``interval`` (``gate`` g, optional ``tolerance`` t, default 0): the target
  band is [target − t, target + t]. No overlap of the band with [lo, hi] →
  not reproduced; else w ≤ g → reproduced; else inconclusive (the interval
  reaches the target but is wider than the gate allows).
* ``above``: lo > target → reproduced; hi ≤ target → not reproduced; else
  inconclusive. ``below`` mirrors it.
* ``band`` t: |e − target| ≤ t → reproduced, else not reproduced. It ignores
  the run-to-run spread, and every verdict it gives says so.
* ``best`` (rank claims): the option's mean rank strictly lowest →
  reproduced; a shared lowest rank is not a best → not reproduced.

The estimates: :func:`value_estimate` (a statistic of every run's score with
its t- or bootstrap interval), :func:`mean_ranks` (average ranks per block,
mean over blocks as exact fractions) and :func:`rank_interval`. The outcome of
a claims file (:func:`outcome`): all reproduced → reproduced; some →
partially reproduced; none → not reproduced.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from seedsweep.study.spec.claimsfile import Rule

__all__ = ["Verdict", "verdict", "outcome", "value_estimate", "ValueEstimate", "mean_ranks",
           "rank_interval", "rank_verdict", "percentile_interval", "REPRODUCED", "NOT_REPRODUCED", "INCONCLUSIVE",
           "BAND_WARNING"]

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"
BAND_WARNING = "a fixed band ignores the run-to-run spread"
@dataclass(frozen=True)
class Verdict:
    verdict: str                        # reproduced | not reproduced | inconclusive
    why: str                            # one sentence
    estimate: float
    interval: tuple[float, float]
    target: float
    rule: Rule
    warning: str | None = None          # the band rule's


def verdict(estimate: float, interval: tuple[float, float], target: float, rule: Rule) -> Verdict:
    """The verdict of ``rule`` on an estimate and its interval (module docstring).

    >>> verdict(0.70, (0.68, 0.72), 0.71, Rule("interval", gate=0.03)).verdict
    'reproduced'
    >>> verdict(0.70, (0.60, 0.80), 0.71, Rule("interval", gate=0.03)).verdict
    'inconclusive'
    """
    e, (lo, hi), t = float(estimate), (float(interval[0]), float(interval[1])), float(target)
    if not (math.isfinite(e) and math.isfinite(lo) and math.isfinite(hi)) and rule.kind != "band":
        return Verdict(INCONCLUSIVE, "there is no finite estimate with an interval to judge.", e, (lo, hi), t, rule)
    if rule.kind == "interval":
        a, b = t - rule.tolerance, t + rule.tolerance
        w = max(e - lo, hi - e)
        where = f"[{lo:.4g}, {hi:.4g}]"
        if hi < a or lo > b:
            return Verdict(NOT_REPRODUCED, f"the interval {where} excludes the target {_band(t, rule.tolerance)}.",
                           e, (lo, hi), t, rule)
        if w <= rule.gate:
            return Verdict(REPRODUCED, f"the interval {where} reaches the target {_band(t, rule.tolerance)} and its "
                                       f"half-width {w:.4g} is within the gate {rule.gate:g}.", e, (lo, hi), t, rule)
        return Verdict(INCONCLUSIVE, f"the interval {where} reaches the target but its half-width {w:.4g} exceeds the "
                                     f"gate {rule.gate:g}: more runs are needed to tell.", e, (lo, hi), t, rule)
    if rule.kind in ("above", "below"):
        up = rule.kind == "above"
        if (lo > t) if up else (hi < t):
            return Verdict(REPRODUCED, f"the whole interval [{lo:.4g}, {hi:.4g}] is {rule.kind} {t:g}.", e, (lo, hi),
                           t, rule)
        if (hi <= t) if up else (lo >= t):
            return Verdict(NOT_REPRODUCED, f"the whole interval [{lo:.4g}, {hi:.4g}] is on the wrong side of {t:g}.",
                           e, (lo, hi), t, rule)
        return Verdict(INCONCLUSIVE, f"the interval [{lo:.4g}, {hi:.4g}] contains {t:g}.", e, (lo, hi), t, rule)
    if rule.kind == "band":
        ok = math.isfinite(e) and abs(e - t) <= rule.band
        return Verdict(REPRODUCED if ok else NOT_REPRODUCED,
                       f"|{e:.4g} − {t:g}| = {abs(e - t):.4g} is {'within' if ok else 'outside'} the band "
                       f"±{rule.band:g}.", e, (lo, hi), t, rule, warning=BAND_WARNING)
    raise ValueError(f"rule {rule.kind!r} does not judge an estimate (rank claims use rank_verdict)")


def _band(t: float, tol: float) -> str:
    return f"{t:g}" if not tol else f"{t:g} ± {tol:g}"


def outcome(verdicts: Sequence[str]) -> str:
    """reproduced (all), partially reproduced (some), not reproduced (none).

    >>> outcome(["reproduced", "inconclusive"])
    'partially reproduced'
    """
    n = sum(v == REPRODUCED for v in verdicts)
    if verdicts and n == len(verdicts):
        return REPRODUCED
    return "partially reproduced" if n else NOT_REPRODUCED


@dataclass(frozen=True)
class ValueEstimate:
    estimate: float
    interval: tuple[float, float]
    n: int                              # runs with a score
    collapsed: int                      # of them collapsed or diverged
    without: float                      # the statistic without those runs
    statistic: str


def percentile_interval(boots: np.ndarray, confidence: float) -> tuple[float, float]:
    """The percentile bootstrap interval of resampled estimates at ``confidence``."""
    lo, hi = np.quantile(boots, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(lo), float(hi)


def value_estimate(scores: Sequence[float], *, statistic: str = "mean", confidence: float = 0.95,
                   collapsed: Sequence[bool] | None = None, n_bootstrap: int = 2000, seed: int = 0) -> ValueEstimate:
    """The statistic of every run's score with its interval: the mean with a
    t-interval, or the median with a percentile bootstrap over runs. Runs
    without a finite score are left out; collapsed or diverged runs that have
    a score are *in* (``collapsed`` marks them, and ``without`` is the
    statistic without them, for the report).

    >>> v = value_estimate([1.0, 2.0, 3.0])
    >>> v.estimate, [round(x, 4) for x in v.interval]
    (2.0, [-0.4841, 4.4841])
    """
    x = np.asarray(scores, dtype=float)
    bad = np.zeros(len(x), dtype=bool) if collapsed is None else np.asarray(collapsed, dtype=bool)
    ok = np.isfinite(x)
    x, bad = x[ok], bad[ok]
    if statistic not in ("mean", "median"):
        raise ValueError(f"statistic must be mean or median, got {statistic!r}")
    f = np.mean if statistic == "mean" else np.median
    n = len(x)
    if n == 0:
        return ValueEstimate(float("nan"), (float("nan"), float("nan")), 0, 0, float("nan"), statistic)
    e = float(f(x))
    if n < 2:
        lo = hi = float("nan")
    elif statistic == "mean":
        half = float(stats.t.ppf((1 + confidence) / 2, n - 1) * np.std(x, ddof=1) / math.sqrt(n))
        lo, hi = e - half, e + half
    else:
        rng = np.random.default_rng(seed)
        lo, hi = percentile_interval(np.median(x[rng.integers(0, n, size=(n_bootstrap, n))], axis=1), confidence)
    without = float(f(x[~bad])) if (~bad).any() else float("nan")
    return ValueEstimate(e, (lo, hi), n, int(bad.sum()), without, statistic)


def mean_ranks(table: pd.DataFrame, *, higher_is_better: bool = True) -> dict[str, Fraction]:
    """Per block (row) rank the options (columns) by score, ties getting the
    average rank (1 = best); the mean rank over blocks of each option, as an
    exact fraction. Blocks with a missing score are left out.

    >>> t = pd.DataFrame({"a": [0.9, 0.8], "b": [0.9, 0.7], "c": [0.1, 0.9]})
    >>> {k: str(v) for k, v in mean_ranks(t).items()}
    {'a': '7/4', 'b': '9/4', 'c': '2'}
    """
    t = table.dropna()
    values = t.to_numpy(dtype=float) * (1.0 if higher_is_better else -1.0)
    total = {c: Fraction(0) for c in t.columns}
    for row in values:
        for c, r in zip(t.columns, stats.rankdata(-row, method="average")):
            total[c] += Fraction(r).limit_denominator(2)          # average ranks are halves
    return {c: v / len(values) for c, v in total.items()} if len(values) else {c: Fraction(0) for c in t.columns}


def rank_interval(table: pd.DataFrame, option: str, *, confidence: float = 0.95, n_bootstrap: int = 2000,
                  higher_is_better: bool = True, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of ``option``'s mean rank, resampling blocks."""
    t = table.dropna()
    ranks = np.array([stats.rankdata(-(row if higher_is_better else -row), method="average")
                      for row in t.to_numpy(dtype=float)])
    col = list(t.columns).index(option)
    rng = np.random.default_rng(seed)
    return percentile_interval(ranks[rng.integers(0, len(ranks), size=(n_bootstrap, len(ranks))), col].mean(axis=1),
                               confidence)


def rank_verdict(ranks: Mapping[str, Fraction], option: str, interval: tuple[float, float] = (math.nan, math.nan)
                 ) -> Verdict:
    """The ``best`` rule: ``option``'s mean rank strictly the lowest.

    >>> rank_verdict({"a": Fraction(3, 2), "b": Fraction(3, 2)}, "a").verdict
    'not reproduced'
    """
    mine = ranks[option]
    lowest = min(ranks.values())
    shared = [o for o, r in ranks.items() if r == lowest]
    rule = Rule("best")
    if mine == lowest and len(shared) == 1:
        why = f"{option}'s mean rank {mine} is the lowest."
        return Verdict(REPRODUCED, why, float(mine), interval, float(lowest), rule)
    if mine == lowest:
        why = f"{option} shares the lowest mean rank {mine} with {', '.join(o for o in shared if o != option)}: " \
              "a shared best is not a best."
    else:
        why = f"{option}'s mean rank {mine} is above the lowest, {lowest} ({', '.join(shared)})."
    return Verdict(NOT_REPRODUCED, why, float(mine), interval, float(lowest), rule)
