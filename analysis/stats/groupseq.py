"""Group-sequential boundaries: a two-sided level alpha spent over the looks
of a study whose largest size is known (Lan & DeMets 1983), for a statistic
that is approximately normal with independent increments (a mean paired
difference over configurations, its information proportional to their
count).

The **information fraction** of a look is the configurations counted so far
divided by the budget's. A spending function ``alpha(t)`` says how much of the
level may be spent by fraction ``t`` (``alpha(0) = 0``, ``alpha(1) = alpha``):

* ``obf`` (O'Brien-Fleming type): each side spends ``2 - 2 Phi(z_{1-alpha/4}
  / sqrt(t))`` of its ``alpha / 2`` (Lan & DeMets' function applied to each
  side's level, as DeMets & Lan 1994 tabulate it and gsDesign's ``sfLDOF``
  computes it), almost nothing early, nearly the whole level at the end;
* ``pocock`` (Pocock type): ``alpha ln(1 + (e - 1) t)``, evenly over the looks.

At each look the boundary ``c_k`` is the value whose crossing, ``|Z_k| >=
c_k`` with no earlier crossing, has probability ``alpha(t_k) - alpha(t_{k-1})``
under the null; the boundaries depend only on the fractions actually
reached, so a wave smaller than planned or a resume keeps the level
(spending by the information reached). The crossing probabilities come from
the recursive numerical integration of Armitage, McPherson & Rowe (1969)
(Jennison & Turnbull 2000, ch. 19): the sub-density of ``Z_k`` on the
continuation region, carried from look to look on a grid (Simpson's rule).

For the win share the boundaries are exact (:func:`share_boundaries`): the
wins among the configurations that are not ties are binomial with p = 1/2
under the null, their distribution on the continuation region is carried
from look to look by convolution, and each look spends at most what the
spending function allows (a discrete test spends less; what it leaves is
spent later, since each look spends up to the cumulative target).

:func:`constant_boundary` solves the classical designs on equally spaced
looks with the same recursion (O'Brien & Fleming 1979: ``c_k = C sqrt(K /
k)``; Pocock 1977: ``c_k = C``); the tests reproduce the published constants.

>>> [round(c, 3) for c in constant_boundary(5, 0.05, "obf")]
[4.562, 3.226, 2.634, 2.281, 2.04]
>>> round(spent(1.0, 0.05, "obf"), 6), round(spent(0.5, 0.05, "pocock"), 4)
(0.05, 0.031)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import optimize, special, stats

__all__ = ["SPENDING", "spent", "Boundaries", "boundaries", "crossing_probabilities",
           "constant_boundary", "ShareBoundaries", "share_boundaries", "futility_boundaries", "design_drift",
           "size_ratio", "inflation", "FUTILITY"]

#: the spending functions :func:`spent` knows (a study's ``until.spending``)
SPENDING = ("obf", "pocock")
#: the futility side's beta spending: Hwang-Shih-DeCani with gamma -12 (almost nothing
#: before two thirds of the budget, most near the end): the design's largest size stays
#: within 1.03-1.05x the fixed design's for 5-30 looks (alpha OBF-type, beta 0.2;
#: ``inflation``), and a futility boundary whose drift is estimated from the data costs
#: little power (gamma -4, -8 and -12 measured 0.78, 0.80 and 0.81 at delta at 1.1x)
FUTILITY = "hsd:-12"
#: grid points per unit of z on the continuation region (odd counts for Simpson's rule)
_DENSITY = 40
#: the futility side's grid (its boundaries carry an estimated drift; a coarser grid moves them by < 0.002)
_FUTILITY_DENSITY = 12
#: the lowest point of a futility region's grid, in z less the drift (below it: probability < 1e-15)
_FLOOR = -8.0


def spent(t: float, alpha: float, kind: str = "obf") -> float:
    """The two-sided level spent by information fraction ``t`` (clipped to
    [0, 1]); ``kind`` one of :data:`SPENDING`, or ``hsd:GAMMA`` (Hwang, Shih &
    De Cani 1990: ``alpha (1 - e^(-gamma t)) / (1 - e^(-gamma))``, the
    futility side's, :data:`FUTILITY`)."""
    if kind not in SPENDING and not kind.startswith("hsd:"):
        raise ValueError(f"unknown spending function {kind!r}; known: {', '.join(SPENDING)}")
    t = min(max(float(t), 0.0), 1.0)
    if t == 0.0:
        return 0.0
    if kind.startswith("hsd:"):
        gamma = float(kind[4:])
        return float(alpha * (1.0 - math.exp(-gamma * t)) / (1.0 - math.exp(-gamma))) if gamma else alpha * t
    if kind == "obf":                       # both sides, each spending its alpha / 2
        return float(2.0 * (2.0 - 2.0 * stats.norm.cdf(stats.norm.ppf(1.0 - alpha / 4.0) / math.sqrt(t))))
    return float(alpha * math.log(1.0 + (math.e - 1.0) * t))


def _grid(low: float, high: float, density: int = _DENSITY) -> tuple[np.ndarray, np.ndarray]:
    """Points on [``low``, ``high``] and their Simpson weights."""
    n = max(101, int((high - low) * density) | 1)
    z = np.linspace(low, high, n)
    w = np.ones(n)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return z, w * (z[1] - z[0]) / 3.0


def _pdf(x):
    """The standard normal density (without scipy.stats' per-call overhead)."""
    return np.exp(-0.5 * np.square(x)) / math.sqrt(2 * math.pi)


class _Recursion:
    """The sub-density of Z on the continuation region, look after look, when
    the mean of Z at full information is ``drift`` (0: the null). With
    information fractions t, the score ``S = Z sqrt(t)`` has independent
    increments ``N(drift (t_k - t_j), t_k - t_j)``."""

    def __init__(self, drift: float = 0.0, density: int = _DENSITY) -> None:
        self.drift, self.density = drift, density
        self.info = 0.0
        self.z: np.ndarray | None = None     # grid of the last look's continuation region
        self.dens: np.ndarray | None = None  # sub-density times Simpson weights there

    def _moments(self, info: float) -> tuple[np.ndarray | float, float]:
        """Mean and sd of Z at ``info`` given each grid point of the last look."""
        if self.z is None:
            return self.drift * math.sqrt(info), 1.0
        mean = (self.z * math.sqrt(self.info) + self.drift * (info - self.info)) / math.sqrt(info)
        return mean, math.sqrt((info - self.info) / info)

    def _sum(self, values) -> float:
        return float(values) if self.z is None else float(np.dot(self.dens, values))

    def above(self, info: float, c: float) -> float:
        """P(no exit so far, ``Z >= c`` at information ``info``)."""
        mean, sd = self._moments(info)
        return self._sum(special.ndtr((mean - c) / sd))

    def below(self, info: float, a: float) -> float:
        """P(no exit so far, ``Z <= a`` at information ``info``)."""
        mean, sd = self._moments(info)
        return self._sum(special.ndtr((a - mean) / sd))

    def advance(self, info: float, low: float, high: float) -> None:
        """Carry the sub-density to the continuation region ``low < Z < high`` at ``info``."""
        z, w = _grid(max(low, _FLOOR + self.drift * math.sqrt(info)), high, self.density)
        if self.z is None:
            dens = _pdf(z - self.drift * math.sqrt(info))
        else:
            root, step = math.sqrt(info), math.sqrt(info - self.info)
            kernel = _pdf((z[:, None] * root - self.z[None, :] * math.sqrt(self.info)
                                     - self.drift * (info - self.info)) / step)
            dens = kernel @ self.dens * root / step
        self.info, self.z, self.dens = info, z, dens * w


@dataclass(frozen=True)
class Boundaries:
    """Two-sided boundaries on the Z scale at the looks' information fractions
    (``inf``: nothing may be spent there), with the level spent at each."""

    fractions: tuple[float, ...]
    z: tuple[float, ...]
    spent: tuple[float, ...]          # cumulative, as the spending function says
    alpha: float
    kind: str


def boundaries(fractions, alpha: float = 0.05, kind: str = "obf") -> Boundaries:
    """The boundary of each look at the information ``fractions`` reached
    (increasing, the last may be 1: the budget). A look that may spend
    nothing new (a repeated fraction) gets an infinite boundary. Solved once
    per (fractions, alpha, kind) in a process: the result is immutable."""
    return _solve(tuple(float(f) for f in fractions), float(alpha), kind)


def forget_boundaries() -> None:
    """Empty :func:`boundaries`' cache (a benchmark's cold start)."""
    _solve.cache_clear()


@lru_cache(maxsize=4096)
def _solve(fractions: tuple[float, ...], alpha: float, kind: str) -> Boundaries:
    if not fractions or any(b < a for a, b in zip(fractions, fractions[1:])) or fractions[0] <= 0 \
            or fractions[-1] > 1 + 1e-12:
        raise ValueError(f"information fractions must increase within (0, 1]: {fractions}")
    rec, zs, cum, before = _Recursion(), [], [], 0.0
    for t in fractions:
        total = spent(t, alpha, kind)
        target = total - before
        cum.append(total)
        if target <= 1e-15 or (rec.z is not None and t <= rec.info + 1e-12):
            zs.append(math.inf)
            continue
        c = optimize.brentq(lambda c: rec.above(t, c) + rec.below(t, -c) - target, 1e-6, 40.0, xtol=1e-10)
        rec.advance(t, -c, c)
        zs.append(float(c))
        before += target
    return Boundaries(fractions, tuple(zs), tuple(cum), alpha, kind)


def crossing_probabilities(fractions, z, drift: float = 0.0, start: tuple[float, float] | None = None,
                           upper_only: bool = False, density: int = _DENSITY) -> np.ndarray:
    """P(the first crossing of ``|Z| >= z_k`` is at look k) when the mean of
    Z at full information is ``drift`` (0: the null), by the same recursion:
    the level a design spends, or (with a drift) its power. ``start``: the
    fraction and value of Z already observed (the looks then follow it);
    ``upper_only``: the crossings of the upper side alone (``Z >= z_k``); ``density``: grid points per unit of z."""
    rec, probs = _Recursion(drift, density), []
    if start is not None:
        rec.info, rec.z, rec.dens = float(start[0]), np.array([float(start[1])]), np.array([1.0])
    for t, c in zip(fractions, z):
        if not math.isfinite(c):
            probs.append(0.0)                 # nothing may cross here; the next look starts from the last
            continue
        probs.append(rec.above(t, c) + (0.0 if upper_only else rec.below(t, -c)))
        rec.advance(t, -abs(c), abs(c))
    return np.array(probs)


def futility_boundaries(fractions, upper, drift: float, beta: float = 0.2, kind: str = FUTILITY
                        ) -> tuple[float, ...]:
    """Futility boundaries ``a_k`` (stop when ``Z_k <= a_k``; ``-inf``: none
    at that look) for a design whose efficacy boundaries are ``upper`` and
    whose Z has mean ``drift`` at full information under the alternative:
    beta spent over the looks (the spending function of one side of a level
    ``2 beta`` design), each look's ``a_k`` solved so that the first exit
    below it under the alternative has the increment's probability (the
    upper exits taken out first, Jennison & Turnbull ch. 4). Where the
    increment cannot be spent below ``c_k`` the two boundaries meet.
    Non-binding: the efficacy boundaries are computed without them, so
    ignoring a futility stop never raises the level."""
    return _futility(fractions, upper, drift, beta, kind)[0]


def _futility(fractions, upper, drift: float, beta: float, kind: str) -> tuple[tuple[float, ...], float]:
    """:func:`futility_boundaries` and, at the last look, P(no exit before, Z <= c) less what is left to spend."""
    rec, out, before, gap = _Recursion(drift, _FUTILITY_DENSITY), [], 0.0, 0.0
    for t, c in zip(fractions, upper):
        target = spent(t, 2 * beta, kind) / 2 - before
        if not math.isfinite(c) or target <= 1e-15 or (rec.z is not None and t <= rec.info + 1e-12):
            out.append(-math.inf)
            if math.isfinite(c) and not (rec.z is not None and t <= rec.info + 1e-12):
                rec.advance(t, -math.inf, c)
            continue
        gap = rec.below(t, c) - target
        if gap <= 0:
            a = c                                                  # the boundaries meet: the last look's rule
        else:
            a = optimize.brentq(lambda a: rec.below(t, a) - target, _FLOOR + drift * math.sqrt(t) - 2, c,
                                xtol=1e-10)
        before += rec.below(t, a)
        rec.advance(t, a, c)
        out.append(float(a))
    return tuple(out), gap


def design_drift(fractions, alpha: float = 0.05, beta: float = 0.2, kind: str = "obf",
                 futility: str = FUTILITY) -> float:
    """The mean of Z at full information for which the futility boundaries
    meet the efficacy boundary at the last look (fraction 1): the design's
    drift. A fixed design's is ``z_{1-alpha/2} + z_{1-beta}``; their ratio
    squared is the design's largest size as a multiple of the fixed one
    (:func:`inflation`)."""
    fractions = tuple(fractions)
    upper = boundaries(fractions, alpha, kind).z

    def gap(drift: float) -> float:
        return _futility(fractions, upper, drift, beta, futility)[1]

    return float(optimize.brentq(gap, 0.1, 15.0, xtol=1e-8))


def size_ratio(fractions, alpha: float = 0.05, beta: float = 0.2, kind: str = "obf",
               futility: str = FUTILITY) -> float:
    """The design's largest size over the fixed design's for looks at ``fractions`` (the last 1)."""
    fixed = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(1 - beta)
    return float((design_drift(tuple(fractions), alpha, beta, kind, futility) / fixed) ** 2)


def inflation(looks: int, alpha: float = 0.05, beta: float = 0.2, kind: str = "obf",
              futility: str = FUTILITY) -> float:
    """The design's largest size over the fixed design's, for ``looks`` equally spaced looks.

    >>> round(inflation(1), 4), round(inflation(10), 3)
    (1.0, 1.038)
    """
    return size_ratio([(k + 1) / looks for k in range(looks)], alpha, beta, kind, futility)


def constant_boundary(looks: int, alpha: float = 0.05, kind: str = "obf") -> list[float]:
    """The classical boundaries on ``looks`` equally spaced looks: O'Brien &
    Fleming's ``C sqrt(K / k)`` or Pocock's constant ``C``, with ``C`` solved
    so that the total crossing probability under the null is ``alpha``."""
    fractions = [(k + 1) / looks for k in range(looks)]

    def shape(constant: float) -> list[float]:
        return [constant * math.sqrt(looks / (k + 1)) if kind == "obf" else constant for k in range(looks)]

    def excess(constant: float) -> float:
        return float(crossing_probabilities(fractions, shape(constant)).sum()) - alpha

    return shape(optimize.brentq(excess, 0.5, 10.0, xtol=1e-10))


@dataclass(frozen=True)
class ShareBoundaries:
    """Exact boundaries for the wins W_k among the m_k configurations that
    are not ties at each look: A better when ``W_k >= upper[k]``, B better
    when ``W_k <= lower[k]`` (``upper > m_k``: nothing may be decided there),
    with the level each look really spends."""

    fractions: tuple[float, ...]
    decided: tuple[int, ...]             # m_k: configurations that are not ties
    lower: tuple[int, ...]
    upper: tuple[int, ...]
    spent: tuple[float, ...]             # cumulative, as spent (at most the spending function's)
    alpha: float
    kind: str


def share_boundaries(fractions, decided, alpha: float = 0.05, kind: str = "obf") -> ShareBoundaries:
    """Exact two-sided boundaries for the sign test at each look (see the
    module docstring): ``fractions`` the looks' information fractions,
    ``decided`` the configurations so far that are not ties (non-decreasing)."""
    fractions, decided = tuple(float(f) for f in fractions), tuple(int(m) for m in decided)
    if len(fractions) != len(decided) or any(b < a for a, b in zip(decided, decided[1:])) or \
            any(b < a for a, b in zip(fractions, fractions[1:])):
        raise ValueError("fractions and decided counts must be non-decreasing and of the same length")
    dist = np.array([1.0])                  # P(W = w, no crossing so far), w = 0..m
    m_prev, total, lowers, uppers, cum = 0, 0.0, [], [], []
    for t, m in zip(fractions, decided):
        step = stats.binom.pmf(np.arange(m - m_prev + 1), m - m_prev, 0.5)
        dist = np.convolve(dist, step)       # now over w = 0..m
        budget = spent(t, alpha, kind) - total
        # the widest symmetric rejection region whose probability stays within the budget
        lo, hi, removed = -1, m + 1, 0.0
        for d in range((m + 1) // 2):        # reject w <= d or w >= m - d (two tails that never meet)
            tail = float(dist[: d + 1].sum() + dist[m - d:].sum())
            if tail > budget + 1e-15:
                break
            lo, hi, removed = d, m - d, tail
        if lo >= 0:
            total += removed
            dist = dist.copy()
            dist[: lo + 1] = 0.0
            dist[hi:] = 0.0
        lowers.append(lo)
        uppers.append(hi)
        cum.append(total)
        m_prev = m
    return ShareBoundaries(fractions, decided, tuple(lowers), tuple(uppers), tuple(cum), alpha, kind)
