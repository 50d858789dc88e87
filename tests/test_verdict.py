"""Verdicts on claims (analysis.stats.verdict): the interval rule's calibration by
simulation, the seed record's cases, rank claims with ties, and the rules'
parsing. Analysis only: no Ray, no run directory."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from seedsweep.study.spec.claimsfile import Rule
from seedsweep.analysis.stats.verdict import (BAND_WARNING, INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, mean_ranks, outcome,
                              rank_interval, rank_verdict, value_estimate, verdict)

REPLICATIONS = 5000


def _simulate(n: int, target_shift_se: float, gate: float, seed: int, tolerance: float = 0.0) -> dict[str, float]:
    """Share of each verdict over replications of n normal scores (mean 0.7, sd 0.02),
    the target ``target_shift_se`` standard errors away from the true mean."""
    rng = np.random.default_rng(seed)
    sd = 0.02
    target = 0.7 + target_shift_se * sd / np.sqrt(n)
    counts = {REPRODUCED: 0, NOT_REPRODUCED: 0, INCONCLUSIVE: 0}
    for _ in range(REPLICATIONS):
        v = value_estimate(rng.normal(0.7, sd, n))
        counts[verdict(v.estimate, v.interval, target, Rule("interval", gate=gate, tolerance=tolerance)).verdict] += 1
    return {k: c / REPLICATIONS for k, c in counts.items()}


def test_the_interval_rule_reproduces_a_true_target_about_95_percent_of_the_time():
    shares = _simulate(30, 0.0, gate=1.0, seed=0)          # a loose gate: only coverage decides
    assert 0.93 <= shares[REPRODUCED] <= 0.97, shares


def test_a_target_four_standard_errors_away_is_not_reproduced():
    shares = _simulate(30, 4.0, gate=1.0, seed=1)
    assert shares[NOT_REPRODUCED] >= 0.95, shares


def test_five_runs_and_a_gate_tighter_than_their_interval_are_inconclusive():
    # five runs: the half-width is about t(0.975, 4) · 0.02 / √5 ≈ 0.025, far above the gate 0.002; the
    # target band ±0.005 keeps the interval from missing it in the 5% of draws it misses a point
    shares = _simulate(5, 0.0, gate=0.002, seed=2, tolerance=0.005)
    assert shares[INCONCLUSIVE] >= 0.95, shares


def _seed_record_sample():
    """100 runs around 70.3 of which two collapsed (15.9 and 9.3), as in the seed record."""
    rng = np.random.default_rng(0)
    scores = np.concatenate([rng.normal(70.3, 0.6, 98), [15.9, 9.3]])
    collapsed = np.r_[np.zeros(98, bool), [True, True]]
    return scores, collapsed


def test_two_collapsed_runs_fail_a_fixed_band_but_leave_the_interval_rule_inconclusive():
    scores, collapsed = _seed_record_sample()
    v = value_estimate(scores, collapsed=collapsed)
    assert v.n == 100 and v.collapsed == 2
    assert v.estimate == pytest.approx(scores.mean()) and v.estimate < 69.5       # the collapsed runs pull it down
    assert v.without == pytest.approx(scores[:98].mean()) and abs(v.without - 70.3) < 0.2
    band = verdict(v.estimate, v.interval, 70.3, Rule("band", band=0.5))
    assert band.verdict == NOT_REPRODUCED and band.warning == BAND_WARNING
    gated = verdict(v.estimate, v.interval, 70.3, Rule("interval", gate=0.5))
    assert gated.verdict == INCONCLUSIVE and "gate" in gated.why
    # by hand: the t-interval of the 100 scores
    half = 1.9842169515086827 * scores.std(ddof=1) / 10                             # t(0.975, 99)
    assert v.interval == pytest.approx((scores.mean() - half, scores.mean() + half))


def test_one_sided_rules_and_the_outcome():
    assert verdict(0.02, (0.01, 0.03), 0.0, Rule("above")).verdict == REPRODUCED
    assert verdict(-0.02, (-0.03, -0.01), 0.0, Rule("above")).verdict == NOT_REPRODUCED
    assert verdict(0.0, (-0.01, 0.01), 0.0, Rule("above")).verdict == INCONCLUSIVE
    assert verdict(-0.02, (-0.03, -0.01), 0.0, Rule("below")).verdict == REPRODUCED
    assert verdict(0.5, (0.4, 0.6), 0.7, Rule("interval", gate=0.2, tolerance=0.05)).verdict == NOT_REPRODUCED
    assert verdict(0.5, (0.4, 0.66), 0.7, Rule("interval", gate=0.2, tolerance=0.05)).verdict == REPRODUCED
    assert outcome([REPRODUCED, REPRODUCED]) == REPRODUCED
    assert outcome([REPRODUCED, INCONCLUSIVE]) == "partially reproduced"
    assert outcome([INCONCLUSIVE, NOT_REPRODUCED]) == NOT_REPRODUCED


def test_a_tie_at_the_best_rank_is_not_a_best():
    table = pd.DataFrame({"rocket": [0.9, 0.8, 0.7], "other": [0.9, 0.8, 0.7], "third": [0.1, 0.2, 0.3]})
    ranks = mean_ranks(table)
    assert ranks["rocket"] == ranks["other"] == Fraction(3, 2)
    v = rank_verdict(ranks, "rocket")
    assert v.verdict == NOT_REPRODUCED and "shared best" in v.why
    table.loc[0, "rocket"] = 0.95
    assert rank_verdict(mean_ranks(table), "rocket").verdict == REPRODUCED


def test_mean_ranks_are_exact_fractions_and_agree_with_pandas():
    # 85 blocks, five options: "a" ranks 3rd in 54, ties for 3rd-4th in 1 and ranks 4th in 30 blocks
    rows = []
    for i in range(85):
        if i < 54:
            rows.append([0.9, 0.8, 0.7, 0.6, 0.5])
        elif i == 54:
            rows.append([0.9, 0.8, 0.6, 0.6, 0.5])
        else:
            rows.append([0.9, 0.8, 0.6, 0.7, 0.5])
    table = pd.DataFrame(rows, columns=["x", "y", "a", "b", "z"])
    ranks = mean_ranks(table)
    assert ranks["a"] == Fraction(571, 170) and str(ranks["a"]) == "571/170"
    theirs = table.rank(axis=1, ascending=False, method="average").mean()          # another implementation
    for option, r in ranks.items():
        assert float(r) == pytest.approx(theirs[option], abs=1e-12)
    lo, hi = rank_interval(table, "a")
    assert 3.0 <= lo <= float(ranks["a"]) <= hi <= 4.0


def test_rules_are_read_with_clear_errors():
    assert Rule.from_dict({"interval": True, "gate": 0.02}) == Rule("interval", gate=0.02)
    assert Rule.from_dict({"band": 0.5}).describe() == "band ±0.5"
    for bad, words in (({"interval": True}, "gate"), ({"interval": True, "gate": -1}, "gate"),
                       ({"band": 0.5, "above": True}, "exactly one"), ({"above": True, "gate": 1}, "not"),
                       ("interval", "mapping"), ({"best": "yes"}, "best: true")):
        with pytest.raises(ValueError, match=words):
            Rule.from_dict(bad)
