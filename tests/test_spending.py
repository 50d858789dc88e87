"""``until: {method: spending}``: group-sequential decisions within a budget.

The oracles are simulations (a different method from the code's numerical
integration): the level at irregular looks, the futility side's error, the
design's power and its cost against the fixed design; and an end-to-end
synthetic study through the engine's waves."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from seedsweep import analysis
from seedsweep.analysis.stats.groupseq import boundaries, design_drift, futility_boundaries
from seedsweep.analysis.stats.planning import fixed_configurations
from seedsweep.analysis.stats.spending import FUTILE, design_configurations, look_counts, spending_path
from seedsweep.study.spec.spacefile import parse_space
from seedsweep.study.spec.until import look_schedule
from tests.test_adaptive import STUDY

ALPHA, REPS = 0.05, 2000
#: the largest rate a level-alpha rule may show in REPS replications (alpha + 3 standard errors)
CEILING = ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / REPS)


def irregular_counts(rng, cap: int) -> list[int]:
    """Looks at waves of random size: a first wave of 6-15 configurations, then 3-12 at a time, up to ``cap``."""
    counts = [int(rng.integers(6, 16))]
    while counts[-1] < cap:
        counts.append(min(cap, counts[-1] + int(rng.integers(3, 13))))
    return counts


def units(rng, statistic: str, effect: float, n: int) -> np.ndarray:
    """Oriented units (> 0: A better): normal mean differences, or win units with 20 % ties."""
    if statistic == "mean":
        return effect + rng.standard_normal(n)
    u = rng.random(n)
    tie = rng.random(n) < 0.2
    return np.where(tie, 0.5, (u < 0.5 + effect).astype(float))


@pytest.mark.parametrize("statistic, delta", [("mean", 0.5), ("share", 0.1)])
def test_the_level_holds_at_irregular_looks_for_a_null_and_an_effect_inside_the_margin(statistic, delta):
    """2,000 replications per case, each with waves of random size (one of
    40 random schedules, 10 for the mean, whose boundaries are simulated per
    schedule; budget 80 configurations): with no effect, a 'better' declaration of
    either side is false; with the effect at −delta/2 (inside the margin,
    B ahead), 'A better' is false. Both rates stay within alpha + 3 SE."""
    rng = np.random.default_rng(43)
    cap = 80
    schedules = [irregular_counts(rng, cap) for _ in range(10 if statistic == "mean" else 40)]   # each computed once
    for effect, false in ((0.0, {"A better", "B better"}), (-delta / 2, {"A better"})):
        wrong = futile = 0
        for _ in range(REPS):
            counts = schedules[int(rng.integers(len(schedules)))]
            path = spending_path(units(rng, statistic, effect, cap), counts, cap, statistic=statistic,
                                 alpha=ALPHA, delta=delta)
            wrong += path.decision in false
            futile += path.decision == FUTILE
        assert wrong / REPS <= CEILING, (statistic, effect, wrong / REPS)
        if effect == 0.0:
            assert futile > 0, "the futility side never stopped a null study"


def test_the_futility_side_spends_beta_under_the_alternative_by_simulation():
    """At the design's drift the futility boundaries meet the efficacy
    boundary at the last look, and a simulated Z path (drift per look, no
    numerical integration) exits through futility with probability beta."""
    fractions = [0.2, 0.4, 0.6, 0.8, 1.0]
    upper = boundaries(fractions, ALPHA, "obf").z
    drift = design_drift(fractions, ALPHA, 0.2)
    lower = futility_boundaries(fractions, upper, drift, 0.2)
    assert lower[-1] == pytest.approx(upper[-1], abs=1e-6)
    assert all(a < c for a, c in zip(lower[:-1], upper[:-1]))
    rng = np.random.default_rng(7)
    steps = np.diff([0.0, *fractions])
    z = np.cumsum(rng.standard_normal((40000, 5)) * np.sqrt(steps) + drift * steps, axis=1) / np.sqrt(fractions)
    out = (z >= np.array(upper)) | (z <= np.array(lower))
    first = out.argmax(axis=1)
    at = z[np.arange(len(z)), first]
    futile = float((at <= np.array(lower)[first]).mean())
    assert futile == pytest.approx(0.2, abs=3 * math.sqrt(0.2 * 0.8 / 40000))


def test_each_looks_futility_stop_is_the_one_its_own_looks_so_far_give():
    """A mean path's futility stop, solved once for the path's looks at each
    rounded drift, is the stop of a solve of the looks up to that one alone
    (the rule as first written): the first look whose |Z| is within its own
    prefix's futility boundary, before any efficacy crossing."""
    cap, rng, stops = 40, np.random.default_rng(9), 0
    looks = [4, 7, 10, 14, 19, 25, 32, 40]
    for _ in range(60):
        path = spending_path(rng.standard_normal(cap) * rng.uniform(0.5, 3.0), looks, cap, statistic="mean",
                             alpha=ALPHA, delta=0.5)
        expected = None
        for k, (z, sd) in enumerate(zip(path.z, path.sds)):
            if not math.isfinite(z):
                continue
            if abs(z) >= path.bounds[k]:
                break                                            # efficacy first: no futility stop
            drift = round(0.5 * math.sqrt(cap) / sd * 20) / 20
            a = futility_boundaries(path.fractions[:k + 1], path.bounds[:k + 1], drift, 0.2)[k]
            if math.isfinite(a) and abs(z) <= a:
                expected = k
                break
        assert (path.decided_look if path.decision == FUTILE else None) == expected, path
        stops += expected is not None
    assert stops >= 5, stops                                     # the comparison saw futility stops


