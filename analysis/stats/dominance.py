"""Does one option dominate another? Every ordered pair of a comparison's
options, on the paired configurations' scores (the mean over seeds per
configuration, the values win shares and Δ are computed from):

* **ε_min** of "A is almost stochastically dominant over B"
  (:func:`analysis.stats.aso.aso`), at a confidence Bonferroni-corrected for the
  k(k − 1) ordered pairs: 1 − (1 − confidence) / (k(k − 1));
* **P(A > B)**, paired (the share of configurations where A scores higher,
  ties one half; :func:`analysis.stats.improvement.p_improvement`) with its
  percentile bootstrap CI at ``confidence``;
* the **Wilcoxon signed-rank p** of the paired differences, Holm-adjusted
  over the k(k − 1)/2 unordered pairs (:func:`analysis.stats.multiple.holm`); the
  same value for (A, B) and (B, A).

With ``mode="min"`` (lower scores are better) every statistic is computed on
the negated scores, so "A dominates B" and P(A > B) still mean "A is better".
"""

from __future__ import annotations

from dataclasses import dataclass

from .aso import TAU, aso_matrix
from .improvement import p_improvement
from .multiple import holm
from .paired import Comparison
from .significance import wilcoxon_signed_rank

__all__ = ["PairDominance", "Dominance", "dominance"]


@dataclass(frozen=True)
class PairDominance:
    a: str
    b: str
    eps_min: float               # ε_min of "a dominates b"
    violation_ratio: float       # its point estimate
    p: float                     # P(a > b)
    p_ci: tuple[float, float]
    wilcoxon_p: float            # unadjusted
    wilcoxon_holm: float         # Holm-adjusted over the unordered pairs


@dataclass(frozen=True)
class Dominance:
    options: list[str]
    n: int                       # paired configurations
    confidence: float            # of the P(A > B) intervals and the family of ε_min
    level: float                 # the corrected confidence of each ε_min
    tau: float
    pairs: list[PairDominance]

    def pair(self, a: str, b: str) -> PairDominance:
        """The result of ``a`` against ``b`` (``KeyError`` if they were not compared)."""
        for p in self.pairs:
            if p.a == a and p.b == b:
                return p
        raise KeyError((a, b))

    def matrix(self, field: str) -> list[list[float | None]]:
        """Row A, column B: the ``field`` of the pair (A, B); None on the diagonal."""
        return [[None if a == b else float(getattr(self.pair(a, b), field)) for b in self.options]
                for a in self.options]


def dominance(c: Comparison, *, confidence: float = 0.95, n_bootstrap: int = 1000, seed: int = 0,
              tau: float = TAU) -> Dominance | None:
    """The pairwise dominance statistics of comparison ``c`` (None when it
    has fewer than two paired configurations or fewer than two options).

    >>> from seedsweep.analysis import compare
    >>> d = dominance(compare(load(run_dir), "classifier"))
    >>> p = d.pair("crf", "softmax")
    >>> p.eps_min < 0.2, p.p
    (True, 1.0)
    """
    options = list(c.options)
    k = len(options)
    if c.table is None or c.n < 2 or k < 2:
        return None
    sign = 1.0 if c.mode == "max" else -1.0
    values = [sign * c.table[o].to_numpy(dtype=float) for o in options]
    comparisons = k * (k - 1)
    matrix = aso_matrix(values, confidence=confidence, n_bootstrap=n_bootstrap, seed=seed, tau=tau,
                        num_comparisons=comparisons)
    unordered = [(i, j) for i in range(k) for j in range(i + 1, k)]
    raw = [wilcoxon_signed_rank(values[i] - values[j]) for i, j in unordered]
    adjusted, _ = holm(raw)
    wil = {}
    for (i, j), p, q in zip(unordered, raw, adjusted):
        wil[(i, j)] = wil[(j, i)] = (float(p), float(q))
    better = {}
    for i, j in unordered:              # P(B > A) = 1 − P(A > B), and its CI mirrors A's (same resamples)
        imp = p_improvement(values[i], values[j], paired=True, n_bootstrap=n_bootstrap, confidence=confidence,
                            seed=seed)
        better[(i, j)] = (imp.p, imp.ci)
        better[(j, i)] = (1.0 - imp.p, (1.0 - imp.ci[1], 1.0 - imp.ci[0]))
    pairs = []
    for i in range(k):
        for j in range(k):
            if i == j:
                continue
            r = matrix[i][j]
            pairs.append(PairDominance(options[i], options[j], r.eps_min, r.violation_ratio, *better[(i, j)],
                                       *wil[(i, j)]))
    level = 1 - (1 - confidence) / comparisons
    return Dominance(options, c.n, confidence, level, tau, pairs)
