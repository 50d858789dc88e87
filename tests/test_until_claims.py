"""``until.claims: true``: an adaptive study that also waits for its sealed
claims' gates, judged with anytime-valid intervals (:mod:`analysis.stats.anytime`).

The intervals are checked against another computation (the beta mixture by
numerical integration, the sign-test interval by order statistics) and by
simulation (the true median kept at every look); the study runs past its
pairs' decisions until the claim's gate, says so in its Decisions table, and
a driver killed in between resumes to the same stop; bad input exits 2 with
nothing written."""

from __future__ import annotations

import math
import os
import sys
import tempfile
import uuid

import numpy as np
import pytest
from scipy import integrate

from seedsweep import analysis
from seedsweep.analysis.reading.rundirs import WavePolicy
from seedsweep.analysis.stats.anytime import claim_path, median_interval, mixture_crossing
from seedsweep.analysis.stats.claims import judge
from seedsweep.study.spec.claimsfile import parse_claims
from seedsweep.study.spec.spacefile import parse_space
from seedsweep.study.store.rundir import RunDir
from tests.conftest import remove_tagged
from tests.test_adaptive import STUDY as ADAPTIVE, seedsweep
from tests.test_kill import sigkill_when_stored

# 0.2 s an epoch, not test_adaptive's 0.4: enough for the SIGKILL below to land inside a wave of 8 trials
STUDY = ADAPTIVE.replace("wave: 4}", "wave: 4, claims: true}").replace("epoch_seconds: 0.4", "epoch_seconds: 0.2")

CLAIMS = """
source: "a synthetic check of until.claims"
claims:
  - {id: crf-wins, kind: share, choice: classifier, option: crf, target: 0.8, rule: {above: true}}
  - {id: crf-delta, kind: delta, choice: classifier, option: crf, other: softmax, target: 0.0118,
     rule: {band: 0.01}}
"""


def _mixture_log_ratio(s: float, n: int) -> float:
    """The oracle: log ∫ θ^s (1 − θ)^(n − s) dθ / ½^n by numerical integration (uniform prior)."""
    value, _ = integrate.quad(lambda t: t ** s * (1.0 - t) ** (n - s), 0.0, 1.0, epsabs=0, epsrel=1e-12)
    return math.log(value) + n * math.log(2.0)


@pytest.mark.parametrize("n, alpha", [(12, 0.05), (30, 0.05), (80, 0.01), (200, 0.1)])
def test_the_mixture_crossing_is_where_the_integrated_likelihood_ratio_reaches_two_over_alpha(n, alpha):
    s = mixture_crossing(n, alpha)
    assert n / 2 < s <= n
    mark = math.log(2.0 / alpha)
    assert _mixture_log_ratio(s - 1e-4, n) < mark <= _mixture_log_ratio(s + 1e-4, n)
    assert mixture_crossing(5, 0.05) == math.inf and _mixture_log_ratio(5, 5) < math.log(40)   # too few to say


def test_the_median_interval_is_the_order_statistics_the_crossing_allows():
    """One value per configuration: [x_(n+1−k), x_(k)] (1-based, ascending)
    with k the smallest count of values above m that reaches the crossing;
    counted by hand from the integrated oracle, not from the code under test."""
    rng = np.random.default_rng(3)
    x = rng.lognormal(size=50)
    mark = math.log(2.0 / 0.05)
    k = next(k for k in range(26, 51) if _mixture_log_ratio(k, 50) >= mark)
    xs = np.sort(x)
    assert median_interval(x, np.arange(50), 0.05) == (xs[50 - k], xs[k - 1])
    # two runs per configuration weigh one configuration: the same values in pairs give the same interval
    pairs = np.repeat(x, 2)
    assert median_interval(pairs, np.repeat(np.arange(50), 2), 0.05) == (xs[50 - k], xs[k - 1])


