"""Anytime-valid decisions: confidence sequences for adaptive studies.

Pure functions (numpy only) for docs/reference/statistics.md, "Adaptive studies". A
*confidence sequence* is a sequence of intervals [L_n, U_n], one after each
observation, that holds at every n at once: P(exists n: mu not in [L_n, U_n])
<= alpha. So a study may look after every configuration and stop whenever it
likes, which a fixed-sample interval does not allow (peeking at one inflates
its error many times over; ``tests/test_sequential.py`` measures both).

The sequence here is the hedged betting sequence of Waudby-Smith & Ramdas
(2023, JRSS-B, "Estimating means of bounded random variables by betting"),
for observations in [0, 1]: for every candidate mean m, a gambler who bets
that the mean is above m, and one who bets it is below, each start with
capital 1 and stake a predictable fraction lambda_i of it on x_i - m. If m is
the true mean, their averaged capital is a nonnegative martingale, so by
Ville's inequality it reaches 1/alpha with probability at most alpha, ever.
The sequence is the set of m whose capital is still below 1/alpha, on a grid,
intersected over time (the running intersection is valid too and never widens).

Stakes ("predictable plug-in", WSR 2023 eq. 26-27): lambda_i =
sqrt(2 log(2/alpha) / (s2_{i-1} i log(1 + i))), with s2 a running variance
estimate that starts at 1/4, truncated at c/m (betting up) and c/(1 - m)
(betting down), c < 1, so that capital stays positive: c = 1/2 for the
decisions (``TRUNCATION``), 0.95 for the claims' intervals of a mean
(``CLAIM_TRUNCATION``, narrower where the values sit near a bound).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["asymptotic_cs", "betting_cs", "bounded_cs", "Sequence", "decide", "share_units", "split_alpha", "GRID",
           "MIN_ASYMPTOTIC", "OPTIMISE_AT", "TRUNCATION", "CLAIM_TRUNCATION"]

#: candidate means on [0, 1]; bounds are rounded outwards to this grid
GRID = 2001
#: the largest fraction of capital staked by the decisions' sequences (their stopping points and
#: efficiency tables were measured at it)
TRUNCATION = 0.5
_BLOCK = 32_768          # grid points x observations computed at once by betting_cs
#: the largest fraction staked by the claims' anytime intervals of a mean: at 0.5 the interval was 8.3x
#: the t-interval's width at 60 configurations of the claim-coverage setting; at 0.95, 5.3x, coverage
#: unchanged (benchmarks/results/claim_coverage-2026-12-04-truncation.json)
CLAIM_TRUNCATION = 0.95
#: the asymptotic sequence is tightest near this many observations (its rho is tuned there)
OPTIMISE_AT = 100
#: the asymptotic sequence gives no bound before this many observations (a variance
#: estimated from fewer can be 0: an all-wins start would decide at once)
MIN_ASYMPTOTIC = 10


@dataclass(frozen=True)
class Sequence:
    """A confidence sequence after each of ``n`` observations: ``lower[i]``
    and ``upper[i]`` bound the mean after observations 0 … i, every i at once
    with probability >= 1 - ``alpha``."""

    lower: np.ndarray
    upper: np.ndarray
    alpha: float
    #: after observation i, whether every candidate mean has been rejected at some
    #: time up to i (an empty running intersection; None: never). The data then
    #: disagree with every value, which happens with probability at most alpha when
    #: the observations share one mean; ``lower``/``upper`` hold the crossed bounds.
    empty: np.ndarray | None = None

    @property
    def n(self) -> int:
        """How many observations the sequence has seen."""
        return len(self.lower)

    def is_empty(self) -> bool:
        """Whether the running intersection is empty after the last observation."""
        return bool(self.empty is not None and self.n and self.empty[-1])

    def last(self) -> tuple[float, float]:
        """The interval after the last observation ((0, 1) before any)."""
        return (float(self.lower[-1]), float(self.upper[-1])) if self.n else (0.0, 1.0)


def stakes(x: np.ndarray, alpha: float) -> np.ndarray:
    """The predictable plug-in stake before each observation (uses only earlier ones).

    >>> [round(float(v), 3) for v in stakes(np.array([1.0, 0.0, 1.0]), 0.05)]
    [6.525, 3.665, 2.238]
    """
    n = len(x)
    i = np.arange(1, n + 1, dtype=float)
    mean = (0.5 + np.cumsum(x)) / (i + 1)                      # mu-hat_i after observation i
    prev_mean = np.concatenate([[0.5], mean[:-1]])
    var = (0.25 + np.cumsum((x - prev_mean) ** 2)) / (i + 1)   # sigma-hat^2_i
    prev_var = np.concatenate([[0.25], var[:-1]])
    return np.sqrt(2.0 * np.log(2.0 / alpha) / (prev_var * i * np.log(1.0 + i)))


def betting_cs(x, alpha: float, *, grid: int = GRID, truncation: float = TRUNCATION) -> Sequence:
    """The hedged betting confidence sequence for the mean of ``x`` (values in [0, 1]);
    ``truncation`` (below 1) the largest fraction of capital staked.

    >>> cs = betting_cs([1.0] * 30, 0.05)
    >>> cs.last()[0] > 0.75, cs.last()[1]
    (True, 1.0)
    """
    x = np.asarray(x, dtype=float)
    if x.size and (np.isnan(x).any() or x.min() < 0 or x.max() > 1):
        raise ValueError("betting_cs needs observations in [0, 1] (rescale first)")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    m = np.linspace(0.0, 1.0, grid)
    if not x.size:
        return Sequence(np.zeros(0), np.zeros(0), alpha)
    lam = stakes(x, alpha)[:, None]
    with np.errstate(divide="ignore"):
        up_cap, down_cap = truncation / m, truncation / (1.0 - m)
    keep = np.empty((len(x), grid), dtype=bool)
    # a block of grid points at a time: the same numbers, in arrays small enough to stay
    # in the allocator's heap and the cache (whole-grid temporaries made each call several times slower here)
    width = max(64, _BLOCK // len(x))
    for s in range(0, grid, width):
        cols = slice(s, s + width)
        up = np.minimum(lam, up_cap[None, cols])                # betting that the mean is above m
        down = np.minimum(lam, down_cap[None, cols])            # … below m
        diff = x[:, None] - m[None, cols]
        keep[:, cols] = _below_level(_running_sum(np.log1p(up * diff)), _running_sum(np.log1p(-down * diff)), alpha)
    lower, upper = np.empty(len(x)), np.empty(len(x))
    none_kept = np.zeros(len(x), dtype=bool)
    step = 1.0 / (grid - 1)
    for t in range(len(x)):
        kept = np.flatnonzero(keep[t])
        if kept.size:
            lower[t] = max(0.0, m[kept[0]] - step)               # outwards to the grid: never narrower
            upper[t] = min(1.0, m[kept[-1]] + step)
        else:                                                    # every m rejected: the set is empty from here
            none_kept[t] = True
            lower[t], upper[t] = (lower[t - 1], upper[t - 1]) if t else (0.0, 1.0)
    lower, upper = np.maximum.accumulate(lower), np.minimum.accumulate(upper)
    # an empty intersection is reported (``empty``), never shown as a point: the bounds stay crossed
    empty = np.logical_or.accumulate(none_kept | (lower > upper)) if len(x) else np.zeros(0, dtype=bool)
    return Sequence(lower, upper, alpha, empty)


def _running_sum(a: np.ndarray) -> np.ndarray:
    """``np.cumsum(a, axis=0)``, the same additions in the same order, a row at a
    time (numpy's cumsum down the columns of a C-ordered array is several times slower)."""
    for i in range(1, len(a)):
        a[i] += a[i - 1]
    return a


def _below_level(log_up: np.ndarray, log_down: np.ndarray, alpha: float) -> np.ndarray:
    """Whether the hedged capital ``(e^log_up + e^log_down) / 2`` (half the money on
    each side) is still below ``1 / alpha``: m is rejected once it reaches it.
    The capital lies between ``e^hi / 2`` and ``e^hi`` (``hi`` the larger log), so
    only where ``hi`` is within ``log 2`` (and a margin far above rounding) of the
    level is it computed."""
    hi = np.maximum(log_up, log_down)
    keep = hi < math.log(1.0 / alpha) - 1e-9
    band = ~keep & (hi < math.log(2.0 / alpha) + 1e-9)
    keep[band] = (0.5 * np.exp(np.minimum(log_up[band], 700.0)) + 0.5 * np.exp(np.minimum(log_down[band], 700.0))
                  < 1.0 / alpha)
    return keep


def asymptotic_cs(x, alpha: float, *, optimise_at: int = OPTIMISE_AT,
                  min_n: int = MIN_ASYMPTOTIC, prior_variance: float | None = None) -> Sequence:
    """The asymptotic confidence sequence for the mean of ``x`` (any real
    values; Waudby-Smith, Arnold, Wu, Howard & Ramdas 2021, "Time-uniform
    central limit theory", the Gaussian-mixture boundary), with the running
    intersection. Its coverage holds as n grows, not at every n: see
    ``tests/test_sequential.py`` for the rates measured at 10 … 300.

    With the sample mean m_t and standard deviation s_t of the first t values,
    the normal-mixture martingale of the standardised sum crosses 1/alpha only
    when |m_t - mu| > s_t * sqrt(2 (t rho^2 + 1) / (t^2 rho^2) * log(sqrt(t rho^2 + 1) / alpha)),
    rho^2 = (-2 log alpha + log(-2 log alpha + 1)) / ``optimise_at``. Before
    ``min_n`` values the interval is (-inf, inf). ``prior_variance``: for
    units in [0, 1] (win shares), the variance estimate is
    ``(prior_variance + sum of squared deviations) / t``, one pseudo-unit of
    that variance, so that ten straight wins do not give a variance of 0 and
    an interval of one point.

    >>> asymptotic_cs([1.0] * 10, 0.05).last()
    (1.0, 1.0)
    >>> round(asymptotic_cs([1.0] * 10, 0.05, prior_variance=0.25).last()[0], 3)
    0.807

    >>> cs = asymptotic_cs([0.1, -0.1] * 50, 0.05)
    >>> round(cs.last()[0], 3), round(cs.last()[1], 3)
    (-0.03, 0.031)
    """
    x = np.asarray(x, dtype=float)
    if x.size and not np.isfinite(x).all():
        raise ValueError("asymptotic_cs needs finite observations")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    t = np.arange(1, len(x) + 1, dtype=float)
    mean = np.cumsum(x) / t
    with np.errstate(invalid="ignore", divide="ignore"):
        var = (np.cumsum(x * x) - t * mean * mean) / (t - 1)        # the sample variance, ddof 1
        if prior_variance is not None:
            var = (prior_variance + var * (t - 1)) / t
    sd = np.sqrt(np.maximum(np.nan_to_num(var), 0.0))
    rho2 = (-2 * np.log(alpha) + np.log(-2 * np.log(alpha) + 1)) / optimise_at
    radius = sd * np.sqrt(2 * (t * rho2 + 1) / (t * t * rho2) * np.log(np.sqrt(t * rho2 + 1) / alpha))
    radius[t < max(min_n, 2)] = np.inf
    lower = np.maximum.accumulate(mean - radius) if x.size else np.zeros(0)
    upper = np.minimum.accumulate(mean + radius) if x.size else np.zeros(0)
    upper = np.maximum(upper, lower)
    return Sequence(lower, upper, alpha)


def bounded_cs(x, alpha: float, lo: float, hi: float, *, grid: int = GRID, truncation: float = TRUNCATION
               ) -> Sequence:
    """:func:`betting_cs` for values known to lie in [lo, hi], on their own scale.

    >>> cs = bounded_cs([0.5] * 40, 0.05, -1.0, 1.0)
    >>> bool(cs.lower[-1] > 0.0)
    True
    """
    x = np.asarray(x, dtype=float)
    span = hi - lo
    cs = betting_cs(np.clip((x - lo) / span, 0.0, 1.0), alpha, grid=grid, truncation=truncation)
    return Sequence(lo + cs.lower * span, lo + cs.upper * span, alpha, cs.empty)


def split_alpha(alpha: float, sequences: int) -> float:
    """alpha' for each of ``sequences`` tracked sequences (a union bound:
    all of them hold together with probability >= 1 - alpha).

    >>> split_alpha(0.05, 10)
    0.005
    """
    if sequences < 1:
        raise ValueError("at least one sequence")
    return alpha / sequences


def share_units(a, b) -> np.ndarray:
    """Per-configuration win units for the share statistic: 1 where A beat B,
    ½ on a tie, 0 where B won.

    >>> share_units([0.9, 0.5, 0.1], [0.1, 0.5, 0.9]).tolist()
    [1.0, 0.5, 0.0]
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return np.where(a > b, 1.0, np.where(a < b, 0.0, 0.5))


def decide(lower: float, upper: float, *, centre: float, delta: float) -> str:
    """The decision an interval allows about a mean against ``centre``
    (½ for a win share, 0 for a mean difference) with margin ``delta``:
    'A better', 'B better', 'equivalent' (inside centre ± delta) or 'undecided'.

    >>> decide(0.56, 0.71, centre=0.5, delta=0.05), decide(0.47, 0.52, centre=0.5, delta=0.05)
    ('A better', 'equivalent')
    >>> decide(0.40, 0.58, centre=0.5, delta=0.05)
    'undecided'
    """
    if lower > centre:
        return "A better"
    if upper < centre:
        return "B better"
    if centre - delta <= lower and upper <= centre + delta:
        return "equivalent"
    return "undecided"
