"""The claims' anytime interval of a mean stakes up to 95 % of capital (issue 50, item 6).

The oracle is the hedged capital recomputed here one candidate and one
observation at a time, in plain Python (Waudby-Smith & Ramdas 2023, eq. 26-27
for the stakes), not the vectorised code under test; the width and coverage
are checked on the claim-coverage setting (the full run:
``benchmarks/claim_coverage.py``, its result in
``benchmarks/results/claim_coverage-2026-12-04-truncation.json``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from seedsweep.analysis.stats.anytime import claim_path
from seedsweep.analysis.stats.sequential import CLAIM_TRUNCATION, GRID, betting_cs


def _kept_by_hand(x, alpha: float, truncation: float, m: float) -> bool:
    """Whether candidate mean ``m`` survives every observation of ``x`` (hedged capital below 1/alpha)."""
    log_up = log_down = 0.0
    total, squares = 0.0, 0.0
    mu_prev, var_prev = 0.5, 0.25
    for i, xi in enumerate(x, start=1):
        lam = math.sqrt(2 * math.log(2 / alpha) / (var_prev * i * math.log(1 + i)))
        up = min(lam, truncation / m) if m > 0 else lam
        down = min(lam, truncation / (1 - m)) if m < 1 else lam
        log_up += math.log1p(up * (xi - m))
        log_down += math.log1p(-down * (xi - m))
        if 0.5 * math.exp(min(log_up, 700)) + 0.5 * math.exp(min(log_down, 700)) >= 1 / alpha:
            return False
        total += xi
        squares += (xi - mu_prev) ** 2
        mu_prev, var_prev = (0.5 + total) / (i + 1), (0.25 + squares) / (i + 1)
    return True


@pytest.mark.parametrize("truncation", [0.5, CLAIM_TRUNCATION])
@pytest.mark.parametrize("a, b", [(2, 30), (30, 2)])
def test_the_interval_is_the_set_of_candidates_the_hand_computed_capital_keeps(truncation, a, b):
    x = np.random.default_rng(8).beta(a, b, size=25)                 # values near a bound, where truncation binds
    cs = betting_cs(x, 0.05, truncation=truncation)
    grid = np.linspace(0.0, 1.0, GRID)
    kept = [m for m in grid if _kept_by_hand(x, 0.05, truncation, m)]
    step = 1.0 / (GRID - 1)
    assert cs.lower[-1] == pytest.approx(max(0.0, kept[0] - step), abs=1e-12)
    assert cs.upper[-1] == pytest.approx(min(1.0, kept[-1] + step), abs=1e-12)


def test_the_claims_interval_is_narrower_and_keeps_its_coverage():
    """300 studies of the claim-coverage setting (lognormal scores / 60, 60
    configurations of two runs): the interval never loses the true mean in
    more than α + 3 SE of them, and its median width at 60 configurations is
    at most 5.5x the t-interval's (8.3x at a truncation of 0.5)."""
    rng = np.random.default_rng(11)
    reps, n = 300, 60
    config = rng.lognormal(sigma=1.0, size=(reps, n))
    runs = np.stack([config * rng.lognormal(sigma=0.3, size=(reps, n)) for _ in range(2)], axis=2) / 60
    mean = math.exp(0.5) * math.exp(0.045) / 60                          # E of the product of the two lognormals
    lost, ratios = 0, []
    for r in range(reps):
        per = runs[r].mean(axis=1).clip(0, 1)
        path = claim_path(per, [f"c{i:05d}" for i in range(n)], statistic="mean", alpha=0.05, bounds=(0.0, 1.0))
        lost += bool(((path.lower > mean) | (path.upper < mean)).any())
        t_width = 2 * 2.0 * per.std(ddof=1) / math.sqrt(n)
        ratios.append((path.upper[-1] - path.lower[-1]) / t_width)
    assert lost / reps <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / reps), lost / reps
    assert float(np.median(ratios)) <= 5.5, float(np.median(ratios))
