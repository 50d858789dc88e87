"""Almost Stochastic Order (del Barrio et al. 2018; Dror et al. 2019).

For score samples A and B with empirical quantile functions F⁻¹ and G⁻¹, the
*violation ratio*

    ε(A, B) = ∫_{t: F⁻¹(t) < G⁻¹(t)} (F⁻¹(t) − G⁻¹(t))² dt  /  ∫_0^1 (F⁻¹(t) − G⁻¹(t))² dt

is the share of the squared quantile distance where A is *worse* than B:
0 when A is stochastically larger, 1 when B is, 0.5 by convention when the
two quantile functions coincide. ``ε_min`` is its upper confidence bound at
the stated confidence level: ε̂ + Φ⁻¹(confidence) · σ̂ / √λ, with
λ = nm / (n + m) and σ̂ the bootstrap standard deviation of √λ (ε* − ε̂),
clipped to [0, 1]. "A is almost stochastically dominant over B" when
ε_min < τ (τ = 0.2 by default, Ulmer et al. 2022).

Checked against ``deepsig.aso`` in the tests. Differences: several
comparisons use the true Bonferroni level 1 − (1 − confidence)/k (deepsig's
``confidence + (1 − confidence)/k`` is weaker for k > 2), and the bootstrap
draws only the order statistics the quantile grid needs (:func:`boot_quantiles`:
the same distribution as resampling, without a sort per resample), seeded by
the caller.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats

from .scores import finite_scores

__all__ = ["aso", "aso_matrix", "ASOResult", "violation_ratio", "boot_quantiles", "TAU"]

TAU = 0.2


@dataclass(frozen=True)
class ASOResult:
    """``eps_min`` (upper bound of the violation ratio at ``confidence``), the
    point estimate ``violation_ratio`` and the settings used."""

    eps_min: float
    violation_ratio: float
    confidence: float
    n_bootstrap: int
    tau: float = TAU
    dropped: tuple[int, int] = (0, 0)       # missing scores of A and B left out (analysis.stats.scores)

    @property
    def dominant(self) -> bool:
        """True when A is almost stochastically dominant over B (ε_min < τ)."""
        return self.eps_min < self.tau

    def sentence(self, a: str = "A", b: str = "B") -> str:
        """The result in one sentence: whether ``a`` dominates ``b``, with ε_min, τ and the confidence."""
        verdict = "is" if self.dominant else "is not shown to be"
        return (f"{a} {verdict} almost stochastically dominant over {b}: ε_min = {self.eps_min:.3f} "
                f"(τ = {self.tau}, confidence {100 * self.confidence:g}%).")


def _grid(dt: float) -> np.ndarray:
    return np.arange(dt / 2, 1.0, dt)


def _quantiles(sorted_samples: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Empirical quantile function inf{x: F(x) ≥ t} of (rows of) sorted samples."""
    n = sorted_samples.shape[-1]
    idx = np.clip(np.ceil(t * n).astype(int) - 1, 0, n - 1)
    return sorted_samples[..., idx]


def _ratio(qa: np.ndarray, qb: np.ndarray) -> np.ndarray:
    diff = qa - qb
    sq = diff ** 2
    total = sq.sum(axis=-1)
    violated = np.where(diff < 0, sq, 0.0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, violated / np.where(total > 0, total, 1.0), 0.5)


def violation_ratio(a: Sequence[float], b: Sequence[float], *, dt: float = 0.005) -> float:
    """ε(A, B) on a grid of step ``dt`` (see the module docstring)."""
    t = _grid(dt)
    return float(_ratio(_quantiles(np.sort(finite_scores(a)[0]), t), _quantiles(np.sort(finite_scores(b)[0]), t)))


def boot_quantiles(sorted_x: np.ndarray, t: np.ndarray, n_bootstrap: int, rng: np.random.Generator
                    ) -> np.ndarray:
    """Quantile functions (on grid ``t``) of ``n_bootstrap`` resamples of
    ``sorted_x`` with replacement, without drawing the resamples.

    The r-th smallest of n draws v[⌊U n⌋] is v[⌊U_(r) n⌋] with U_(r) the r-th
    order statistic of n uniforms, and U_(r) = S_r / S_(n+1) for S the partial
    sums of n + 1 unit exponentials. Only the ranks the grid needs are drawn,
    as Gamma variates of the gaps between them: O(len(t)) per resample
    instead of a sort of n values, with the same distribution as resampling.
    """
    n = len(sorted_x)
    ranks = np.clip(np.ceil(t * n).astype(np.int64), 1, n)            # 1-based, as _quantiles
    gaps = np.diff(np.concatenate([[0], ranks, [n + 1]])).astype(float)
    sums = np.cumsum(rng.standard_gamma(gaps, size=(n_bootstrap, len(gaps))), axis=1)
    u = sums[:, :-1] / sums[:, -1:]
    return sorted_x[np.minimum((u * n).astype(np.int64), n - 1)]


