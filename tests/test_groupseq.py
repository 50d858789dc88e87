"""seedsweep.analysis.stats.groupseq: group-sequential boundaries, checked against the
published constants of the classical designs and by simulation (a different
method from the code's numerical integration)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from seedsweep.analysis.stats.groupseq import boundaries, constant_boundary, crossing_probabilities, share_boundaries, spent

#: Jennison & Turnbull (2000), Tables 2.1 and 2.3: two-sided alpha 0.05, K equally spaced looks
POCOCK = {2: 2.178, 3: 2.289, 4: 2.361, 5: 2.413}
OBRIEN_FLEMING = {2: 1.977, 3: 2.004, 4: 2.024, 5: 2.040}
#: DeMets & Lan (1994), Table 1: Lan-DeMets spending, two-sided alpha 0.05, 5 equally spaced looks
LAN_DEMETS = {"obf": [4.877, 3.357, 2.680, 2.290, 2.031], "pocock": [2.438, 2.427, 2.410, 2.397, 2.386]}


@pytest.mark.parametrize("looks", [2, 3, 4, 5])
def test_the_published_pocock_and_obrien_fleming_constants(looks):
    assert constant_boundary(looks, 0.05, "pocock")[0] == pytest.approx(POCOCK[looks], abs=0.0015)
    obf = constant_boundary(looks, 0.05, "obf")
    assert obf[-1] == pytest.approx(OBRIEN_FLEMING[looks], abs=0.0015)        # C_B, the last look's value
    assert obf[0] == pytest.approx(OBRIEN_FLEMING[looks] * math.sqrt(looks), abs=0.004)


@pytest.mark.parametrize("kind", ["obf", "pocock"])
def test_the_published_lan_demets_boundaries(kind):
    z = boundaries([0.2, 0.4, 0.6, 0.8, 1.0], 0.05, kind).z
    assert list(z) == pytest.approx(LAN_DEMETS[kind], abs=0.0015)


def test_spending_functions_spend_nothing_at_0_and_alpha_at_the_end():
    for kind in ("obf", "pocock"):
        assert spent(0.0, 0.05, kind) == 0.0 and spent(1.0, 0.05, kind) == pytest.approx(0.05)
        values = [spent(t, 0.05, kind) for t in np.linspace(0.1, 1, 50)]
        assert all(b > a for a, b in zip(values, values[1:]))
    assert spent(0.2, 0.05, "obf") < 1e-4 < spent(0.2, 0.05, "pocock")      # OBF spends almost nothing early
    with pytest.raises(ValueError, match="unknown spending function"):
        spent(0.5, 0.05, "haybittle")


def test_each_look_spends_what_the_spending_function_says():
    fractions = (0.18, 0.35, 0.6, 0.81, 1.0)
    for kind in ("obf", "pocock"):
        b = boundaries(fractions, 0.05, kind)
        exits = crossing_probabilities(fractions, b.z)
        assert np.cumsum(exits) == pytest.approx(np.array(b.spent), abs=1e-7)
        assert b.spent[-1] == pytest.approx(0.05)


def simulate(fractions_of, n_reps: int, drift: float, kind: str, seed: int) -> float:
    """Share of replications whose Z crosses its boundary at some look: each
    replication draws its own wave sizes (``fractions_of(rng)``), sums
    standard normal units (mean ``drift / sqrt(N)`` each, so that Z at the
    budget has mean ``drift``) and compares Z = sum / sqrt(n) at each look."""
    rng = np.random.default_rng(seed)
    crossed = 0
    cache: dict[tuple, tuple] = {}
    for _ in range(n_reps):
        counts = fractions_of(rng)
        total = counts[-1]
        key = tuple(counts)
        if key not in cache:
            cache[key] = boundaries([c / total for c in counts], 0.05, kind).z
        z_bounds = cache[key]
        units = rng.standard_normal(total) + drift / math.sqrt(total)
        sums = np.cumsum(units)[np.array(counts) - 1]
        z = sums / np.sqrt(counts)
        crossed += bool(np.any(np.abs(z) >= np.array(z_bounds)))
    return crossed / n_reps


@pytest.mark.parametrize("kind", ["obf", "pocock"])
def test_the_level_holds_by_simulation_at_irregular_looks(kind):
    """4,000 replications under the null, each with waves of random size (a
    first wave of 8-20 configurations, then 4-16 at a time, budget 80; drawn
    from 40 such schedules, whose boundaries are computed once each): the
    share that ever crosses is alpha within 3 standard errors."""
    def waves(rng):
        counts = [int(rng.integers(8, 21))]
        while counts[-1] < 80:
            counts.append(min(80, counts[-1] + int(rng.integers(4, 17))))
        return counts

    pool = [waves(np.random.default_rng([3, i])) for i in range(40)]
    assert len({tuple(p) for p in pool}) == 40 and len({len(p) for p in pool}) > 2
    n = 4000
    rate = simulate(lambda rng: pool[int(rng.integers(len(pool)))], n, 0.0, kind, seed=7)
    se = math.sqrt(0.05 * 0.95 / n)
    assert abs(rate - 0.05) <= 3 * se, rate


def test_power_by_the_recursion_matches_simulation():
    """At a drift of 2.8 (about 80 % power for a fixed design at alpha 0.05)
    the recursion's power for five equal looks is the simulated share."""
    fractions = [0.2, 0.4, 0.6, 0.8, 1.0]
    b = boundaries(fractions, 0.05, "obf")
    power = float(crossing_probabilities(fractions, b.z, drift=2.8).sum())
    rate = simulate(lambda rng: [20, 40, 60, 80, 100], 4000, 2.8, "obf", seed=11)
    assert rate == pytest.approx(power, abs=3 * math.sqrt(power * (1 - power) / 4000))
    assert 0.75 < power < 0.81                      # a little below the fixed design's 0.80


