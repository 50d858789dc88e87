"""How many configurations will a comparison need, and which method spends
fewest while keeping its error rate? (``seedsweep plan SPACE --pilot DIR``)

From a pilot run directory, per pair of options and task of the study's
``until.decide``: the units the pilot holds (:func:`analysis.stats.decisions.units`)
and, beside the **fixed** design (a paired test at power 0.8 for the margin
``delta``, at the same per-sequence alpha as the adaptive study), every
``until.method`` simulated as the engine runs it (:mod:`analysis.stats.methods`)
on resamples of the pilot's units: the median and 90th-percentile
configurations to a decision at the pilot's own effect, and the rate of
false declarations on a **null version** of the same units (mean
differences less their mean; win units mirrored at random), the measured
error rate that a method must keep (within alpha + 3 SE of the resamples).
``method: spending`` runs at the budget recommended for power 0.8 at the
margin (:func:`analysis.stats.spending.recommend_budget`, from the pilot's
units shifted to the margin). Trials and training hours follow at the
pilot's speed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats

from seedsweep.study.spec.until import Until

from ..specs import ComparisonSpec, rows_where
from ..tables import Table
from seedsweep.study.spec.until import NORMAL_METHODS

from .units import units, worst_score
from .methods import METHODS, Outcomes, simulate
from .sequential import split_alpha
from .spending import recommend_budget

__all__ = ["PlanRow", "MethodPlan", "plan", "plan_table", "fixed_configurations", "cheapest"]

POWER = 0.8


@dataclass(frozen=True)
class MethodPlan:
    """One method on one pair: its budget in the simulation, the median and
    90th-percentile configurations to a decision at the pilot's effect, the
    share decided before that budget, the false-declaration rate on the null
    resamples, whether that rate keeps the level, and whether the method is
    offered without ``until.assume_normal``."""

    method: str
    budget: int
    median: float
    p90: float
    decided: float
    null_false: float
    keeps: bool
    offered: bool


@dataclass(frozen=True)
class PlanRow:
    """One pair of options on one task: the pilot's units, their spread, the
    fixed design's size and every method's simulation."""

    choice: str
    a: str
    b: str
    task: str
    pilot: int
    spread: float
    fixed: int | None
    methods: tuple[MethodPlan, ...] = ()


def fixed_configurations(values: np.ndarray, *, statistic: str, delta: float, alpha: float,
                         power: float = POWER) -> int | None:
    """Paired configurations for a two-sided test at ``alpha`` to reach
    ``power`` at an effect of ``delta`` (normal approximation): on the win
    share, a sign test against ½ at ½ + delta; on the mean, a paired t-test
    with the pilot's standard deviation (t quantiles, iterated). None when
    it cannot be sized.

    >>> fixed_configurations(np.array([0.01, -0.01] * 5), statistic="mean", delta=0.01, alpha=0.05)
    11
    """
    za, zb = stats.norm.ppf(1 - alpha / 2), stats.norm.ppf(power)
    if statistic == "share":
        if not 0 < delta < 0.5:
            return None
        p = 0.5 + delta
        return math.ceil(((za * 0.5 + zb * math.sqrt(p * (1 - p))) / delta) ** 2)
    sd = float(np.std(values, ddof=1)) if len(values) > 1 else float("nan")
    if not (delta > 0 and np.isfinite(sd)):
        return None
    n = max(2, math.ceil((za + zb) ** 2 * sd * sd / (delta * delta)))
    for _ in range(50):       # the t quantiles at n - 1 degrees of freedom instead of the normal's, to a fixed point
        ta, tb = stats.t.ppf(1 - alpha / 2, n - 1), stats.t.ppf(power, n - 1)
        nxt = max(2, math.ceil((ta + tb) ** 2 * sd * sd / (delta * delta)))
        if nxt == n:
            break
        n = nxt
    return n


def _draws(values: np.ndarray, statistic: str, *, shift: float | None = None):
    """``draw(rng, reps, n)``: resamples of ``values``, or (``shift``) moved
    to that effect: a mean's units less their mean plus it; a share's wins
    with probability 1/2 + shift among the pilot's non-ties (``shift`` 0: the
    null version of the units)."""
    def draw(rng: np.random.Generator, reps: int, n: int) -> np.ndarray:
        x = rng.choice(values, size=(reps, n), replace=True)
        if shift is None:
            return x
        if statistic == "share":
            return np.where(x == 0.5, 0.5, (rng.random((reps, n)) < 0.5 + shift).astype(float))
        return x - values.mean() + shift
    return draw


def plan(df: pd.DataFrame, until: Until, specs: list[ComparisonSpec], results=(), *, seeds: int | None = None,
         reps: int = 200, most: int = 1000, seed: int = 0, first: int = 4, wave: int = 1) -> list[PlanRow]:
    """Every (pair, task) of ``until.decide`` in the pilot ``df``: the fixed
    design and every method (:data:`analysis.stats.methods.METHODS`; the exact
    mean only with a range), the sequences capped at ``most``
    configurations, the study's first wave ``first`` and later waves ``wave``."""
    by_choice = {s.choice: s for s in specs}
    found = []
    for c in until.decide:
        spec = by_choice[c]
        rows = rows_where(df, spec.where)
        for a, b in combinations([str(o) for o in spec.options or []], 2):
            for task, u in units(rows, c, a, b, mode=spec.mode, statistic=until.statistic, seeds=seeds,
                                 ignore=spec.ignore, results=results, worst=worst_score(until, spec.mode)).items():
                found.append((c, a, b, task, u.values))
    alpha = split_alpha(until.alpha, max(len(found), 1))
    ceiling = alpha + 3 * math.sqrt(alpha * (1 - alpha) / reps)
    out = []
    for c, a, b, task, values in found:
        fixed = fixed_configurations(values, statistic=until.statistic, delta=until.delta, alpha=alpha)
        spread = float(np.std(values, ddof=1)) if len(values) > 1 else float("nan")
        methods = []
        for method in METHODS if len(values) else ():
            if method == "exact" and until.statistic == "mean" and until.range is None:
                continue                                      # the exact mean needs the scores' range
            if method == "spending" and fixed is None:
                continue
            trial = replace(until, method=method, wave=0 if method == "spending" else until.wave)
            cap = most
            if method == "spending":
                cap = recommend_budget(_draws(values, until.statistic, shift=until.delta), fixed, first=first,
                                       statistic=until.statistic, alpha=alpha, delta=until.delta,
                                       power=until.power, kind=until.spending, reps=reps, seed=seed).configurations
            rng = np.random.default_rng(seed)
            at_effect = simulate(_draws(values, until.statistic)(rng, reps, cap), trial, first=first, wave=wave,
                                 cap=cap, alpha=alpha)
            null = simulate(_draws(values, until.statistic, shift=0.0)(rng, reps, cap), trial, first=first,
                            wave=wave, cap=cap, alpha=alpha)
            methods.append(_method_plan(method, at_effect, null, ceiling, offered=not (
                until.statistic == "mean" and method in NORMAL_METHODS and not until.assume_normal)))
        out.append(PlanRow(c, a, b, task, len(values), spread, fixed, tuple(methods)))
    return out