def _check(confidence: float) -> None:
    if not 0.5 <= confidence < 1:
        raise ValueError(f"confidence must be in [0.5, 1), got {confidence}")


def _eps_min(eps: float, boots: np.ndarray, n: int, m: int, level: float) -> float:
    lam = n * m / (n + m)
    sigma = float(np.std(np.sqrt(lam) * (boots - eps)))
    return float(np.clip(eps + stats.norm.ppf(level) * sigma / np.sqrt(lam), 0.0, 1.0))


def aso(a: Sequence[float], b: Sequence[float], *, confidence: float = 0.95, n_bootstrap: int = 1000,
        dt: float = 0.005, num_comparisons: int = 1, seed: int = 0, tau: float = TAU) -> ASOResult:
    """ε_min of "A is almost stochastically dominant over B". The bootstrap
    of A draws from ``default_rng([seed, 0])``, that of B from
    ``default_rng([seed, 1])`` (as :func:`aso_matrix` does for samples 0 and 1).

    >>> rng = np.random.default_rng(0)
    >>> aso(rng.normal(0.9, 0.01, 50), rng.normal(0.85, 0.01, 50)).eps_min < 0.2
    True
    """
    return aso_matrix([a, b], confidence=confidence, n_bootstrap=n_bootstrap, dt=dt,
                      num_comparisons=num_comparisons, seed=seed, tau=tau)[0][1]


def aso_matrix(samples: Sequence[Sequence[float]], *, confidence: float = 0.95, n_bootstrap: int = 1000,
               dt: float = 0.005, num_comparisons: int | None = None, seed: int = 0, tau: float = TAU
               ) -> list[list[ASOResult | None]]:
    """ASO of every ordered pair of samples: entry ``[i][j]`` is ε_min of
    "samples[i] dominates samples[j]" (None on the diagonal). Each sample is
    bootstrapped once, from ``default_rng([seed, i])``, and its resamples
    serve every pair it is in (entry ``[0][1]`` is ``aso(samples[0], samples[1])``
    exactly; the others equal ``aso`` up to the bootstrap's draws). ``num_comparisons`` defaults to the
    number of ordered pairs k(k − 1), so the confidence is Bonferroni-corrected
    for every entry of the matrix.

    >>> m = aso_matrix([[1, 2, 3], [2, 3, 4], [0, 1, 2]], n_bootstrap=200)
    >>> second, first = m[1], m[0]
    >>> round(second[0].violation_ratio, 3), round(first[1].violation_ratio, 3), first[0]
    (0.0, 1.0, None)
    """
    _check(confidence)
    k = len(samples)
    kept = [finite_scores(x) for x in samples]          # missing scores are left out (analysis.stats.scores)
    if any(len(x) == 0 for x, _ in kept):
        raise ValueError("ASO needs at least one finite score on each side")
    comparisons = k * (k - 1) if num_comparisons is None else num_comparisons
    level = 1 - (1 - confidence) / max(1, comparisons)
    t = _grid(dt)
    sorted_ = [np.sort(x) for x, _ in kept]
    q = [_quantiles(x, t) for x in sorted_]
    boot = [boot_quantiles(x, t, n_bootstrap, np.random.default_rng([seed, i])) for i, x in enumerate(sorted_)]
    out: list[list[ASOResult | None]] = [[None] * k for _ in range(k)]
    for i in range(k):
        for j in range(k):
            if i == j:
                continue
            eps = float(_ratio(q[i], q[j]))
            boots = _ratio(boot[i], boot[j])
            n, m = len(sorted_[i]), len(sorted_[j])
            out[i][j] = ASOResult(eps_min=_eps_min(eps, boots, n, m, level), violation_ratio=eps,
                                  confidence=level, n_bootstrap=n_bootstrap, tau=tau,
                                  dropped=(kept[i][1], kept[j][1]))
    return out
