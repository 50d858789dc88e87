"""Correction for many comparisons: Holm's step-down method (Holm 1979).

Sort the m p-values ascending; the i-th smallest (1-based) gets the adjusted
value max over j ≤ i of min(1, (m − j + 1) · p_(j)). A hypothesis is rejected
at family-wise level α when its adjusted p is below α. Holm controls the
family-wise error like Bonferroni and never rejects less. A NaN p-value (a
test that could not be computed) is left out of the family (not counted in
m), stays NaN and is never rejected (:mod:`analysis.stats.scores`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["holm"]


def holm(pvalues: Sequence[float], alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Holm-adjusted p-values (in the input order) and which are rejected at ``alpha``.

    >>> adjusted, reject = holm([0.01, 0.04, 0.03])
    >>> adjusted.tolist(), reject.tolist()
    ([0.03, 0.06, 0.06], [True, False, False])
    >>> adjusted, reject = holm([0.01, float("nan"), 0.04, 0.03])
    >>> adjusted.tolist()[2:], reject.tolist()
    ([0.06, 0.06], [True, False, False, False])
    """
    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1:
        raise ValueError("holm() takes a flat sequence of p-values")
    known = ~np.isnan(p)
    if np.any((p[known] < 0) | (p[known] > 1)):
        raise ValueError("p-values must be within [0, 1] (NaN for a test that could not be computed)")
    q = p[known]
    m = len(q)
    order = np.argsort(q, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * q[order])
    adjusted_known = np.empty(m)
    adjusted_known[order] = np.maximum.accumulate(scaled)
    adjusted = np.full(len(p), np.nan)
    adjusted[known] = adjusted_known
    return adjusted, np.where(known, adjusted < alpha, False)
