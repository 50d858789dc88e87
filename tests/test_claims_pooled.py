"""Claims pooled over tasks, judged with anytime-valid intervals (issue 50, item 1).

The unit of an anytime claim is the configuration, its runs pooled across
the claim's tasks (:mod:`analysis.stats.anytime`); taken task by task the
betting sequence locks onto the first task's mean. The oracle is the pooled
mean of the simulation's two task means, fixed by the model and not
computed by the code under test; the full-size run (1,000 replications) is
``benchmarks/pooled_claims.py``, its result in
``benchmarks/results/pooled_claims-2026-12-04.json``."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from seedsweep.analysis.stats.claims import EMPTY_WHY, judge
from seedsweep.analysis.stats.decisions import decisions_table
from benchmarks.pooled_claims import claim, simulate, study_rows


def test_a_claim_pooled_over_two_tasks_keeps_the_pooled_mean():
    """60 studies (the benchmark's model, seed 1): the final anytime interval
    keeps the pooled mean 0.875 in all but α + 3 SE of them (taken task by task,
    it missed in every one)."""
    out = simulate(60, seed=1)
    ceiling = 0.05 + 3 * math.sqrt(0.05 * 0.95 / 60)
    assert out["final_interval_misses"] <= ceiling, out
    assert out["empty"] == 0.0, out
    assert out["anytime_disagrees_with_reproduced"] <= ceiling, out


def test_the_anytime_verdict_on_a_pooled_claim_agrees_with_the_fixed_one():
    rows = study_rows(np.random.default_rng(7))
    pooled = float(rows["test_score"].mean())
    c = claim(0.875)
    fixed = judge(c, rows, n_bootstrap=400)
    anytime = judge(c, rows, anytime=True, bounds=(0.0, 1.0))
    assert fixed.verdict.verdict == anytime.verdict.verdict == "reproduced"
    lo, hi = anytime.verdict.interval
    assert lo < pooled < hi and hi - lo > 0.005          # an interval around the estimate, not a point
    assert anytime.n == 150                               # configurations, each pooled over both tasks


def test_an_empty_running_intersection_is_reported_never_shown_as_a_point():
    """Units that drift (0.95 for 150 configurations, then 0.5): every candidate
    mean is rejected; the claim is inconclusive with a warning, its interval
    not a number, and the Decisions table's claim row shows no interval."""
    values = np.r_[np.full(150, 0.95), np.full(150, 0.5)]
    rows = pd.DataFrame({"config_id": [f"c{i:05d}" for i in range(300)], "test_score": values, "status": "ok"})
    c = claim(0.7)
    result = judge(c, rows, anytime=True, bounds=(0.0, 1.0))
    assert result.verdict.verdict == "inconclusive" and result.verdict.why == EMPTY_WHY
    assert "every candidate value was rejected" in (result.verdict.warning or "")
    assert all(math.isnan(v) for v in result.verdict.interval) and result.reached_at is None
    from seedsweep.study.spec.until import Until
    table = decisions_table([], Until(decide=("x",)), claims=[result])
    assert table.rows[0][5] == "–" and table.rows[0][6] == "waiting: gate not reached"