def _method_plan(method: str, at_effect: Outcomes, null: Outcomes, ceiling: float, *, offered: bool) -> MethodPlan:
    decided = float(np.mean([d != "undecided" for d in at_effect.decisions]))
    false = null.share("A better", "B better")
    return MethodPlan(method, at_effect.cap, at_effect.quantile(0.5), at_effect.quantile(0.9), decided, false,
                      false <= ceiling, offered)


def cheapest(rows: list[PlanRow]) -> tuple[str, float] | None:
    """The method whose slowest comparison's median configurations is least
    among those that keep the level on every comparison and decide most
    resamples (the study stops when its last comparison is decided)."""
    names = {m.method for r in rows for m in r.methods}
    best = None
    for name in sorted(names, key=METHODS.index):
        plans = [m for r in rows for m in r.methods if m.method == name]
        if len(plans) != len(rows) or not all(m.keeps and m.decided > 0.5 for m in plans):
            continue
        size = max(m.median for m in plans)
        if best is None or size < best[1]:
            best = (name, size)
    return best


def plan_table(rows: list[PlanRow], *, trials_per_config: int, seconds_per_trial: float) -> Table:
    """The plan as a table: per pair and task, the fixed design and every
    method in configurations, trials and training hours, with each method's
    error rate on the null resamples; the notes name the cheapest method."""
    def cost(n):
        if n is None or not math.isfinite(n):
            return "–", "–", "–"
        trials = int(math.ceil(n)) * trials_per_config
        return f"{n:g}", f"{trials:,}", f"{trials * seconds_per_trial / 3600:.2f}"

    body = []
    for r in rows:
        head = [r.choice, r.a, r.b, r.task, str(r.pilot), f"{r.spread:.4f}"]
        body.append([*head, "fixed", *cost(r.fixed), "–", "–", "by design", "yes"])
        for m in r.methods:
            median, trials, hours = cost(m.median if m.decided > 0.5 else math.inf)
            body.append([*head, m.method + ("" if m.offered else " (assume_normal)"), median, trials, hours,
                         f"{m.p90:g}" if m.decided > 0.9 else "–", f"{m.budget:g}", f"{m.null_false:.1%}",
                         "yes" if m.keeps else "NO"])
    best = cheapest(rows)
    notes = [f"Fixed: a two-sided paired test at power {POWER:.0%} for the margin (on the win share: against ½ at "
             "½ + delta), at each sequence's share of alpha. Each method: the median (and 90th-percentile) "
             "configurations at which the study decides, simulated as the engine runs it on resamples of the "
             "pilot's units ('–': fewer than half, or for p90 fewer than 90 %, decided within the budget); "
             "'budget': the simulation's cap (spending: the budget recommended for power 80 % at the margin). "
             "'null': the share of false declarations on a null version of the pilot's units; 'keeps alpha': "
             "within alpha + 3 SE. Hours: training time at the pilot's mean trial time, one slot (divide by the "
             "slots you run).",
             ("Cheapest that keeps the error rate: " + (f"{best[0]} (its slowest comparison's median: "
                                                        f"{best[1]:g} configurations)" if best else "none"))]
    return Table(["choice", "A", "B", "task", "pilot", "spread", "method", "configurations", "trials", "hours",
                  "p90", "budget", "null: false", "keeps alpha"], body, notes, numeric_from=4)
