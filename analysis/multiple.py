"""Correction for many comparisons: Holm's step-down method (Holm 1979).

Sort the m p-values ascending; the i-th smallest (1-based) gets the adjusted
value max over j ≤ i of min(1, (m − j + 1) · p_(j)). A hypothesis is rejected
at family-wise level α when its adjusted p is below α. Holm controls the
family-wise error like Bonferroni and never rejects less.
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
    """
    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1:
        raise ValueError("holm() takes a flat sequence of p-values")
    if np.any((p < 0) | (p > 1) | ~np.isfinite(p)):
        raise ValueError("p-values must be finite and within [0, 1]")
    m = len(p)
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted_sorted = np.maximum.accumulate(scaled)
    adjusted = np.empty(m)
    adjusted[order] = adjusted_sorted
    return adjusted, adjusted < alpha
