"""seedsweep.analysis.stats.sequential: confidence sequences that hold at every look.

Oracles are computed another way than the code under test: the capital of
one candidate mean by a plain Python loop over the observations, coverage by
simulation against the true mean (and a fixed-sample interval peeked at
after every observation, which must fail where the sequence holds), and
decisions by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from scipy import stats

from seedsweep.analysis.stats.sequential import (GRID, asymptotic_cs, betting_cs, bounded_cs, decide, share_units,
                                                 split_alpha,
                                 stakes)


def capital_by_hand(x: list[float], m: float, alpha: float) -> list[float]:
    """The hedged capital for the candidate mean m after each observation,
    one bet at a time (the stakes from the formula in the module docstring)."""
    up = down = 1.0
    total, squares, out = 0.0, 0.0, []
    prev_mean, prev_var = 0.5, 0.25
    for i, xi in enumerate(x, start=1):
        lam = math.sqrt(2 * math.log(2 / alpha) / (prev_var * i * math.log(1 + i)))
        up *= 1 + min(lam, 0.5 / m if m > 0 else math.inf) * (xi - m)
        down *= 1 - min(lam, 0.5 / (1 - m) if m < 1 else math.inf) * (xi - m)
        out.append(0.5 * up + 0.5 * down)
        total += xi
        squares += (xi - prev_mean) ** 2
        prev_mean, prev_var = (0.5 + total) / (i + 1), (0.25 + squares) / (i + 1)
    return out


def test_the_sequence_keeps_exactly_the_means_whose_capital_stays_below_one_over_alpha():
    rng = np.random.default_rng(4)
    x = rng.beta(2, 5, size=60).tolist()
    alpha = 0.1
    cs = betting_cs(x, alpha)
    grid = np.linspace(0, 1, GRID)
    for m in grid[::50]:
        capital = capital_by_hand(x, float(m), alpha)
        ever_rejected = [any(c >= 1 / alpha for c in capital[: t + 1]) for t in range(len(x))]
        for t in (4, 19, 59):
            inside = cs.lower[t] <= m <= cs.upper[t]
            # a mean rejected at some look is outside from then on (the running intersection),
            # one never rejected is inside (up to the one grid step the bounds are rounded outwards)
            if not ever_rejected[t]:
                assert inside, (m, t, cs.lower[t], cs.upper[t])
            elif cs.lower[t] + 1 / (GRID - 1) < m < cs.upper[t] - 1 / (GRID - 1):
                pytest.fail(f"m={m} was rejected by observation {t} but lies inside ({cs.lower[t]}, {cs.upper[t]})")


def bounds_by_the_formula(x: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The bounds of the betting sequence by its formula on the whole grid at once
    (every capital by ``exp``, the running sums by ``np.cumsum``), and whether the
    running intersection is empty after each observation
    (``benchmarks/sequence_speed.py`` times ``betting_cs`` against it)."""
    m = np.linspace(0.0, 1.0, GRID)
    lam = stakes(x, alpha)[:, None]
    with np.errstate(divide="ignore"):
        up, down = np.minimum(lam, 0.5 / m[None, :]), np.minimum(lam, 0.5 / (1.0 - m[None, :]))
    diff = x[:, None] - m[None, :]
    capital = (0.5 * np.exp(np.minimum(np.cumsum(np.log1p(up * diff), axis=0), 700.0))
               + 0.5 * np.exp(np.minimum(np.cumsum(np.log1p(-down * diff), axis=0), 700.0)))
    lower, upper, none, step = [], [], [], 1.0 / (GRID - 1)
    for row in capital < 1.0 / alpha:
        kept = np.flatnonzero(row)
        none.append(not kept.size)
        lower.append(max(0.0, m[kept[0]] - step) if kept.size else (lower[-1] if lower else 0.0))
        upper.append(min(1.0, m[kept[-1]] + step) if kept.size else (upper[-1] if upper else 1.0))
    lower, upper = np.maximum.accumulate(lower), np.minimum.accumulate(upper)
    return lower, upper, np.logical_or.accumulate(np.array(none) | (lower > upper))