def test_the_sequences_keep_the_true_value_at_every_look():
    """2,000 skewed studies of 60 configurations, two correlated runs each,
    judged after every configuration: the sign-test sequence ever leaves out
    the true median, and the betting sequence the true mean, in at most
    α + 3 SE of them; the fixed-sample t-interval looked at the same way
    (the peeking the sequences exist for) misses far more often."""
    rng = np.random.default_rng(11)
    reps, n, alpha = 2000, 60, 0.05
    config = rng.lognormal(sigma=1.0, size=(reps, n))
    runs = np.stack([config * rng.lognormal(sigma=0.3, size=(reps, n)) for _ in range(2)], axis=2) / 60
    # the truth by simulation of a far larger sample from the same model
    big = rng.lognormal(sigma=1.0, size=2_000_000) * rng.lognormal(sigma=0.3, size=2_000_000) / 60
    median, mean = float(np.median(big)), float(big.mean())
    clusters = np.repeat(np.arange(n), 2)
    missed_median = missed_mean = missed_t = 0
    for r in range(reps):
        values = runs[r].reshape(-1)
        lost = False
        for i in range(1, n + 1):
            lo, hi = median_interval(values[: 2 * i], clusters[: 2 * i], alpha)
            if not lo <= median <= hi:
                lost = True
                break
        missed_median += lost
        per = runs[r].mean(axis=1).clip(0, 1)
        path = claim_path(per, [f"c{i:05d}" for i in range(n)], statistic="mean", alpha=alpha, bounds=(0.0, 1.0))
        missed_mean += bool(((path.lower > mean) | (path.upper < mean)).any())
        m = np.cumsum(per) / np.arange(1, n + 1)
        sd = np.array([per[: i + 1].std(ddof=1) if i else np.inf for i in range(n)])
        half = 2.0 * sd / np.sqrt(np.arange(1, n + 1))
        missed_t += bool((np.abs(m - mean)[4:] > half[4:]).any())
    ceiling = alpha + 3 * math.sqrt(alpha * (1 - alpha) / reps)
    assert missed_median / reps <= ceiling, missed_median / reps
    assert missed_mean / reps <= ceiling, missed_mean / reps
    assert missed_t / reps > 2 * alpha, missed_t / reps


def test_a_claim_judged_anytime_is_wider_and_says_which_sequence():
    rng = np.random.default_rng(5)
    import pandas as pd
    df = pd.DataFrame({"config_id": [f"c{i:05d}" for i in range(40) for _ in range(2)],
                       "test_score": rng.normal(0.8, 0.01, size=80).clip(0, 1), "status": "ok"})
    (claim,) = parse_claims({"source": "s", "claims": [{"id": "v", "kind": "value", "target": 0.8,
                                                        "rule": {"interval": True, "gate": 0.05}}]}).claims
    fixed, anytime = judge(claim, df), judge(claim, df, anytime=True, bounds=(0.0, 1.0))
    assert fixed.verdict.estimate == anytime.verdict.estimate
    assert anytime.verdict.interval[0] < fixed.verdict.interval[0] and anytime.verdict.interval[1] > \
        fixed.verdict.interval[1]
    assert "betting sequence on configuration means in [0, 1]" in anytime.anytime and anytime.n == 40
    unknown = judge(claim, df, anytime=True, bounds=None)
    assert unknown.verdict.verdict == "inconclusive" and "until.range" in unknown.verdict.why