def test_bad_fractions_are_refused():
    for bad in ([], [0.5, 0.4], [0.0, 1.0], [0.5, 1.2]):
        with pytest.raises(ValueError, match="information fractions"):
            boundaries(bad)


def test_exact_share_boundaries_spend_what_brute_force_enumeration_finds():
    """Every sequence of 14 wins and losses enumerated (the oracle): the
    share of sequences that cross the boundaries at looks after 5, 9 and 14
    configurations is the level the boundaries say they spent, within it."""
    from itertools import product

    counts = (5, 9, 14)
    for kind in ("obf", "pocock"):
        b = share_boundaries([c / 14 for c in counts], counts, 0.2, kind)
        crossed = 0
        for seq in product((0, 1), repeat=14):
            wins = np.cumsum(seq)
            crossed += any(wins[c - 1] <= lo or wins[c - 1] >= hi for c, lo, hi in zip(counts, b.lower, b.upper))
        assert crossed / 2 ** 14 == pytest.approx(b.spent[-1], abs=1e-12)
        assert all(s <= spent(t, 0.2, kind) + 1e-12 for s, t in zip(b.spent, b.fractions))


def test_exact_share_boundaries_keep_the_level_with_ties_at_irregular_looks():
    """4,000 null replications: each configuration a win, a loss or (20 %) a
    tie, looks after waves of random size up to a budget of 60; the share of
    studies that ever decide is at most alpha (+ 3 SE)."""
    rng = np.random.default_rng(5)
    crossed, n = 0, 4000
    for _ in range(n):
        counts = [int(rng.integers(6, 15))]
        while counts[-1] < 60:
            counts.append(min(60, counts[-1] + int(rng.integers(4, 13))))
        units = rng.choice([0.0, 0.5, 1.0], size=60, p=[0.4, 0.2, 0.4])
        decided = [int((units[:c] != 0.5).sum()) for c in counts]
        wins = [int((units[:c] == 1.0).sum()) for c in counts]
        b = share_boundaries([c / 60 for c in counts], decided, 0.05, "obf")
        crossed += any(w <= lo or w >= hi for w, lo, hi in zip(wins, b.lower, b.upper))
    assert crossed / n <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / n), crossed / n
