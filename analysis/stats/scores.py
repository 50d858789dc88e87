"""One policy for missing scores, applied where scores enter a statistic.

A score that is NaN (a run without a result: failed, diverged before its
first evaluation, a missing cell of someone's table) or infinite is **left
out**, never treated as a number, and the number left out is returned so
that the caller can report it. Paired inputs lose the whole pair when either
side is missing. A p-value that is NaN (a test that could not be computed)
is left out of a multiple-comparison family: it is neither counted in m nor
rejected (:func:`analysis.stats.multiple.holm`).

Used by :func:`~analysis.stats.aso.aso`, :func:`~analysis.stats.evp.expected_max`,
:func:`~analysis.stats.evp.expected_max_sd`, :func:`~analysis.stats.improvement.p_improvement`
and :func:`~analysis.stats.multiple.holm`; the comparison tables apply the same
rule to rows (a row counts only with status ``ok`` and a finite score).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["finite_scores", "finite_pairs"]


def finite_scores(values: Sequence[float]) -> tuple[np.ndarray, int]:
    """The finite scores of ``values`` (in order) and how many were left out.

    >>> kept, dropped = finite_scores([0.5, float("nan"), 0.7, float("inf")])
    >>> kept.tolist(), dropped
    ([0.5, 0.7], 2)
    """
    v = np.asarray(values, dtype=float).reshape(-1)
    ok = np.isfinite(v)
    return v[ok], int((~ok).sum())


def finite_pairs(a: Sequence[float], b: Sequence[float]) -> tuple[np.ndarray, np.ndarray, int]:
    """Pairs (a_i, b_i) with both scores finite, and how many pairs were left out.

    >>> x, y, dropped = finite_pairs([1.0, float("nan"), 3.0], [1.0, 2.0, 0.0])
    >>> x.tolist(), y.tolist(), dropped
    ([1.0, 3.0], [1.0, 0.0], 1)
    """
    x = np.asarray(a, dtype=float).reshape(-1)
    y = np.asarray(b, dtype=float).reshape(-1)
    if len(x) != len(y):
        raise ValueError(f"paired scores need equal lengths, got {len(x)} and {len(y)}")
    ok = np.isfinite(x) & np.isfinite(y)
    return x[ok], y[ok], int((~ok).sum())
