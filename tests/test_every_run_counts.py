"""Every run counts in a decision (issue 50, item 3).

A collapsed run keeps its score; a run without one (failed, or diverged with
none) counts as its configuration's loss in a win share and as the declared
worst score in a mean; the Decisions table counts both. The collapse null is
stored as the engine stores it (:func:`analysis.stats.methods.collapse_trials`)
and goes through the decisions' own units; the oracle for the units is the
trials table pivoted by hand. The full-size level run (2,000 studies) is
``benchmarks/skewed_nulls.py``, its result in
``benchmarks/results/skewed_nulls-2026-12-04-stored.json``."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from seedsweep.analysis.specs import ComparisonSpec
from seedsweep.analysis.stats.decisions import decisions_table, track
from seedsweep.analysis.stats.units import units
from seedsweep.analysis.stats.methods import collapse_trials, simulate, stored_units
from seedsweep.study.spec.until import Until

ALPHA, REPS = 0.05, 1000
CEILING = ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / REPS)


@pytest.mark.parametrize("statistic", ["mean", "share"])
@pytest.mark.parametrize("scored", [True, False])
def test_the_units_count_every_stored_run_as_the_pivoted_table_says(statistic, scored):
    df = collapse_trials(np.random.default_rng(5), 40, 80, statistic=statistic, scored=scored)
    until = Until(decide=("c",), statistic=statistic, delta=0.01, range=(0.0, 1.0), budget_samples=80)
    rows, imputed = stored_units(df, until)
    wide = df.pivot_table(index=["task", "config_id"], columns="option", values="test_score", dropna=False)
    a = wide["A"].fillna(0.0).to_numpy().reshape(40, 80)           # by hand: no score -> the worst score, 0
    b = wide["B"].to_numpy().reshape(40, 80)
    expected = a - b if statistic == "mean" else np.where(a > b, 1.0, np.where(a < b, 0.0, 0.5))
    assert rows.shape == (40, 80)                                  # no configuration dropped
    np.testing.assert_allclose(rows, expected)
    collapsed = (df[df.option == "A"].status == "diverged").to_numpy().reshape(40, 80).sum(axis=1)
    assert collapsed.sum() > 0
    np.testing.assert_array_equal(imputed, 0 if scored else collapsed)


@pytest.mark.parametrize("statistic, methods", [("mean", ("exact",)), ("share", ("exact", "spending"))])
def test_the_collapse_null_stored_as_the_engine_stores_it_holds_alpha(statistic, methods):
    """1,000 null studies of 80 configurations (first wave 4, waves of 2),
    collapsed runs stored diverged with their score: the false-winner rate of
    each method stays within α + 3 SE."""
    df = collapse_trials(np.random.default_rng(3), REPS, 80, statistic=statistic)
    for method in methods:
        until = Until(decide=("c",), statistic=statistic, delta=0.01, method=method, range=(0.0, 1.0),
                      budget_samples=80)
        rows, _ = stored_units(df, until)
        rate = simulate(rows, until, first=4, wave=2, cap=80, alpha=ALPHA).share("A better", "B better")
        assert rate <= CEILING, (statistic, method, rate)


def three_bad_softmax_runs(status: str, score: float) -> pd.DataFrame:
    """16 configurations, CRF ahead in each; three Softmax runs stored ``status`` with ``score``."""
    rows = []
    for i in range(16):
        for option, value in (("crf", 0.9), ("softmax", 0.8)):
            bad = option == "softmax" and i in (3, 7, 11)
            rows.append({"config_id": f"c{i:05d}", "choice": "classifier", "option": option, "seed": 0,
                         "task": "synthetic", "test_score": score if bad else value,
                         "status": status if bad else "ok", "reason": "collapsed: majority" if bad else None})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("statistic", ["share", "mean"])
@pytest.mark.parametrize("status, score, shown", [("diverged", 0.3, "3 (0)"), ("diverged", float("nan"), "3 (3)"),
                                                  ("failed", float("nan"), "3 (3)")])
def test_collapsed_and_failed_runs_stay_in_the_decision_and_the_table_counts_them(statistic, status, score, shown):
    until = Until(decide=("classifier",), statistic=statistic, delta=0.01, range=(0.0, 1.0), budget_samples=16)
    spec = ComparisonSpec("classifier", "classifier", ["crf", "softmax"])
    (t,) = track(three_bad_softmax_runs(status, score), until, [spec])
    assert t.n == 16                                               # not 13: the three configurations stay
    expected = np.full(16, 1.0 if statistic == "share" else 0.1)
    expected[[3, 7, 11]] = 1.0 if statistic == "share" else 0.9 - (0.0 if math.isnan(score) else score)
    np.testing.assert_allclose(t.values, expected)
    table = decisions_table([t], until)
    assert table.header[-1] == "not ok (no score)" and table.rows[0][-1] == shown
    assert "Every run counts" in " ".join(table.notes)


def test_a_mean_without_a_declared_worst_score_leaves_the_configuration_out_and_says_so():
    until = Until(decide=("classifier",), statistic="mean", delta=0.01, method="asymptotic", range=None,
                  budget_samples=16, assume_normal=True)
    spec = ComparisonSpec("classifier", "classifier", ["crf", "softmax"])
    (t,) = track(three_bad_softmax_runs("failed", float("nan")), until, [spec])
    assert t.n == 13 and len(t.left_out) == 3
    notes = " ".join(decisions_table([t], until).notes)
    assert "Left out" in notes and "until.range" in notes and ": 3 configurations" in notes


def test_the_units_of_a_replay_without_configuration_ids_are_unchanged():
    """Imported rows pair by their other columns; a failed row of one option still counts as its loss."""
    df = pd.DataFrame({"lr": [1, 1, 2, 2], "opt": ["a", "b", "a", "b"], "test_score": [0.5, 0.4, np.nan, 0.6],
                       "status": ["ok", "ok", "failed", "ok"]})
    (u,) = units(df, "opt", "a", "b", statistic="share").values()
    assert list(u.values) == [1.0, 0.0] and len(u.imputed) == 1
