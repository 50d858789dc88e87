"""Anytime-valid intervals for claims (docs/reference/statistics.md, "Adaptive studies": in an
adaptive study every interval printed for a claim is a confidence
sequence's). A study that stops on what it sees (``until:``, and above all
``until.claims: true``, which stops when the claims' gates are reached)
makes a fixed-sample interval invalid at the stop; these intervals hold at
every number of configurations at once.

The unit is the **configuration** (runs of one configuration share its
hyperparameters, so they are not independent of each other; configurations
are drawn independently). A claim pooled over tasks or studies pools each
configuration's runs across them (configuration c00012 of every task is one
unit), in configuration order: the units are then independent draws of one
law whose mean is the pooled one. Taking the tasks one after another instead
would feed the sequence the first task's units first, and its running
intersection would lock onto that task's mean. When every candidate value has
been rejected (an empty running intersection) the path says so (``empty``)
rather than showing a point. Per claim statistic:

* a **mean** of values known to lie in [lo, hi]: each configuration's mean of
  its values, in configuration order, under the betting sequence of
  :func:`analysis.stats.sequential.bounded_cs` (a value claim's mean; a win
  share, whose units lie in [0, 1]);
* a **median** (a value claim's median, a delta claim's median paired
  difference): the sign-test sequence. For a candidate m, a configuration's
  unit is the share of its values above m (and, for the other side, below
  m), which lies in [0, 1] and has mean P(X > m) ≤ ½ at the true median. For
  values in [0, 1] with mean p, the beta-mixture likelihood ratio
  ``B(a + S, b + n − S) / B(a, b) / (p^S (1 − p)^(n − S))`` (S the sum of n
  units) is a nonnegative supermartingale (the integrand is convex in each
  value, so its expectation is at most that of a Bernoulli(p), which is 1;
  Robbins 1970 for the Bernoulli case), so by Ville's inequality it passes
  2/α with probability at most α/2, ever. A median m is left out when the
  units above it (or below it) pass that mark against p = ½; the two sides
  together keep the true median with probability ≥ 1 − α at every n.

:func:`claim_path` gives the estimate and the interval after each
configuration, from which a look's verdict (and the configuration count at
which a gate was reached) follows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import optimize, special

from .sequential import CLAIM_TRUNCATION, bounded_cs

__all__ = ["mixture_crossing", "median_interval", "ClaimPath", "claim_path", "PRIOR"]

#: the beta mixture's prior Beta(a, a) over the units' mean
PRIOR = 1.0


def _log_ratio_at_half(s: float, n: int, a: float = PRIOR) -> float:
    """log of the mixture likelihood ratio against p = ½ after n units summing to s."""
    return float(special.betaln(a + s, a + n - s) - special.betaln(a, a) + n * math.log(2.0))


@lru_cache(maxsize=4096)
def mixture_crossing(n: int, alpha: float, a: float = PRIOR) -> float:
    """The smallest sum S of n units in [0, 1] at which the beta mixture
    against p = ½ reaches 2/α (one side at α/2); ``inf`` when even S = n does not.
    Solved once per (n, α, a) in a process (a claim's path asks it at every count).

    >>> mixture_crossing(5, 0.05)          # five straight units of 1 are not enough at 95 %
    inf
    >>> round(mixture_crossing(30, 0.05), 2)
    23.71
    """
    if n <= 0:
        return math.inf
    mark = math.log(2.0 / alpha)
    if _log_ratio_at_half(n, n, a) < mark:
        return math.inf
    # on S in [n/2, n] the ratio grows with S (the beta function is smallest at the middle)
    return float(optimize.brentq(lambda s: _log_ratio_at_half(s, n, a) - mark, n / 2.0, float(n), xtol=1e-9))


def median_interval(values, clusters, alpha: float) -> tuple[float, float]:
    """The sign-test sequence's interval for the median of ``values`` after
    the configurations ``clusters`` (one label per value) counted so far
    (module docstring); (−inf, inf) while too few are counted.

    >>> x = np.arange(40, dtype=float)
    >>> median_interval(x, x, 0.05)
    (9.0, 30.0)
    """
    x = np.asarray(values, dtype=float)
    keep = np.isfinite(x)
    x, g = x[keep], np.asarray(clusters)[keep]
    if not x.size:
        return -math.inf, math.inf
    _, inverse, counts = np.unique(g, return_inverse=True, return_counts=True)
    w = 1.0 / counts[inverse]                    # each configuration's values weigh 1 together
    n = len(counts)
    crit = mixture_crossing(n, alpha)
    if not math.isfinite(crit):
        return -math.inf, math.inf
    order = np.argsort(x, kind="stable")
    xs, ws = x[order], w[order]
    levels, first = np.unique(xs, return_index=True)
    below = np.concatenate([[0.0], np.cumsum(ws)])[first]           # weight strictly below each level
    at = np.add.reduceat(ws, first)
    above = n - below - at                                         # weight strictly above each level
    ok_low = np.flatnonzero(above < crit - 1e-12)                  # m not too low: few enough above it
    ok_high = np.flatnonzero(below < crit - 1e-12)                 # m not too high: few enough below it
    lo = float(levels[ok_low[0]]) if ok_low.size else math.inf
    hi = float(levels[ok_high[-1]]) if ok_high.size else -math.inf
    return lo, hi


@dataclass(frozen=True)
class ClaimPath:
    """A claim's estimate and anytime-valid interval after each of ``n``
    configurations (``labels``, in configuration order)."""

    labels: tuple[str, ...]
    estimate: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    how: str                               # which sequence, in a few words
    empty: np.ndarray | None = None        # after each configuration: every value rejected (an empty intersection)

    @property
    def n(self) -> int:
        """Configurations counted."""
        return len(self.labels)


def claim_path(values, clusters, *, statistic: str, alpha: float, bounds: tuple[float, float] | None = None
               ) -> ClaimPath:
    """The path of a claim's statistic over ``values`` grouped by
    configuration (``clusters``, in configuration order): ``statistic`` mean
    (needs ``bounds``, the values' [lo, hi]; None gives no interval) or
    median. The estimate after n configurations is the statistic of all
    their values, as the fixed-sample claim computes it.

    >>> p = claim_path([0.5, 0.7, 0.6, 0.6], ["c0", "c0", "c1", "c1"], statistic="mean", alpha=0.05,
    ...                bounds=(0.0, 1.0))
    >>> p.labels, [round(float(e), 2) for e in p.estimate]
    (('c0', 'c1'), [0.6, 0.6])
    """
    x = np.asarray(values, dtype=float)
    g = np.asarray([str(c) for c in clusters])
    keep = np.isfinite(x)
    x, g = x[keep], g[keep]
    labels = list(dict.fromkeys(g.tolist()))     # the order in which configurations first appear
    index = {c: i for i, c in enumerate(labels)}
    rank = np.array([index[c] for c in g], dtype=int)
    n = len(labels)
    f = np.mean if statistic == "mean" else np.median
    estimate = np.array([f(x[rank <= i]) for i in range(n)], dtype=float)
    if statistic == "mean":
        if bounds is None:
            nan = np.full(n, np.nan)
            return ClaimPath(tuple(labels), estimate, nan, nan, "no interval: the values' bounds are unknown")
        per = np.array([x[rank == i].mean() for i in range(n)])
        cs = bounded_cs(per, alpha, bounds[0], bounds[1], truncation=CLAIM_TRUNCATION)
        return ClaimPath(tuple(labels), estimate, cs.lower, cs.upper,
                         f"betting sequence on configuration means in [{bounds[0]:g}, {bounds[1]:g}]", cs.empty)
    lower, upper = np.empty(n), np.empty(n)
    for i in range(n):
        lower[i], upper[i] = median_interval(x[rank <= i], rank[rank <= i], alpha)
    empty = np.logical_or.accumulate(lower > upper) if n else np.zeros(0, dtype=bool)
    return ClaimPath(tuple(labels), estimate, lower, upper, "sign-test sequence (beta mixture) over configurations",
                     empty)
