"""Expected validation performance (Dodge et al. 2019, "Show your work").

Given N validation scores of randomly drawn configurations, the expected best
score a researcher would have seen after n draws. With ``replace=True`` (the
paper's estimator) each draw is one of the N scores with probability 1/N:

    E[max of n] = Σ_i v_(i) · ((i/N)^n − ((i−1)/N)^n),  v_(1) ≤ … ≤ v_(N).

With ``replace=False`` the n draws are a random subset of the N runs:

    E[max of n] = Σ_i v_(i) · C(i−1, n−1) / C(N, n),     n ≤ N,

so n = 1 gives the mean and n = N the maximum. The curve never decreases.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy.special import gammaln

from .scores import finite_scores

__all__ = ["expected_max", "expected_max_sd"]


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
    v, _ = finite_scores(scores)                # missing scores are left out (analysis.scores)
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
