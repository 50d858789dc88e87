"""Expected validation performance (Dodge et al. 2019, "Show your work").

Given N validation scores of randomly drawn configurations, the expected best
score a researcher would have seen after n draws. With ``replace=True`` (the
paper's estimator) each draw is one of the N scores with probability 1/N:

    E[max of n] = Σ_i v_(i) · ((i/N)^n − ((i−1)/N)^n),  v_(1) ≤ … ≤ v_(N).

With ``replace=False`` the n draws are a random subset of the N runs:

    E[max of n] = Σ_i v_(i) · C(i−1, n−1) / C(N, n),     n ≤ N,

so n = 1 gives the mean and n = N the maximum. The curve never decreases.

Selecting by one score and reporting another (:func:`expected_selected`):
Dodge et al.'s curves choose the run with the best *dev* score among the n
drawn and plot its *test* score. The same weights apply to the runs sorted
by dev score; runs tied on dev share the mean of their test scores (a tie at
the top is broken uniformly at random), so without replacement n = 1 gives
the mean test score and n = N the test score of the best-dev run.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Sequence

import numpy as np
from scipy.special import gammaln

from .scores import finite_scores

__all__ = ["expected_max", "expected_max_sd", "expected_selected", "log_grid", "prepare_weights", "weights_kept",
           "KEPT_WEIGHTS_BYTES"]

#: The weight matrices without replacement kept for later calls, at most this many bytes together.
KEPT_WEIGHTS_BYTES = 256 << 20
_KEPT: OrderedDict[tuple, np.ndarray] = OrderedDict()       # (N, ns) -> read-only matrix, oldest first
_KEPT_LOCK = threading.Lock()
_AHEAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="seedsweep-evp-ahead")


def _weights(N: int, n: int, replace: bool) -> np.ndarray:
    i = np.arange(1, N + 1, dtype=float)
    if replace:
        return (i / N) ** n - ((i - 1) / N) ** n
    if n > N:
        raise ValueError(f"without replacement n must be ≤ N = {N}, got {n}")
    w = np.zeros(N)
    ok = i >= n                                   # C(i−1, n−1) = 0 below
    k = i[ok] - 1
    logc = gammaln(k + 1) - gammaln(n) - gammaln(k - n + 2)
    w[ok] = np.exp(logc - (gammaln(N + 1) - gammaln(n + 1) - gammaln(N - n + 1)))
    return w


def _finite_sorted(scores: Sequence[float]) -> np.ndarray:
    v, _ = finite_scores(scores)                # missing scores are left out (analysis.stats.scores)
    if len(v) == 0:
        raise ValueError("expected validation performance needs at least one finite score")
    return np.sort(v)


def expected_max(scores: Sequence[float], n: int | Sequence[int] | None = None, *,
                 replace: bool = True) -> np.ndarray:
    """Expected maximum score after n = 1 … len(scores) draws (or the given n).

    >>> expected_max([0.1, 0.5, 0.9], replace=False).round(4).tolist()
    [0.5, 0.7667, 0.9]
    """
    v = _finite_sorted(scores)
    N = len(v)
    ns = np.arange(1, N + 1) if n is None else np.atleast_1d(np.asarray(n, dtype=int))
    return np.array([float(_weights(N, int(k), replace) @ v) for k in ns])


def expected_max_sd(scores: Sequence[float], n: int | Sequence[int] | None = None, *,
                    replace: bool = True) -> np.ndarray:
    """Standard deviation of the maximum after n draws (the band of Dodge et al.'s curves)."""
    v = _finite_sorted(scores)
    N = len(v)
    ns = np.arange(1, N + 1) if n is None else np.atleast_1d(np.asarray(n, dtype=int))
    out = []
    for k in ns:
        w = _weights(N, int(k), replace)
        mean = w @ v
        out.append(float(np.sqrt(max(0.0, w @ (v ** 2) - mean ** 2))))
    return np.array(out)


def expected_selected(dev: Sequence[float], test: Sequence[float], n: int | Sequence[int] | None = None, *,
                      replace: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Expected test score of the best-dev run among n draws, and its standard
    deviation, for n = 1 … N (or the given n). Runs without a finite dev and
    test score are left out (:mod:`analysis.stats.scores`).

    >>> mean, sd = expected_selected([0.1, 0.5, 0.9], [0.3, 0.2, 0.7])
    >>> mean.round(4).tolist(), round(float(sd[-1]), 6)
    ([0.4, 0.5333, 0.7], 0.0)
    """
    dev = np.asarray(dev, dtype=float).reshape(-1)
    test = np.asarray(test, dtype=float).reshape(-1)
    if len(dev) != len(test):
        raise ValueError(f"dev and test scores need equal lengths, got {len(dev)} and {len(test)}")
    ok = np.isfinite(dev) & np.isfinite(test)
    dev, test = dev[ok], test[ok]
    N = len(dev)
    if N == 0:
        raise ValueError("expected validation performance needs at least one run with dev and test scores")
    order = np.lexsort((test, dev))
    dev, test = dev[order], test[order]
    _, group, counts = np.unique(dev, return_inverse=True, return_counts=True)
    group = group.reshape(-1)
    mean_t = (np.bincount(group, weights=test) / counts)[group]          # ties share their mean
    mean_t2 = (np.bincount(group, weights=test ** 2) / counts)[group]
    ns = np.arange(1, N + 1) if n is None else np.atleast_1d(np.asarray(n, dtype=int))
    w = _weight_matrix(N, ns, replace)
    means = w @ mean_t
    return means, np.sqrt(np.maximum(0.0, w @ mean_t2 - means ** 2))


def _weight_matrix(N: int, ns: np.ndarray, replace: bool) -> np.ndarray:
    """:func:`_weights` for every n in ``ns`` at once (rows); without
    replacement kept (read-only) for the next call with the same N and n."""
    if replace:
        return np.vstack([_weights(N, int(k), True) for k in ns]) if len(ns) else np.zeros((0, N))
    if np.any(ns > N):
        raise ValueError(f"without replacement n must be ≤ N = {N}, got {int(ns.max())}")
    key = _kept_key(N, ns)
    with _KEPT_LOCK:
        if key in _KEPT:
            _KEPT.move_to_end(key)
            return _KEPT[key]
    w = _matrix_without_replacement(N, ns)
    w.setflags(write=False)
    if w.nbytes > KEPT_WEIGHTS_BYTES:          # e.g. every n of a large N: computed, not kept
        return w
    with _KEPT_LOCK:
        _KEPT[key] = w
        while len(_KEPT) > 1 and sum(m.nbytes for m in _KEPT.values()) > KEPT_WEIGHTS_BYTES:
            _KEPT.popitem(last=False)
    return w


def _kept_key(N: int, ns) -> tuple:
    return int(N), tuple(int(k) for k in np.atleast_1d(ns))


def weights_kept(N: int, ns) -> bool:
    """Whether the weights without replacement of N runs at ``ns`` are kept (no computing needed)."""
    with _KEPT_LOCK:
        return _kept_key(N, ns) in _KEPT


def prepare_weights(sizes, points: int = 60, delay_s: float = 0.0) -> Future:
    """Compute, in a background thread after ``delay_s`` seconds, the weights
    without replacement of each N in ``sizes`` on :func:`log_grid` ``(N, points)``,
    so that a later :func:`expected_selected` finds them kept. The live
    dashboard asks for one run more per option while it waits: a running
    study's next run then costs its redraw a product, not 1.5 million
    log-gamma values."""
    sizes = sorted({int(N) for N in sizes if int(N) >= 1})

    def compute() -> None:
        time.sleep(delay_s)
        for N in sizes:
            _weight_matrix(N, log_grid(N, points), False)

    return _AHEAD.submit(compute)


def _matrix_without_replacement(N: int, ns: np.ndarray) -> np.ndarray:
    """C(i−1, n−1) / C(N, n) for i = 1 … N (columns) and each n of ``ns`` (rows)."""
    i = np.arange(1, N + 1, dtype=float)[None, :]
    n = ns.astype(float)[:, None]
    ok = i >= n
    k = i - 1
    with np.errstate(invalid="ignore"):
        logc = gammaln(k + 1) - gammaln(n) - gammaln(np.where(ok, k - n + 2, 1.0))
        logn = gammaln(N + 1) - gammaln(n + 1) - gammaln(N - n + 1)
    return np.where(ok, np.exp(logc - logn), 0.0)


def log_grid(N: int, points: int = 60) -> np.ndarray:
    """About ``points`` integers from 1 to N, evenly spaced on a log axis (1 and N included).

    >>> log_grid(10, 5).tolist()
    [1, 2, 3, 6, 10]
    """
    if N < 1:
        return np.zeros(0, dtype=int)
    return np.unique(np.round(np.geomspace(1, N, min(points, N))).astype(int))