def test_the_design_budget_has_its_power_and_costs_less_than_the_fixed_design():
    """Normal differences (sd 1), margin 0.5: the fixed paired design needs
    32 configurations; the spending design's budget (what ``plan``
    recommends) is at most 1.1x that. At an effect of delta its power is
    >= 0.8 (within 3 SE) and its median size <= 0.85x the fixed design; at 2
    delta <= 0.5x; at 0 it stops before the budget in most replications."""
    fixed = fixed_configurations(np.array([1.0, -1.0] * 50) * math.sqrt(100 / 99), statistic="mean", delta=0.5,
                                 alpha=ALPHA)
    budget = design_configurations(fixed)
    assert budget <= 1.1 * fixed, (budget, fixed)
    first = 4
    counts = look_schedule(first, math.ceil((budget - first) / 9), budget)
    rng = np.random.default_rng(11)
    for factor in (0, 1, 2):
        sizes, right = [], 0
        for _ in range(REPS):
            path = spending_path(factor * 0.5 + rng.standard_normal(budget), counts, budget, statistic="mean",
                                 alpha=ALPHA, delta=0.5)
            at = path.decided_look
            sizes.append(path.counts[at] if at is not None else budget)
            right += path.decision == "A better"
        sizes_ = np.array(sizes)
        if factor == 0:
            assert (sizes_ < budget).mean() > 0.5
        elif factor == 1:
            assert right / REPS >= 0.8 - 3 * math.sqrt(0.16 / REPS), right / REPS
            assert np.median(sizes_) <= 0.85 * fixed, (np.median(sizes_), fixed)
        else:
            assert np.median(sizes_) <= 0.5 * fixed, (np.median(sizes_), fixed)


def test_looks_count_the_units_of_the_configurations_run_by_then():
    assert look_counts(["c00000", "c00002", "c00005"], [2, 4, 6]) == [1, 2, 3]
    assert look_counts(["x", "y", "z"], [1, 3]) == [1, 3]                 # imported rows: their stored order
    path = spending_path(np.ones(12), [4, 4, 8, 12], 12, statistic="share", alpha=ALPHA, delta=0.1)
    assert path.counts == (4, 8, 12), "a look with no new unit spends nothing"


