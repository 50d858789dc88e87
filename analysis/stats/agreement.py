"""Do two evaluations rank the options alike? Kendall's τ and Spearman's ρ
between two option rankings (e.g. the median score per option of two
studies), with a bootstrap interval and, for small n, an exact p.

Each side is a mapping option -> score, or option -> scores (one per seed or
configuration: the option's score is then their median, and the bootstrap
resamples them, each option on its own). Options present on one side only
are left out and listed. ``higher_is_better`` states each side's direction
(``False`` for a dispersion score M or a loss): the rankings compared are
"best first" on both sides, so τ = 1 means the two agree completely.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
from scipy import stats

from .scores import finite_scores

__all__ = ["RankAgreement", "rank_agreement"]


@dataclass(frozen=True)
class RankAgreement:
    options: list[str]                  # the options both sides score, sorted
    tau: float                          # Kendall's τ-b
    tau_p: float                        # two-sided p (exact when n is small and nothing ties)
    tau_exact: bool
    tau_ci: tuple[float, float]         # percentile bootstrap (nan when neither side has samples)
    rho: float                          # Spearman's ρ
    rho_p: float
    confidence: float
    n_bootstrap: int
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)

    def sentence(self, a: str = "A", b: str = "B") -> str:
        """The agreement in one sentence (τ with its p and interval, ρ), naming the two sides ``a`` and ``b``."""
        return (f"{a} and {b} rank {len(self.options)} options with Kendall τ = {self.tau:.3f} "
                f"(p = {self.tau_p:.3g}{', exact' if self.tau_exact else ''}; "
                f"{100 * self.confidence:.0f}% CI [{self.tau_ci[0]:.2f}, {self.tau_ci[1]:.2f}]), "
                f"Spearman ρ = {self.rho:.3f}")


def _samples(side: Mapping[str, float | Sequence[float]]) -> dict[str, np.ndarray]:
    out = {}
    for option, value in side.items():
        kept, _ = finite_scores(np.atleast_1d(np.asarray(value, dtype=float)))
        if len(kept):
            out[str(option)] = kept
    return out


def rank_agreement(a: Mapping[str, float | Sequence[float]], b: Mapping[str, float | Sequence[float]], *,
                   higher_is_better: tuple[bool, bool] = (True, True), n_bootstrap: int = 1000,
                   confidence: float = 0.95, seed: int = 0) -> RankAgreement:
    """Kendall's τ and Spearman's ρ between the option rankings of ``a`` and ``b``.

    >>> r = rank_agreement({"x": 1.0, "y": 2.0, "z": 3.0}, {"x": 10.0, "y": 30.0, "z": 20.0})
    >>> round(r.tau, 4), r.tau_exact
    (0.3333, True)
    """
    sa, sb = _samples(a), _samples(b)
    options = sorted(set(sa) & set(sb))
    if len(options) < 2:
        raise ValueError(f"rank agreement needs two or more options scored on both sides, got {options}")
    sign = np.array([1.0 if h else -1.0 for h in higher_is_better])
    va = sign[0] * np.array([np.median(sa[o]) for o in options])
    vb = sign[1] * np.array([np.median(sb[o]) for o in options])
    ties = len(set(va)) < len(va) or len(set(vb)) < len(vb)
    exact = not ties and len(options) <= 50
    tau = stats.kendalltau(va, vb, method="exact" if exact else "asymptotic")
    rho = stats.spearmanr(va, vb)
    rng = np.random.default_rng(seed)
    boots = []
    if any(len(sa[o]) > 1 for o in options) or any(len(sb[o]) > 1 for o in options):
        for _ in range(n_bootstrap):
            ra = [np.median(sa[o][rng.integers(0, len(sa[o]), len(sa[o]))]) for o in options]
            rb = [np.median(sb[o][rng.integers(0, len(sb[o]), len(sb[o]))]) for o in options]
            t = stats.kendalltau(sign[0] * np.array(ra), sign[1] * np.array(rb)).statistic
            boots.append(0.0 if np.isnan(t) else t)        # every value tied on a side: no order, τ = 0
    tail = (1 - confidence) / 2
    ci = tuple(float(q) for q in np.quantile(boots, [tail, 1 - tail])) if boots else (float("nan"),) * 2
    return RankAgreement(options=options, tau=float(tau.statistic), tau_p=float(tau.pvalue), tau_exact=exact,
                         tau_ci=ci, rho=float(rho.statistic), rho_p=float(rho.pvalue), confidence=confidence,
                         n_bootstrap=n_bootstrap, only_a=sorted(set(sa) - set(sb)), only_b=sorted(set(sb) - set(sa)))
