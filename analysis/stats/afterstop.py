"""Inference after a group-sequential stop (``method: spending``; the statistics page, "Adaptive studies").

A study that stops early because its estimate crossed a boundary stops
when the estimate happens to be high: the estimate at the stop is biased
away from zero (about +10 % at the design's effect, +23 % among the studies
that declared a winner), and a fixed-sample interval around it is too
narrow. The standard remedy orders the outcomes of the design **stagewise**
(Tsiatis, Rosner & Mehta 1984; Jennison & Turnbull 2000, ch. 8): an exit at
an earlier look through the upper boundary is more extreme than any later
outcome, and at the same look a larger normal score is more extreme. With
``f(θ)`` the probability, when the drift (the mean of Z at full
information) is θ, of an outcome at least as extreme as the one observed:

* the stagewise p-value is ``f(0)`` (one-sided; doubled, two-sided);
* the median-unbiased estimate solves ``f(θ) = ½``;
* the confidence interval is ``[θ_lo, θ_hi]`` with ``f(θ_lo) = α/2`` and
  ``f(θ_hi) = 1 − α/2``.

``f`` comes from the recursion of :mod:`analysis.stats.groupseq` over the
looks taken (the futility side is non-binding and left out, as is usual).
The drift is turned into the statistic's scale at the stop: on the win
share by the look's factor 1 / (2 sqrt(M)), M the configurations that are
not ties at full information; on the mean by undoing the look's own step
from t to normal score (:func:`mean_of_drift`: a drift's normal score at
the look, the t with the same tail, times the standard error), so that the
estimate at a single look is the observed mean. (A linear change of scale
by the observed t / z held 94.9 % at the design's effect.)

:func:`share_interval` is the win share's repeated interval at a look,
inverted from the look's exact sign-test boundaries, so that it leaves out
½ exactly when the test decides (a normal approximation beside the exact
test disagreed with it in 9,183 of 20,000 studies).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import optimize, special

from .groupseq import crossing_probabilities
from .tboundaries import t_of_z

#: grid points per unit of z in the recursion (coarser than the boundaries' 40: an estimate moves by < 0.001 z)
DENSITY = 12

__all__ = ["Adjusted", "stagewise", "share_interval", "mean_of_drift", "DENSITY"]


@dataclass(frozen=True)
class Adjusted:
    """The stagewise-ordered inference at a stop, on the drift's scale."""

    estimate: float          # median-unbiased
    lower: float
    upper: float
    p: float                 # two-sided stagewise p-value


def stagewise(fractions, bounds, stop: int, z: float, alpha: float) -> Adjusted:
    """Stagewise inference for a design stopped at look ``stop`` (index) with
    normal score ``z``: looks at ``fractions`` with efficacy boundaries
    ``bounds`` (inf: none at that look).

    >>> a = stagewise([1.0], [1.96], 0, 2.5, 0.05)     # one look: the fixed-sample z interval
    >>> round(a.estimate, 3), round(a.lower, 3), round(a.upper, 3), round(a.p, 4)
    (2.5, 0.54, 4.46, 0.0124)
    """
    if not math.isfinite(z):
        nan = float("nan")
        return Adjusted(nan, nan, nan, nan)
    looks = [float(f) for f in fractions[:stop + 1]]
    edges = [float(b) for b in bounds[:stop]] + [float(z)]

    def f(drift: float) -> float:
        return float(crossing_probabilities(looks, edges, drift, upper_only=True, density=DENSITY).sum())

    def solve(target: float) -> float:
        lo, hi = -40.0, 40.0
        return float(optimize.brentq(lambda d: f(d) - target, lo, hi, xtol=1e-4))

    p0 = f(0.0)
    return Adjusted(solve(0.5), solve(alpha / 2), solve(1 - alpha / 2), min(1.0, 2 * min(p0, 1 - p0)))


def mean_of_drift(drift: float, fraction: float, sd: float, count: int) -> float:
    """The mean difference at a look of ``count`` units with spread ``sd`` whose
    t statistic has the upper tail of the normal score ``drift * sqrt(fraction)``.

    >>> round(mean_of_drift(1.96, 1.0, 3.0, 9), 3)          # scipy.stats.t.isf(0.025, 8) * 3 / sqrt(9)
    2.306
    """
    if not math.isfinite(drift):
        return drift
    z = drift * math.sqrt(fraction)
    return t_of_z(z, count - 1) * sd / math.sqrt(count)


def share_interval(wins: int, m: int, low: int, high: int) -> tuple[float, float]:
    """The win share's repeated interval at a look, from its exact boundaries
    (B better at ``wins <= low``, A better at ``wins >= high``): the shares p
    at which the wins are no more extreme than a tail level between the
    boundary's and the next value's (Clopper-Pearson's inversion at the
    look's own level), so the interval leaves out ½ exactly when the test
    decides.

    >>> share_interval(9, 10, 1, 9)[0] > 0.5, share_interval(8, 10, 1, 9)[0] > 0.5
    (True, False)
    """
    def at_least(u: int) -> float:             # P(W >= u) at p = ½
        return float(special.bdtrc(u - 1, m, 0.5)) if u > 0 else 1.0

    def at_most(u: int) -> float:              # P(W <= u) at p = ½
        return float(special.bdtr(u, m, 0.5)) if u >= 0 else 0.0

    up = 0.5 * (at_least(high) + at_least(high - 1))
    down = 0.5 * (at_most(low) + at_most(low + 1))
    lower = float(special.betaincinv(wins, m - wins + 1, up)) if wins > 0 else 0.0
    upper = float(special.betaincinv(wins + 1, m - wins, 1.0 - down)) if wins < m else 1.0
    return lower, upper
