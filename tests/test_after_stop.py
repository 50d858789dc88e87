"""Inference after an early stop and the win share's interval (issue 50, item 5).

Oracles: the exact test's own decision at every possible win count (the
interval must agree with it), and two-look designs simulated here from
correlated normal scores (the stagewise estimate must be median-unbiased and
its interval must cover). The full runs are ``benchmarks/after_stop.py``,
their results in ``benchmarks/results/after_stop-2026-12-04.json``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from seedsweep.analysis.stats.afterstop import share_interval, stagewise
from seedsweep.analysis.stats.spending import spending_path
from seedsweep.analysis.stats.decisions import decisions_table, track
from seedsweep.analysis.stats.groupseq import boundaries, share_boundaries
from seedsweep.analysis.specs import ComparisonSpec
from seedsweep.study.spec.until import Until
from tests.test_every_run_counts import three_bad_softmax_runs


@pytest.mark.parametrize("kind", ["obf", "pocock"])
def test_the_share_interval_leaves_out_a_half_exactly_when_the_exact_test_decides(kind):
    fractions = [k / 10 for k in range(2, 11)]
    decided = [int(40 * f) - 1 for f in fractions]                   # some ties: fewer decided than run
    exact = share_boundaries(fractions, decided, 0.05, kind)
    for m, low, high in zip(decided, exact.lower, exact.upper):
        for w in range(m + 1):
            lo, hi = share_interval(w, m, low, high)
            test = w >= high or (low >= 0 and w <= low)
            assert (lo > 0.5 or hi < 0.5) == test, (m, w, low, high, lo, hi)
            assert 0.0 <= lo <= w / m <= hi <= 1.0


def test_the_stagewise_estimate_is_median_unbiased_and_its_interval_covers():
    """A three-look design (fractions ⅓, ⅔, 1, Pocock type) at drift 3,
    simulated from the normal scores' joint law (independent increments of
    the score S = Z sqrt(t)): the estimate is above the drift in half the
    studies (within 3 SE), where the naive one at the stop is in about 60 %,
    and the 95 % interval holds the drift in at least 95 % - 3 SE."""
    fractions = [1 / 3, 2 / 3, 1.0]
    c = boundaries(fractions, 0.05, "pocock").z
    rng = np.random.default_rng(12)
    reps, drift = 1500, 3.0
    s = np.cumsum(drift / 3 + rng.standard_normal((reps, 3)) * math.sqrt(1 / 3), axis=1)
    above = naive_above = covered = 0
    for row in s:
        z = row / np.sqrt(fractions)
        stop = next((k for k in range(3) if abs(z[k]) >= c[k]), 2)
        est = stagewise(fractions, c, stop, float(z[stop]), 0.05)
        above += est.estimate > drift
        naive_above += z[stop] / math.sqrt(fractions[stop]) > drift
        covered += est.lower <= drift <= est.upper
    se = math.sqrt(0.25 / reps)
    assert abs(above / reps - 0.5) <= 3 * se, above / reps
    assert naive_above / reps > 0.5 + 3 * se, naive_above / reps
    assert covered / reps >= 0.95 - 3 * math.sqrt(0.05 * 0.95 / reps), covered / reps


def test_the_decisions_table_shows_the_adjusted_estimate_and_warns_about_the_fixed_tables():
    until = Until(decide=("classifier",), method="spending", statistic="share", budget_samples=16)
    spec = ComparisonSpec("classifier", "classifier", ["crf", "softmax"])
    (t,) = track(three_bad_softmax_runs("ok", 0.8), until, [spec],
                 looks=[4, 8, 12, 16], cap=16)
    notes = " ".join(decisions_table([t], until).notes)
    assert "After the stop (stagewise ordering" in notes and "naive estimate" in notes
    assert "not valid at this data-dependent stop" in notes


def test_the_bias_adjusted_mean_removes_the_stops_bias_and_the_stagewise_interval_covers():
    """A two-look mean design (20 and 40 normal units of spread 1, Pocock
    type, a futility side at delta 0.35) at an effect of 0.5, where about
    half the studies stop at the first look: simulated here unit by unit
    through :func:`spending_path`, the naive estimate at the stop is biased
    up by more than 3 SE, the bias-adjusted one (Whitehead) is within 3 SE
    of the truth, and the stagewise interval holds it in at least
    95 % - 3 SE of the studies."""
    rng = np.random.default_rng(21)
    reps, theta = 400, 0.5
    naive, adjusted, covered, early = [], [], 0, 0
    for row in theta + rng.standard_normal((reps, 40)):
        path = spending_path(row, [20, 40], 40, statistic="mean", alpha=0.05, delta=0.35, kind="pocock")
        k = path.decided_look if path.decided_look is not None else 1
        early += k == 0
        naive.append(path.estimate[k])
        adjusted.append(path.bias_adjusted())
        a = path.after_stop()
        covered += a.lower <= theta <= a.upper
    se = float(np.std(adjusted)) / math.sqrt(reps)
    assert 0.3 * reps < early < 0.7 * reps, early
    assert np.mean(naive) - theta > 3 * se, (np.mean(naive), se)
    assert abs(np.mean(adjusted) - theta) <= 3 * se, (np.mean(adjusted), se)
    assert covered / reps >= 0.95 - 3 * math.sqrt(0.05 * 0.95 / reps), covered / reps


def test_the_decisions_note_of_a_mean_gives_the_bias_adjusted_estimate():
    until = Until(decide=("classifier",), method="spending", statistic="mean", budget_samples=16,
                  assume_normal=True, delta=0.01)
    spec = ComparisonSpec("classifier", "classifier", ["crf", "softmax"])
    (t,) = track(three_bad_softmax_runs("ok", 0.8), until, [spec], looks=[4, 8, 12, 16], cap=16)
    notes = " ".join(decisions_table([t], until).notes)
    assert "bias-adjusted" in notes and "Whitehead 1986" in notes