def test_a_study_waits_past_its_decisions_for_a_claims_gate_and_a_killed_driver_stops_at_the_same_look(tmp_path,
                                                                                                      joined_here):
    """CRF wins every configuration: the pair is decided after 10
    configurations (the look at 12), but the claim "CRF wins at least 80 %"
    needs the betting sequence's lower bound above 0.8, first reached at 18
    configurations: the study runs to the look at 20. A driver SIGKILLed in
    the wave after the decision resumes to the same stop and tables."""
    space, claims = tmp_path / "adaptive.yaml", tmp_path / "claims.yaml"
    space.write_text(STUDY)
    claims.write_text(CLAIMS)
    tag, ray_tmp = uuid.uuid4().hex, tempfile.mkdtemp(prefix="ssc-", dir="/tmp")
    env = {**os.environ, "SEEDSWEEP_TEST_TAG": tag, "RAY_TMPDIR": ray_tmp, "RAY_AUTH_MODE": "disabled"}
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    try:
        # the whole run and the resume join the worker's Ray in this process; the killed driver starts its own
        # (the next start's clean-up of a killed driver's Ray: tests/test_kill.py)
        r = joined_here("run", str(space), "--out", str(whole), "--claims", str(claims))
        assert r.returncode == 0, r.stderr
        assert ("wave at 12 configurations: every comparison decided (1); 0 of 1 claims' gates reached "
                "(waiting for crf-wins)") in r.stderr
        assert "stopped after 20 configurations: every comparison decided (1); every claim's gate reached (1)" \
            in r.stderr
        decisions = r.stdout.split("**claims and verdicts**")[0]
        assert "| classifier | softmax | crf | synthetic | 20 | [0.0000, 0.2885] | B better | 10 |" in decisions
        assert ("| claim crf-wins (share, target 0.8, above) | crf | – | all | 20 | [0.8240, 1.0000] | "
                "gate reached: reproduced | 18 |") in decisions
        assert "| reproduced (no gate) | – |" in decisions               # the band claim holds nothing
        assert "95% interval (anytime-valid)" in r.stdout and "so every interval is anytime-valid" in r.stdout

        cmd = [sys.executable, "-m", "seedsweep", "run", str(space), "--out", str(killed), "--num-cpus", "2",
               "--claims", str(claims), "--quiet"]
        at_kill = sigkill_when_stored(cmd, killed, 26, env,
                                      "the study ended before the wave after the decision could be killed")
        assert 24 < at_kill < 32, at_kill                 # the wave from 12 to 16 configurations: decided, waiting
        again = joined_here("run", str(space), "--out", str(killed))
        assert again.returncode == 0, again.stderr
        assert "stopped after 20 configurations: every comparison decided (1); every claim's gate reached (1)" \
            in again.stderr
        assert again.stdout.split("- Claims sealed")[0] == r.stdout.split("- Claims sealed")[0]
    finally:
        remove_tagged(tag, ray_tmp)
    b = RunDir(killed).read_trials().to_pandas()
    assert len(b) == b.trial_key.nunique() == 40, "every trial key once"
    # the oracle by hand: CRF won each of the 20 configurations, so the share is 1 and the pair is decided
    wide = analysis.load(whole).pivot(index="config_id", columns="option", values="test_score")
    assert (wide["crf"] > wide["softmax"]).all() and len(wide) == 20
    # a look judges only the configurations run by then: at 16 the gate is still shut
    policy = WavePolicy(parse_space(STUDY, "s.yaml").until, seeds=1)
    look = policy(str(whole), 16)
    assert not look.stop and policy.claims[0].n == 16 and policy.claims[0].verdict.verdict == "inconclusive"
    assert policy(str(whole), 20).stop


def test_until_claims_without_sealed_claims_or_bounds_exits_2_with_nothing_written(tmp_path):
    space = tmp_path / "s.yaml"
    space.write_text(STUDY.replace("epoch_seconds: 0.2", "epoch_seconds: 0.0"))
    out = tmp_path / "out"
    r = seedsweep("run", str(space), "--out", str(out))
    assert r.returncode == 2 and "until.claims" in r.stderr and "--claims FILE" in r.stderr, r.stderr
    assert not out.exists()
    value = tmp_path / "value.yaml"
    value.write_text('source: s\nclaims:\n  - {id: v, kind: value, target: 0.3, rule: {interval: true, gate: 0.01}}\n')
    r = seedsweep("run", str(space), "--out", str(out), "--claims", str(value))
    assert r.returncode == 2 and "until.range" in r.stderr and "claim v judges a mean" in r.stderr, r.stderr
    assert not out.exists()
    space.write_text(STUDY.replace("claims: true", "claims: maybe"))
    r = seedsweep("check", str(space))
    assert r.returncode == 2 and "until.claims" in r.stderr, r.stderr


def test_the_engine_refuses_until_claims_without_claims_for_every_caller(tmp_path):
    """The check sits in :func:`study.execution.waves.run_until`, which the
    command line and ``seedsweep.define(...).run`` both call: refused before Ray
    starts or anything is written."""
    from seedsweep.study.errors import UserError
    from seedsweep.study.execution.waves import run_until

    space = tmp_path / "s.yaml"
    space.write_text(STUDY)
    out = tmp_path / "out"
    with pytest.raises(UserError) as err:
        run_until(str(space), str(out), WavePolicy(parse_space(STUDY, "s.yaml").until, seeds=1))
    assert err.value.where.endswith("until.claims") and "--claims FILE" in err.value.fix
    assert not out.exists()