@pytest.mark.parametrize("n", [1, 7, 80, 600])
def test_the_sequence_computed_by_blocks_equals_the_formula_on_the_whole_grid(n):
    """betting_cs works a block of the grid at a time and computes the capital only
    near the level: the bounds equal the whole-grid formula's exactly."""
    rng = np.random.default_rng(n)
    shifted = np.repeat([1.0, 0.0], [n - n // 2, n // 2])          # the mean moves: the intersection empties
    emptied = 0
    for x in (rng.random(n), (rng.random(n) < 0.8).astype(float), np.clip(rng.normal(0.4, 0.05, n), 0, 1), shifted):
        for alpha in (0.05, 0.2):
            cs = betting_cs(x, alpha)
            lower, upper, empty = bounds_by_the_formula(x, alpha)
            assert np.array_equal(cs.lower, lower) and np.array_equal(cs.upper, upper), (n, alpha)
            assert np.array_equal(cs.empty, empty), (n, alpha)
            emptied += bool(empty.any())
    assert emptied >= (1 if n >= 80 else 0)                     # the comparison saw an empty intersection


def test_the_stakes_match_the_formula_by_hand():
    x = [1.0, 0.0, 1.0, 1.0]
    by_hand, mean, var, total, squares = [], 0.5, 0.25, 0.0, 0.0
    for i, xi in enumerate(x, start=1):
        by_hand.append(math.sqrt(2 * math.log(2 / 0.05) / (var * i * math.log(1 + i))))
        total += xi
        squares += (xi - mean) ** 2
        mean, var = (0.5 + total) / (i + 1), (0.25 + squares) / (i + 1)
    assert stakes(np.array(x), 0.05) == pytest.approx(by_hand)


def test_looking_after_every_observation_the_sequence_holds_and_a_peeked_z_interval_does_not():
    """400 studies of 300 observations each (Bernoulli(0.3), like a win share
    of 0.3), looked at after every one: the share of studies in which the
    true mean ever leaves the interval. The sequence's must stay within alpha
    (0.1, plus three binomial standard errors of the simulation); a 90 %
    z-interval recomputed at every look leaves it far more often."""
    rng = np.random.default_rng(11)
    alpha, mu, studies, n = 0.1, 0.3, 400, 300
    cs_miss = z_miss = 0
    for _ in range(studies):
        x = rng.binomial(1, mu, size=n).astype(float)
        cs = betting_cs(x, alpha, grid=401)
        cs_miss += bool(((cs.lower > mu) | (cs.upper < mu)).any())
        k = np.arange(1, n + 1)
        mean = np.cumsum(x) / k
        half = 1.645 * np.sqrt(np.maximum(mean * (1 - mean), 1e-12) / k)
        z_miss += bool((np.abs(mean - mu) > half)[9:].any())        # from the 10th look on
    slack = 3 * math.sqrt(alpha * (1 - alpha) / studies)
    assert cs_miss / studies <= alpha + slack, cs_miss
    assert z_miss / studies > 2 * alpha, z_miss
    print(f"ever outside: confidence sequence {cs_miss}/{studies}, peeked z-interval {z_miss}/{studies}")


def test_the_sequence_narrows_and_never_widens():
    rng = np.random.default_rng(2)
    cs = betting_cs(rng.uniform(0.4, 0.6, size=400), 0.05)
    width = cs.upper - cs.lower
    assert (np.diff(cs.lower) >= 0).all() and (np.diff(cs.upper) <= 0).all()
    assert width[-1] < 0.1 < width[9]
    assert cs.lower[-1] <= 0.5 <= cs.upper[-1]


def test_decisions_and_units_by_hand():
    assert decide(0.51, 0.60, centre=0.5, delta=0.05) == "A better"
    assert decide(0.30, 0.49, centre=0.5, delta=0.05) == "B better"
    assert decide(0.46, 0.55, centre=0.5, delta=0.05) == "equivalent"
    assert decide(0.44, 0.55, centre=0.5, delta=0.05) == "undecided"
    assert decide(-0.02, 0.01, centre=0.0, delta=0.02) == "equivalent"
    assert share_units([0.7, 0.7, 0.2], [0.6, 0.7, 0.3]).tolist() == [1.0, 0.5, 0.0]
    assert split_alpha(0.05, 4) == 0.0125
    # ten wins in a row at alpha 0.05 decide for A; five do not yet
    assert decide(*betting_cs([1.0] * 10, 0.05).last(), centre=0.5, delta=0.0) == "A better"
    assert decide(*betting_cs([1.0] * 5, 0.05).last(), centre=0.5, delta=0.0) == "undecided"


@pytest.mark.parametrize("bad", [[1.2], [-0.1], [float("nan")]])
def test_observations_outside_zero_one_are_refused(bad):
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        betting_cs(bad, 0.05)


# --- error control of whole decisions, by simulation (docs/reference/statistics.md, "Adaptive studies") --------------
# Each replication is a study looked at after every configuration. A *false* declaration is a
# decision the truth contradicts ("A better" when A is not, "B better" when B is not). The oracle
# beside the sequences is a paired t-test recomputed at every look (scipy), which a sequential
# study may not use: it must exceed alpha in the same simulation, so the check can tell them apart.
REPS = 2000


def ever_false(lower, upper, *, centre, truth):
    """Per replication (rows): did any look declare a better option that truth says is not better?"""
    a_wrong = (lower > centre) & (truth <= centre)
    b_wrong = (upper < centre) & (truth >= centre)
    return (a_wrong | b_wrong).any(axis=-1)


def peeked_t_false(units, *, centre, truth, alpha, first=5):
    """The same question for a two-sided t-test at level alpha recomputed after every look."""
    n = np.arange(1, units.shape[1] + 1)
    mean = np.cumsum(units, axis=1) / n
    var = (np.cumsum(units ** 2, axis=1) - n * mean ** 2) / np.maximum(n - 1, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        tstat = (mean - centre) / np.sqrt(var / n)
    crit = stats.t.ppf(1 - alpha / 2, np.maximum(n - 1, 1))
    looks = n >= first
    a = (tstat > crit) & looks & (truth <= centre)
    b = (tstat < -crit) & looks & (truth >= centre)
    return (a | b).any(axis=1)


def limit(alpha, reps=REPS):
    return alpha + 3 * math.sqrt(alpha * (1 - alpha) / reps)


def test_no_difference_the_share_sequence_declares_falsely_at_most_alpha_and_a_peeked_t_test_more():
    rng = np.random.default_rng(30)
    alpha, n = 0.1, 150
    units = rng.binomial(1, 0.5, size=(REPS, n)).astype(float)     # each configuration won by A or B alike
    bounds = [betting_cs(u, alpha, grid=201) for u in units]
    lower, upper = np.array([b.lower for b in bounds]), np.array([b.upper for b in bounds])
    cs_rate = ever_false(lower, upper, centre=0.5, truth=0.5).mean()
    t_rate = peeked_t_false(units, centre=0.5, truth=0.5, alpha=alpha).mean()
    print(f"share, no difference: confidence sequence {cs_rate:.4f}, peeked t-test {t_rate:.4f} (alpha {alpha})")
    assert cs_rate <= limit(alpha)
    assert t_rate > limit(alpha)


@pytest.mark.parametrize("mu", [0.0, 0.004])
def test_a_mean_difference_inside_the_margin_is_never_falsely_declared_beyond_alpha(mu):
    """Scores in [0, 1], differences about a point apart (sd 0.02) and a true
    difference of 0 or 0.4 points (inside a margin of 1 point)."""
    rng = np.random.default_rng(31)
    alpha, n = 0.1, 150
    d = np.clip(mu + 0.02 * rng.standard_t(5, size=(REPS, n)), -1, 1)
    bounds = [bounded_cs(u, alpha, -1.0, 1.0, grid=201) for u in d]
    lower, upper = np.array([b.lower for b in bounds]), np.array([b.upper for b in bounds])
    cs_rate = ever_false(lower, upper, centre=0.0, truth=mu).mean()
    t_rate = peeked_t_false(d, centre=0.0, truth=mu, alpha=alpha).mean()
    print(f"mean, true difference {mu}: confidence sequence {cs_rate:.4f}, peeked t-test {t_rate:.4f}")
    assert cs_rate <= limit(alpha)
    if mu == 0.0:
        assert t_rate > limit(alpha)


def test_three_options_on_two_tasks_hold_alpha_together():
    """Six sequences (three pairs of options, two tasks), alpha split six ways:
    the share of studies with any false declaration among all six."""
    rng = np.random.default_rng(32)
    alpha, n = 0.1, 100
    alpha_each = split_alpha(alpha, 6)
    scores = rng.normal(size=(REPS, 2, 3, n))              # replication, task, option, configuration
    false_any = np.zeros(REPS, dtype=bool)
    for task in range(2):
        for a, b in ((0, 1), (0, 2), (1, 2)):
            units = share_units(scores[:, task, a], scores[:, task, b])
            bounds = [betting_cs(u, alpha_each, grid=201) for u in units]
            lower, upper = np.array([x.lower for x in bounds]), np.array([x.upper for x in bounds])
            false_any |= ever_false(lower, upper, centre=0.5, truth=0.5)
    print(f"3 options x 2 tasks, no difference: family-wise false declarations {false_any.mean():.4f}")
    assert false_any.mean() <= limit(alpha)


def test_the_asymptotic_sequence_rate_per_sample_size():
    """The asymptotic sequence holds as n grows, not at every n: its rate of
    false declarations by 10, 30, 100 and 300 configurations, with heavy-tailed
    differences (t with 3 degrees of freedom) and with win units."""
    rng = np.random.default_rng(33)
    alpha, n = 0.1, 300
    rates = {}
    for name, units in (("t3 differences", rng.standard_t(3, size=(REPS, n))),
                        ("win units", rng.binomial(1, 0.5, size=(REPS, n)).astype(float))):
        centre = 0.5 if name == "win units" else 0.0
        bounds = [asymptotic_cs(u, alpha) for u in units]
        lower, upper = np.array([x.lower for x in bounds]), np.array([x.upper for x in bounds])
        rates[name] = {k: float(ever_false(lower[:, :k], upper[:, :k], centre=centre, truth=centre).mean())
                       for k in (10, 30, 100, 300)}
    print(f"asymptotic sequence, false declarations by n (alpha {alpha}): {rates}")
    for per_n in rates.values():
        assert list(per_n.values()) == sorted(per_n.values())      # "ever by n" only grows
        assert per_n[300] <= limit(alpha)
