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
is vectorised and seeded by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats

from .scores import finite_scores

__all__ = ["aso", "ASOResult", "violation_ratio", "TAU"]

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
    dropped: tuple[int, int] = (0, 0)       # missing scores of A and B left out (analysis.scores)

    @property
    def dominant(self) -> bool:
        """True when A is almost stochastically dominant over B (ε_min < τ)."""
        return self.eps_min < self.tau

    def sentence(self, a: str = "A", b: str = "B") -> str:
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


def aso(a: Sequence[float], b: Sequence[float], *, confidence: float = 0.95, n_bootstrap: int = 1000,
        dt: float = 0.005, num_comparisons: int = 1, seed: int = 0, tau: float = TAU) -> ASOResult:
    """ε_min of "A is almost stochastically dominant over B".

    >>> rng = np.random.default_rng(0)
    >>> aso(rng.normal(0.9, 0.01, 50), rng.normal(0.85, 0.01, 50)).eps_min < 0.2
    True
    """
    a, dropped_a = finite_scores(a)             # missing scores are left out (analysis.scores)
    b, dropped_b = finite_scores(b)
    if len(a) == 0 or len(b) == 0:
        raise ValueError("ASO needs at least one finite score on each side")
    if not 0.5 <= confidence < 1:
        raise ValueError(f"confidence must be in [0.5, 1), got {confidence}")
    level = 1 - (1 - confidence) / max(1, num_comparisons)
    t = _grid(dt)
    eps = float(_ratio(_quantiles(np.sort(a), t), _quantiles(np.sort(b), t)))
    rng = np.random.default_rng(seed)
    n, m = len(a), len(b)
    boots = np.empty(n_bootstrap)
    chunk = max(1, 2_000_000 // (len(t) + n + m))
    for start in range(0, n_bootstrap, chunk):
        k = min(chunk, n_bootstrap - start)
        ra = np.sort(a[rng.integers(0, n, size=(k, n))], axis=1)
        rb = np.sort(b[rng.integers(0, m, size=(k, m))], axis=1)
        boots[start:start + k] = _ratio(_quantiles(ra, t), _quantiles(rb, t))
    lam = n * m / (n + m)
    sigma = float(np.std(np.sqrt(lam) * (boots - eps)))
    eps_min = float(np.clip(eps + stats.norm.ppf(level) * sigma / np.sqrt(lam), 0.0, 1.0))
    return ASOResult(eps_min=eps_min, violation_ratio=eps, confidence=level, n_bootstrap=n_bootstrap, tau=tau,
                     dropped=(dropped_a, dropped_b))
