"""The mean's group-sequential test at small budgets holds its level (issue 50, item 4).

Boundaries for the t statistic are calibrated on their own simulated null
paths (:mod:`analysis.stats.tboundaries`); the level is measured here on
other normal null studies (another seed), and the engine's decisions are
checked to be that rule. The full table (200,000 studies for each of budgets
8, 12, 20, 46; both spending types; alpha 0.05 and 0.01) is
``benchmarks/mean_level.py``, its result in
``benchmarks/results/mean_level-2026-12-04.json``."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from seedsweep.analysis.stats.spending import spending_looks, spending_path
from seedsweep.analysis.stats.tboundaries import t_boundaries
from benchmarks.mean_level import levels


@pytest.mark.parametrize("budget, kind", [(8, "obf"), (12, "pocock"), (20, "pocock")])
def test_the_mean_spending_test_holds_its_level_on_normal_nulls(budget, kind):
    """100,000 normal null studies: within α + 3 SE (the t-to-z mapping it
    replaces measured 5.6 %, 5.6 % and 5.7 % on these, above that ceiling)."""
    out = levels(100_000, budget, 0.05, kind)
    assert out["simulated_t"] <= out["ceiling"], out
    assert out["t_to_z"] > out["ceiling"], out          # the old rule, on the same studies, does not


def test_one_look_is_the_t_tests_own_quantile_and_boundaries_fall_with_the_units():
    (b,) = t_boundaries((12,), 12, 0.05, "pocock")
    assert b == pytest.approx(stats.t.isf(0.025, 11), abs=0.02)          # scipy's t quantile, another route
    looks = spending_looks(4, 20)
    bounds = t_boundaries(tuple(looks), 20, 0.05, "obf")
    finite = [x for x in bounds if math.isfinite(x)]
    assert finite == sorted(finite, reverse=True) and finite[-1] > stats.t.isf(0.025, 19)


def test_the_engine_decides_by_these_boundaries():
    """spending_path on 300 studies (a small effect) declares 'A better' at the
    first look whose |t| reaches the calibrated boundary, and only there."""
    budget = 20
    looks = spending_looks(4, budget)
    bounds = t_boundaries(tuple(looks), budget, 0.05, "obf")
    rng = np.random.default_rng(4)
    declared = 0
    for row in rng.standard_normal((300, budget)) + 0.6:
        path = spending_path(row, looks, budget, statistic="mean", alpha=0.05, delta=0.0, kind="obf")
        expected = None
        for k, n in enumerate(looks):
            x = row[:n]
            t = x.mean() / (x.std(ddof=1) / math.sqrt(n)) if n >= 3 else 0.0
            if abs(t) >= bounds[k]:
                expected = k
                break
        assert path.decided_look == expected, (path.decided_look, expected)
        declared += expected is not None
    assert 50 < declared < 300


def test_a_study_ending_short_of_its_budget_spends_its_whole_level_at_its_last_look():
    """1,500 normal null studies of budget 40 stopped at 24 configurations (an
    hours budget): told that the last look is final, the design spends all
    its level there (α within 3 SE); without, it spent only what the
    fraction 0.6 allows (about 0.7 % of these studies)."""
    looks = [n for n in spending_looks(4, 40) if n <= 24]
    rows = np.random.default_rng(9).standard_normal((1500, 40))
    rates = {}
    for final in (False, True):
        rates[final] = float(np.mean([spending_path(x, looks, 40, statistic="mean", alpha=0.05, delta=0.0,
                                                    kind="obf", final=final).decision != "undecided" for x in rows]))
    se = math.sqrt(0.05 * 0.95 / 1500)
    assert abs(rates[True] - 0.05) <= 3 * se, rates
    assert rates[False] < 0.02, rates


def test_the_simulated_t_of_each_path_is_scipys_t_statistic_on_the_seeded_draws():
    """The boundaries' |t| at each look, path by path, against scipy's one-sample t test on the
    same draws (the seeded stream read path by path, another route than the look-by-look sums):
    a change in the draws or in the arithmetic moves the boundaries of every running study."""
    from seedsweep.analysis.stats.tboundaries import SEED, null_abs_t

    counts, paths = (2, 3, 7, 20), 20_000
    got = null_abs_t(counts, paths)
    x = np.random.default_rng(SEED).standard_normal((paths, counts[-1]))
    assert (got[0] == 0).all()                                     # fewer than MIN_UNITS: no t
    for k, c in enumerate(counts[1:], start=1):
        want = np.abs(stats.ttest_1samp(x[:, :c], 0.0, axis=1).statistic)
        np.testing.assert_allclose(got[k], want, rtol=1e-9)
