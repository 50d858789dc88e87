"""How many configurations will a comparison need? (``seedsweep plan SPACE --pilot DIR``)

From a pilot run directory, per pair of options and task of the study's
``until.decide``: the units the pilot holds (:func:`analysis.stats.decisions.units`),
the configurations a **fixed** design needs (a paired test at power 0.8 for
the margin ``delta``, at the same per-sequence alpha as the adaptive study),
and the configurations the **sequential** design is expected to need,
simulated by resampling the pilot's units with replacement and running the
study's own confidence sequence on them until it decides (median over the
resamples). Trials and training hours follow at the pilot's speed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats

from study.spec.until import Until

from ..specs import ComparisonSpec, rows_where
from ..tables import Table
from .decisions import sequence_for, units
from .sequential import decide, split_alpha

__all__ = ["PlanRow", "plan", "plan_table", "fixed_configurations"]

POWER = 0.8


@dataclass(frozen=True)
class PlanRow:
    """One pair of options on one task: the pilot's units, their spread, and the two designs' sizes."""

    choice: str
    a: str
    b: str
    task: str
    pilot: int
    spread: float
    fixed: int | None
    sequential: float
    decided: float


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


def _sequential(values: np.ndarray, until: Until, alpha: float, centre: float, reps: int, most: int,
                rng: np.random.Generator) -> tuple[float, float]:
    """(median configurations to a decision, share decided within ``most``) over ``reps`` resamples."""
    if len(values) == 0:
        return math.inf, 0.0
    spent = []
    for _ in range(reps):
        cs = sequence_for(rng.choice(values, size=most, replace=True), until, alpha)
        at = next((i + 1 for i, (lo, hi) in enumerate(zip(cs.lower, cs.upper))
                   if decide(lo, hi, centre=centre, delta=until.delta) != "undecided"), None)
        spent.append(math.inf if at is None else at)
    spent_ = np.array(spent, dtype=float)
    decided = float(np.isfinite(spent_).mean())
    return (float(np.median(spent_)) if decided > 0.5 else math.inf), decided


def plan(df: pd.DataFrame, until: Until, specs: list[ComparisonSpec], results=(), *, seeds: int | None = None,
         reps: int = 200, most: int = 1000, seed: int = 0) -> list[PlanRow]:
    """Every (pair, task) of ``until.decide`` in the pilot ``df``: both designs' configurations."""
    by_choice = {s.choice: s for s in specs}
    found = []
    for c in until.decide:
        spec = by_choice[c]
        rows = rows_where(df, spec.where)
        for a, b in combinations([str(o) for o in spec.options or []], 2):
            for task, (_, values) in units(rows, c, a, b, mode=spec.mode, statistic=until.statistic, seeds=seeds,
                                           ignore=spec.ignore, results=results).items():
                found.append((c, a, b, task, values))
    alpha = split_alpha(until.alpha, max(len(found), 1))
    centre = 0.5 if until.statistic == "share" else 0.0
    rng = np.random.default_rng(seed)
    out = []
    for c, a, b, task, values in found:
        fixed = fixed_configurations(values, statistic=until.statistic, delta=until.delta, alpha=alpha)
        median, decided = _sequential(values, until, alpha, centre, reps, most, rng)
        spread = float(np.std(values, ddof=1)) if len(values) > 1 else float("nan")
        out.append(PlanRow(c, a, b, task, len(values), spread, fixed, median, decided))
    return out


def plan_table(rows: list[PlanRow], *, trials_per_config: int, seconds_per_trial: float) -> Table:
    """The plan as a table: per pair and task, both designs in configurations, trials and training hours."""
    def cost(n):
        if n is None or not math.isfinite(n):
            return "–", "–", "–"
        trials = int(math.ceil(n)) * trials_per_config
        return f"{n:g}", f"{trials:,}", f"{trials * seconds_per_trial / 3600:.2f}"

    body = []
    for r in rows:
        body.append([r.choice, r.a, r.b, r.task, str(r.pilot), f"{r.spread:.4f}", *cost(r.fixed),
                     *cost(r.sequential), f"{r.decided:.0%}"])
    notes = [f"Fixed: a two-sided paired test at power {POWER:.0%} for the margin (on the win share: against ½ at "
             "½ + delta), at each sequence's share of alpha. Sequential: the median configurations at which the "
             "study's confidence sequence decides, over resamples of the pilot's units; 'decided' is the share "
             "of resamples decided within the simulation's cap. Hours: training time at the pilot's mean trial "
             "time, one slot (divide by the slots you run)."]
    return Table(["choice", "A", "B", "task", "pilot", "spread", "fixed: configurations", "trials", "hours",
                  "sequential: configurations", "trials", "hours", "decided"], body, notes, numeric_from=4)
