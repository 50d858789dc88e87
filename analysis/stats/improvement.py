"""Probability of improvement P(A > B) (Bouthillier et al. 2021).

Unpaired: the chance that a run of A beats a run of B, ties counting one
half -- exactly the Mann–Whitney U statistic of A divided by n·m. Paired
(``paired=True``, equal lengths, e.g. per-configuration scores of two
options): the share of pairs A wins, ties one half. The confidence interval
is a percentile bootstrap (resampling each side, or the pairs; a paired
resample is drawn as its numbers of wins, ties and losses, which is the
same distribution in O(1) per resample).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .scores import finite_pairs, finite_scores

__all__ = ["p_improvement", "Improvement"]


@dataclass(frozen=True)
class Improvement:
    p: float                    # P(A > B)
    ci: tuple[float, float]     # percentile bootstrap CI
    confidence: float
    paired: bool
    dropped: int = 0            # missing scores (or pairs) left out (analysis.stats.scores)


def _p_unpaired(a: np.ndarray, b: np.ndarray) -> float:
    """(#{a_i > b_j} + ½ #{a_i = b_j}) / (n m), via sorting (O((n + m) log m))."""
    b = np.sort(b)
    below = np.searchsorted(b, a, side="left")
    upto = np.searchsorted(b, a, side="right")
    return float((below + 0.5 * (upto - below)).sum() / (len(a) * len(b)))


def p_improvement(a: Sequence[float], b: Sequence[float], *, paired: bool = False, n_bootstrap: int = 1000,
                  confidence: float = 0.95, seed: int = 0) -> Improvement:
    """P(A > B) with a bootstrap CI.

    >>> p_improvement([3, 4, 5], [1, 2, 3]).p
    0.9444444444444444
    """
    if paired:
        a, b, dropped = finite_pairs(a, b)      # missing scores are left out (analysis.stats.scores)
    else:
        (a, dropped_a), (b, dropped_b) = finite_scores(a), finite_scores(b)
        dropped = dropped_a + dropped_b
    if len(a) == 0 or len(b) == 0:
        raise ValueError("P(A>B) needs finite scores on both sides")
    rng = np.random.default_rng(seed)
    if paired:
        win = (a > b) + 0.5 * (a == b)
        p = float(win.mean())
        # a resample of the pairs only matters through its numbers of wins, ties
        # and losses: draw those (multinomial) instead of n indices per resample
        n = len(win)
        shares = np.array([(win == 1).sum(), (win == 0.5).sum(), (win == 0).sum()], dtype=float) / n
        counts = rng.multinomial(n, shares, size=n_bootstrap)
        boots = (counts[:, 0] + 0.5 * counts[:, 1]) / n
    else:
        p = _p_unpaired(a, b)
        boots = np.array([_p_unpaired(a[rng.integers(0, len(a), len(a))], b[rng.integers(0, len(b), len(b))])
                          for _ in range(n_bootstrap)])
    tail = (1 - confidence) / 2
    lo, hi = np.quantile(boots, [tail, 1 - tail])
    return Improvement(p=p, ci=(float(lo), float(hi)), confidence=confidence, paired=paired, dropped=dropped)