def test_a_spending_study_runs_its_looks_and_stops_with_the_decision(tmp_path, joined_here):
    """CRF wins every configuration: the exact sign test under O'Brien-Fleming
    spending cannot decide at 4 or 8 of the 40 budgeted configurations (the
    level spent there is below 2 / 2^8) and decides 'B better' at a later
    look; the waves are the method's own (the budget after the first wave in
    39 equal waves: 1 configuration), and the Decisions table says how it decided."""
    text = re.sub(r"until: .*", "until: {budget: {samples: 40}, method: spending}", STUDY) \
        .replace("epoch_seconds: 0.4", "epoch_seconds: 0.0")
    space = tmp_path / "spending.yaml"
    space.write_text(text)
    until = parse_space(text, "s.yaml").until
    assert until.looks(4, 2) == list(range(4, 41))
    out = tmp_path / "out"
    r = joined_here("run", str(space), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "wave at 4 configurations: 0 of 1 decided" in r.stderr
    assert "wave at 8 configurations: 0 of 1 decided" in r.stderr
    stop = re.search(r"stopped after (\d+) configurations: every comparison decided", r.stderr)
    assert stop, r.stderr
    n = int(stop.group(1))
    # the oracle: the first look whose exact two-sided sign-test tail (all wins) is within the level spent so far
    from seedsweep.analysis.stats.groupseq import spent
    expected = next(k for k in until.looks(4, 2) if 2 * 0.5 ** k <= spent(k / 40, ALPHA, "obf"))
    assert n == expected, (n, expected)
    assert f"| classifier | softmax | crf | synthetic | {n} |" in r.stdout and f"| B better | {n} |" in r.stdout
    assert "Group-sequential (method: spending, O'Brien-Fleming-type alpha spending)" in r.stdout
    df = analysis.load(out)
    wide = df.pivot(index="config_id", columns="option", values="test_score")
    assert (wide["crf"] > wide["softmax"]).all() and len(wide) == n


@pytest.mark.parametrize("null", ["collapse", "lognormal"])
def test_skewed_nulls_are_safe_under_the_default_methods_and_the_normal_ones_need_consent(null):
    """2,000 null studies (mean difference exactly 0; budget 80
    configurations, a first wave of 4, waves of 2): option A a little ahead
    but collapsing in 5 % of configurations, or a centred lognormal. The
    exact sequence (on the scores' range) stays within alpha + 3 SE on both;
    the methods that trust a normal approximation do not on the collapses,
    which is why ``statistic: mean`` refuses them unless the study file says
    ``until.assume_normal: true``, and the refusal quotes these rates."""
    from seedsweep.analysis.stats.methods import collapse_null, lognormal_null, simulate
    from seedsweep.study.spec.until import NORMAL_FAILURES, Until

    rows = (collapse_null if null == "collapse" else lognormal_null)(np.random.default_rng(3), REPS, 80)
    rates = {}
    for method in ("exact", "asymptotic", "spending"):
        until = Until(decide=("c",), statistic="mean", delta=0.01, method=method, range=(0.0, 1.0),
                      budget_samples=80, assume_normal=True)
        rates[method] = simulate(rows, until, first=4, wave=2, cap=80, alpha=ALPHA).share("A better", "B better")
    print(f"{null} null, false declarations: {rates}")
    assert rates["exact"] <= CEILING, rates
    if null == "collapse":
        for method in ("asymptotic", "spending"):
            assert rates[method] > 4 * CEILING, rates
            quoted = float(NORMAL_FAILURES[method].split()[1]) / 100
            assert quoted == pytest.approx(rates[method], abs=0.05), (method, rates[method], quoted)


def test_the_normal_methods_for_a_mean_need_consent():
    base = re.sub(r"until: .*", "until: {statistic: mean, method: asymptotic, budget: {samples: 40}}", STUDY)
    with pytest.raises(Exception) as err:
        parse_space(base, "s.yaml")
    assert str(err.value).startswith("s.yaml: until.method") and "assume_normal: true" in str(err.value)
    accepted = parse_space(base.replace("budget:", "assume_normal: true, budget:"), "s.yaml").until
    assert accepted.method == "asymptotic" and accepted.assume_normal
    share = re.sub(r"until: .*", "until: {method: asymptotic, budget: {samples: 40}}", STUDY)
    until = parse_space(share, "s.yaml").until
    assert until.method == "asymptotic"                                       # win units are bounded: no consent
    # ten straight wins: a sample variance of 0, but the win share's sequence keeps a pseudo-unit of 1/4
    from seedsweep.analysis.stats.decisions import sequence_for
    lo, hi = sequence_for(np.ones(10), until, ALPHA).last()
    assert 0.5 < lo < hi == 1.0, (lo, hi)


def test_plan_names_the_cheapest_method_among_those_that_keep_the_level():
    """``cheapest``: the least median of the slowest comparison, but only over
    methods that keep the level on every comparison and decide most resamples."""
    from seedsweep.analysis.stats.planning import MethodPlan, PlanRow, cheapest

    def row(task, **medians):
        plans = tuple(MethodPlan(m, 100, med, med, decided, false, keeps, True)
                      for m, (med, decided, false, keeps) in medians.items())
        return PlanRow("c", "a", "b", task, 10, 0.1, 60, plans)

    rows = [row("t1", exact=(40, 1.0, 0.01, True), asymptotic=(10, 1.0, 0.3, False), spending=(30, 1.0, 0.04, True)),
            row("t2", exact=(20, 1.0, 0.02, True), asymptotic=(12, 1.0, 0.02, True), spending=(35, 0.9, 0.03, True))]
    assert cheapest(rows) == ("spending", 35)          # asymptotic is cheaper but breaks the level on t1
    rows[1] = row("t2", exact=(20, 1.0, 0.02, True), asymptotic=(12, 1.0, 0.02, True), spending=(35, 0.4, 0.03, True))
    assert cheapest(rows) == ("exact", 40)             # spending decides too few resamples of t2
