"""Group-sequential decisions within a budget: ``until: {method: spending}``
(docs/reference/statistics.md, "Adaptive studies").

A study whose budget caps its configurations looks at the end of each wave
(the configurations complete so far, ``n_k``); the **information fraction**
of a look is ``n_k`` over the budget's configurations. At each look:

* **A better / B better** (efficacy, the study's alpha split over its
  sequences): the level is spent over the fractions reached by an
  O'Brien-Fleming-type (default) or Pocock-type function
  (:mod:`analysis.stats.groupseq`). On the win share the test is the exact
  sign test: the wins among the configurations that are not ties against
  the exact binomial boundaries. On the mean difference it is the paired
  t statistic (the variance estimated afresh at each look from every unit
  so far) against boundaries calibrated by simulation of the t statistics'
  joint law at the looks actually taken (:mod:`analysis.stats.tboundaries`),
  which holds the level for normal differences at every budget (the
  t-to-normal mapping it replaces was anti-conservative at small budgets).
* **futile** (the futility side, non-binding): beta (1 − ``power``) is spent
  by the Hwang-Shih-DeCani function (gamma −12) under the alternative that
  the true effect is ±delta, with the upper exits taken out first; the study
  stops as futile when ``|Z_k|`` falls at or below that boundary, that is when
  an effect of delta would have been unlikely to look like this. Its error
  is the chance of stopping as futile when the effect is delta (at most
  beta), **not** the study's alpha: "futile" is not a claim of equivalence
  at the study's confidence. The drift under the alternative is estimated at
  each look (the mean's spread so far, the share of configurations that
  are not ties) and rounded to 0.05 (far finer than its estimate's own
  error). Because the efficacy boundaries are computed without it, ignoring
  a futility stop never raises the level.

With the drift estimated, the futility and efficacy boundaries need not meet
at the budget's last look (a pair between them is "undecided at budget"), so
``seedsweep plan`` recommends the smallest budget whose *simulated* power
reaches ``power`` (:func:`recommend_budget`), from the design's size.
A look at an unplanned fraction (a short wave, failed configurations, a
resume) spends by the fraction reached. The interval shown beside each
decision is the repeated confidence interval (Jennison & Turnbull ch. 9) at
the look's efficacy boundary: on the mean, the estimate ± the t quantile
of the boundary's tail times its standard error; on the win share (among
the configurations that are not ties), the shares the look's exact
boundaries do not reject (:func:`analysis.stats.afterstop.share_interval`),
so that interval and test never disagree. The estimate at a stop is biased
(a study stops when its estimate is high): :meth:`SpendingPath.after_stop`
gives the stagewise-ordered median-unbiased estimate, interval and p-value
(:mod:`analysis.stats.afterstop`), :meth:`SpendingPath.bias_adjusted` the
mean's bias-adjusted estimate (:mod:`analysis.stats.biasadjust`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from seedsweep.study.spec.until import SPENDING_LOOKS, auto_spending_wave, look_schedule

from .afterstop import Adjusted, mean_of_drift, share_interval, stagewise
from .biasadjust import bias_adjusted_mean
from .groupseq import FUTILITY, boundaries, futility_boundaries, share_boundaries, size_ratio
from .tboundaries import MIN_UNITS as MIN_MEAN_UNITS, t_boundaries, t_of_z, z_of_t

__all__ = ["SpendingPath", "spending_path", "look_counts", "design_configurations", "recommend_budget", "Budget",
           "spending_looks", "FUTILE",
           "MIN_MEAN_UNITS"]

#: the decision of a futility stop
FUTILE = "futile"


def look_counts(labels, looks: list[int]) -> list[int]:
    """Units counted at each look: those whose configuration (``c00012`` → 12)
    is below the look's configurations run (labels that are not
    configuration ids: their position in the stored order).

    >>> look_counts(["c00000", "c00001", "c00003"], [2, 4])
    [2, 3]
    """
    numbers = []
    for i, label in enumerate(labels):
        text = str(label)
        numbers.append(int(text[1:]) if text[:1] == "c" and text[1:].isdigit() else i)
    numbers_ = np.asarray(numbers, dtype=int)
    return [int((numbers_ < n).sum()) for n in looks]


@dataclass(frozen=True)
class SpendingPath:
    """One sequence's looks: units counted, information fractions, the
    estimate, the repeated confidence interval and the decision at each look
    (the first decision is held); ``decided_look`` is its index or None."""

    counts: tuple[int, ...]
    fractions: tuple[float, ...]
    estimate: tuple[float, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    decisions: tuple[str, ...]
    decided_look: int | None
    z: tuple[float, ...] = ()              # each look's normal score (nan: the look could not decide)
    bounds: tuple[float, ...] = ()         # each look's efficacy boundary on that scale (inf: none)
    scales: tuple[float, ...] = ()         # each look's change of the statistic per unit of drift
    scores: tuple[float, ...] = ()         # each look's normal score for inference after a stop
    score_bounds: tuple[float, ...] = ()   # each look's efficacy boundary on that score's scale
    centre: float = 0.0                    # the statistic at no effect (½ for a win share)
    alpha: float = 0.05
    sds: tuple[float, ...] = ()            # the mean's spread at each look (nan: a win share)
    design: tuple = ()                     # (budget, kind, delta, power, final): the rule behind the stop

    def after_stop(self) -> Adjusted | None:
        """Stagewise-ordered inference at the stop (the deciding look, else the last) on the statistic's
        scale: the median-unbiased estimate, its interval and p-value (:mod:`analysis.stats.afterstop`)."""
        if not self.counts:
            return None
        k = self.decided_look if self.decided_look is not None else len(self.counts) - 1
        a = stagewise(self.fractions, self.score_bounds, k, self.scores[k], self.alpha)
        three = (a.estimate, a.lower, a.upper)
        on = ([mean_of_drift(d, self.fractions[k], self.sds[k], self.counts[k]) for d in three]  # the mean: undo
              if self.sds and not self.centre else [self.centre + d * self.scales[k] for d in three])  # its t-to-z
        return Adjusted(*on, a.p)

    def bias_adjusted(self) -> float:
        """The mean's bias-adjusted estimate at the stop (:mod:`analysis.stats.biasadjust`; nan: a win share)."""
        if not self.counts or not self.sds or self.centre:          # no looks, or a win share (centre ½)
            return math.nan
        k = self.decided_look if self.decided_look is not None else len(self.counts) - 1
        cap, kind, delta, power, final = self.design
        drift = _rounded(delta * math.sqrt(cap) / self.sds[k]) if delta > 0 and self.sds[k] > 0 else None
        return bias_adjusted_mean(self.estimate[k], self.sds[k], self.counts, k, cap, alpha=self.alpha, kind=kind,
                                  drift=drift, beta=round(1.0 - power, 10), final=final)

    @property
    def decision(self) -> str:
        """The decision after the last look ('undecided' before any)."""
        return self.decisions[-1] if self.decisions else "undecided"

    def per_unit(self, n: int, before: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
        """The interval after each of ``n`` units: the last look's at or before it (``before``: none yet)."""
        lower, upper = np.full(n, before[0]), np.full(n, before[1])
        for count, lo, hi in zip(self.counts, self.lower, self.upper):
            lower[count - 1:] = lo
            upper[count - 1:] = hi
        return lower, upper


@lru_cache(maxsize=4096)
def _mean_efficacy(used: tuple[int, ...], cap: int, alpha: float, kind: str, final: bool = False
                   ) -> tuple[float, ...]:
    """The mean's boundaries on the normal-score scale: the t boundaries
    calibrated by simulation (:mod:`analysis.stats.tboundaries`), each turned
    into the normal score of the same tail probability (so that a look's
    normal score crosses exactly when its t does)."""
    bounds = t_boundaries(used, cap, alpha, kind, final=final)
    return tuple(z_of_t(b, c - 1) if math.isfinite(b) and c >= MIN_MEAN_UNITS else math.inf
                 for b, c in zip(bounds, used))


@lru_cache(maxsize=4096)
def _share_efficacy(fractions: tuple[float, ...], decided: tuple[int, ...], alpha: float, kind: str):
    return share_boundaries(fractions, decided, alpha, kind)


@lru_cache(maxsize=65536)
def _futility(fractions: tuple[float, ...], upper: tuple[float, ...], drift: float, beta: float
              ) -> tuple[float, ...]:
    return futility_boundaries(fractions, upper, drift, beta, FUTILITY)


def _rounded(drift: float) -> float:
    """The drift to 0.05, so that looks of many sequences share their futility boundaries."""
    return round(drift * 20) / 20


def spending_path(values, counts: list[int], cap: int, *, statistic: str, alpha: float, delta: float,
                  power: float = 0.8, kind: str = "obf", final: bool = False) -> SpendingPath:
    """The looks of one tracked sequence: ``values`` its units in order (win
    units 1 / ½ / 0, or mean differences, oriented so that > 0 is A better),
    ``counts`` the units counted at each look (non-decreasing), ``cap`` the
    budget's configurations, ``alpha`` this sequence's share of the level.
    ``final``: the last look is the study's last (its budget reached, or an
    hours budget spent) and spends whatever level is left, whatever
    information it reached (as gsDesign does at a final analysis short of
    its planned size)."""
    values = np.asarray(values, dtype=float)
    used: list[int] = []
    for c in counts:                              # a look with no new unit spends nothing and decides nothing
        if c > 0 and (not used or c > used[-1]):
            used.append(int(c))
    if not used or cap < 1:
        return SpendingPath((), (), (), (), (), (), None)
    fractions = tuple(min(1.0, c / cap) for c in used)
    if final:
        fractions = fractions[:-1] + (1.0,)
    upper_z = (boundaries(fractions, alpha, kind).z if statistic == "share" else   # cached per design
               _mean_efficacy(tuple(used), cap, alpha, kind, final))
    looks = (_share_looks(values, used, fractions, cap, alpha, delta, kind, upper_z) if statistic == "share"
             else _mean_looks(values, used, cap, delta, upper_z))
    out_dec, held, decided_look = [], None, None
    for k, look in enumerate(looks):
        if held is None and look.z is not None:
            held = look.efficacy
            if held is None and look.drift is not None:
                # look k's boundary depends on looks 0..k only: the whole path's solve (cached) holds it,
                # shared by every look (and every path with these looks) at this drift
                a = _futility(fractions, upper_z, look.drift, round(1.0 - power, 10))[k]
                held = FUTILE if math.isfinite(a) and abs(look.z) <= a else None
            decided_look = k if held is not None else None
        out_dec.append(held or "undecided")
    return SpendingPath(tuple(used), fractions, tuple(x.estimate for x in looks), tuple(x.lower for x in looks),
                        tuple(x.upper for x in looks), tuple(out_dec), decided_look,
                        tuple(math.nan if x.z is None else float(x.z) for x in looks), tuple(map(float, upper_z)),
                        tuple(x.scale for x in looks), tuple(x.score for x in looks),
                        tuple(x.score_bound for x in looks), 0.5 if statistic == "share" else 0.0, alpha,
                        tuple(x.sd for x in looks), (cap, kind, delta, power, final))


@dataclass(frozen=True)
class _Look:
    """One look's statistic: the estimate and its interval, the normal score
    (None: the look cannot decide), the efficacy decision, the drift under
    the alternative (None: no futility side)."""

    estimate: float
    lower: float
    upper: float
    z: float | None
    efficacy: str | None
    drift: float | None
    scale: float = math.nan       # the statistic's change per unit of drift (inference after a stop)
    score: float = math.nan       # the normal score for that inference ...
    score_bound: float = math.inf  # ... and the look's efficacy boundary on its scale
    sd: float = math.nan           # the mean's spread (a win share: nan)


def _share_looks(values, used, fractions, cap, alpha, delta, kind, upper_z) -> list[_Look]:
    """The win share's looks: exact sign-test boundaries on the wins among the configurations that are not ties."""
    wins, ties = np.cumsum(values == 1.0), np.cumsum(values == 0.5)
    m = tuple(int(c - ties[c - 1]) for c in used)
    exact = _share_efficacy(fractions, m, alpha, kind)
    out = []
    for k, c in enumerate(used):
        mk, wk = m[k], int(wins[c - 1])
        if not mk:
            out.append(_Look(0.5, 0.0, 1.0, None, None, None))
            continue
        p = wk / mk
        efficacy = ("A better" if wk >= exact.upper[k] else
                    "B better" if exact.lower[k] >= 0 and wk <= exact.lower[k] else None)
        drift = _rounded(2 * delta * math.sqrt(cap * mk / c)) if delta > 0 else None
        lower, upper = share_interval(wk, mk, exact.lower[k], exact.upper[k])
        z = (wk - mk / 2) / math.sqrt(mk / 4)
        out.append(_Look(p, lower, upper, z, efficacy, drift, 1.0 / (2.0 * math.sqrt(cap * mk / c)), z,
                         upper_z[k]))
    return out



def _mean_looks(values, used, cap, delta, upper_z) -> list[_Look]:
    """The mean difference's looks: the paired t statistic as a normal score of the same tail probability."""
    out = []
    for k, c in enumerate(used):
        x = values[:c]
        mean = float(x.mean())
        sd = float(x.std(ddof=1)) if c > 1 else 0.0
        if c < MIN_MEAN_UNITS or sd <= 0 or not math.isfinite(upper_z[k]):
            out.append(_Look(mean, -math.inf, math.inf, None, None, None, sd=sd))
            continue
        se = sd / math.sqrt(c)
        quantile = t_of_z(upper_z[k], c - 1)     # the t with that upper tail
        z = z_of_t(mean / se, c - 1)
        efficacy = "A better" if z >= upper_z[k] else "B better" if z <= -upper_z[k] else None
        drift = _rounded(delta * math.sqrt(cap) / sd) if delta > 0 else None
        out.append(_Look(mean, mean - quantile * se, mean + quantile * se, z, efficacy, drift,
                         sd / math.sqrt(cap), z, upper_z[k], sd))   # after a stop: afterstop.mean_of_drift
    return out


def design_configurations(fixed: int, looks: list[int] | None = None, *, alpha: float = 0.05, power: float = 0.8,
                          kind: str = "obf") -> int:
    """The budget (configurations) at which the spending design has ``power``
    at the effect a fixed design of ``fixed`` configurations is sized for:
    the fixed size times the squared ratio of the design's drift to the fixed
    design's (:func:`analysis.stats.groupseq.size_ratio`) at ``looks``
    (None: :data:`~study.spec.until.SPENDING_LOOKS` equally spaced).

    >>> design_configurations(100)
    106
    """
    every = SPENDING_LOOKS
    fractions = [(k + 1) / every for k in range(every)] if looks is None else [c / looks[-1] for c in looks]
    return int(math.ceil(fixed * size_ratio(fractions, alpha, 1.0 - power, kind)))


def spending_looks(first: int, cap: int) -> list[int]:
    """The looks of ``method: spending`` with ``wave: auto`` (:meth:`study.spec.until.Until.spending_wave`)."""
    return look_schedule(first, auto_spending_wave(first, cap), cap)


@dataclass(frozen=True)
class Budget:
    """A recommended budget: its configurations and the power simulated there."""

    configurations: int
    power: float
    reps: int


def recommend_budget(draw, fixed: int, *, first: int, statistic: str, alpha: float, delta: float,
                     power: float = 0.8, kind: str = "obf", reps: int = 2000, seed: int = 0) -> Budget:
    """The smallest budget, from the normal-theory design's
    (:func:`design_configurations`) upward (steps of 2 %, then bisection), at which the
    spending study (first wave ``first``, automatic waves) decides 'A better'
    in at least ``power`` of ``reps`` simulated studies whose units come from
    ``draw(rng, reps, n)`` (units at the effect delta: the model, or the
    pilot's resamples shifted to it), the same draws for every candidate."""
    rng = np.random.default_rng(seed)
    most = 3 * max(fixed, first + 1)
    pool = draw(rng, reps, most)

    def power_at(n: int) -> float:
        looks = spending_looks(first, n)
        return sum(spending_path(row[:n], looks, n, statistic=statistic, alpha=alpha, delta=delta, power=power,
                                 kind=kind).decision == "A better" for row in pool) / reps

    n = max(design_configurations(fixed, alpha=alpha, power=power, kind=kind), first)
    below, found = n - 1, power_at(n)
    while found < power and n < most:           # up in steps of 2 % until the power is reached ...
        below, n = n, min(most, max(n + 1, math.ceil(n * 1.02)))
        found = power_at(n)
    while n - below > 1:                        # ... then the smallest budget between that reaches it
        mid = (below + n) // 2
        at = power_at(mid)
        if at >= power:
            n, found = mid, at
        else:
            below = mid
    return Budget(n, float(found), reps)
