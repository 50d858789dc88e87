"""The mean's bias-adjusted estimate after a spending stop (``method:
spending``, ``statistic: mean``; the statistics page, "Adaptive studies").

The stagewise median-unbiased estimate (:mod:`analysis.stats.afterstop`) is
unbiased in the median; its *mean* over studies is still pulled up where the
stop is early, because the mean's test divides by a spread estimated at the
stop (a small spread both stops a study early and inflates its t). The
bias-adjusted estimate of Whitehead (1986) targets the mean directly: with
``b(θ)`` the bias of the naive estimate at the stop when the effect is θ,
it solves ``θ̃ + b(θ̃) = θ̂``. Here ``b`` is simulated, not approximated:
:data:`ADJUST_PATHS` standard normal paths (a fixed seed) run through the design's
own rule (the t boundaries of :mod:`analysis.stats.tboundaries`, the
futility side of :func:`analysis.stats.groupseq.futility_boundaries` at the
study's rounded drift, both sides of each, the budget's last look), in
units of the spread at the stop, which is used for the spread of the
units. Looks not taken yet are the design's: the last wave's size repeated
up to the budget. ``benchmarks/after_stop.py`` measures its bias beside the
median-unbiased one.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import optimize

from .groupseq import futility_boundaries
from .tboundaries import MIN_UNITS, t_boundaries, t_of_z, z_of_t

__all__ = ["bias_adjusted_mean", "planned_counts", "expected_at_stop", "ADJUST_PATHS", "ADJUST_SEED"]

#: simulated paths behind each estimate
ADJUST_PATHS = 10_000
#: their seed (the same estimate on every machine and at every reading)
ADJUST_SEED = 19860101


@lru_cache(maxsize=8)
def _sums(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Running sums of the paths' units and of their squares (rows: paths)."""
    z = np.random.default_rng(ADJUST_SEED).standard_normal((ADJUST_PATHS, n))
    return np.cumsum(z, axis=1), np.cumsum(z * z, axis=1)


def planned_counts(taken, stop: int, cap: int, final: bool = False) -> tuple[int, ...]:
    """The looks taken up to the stop, then the design's remaining ones: the
    last wave's size repeated up to ``cap`` (none after a ``final`` look).

    >>> planned_counts([4, 6, 8], 1, 12)
    (4, 6, 8, 10, 12)
    """
    counts = [int(c) for c in taken[:stop + 1]]
    step = counts[-1] - counts[-2] if len(counts) > 1 else counts[-1]
    while not final and counts[-1] < cap:
        counts.append(min(cap, counts[-1] + max(1, step)))
    return tuple(counts)


def expected_at_stop(eta: float, counts: tuple[int, ...], upper, futile) -> float:
    """Mean of the naive estimate at the stop, in units of the units' spread,
    when their mean is ``eta`` spreads: a path stops at the first look whose
    ``|t|`` reaches ``upper`` or falls to ``futile``, else at the last."""
    s1, s2 = _sums(counts[-1])
    alive = np.ones(ADJUST_PATHS, dtype=bool)
    total = 0.0
    for k, c in enumerate(counts):
        mean = (s1[:, c - 1] + eta * c) / c
        if k == len(counts) - 1:
            return (total + float(mean[alive].sum())) / ADJUST_PATHS
        if c < MIN_UNITS or not math.isfinite(upper[k]):
            continue
        sq = s2[:, c - 1] + 2 * eta * s1[:, c - 1] + eta * eta * c
        t = np.abs(mean) / np.sqrt(np.maximum((sq - c * mean * mean) / (c - 1), 1e-300) / c)
        stop = alive & ((t >= upper[k]) | (t <= futile[k]))
        total += float(mean[stop].sum())
        alive &= ~stop
    return total / ADJUST_PATHS


def bias_adjusted_mean(mean: float, sd: float, taken, stop: int, cap: int, *, alpha: float, kind: str,
                       drift: float | None, beta: float, final: bool = False) -> float:
    """Whitehead's bias-adjusted estimate of the mean difference for a study
    stopped at look ``stop`` (index into ``taken``, the units counted at each
    look) with ``mean`` and ``sd`` there; ``drift`` the futility side's
    (None: no futility side), ``beta`` its error."""
    if not (math.isfinite(mean) and math.isfinite(sd) and sd > 0):
        return math.nan
    counts = planned_counts(taken, stop, cap, final)
    upper = t_boundaries(counts, cap, alpha, kind, final=final)
    futile = [-math.inf] * len(counts)
    if drift is not None:
        z_upper = [z_of_t(b, c - 1) if math.isfinite(b) and c >= MIN_UNITS else math.inf
                   for b, c in zip(upper, counts)]
        fractions = [1.0 if final and k == len(counts) - 1 else min(1.0, c / cap) for k, c in enumerate(counts)]
        futile = [t_of_z(a, c - 1) if math.isfinite(a) and a > 0 else -math.inf
                  for a, c in zip(futility_boundaries(fractions, z_upper, drift, beta), counts)]
    target = mean / sd
    lo, hi = target - 2.0, target + 2.0

    def gap(eta: float) -> float:
        return expected_at_stop(eta, counts, upper, futile) - target

    if gap(lo) > 0 or gap(hi) < 0:              # outside what the design's estimate can average: no adjustment
        return mean
    return float(optimize.brentq(gap, lo, hi, xtol=1e-4)) * sd
