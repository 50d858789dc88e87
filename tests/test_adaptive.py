"""Adaptive studies (``until:``): the engine's waves stop when every
comparison is decided, a SIGKILLed driver resumes to the same trials and
decisions, a bad ``until:`` exits 2 naming its key with nothing written, a
score outside the declared range stops the study with its rows kept, and a
replay of the imported R&G results decides from the stored configurations."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import uuid

import numpy as np
import pandas as pd
import pytest

from seedsweep import analysis, study
from seedsweep import run as run_with_python
from seedsweep.analysis.reading.rundirs import WavePolicy
from seedsweep.analysis.stats.decisions import track
from seedsweep.analysis.stats.units import units
from seedsweep.adaptive import read_until
from seedsweep.study.errors import UserError
from seedsweep.study.store.studies import hours_spent
from seedsweep.study.spec.spacefile import parse_space
from seedsweep.study.store.rundir import RunDir
from tests.conftest import REPO, remove_tagged, seedsweep_here
from tests.test_claims import RG_CSV
from tests.test_kill import sigint_when_stored, sigkill_when_stored, stored
from tests.rundirs import write_synthetic_run

STUDY = """
name: adaptive
family: synthetic
samples: 4
seeds: 1
compare: {classifier: [softmax, crf]}
space: {units: {choice: [25, 50, 100]}, lr: {loguniform: [1.0e-3, 1.0e-1]}}
task: {effects: {classifier: {crf: 0.03}}, noise: 0.002, epoch_noise: 0.0}
fixed: {epoch_seconds: 0.4}
train: {max_epochs: 1, patience: 1}
until: {budget: {samples: 40}, wave: 4}
"""


def seedsweep(*args, env=None, timeout=300):
    """A study that starts its own Ray runs as a command of its own; every other command in this process."""
    if args[0] != "run" or "--num-cpus" not in args:
        return seedsweep_here(*args, env=env)
    return subprocess.run([sys.executable, "-m", "seedsweep", *args], cwd=REPO, capture_output=True, text=True,
                          env=env, timeout=timeout)


def decisions_section(out) -> str:
    text = analysis.report(out, n_bootstrap=50)
    return text.split("\n\n**", 2)[0] + "\n" + text.split("\n\n**", 2)[1].split("\n\n")[0]


def test_an_adaptive_study_stops_when_decided_and_a_killed_driver_resumes_to_the_same_decisions(tmp_path, joined_here):
    """CRF wins every configuration: at 95 % the betting sequence decides after
    10 configurations, so the study stops at the look after the third wave
    (12 configurations); a driver SIGKILLed during that wave (on a Ray of its
    own) resumes to the same trials, scores and decisions."""
    space = tmp_path / "adaptive.yaml"
    space.write_text(STUDY.replace("epoch_seconds: 0.4", "epoch_seconds: 0.2"))    # the kill still lands in wave 3
    tag, ray_tmp = uuid.uuid4().hex, tempfile.mkdtemp(prefix="ssa-", dir="/tmp")
    env = {**os.environ, "SEEDSWEEP_TEST_TAG": tag, "RAY_TMPDIR": ray_tmp, "RAY_AUTH_MODE": "disabled"}
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    try:
        # the whole run and the resume join the worker's Ray in this process; the killed driver starts its own
        # (the next start's clean-up of a killed driver's Ray: tests/test_kill.py)
        r = joined_here("run", str(space), "--out", str(whole))
        assert r.returncode == 0, r.stderr
        assert "wave at 4 configurations: 0 of 1 decided" in r.stderr
        assert "wave at 8 configurations: 0 of 1 decided" in r.stderr
        assert "stopped after 12 configurations: every comparison decided (1)" in r.stderr
        # the command's counts (every wave's), not the last wave's "ran 8, skipped 16"
        assert "24 trials in the study; ran 24, skipped 0 already stored; stored now: ok 24; missing 0" in r.stderr
        assert r.stdout.startswith("**Decisions**")
        assert "| classifier | softmax | crf | synthetic | 12 |" in r.stdout and "| B better | 10 |" in r.stdout

        cmd = [sys.executable, "-m", "seedsweep", "run", str(space), "--out", str(killed), "--num-cpus", "2",
               "--quiet"]
        at_kill = sigkill_when_stored(cmd, killed, 18, env, "the study ended before the third wave could be killed")
        assert 16 < at_kill < 24, at_kill                 # during the third wave
        again = joined_here("run", str(space), "--out", str(killed))
        assert again.returncode == 0, again.stderr
        assert "stopped after 12 configurations: every comparison decided (1)" in again.stderr
        assert f"24 trials in the study; ran {24 - at_kill}, skipped {at_kill} already stored" in again.stderr
    finally:
        remove_tagged(tag, ray_tmp)
    a, b = RunDir(whole).read_trials().to_pandas(), RunDir(killed).read_trials().to_pandas()
    assert len(b) == b.trial_key.nunique() == 24, "every trial key once"
    assert sorted(a.trial_key) == sorted(b.trial_key)
    scores = a.set_index("trial_key").test_score, b.set_index("trial_key").test_score
    assert (scores[0].sort_index() == scores[1].sort_index()).all(), "the same trials, the same scores"
    assert decisions_section(whole) == decisions_section(killed)
    # a look judges only the configurations run by then (a resume asks the first waves' questions again)
    policy = WavePolicy(parse_space(STUDY, "s.yaml").until, seeds=1)
    look = policy(str(whole), 8)
    assert not look.stop and look.why == "0 of 1 decided" and policy.last[0].n == 8
    # the oracle: the decision by hand -- CRF won each of the 12 configurations
    df = analysis.load(whole)
    wide = df.pivot(index="config_id", columns="option", values="test_score")
    assert (wide["crf"] > wide["softmax"]).all() and len(wide) == 12


def test_the_python_api_runs_an_adaptive_study_as_the_command_does_and_stops_where_it_stops(tmp_path, joined_here,
                                                                                               worker_ray):
    """``seedsweep.run(file, out)`` and ``seedsweep run file --out`` on the same
    ``until:`` study: both stop after the third wave (12 configurations, CRF
    better in the 10 the sequence needed) with the same Decisions section; the
    engine's ``study.run`` refuses the study with a located message."""
    space = tmp_path / "adaptive.yaml"
    space.write_text(STUDY.replace("epoch_seconds: 0.4", "epoch_seconds: 0.0"))
    cli, api = tmp_path / "cli", tmp_path / "api"
    r = joined_here("run", str(space), "--out", str(cli), "--quiet")
    assert r.returncode == 0, r.stderr
    assert "stopped after 12 configurations: every comparison decided (1)" in r.stderr
    waves = run_with_python(space, api, address=worker_ray)         # the Python API, as a notebook calls it
    assert (waves.samples, waves.stopped) == (12, "every comparison decided (1)")
    assert decisions_section(api) == decisions_section(cli)
    assert "| classifier | softmax | crf | synthetic | 12 |" in decisions_section(api)
    with pytest.raises(UserError) as err:
        study.run(space, tmp_path / "refused")
    assert err.value.where == f"{space}: until" and "seedsweep.run(" in err.value.fix
    assert not (tmp_path / "refused").exists()


def test_ctrl_c_in_a_wave_stores_no_half_trained_trial_and_the_same_command_resumes(tmp_path, worker_ray, joined_here):
    """The waves share one Tune fit on a thread of the driver (study.execution.fitsession);
    Ctrl-C during the second wave stops its trials, stores none that did not finish, exits
    non-zero saying how to resume, and the same command resumes to the same stop."""
    space = tmp_path / "adaptive.yaml"
    space.write_text(STUDY.replace("epoch_seconds: 0.4", "epoch_seconds: 0.3"))
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "seedsweep", "run", str(space), "--out", str(out), "--address", worker_ray]
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    code, log = sigint_when_stored(cmd, out, 10, env)
    assert code != 0, "an interrupted study must not exit 0:\n" + log[-3000:]
    assert "wave at 4 configurations: 0 of 1 decided" in log and "run the same command again to resume" in log, log
    table = RunDir(out).read_trials()
    before = table.num_rows
    assert set(table["status"].to_pylist()) == {"ok"} and 8 < before < 16, (before, log)
    again = joined_here("run", str(space), "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert "stopped after 12 configurations: every comparison decided (1)" in again.stderr
    assert f"24 trials in the study; ran {24 - before}, skipped {before} already stored" in again.stderr
    assert RunDir(out).read_trials().to_pandas().trial_key.nunique() == 24


@pytest.mark.parametrize("until, key", [
    ("{delta: -0.1, budget: {samples: 40}}", "until.delta"),
    ("{confidence: 1.5, budget: {samples: 40}}", "until.confidence"),
    ("{confidence: 0, budget: {samples: 40}}", "until.confidence"),
    ("{statistic: mean, range: [1, 0], budget: {samples: 40}}", "until.range"),
    ("{range: [0.5, 0.5], budget: {samples: 40}}", "until.range"),
    ("{decide: [optimizer], budget: {samples: 40}}", "until.decide"),
    ("{budget: {samples: 2}}", "until.budget.samples"),
    ("{budget: {trials: 4}}", "until.budget.trials"),
    ("{budget: {}}", "until.budget"),
    ("{budget: {samples: 40}, method: bayes}", "until.method"),
    ("{budget: {samples: 40}, statistic: median}", "until.statistic"),
    ("{budget: {samples: 40}, wave: 0}", "until.wave"),
    ("{budget: {samples: 40}, stop: now}", "until.stop"),
    ("{statistic: mean, budget: {samples: 40}}", "until.range"),        # synthetic scores have no known bounds
    ("{budget: {samples: 40}, lever: auto}", "until.lever"),            # not built yet: said, not ignored
    ("{budget: {hours: 1}, method: spending}", "until.budget"),          # spending needs a configuration budget
    ("{budget: {samples: 40}, method: spending, spending: haybittle}", "until.spending"),
    ("{budget: {samples: 40}, spending: pocock}", "until.spending"),     # read only by method: spending
    ("{budget: {samples: 40}, method: spending, power: 80}", "until.power"),
    ("{statistic: mean, method: spending, budget: {samples: 40}}", "until.method"),    # no consent to normality
    ("{statistic: mean, method: asymptotic, assume_normal: maybe, budget: {samples: 40}}", "until.assume_normal"),
])
def test_a_bad_until_block_is_refused_naming_its_key(until, key):
    text = re.sub(r"until: .*", f"until: {until}", STUDY)
    with pytest.raises(UserError) as err:
        parse_space(text, "s.yaml")
    assert str(err.value).startswith(f"s.yaml: {key}"), str(err.value)


def test_a_bad_until_block_exits_2_with_nothing_written(tmp_path):
    space = tmp_path / "bad.yaml"
    space.write_text(re.sub(r"until: .*", "until: {delta: -0.1, budget: {samples: 40}}", STUDY))
    r = seedsweep("run", str(space), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "until.delta" in r.stderr and "negative" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def test_a_score_outside_the_declared_range_stops_the_study_with_its_rows_kept(tmp_path, joined_here):
    space = tmp_path / "range.yaml"
    space.write_text(re.sub(r"until: .*", "until: {statistic: mean, range: [0, 0.2], budget: {samples: 40}}",
                            STUDY).replace("samples: 4\n", "samples: 2\n").replace("epoch_seconds: 0.4",
                                                                                  "epoch_seconds: 0.0"))
    out = tmp_path / "out"
    r = joined_here("run", str(space), "--out", str(out))
    assert r.returncode == 2, r.stderr
    assert f"{out}: a stored test_score of" in r.stderr and "outside until.range [0.0, 0.2]" in r.stderr
    assert stored(out) == 4                                   # the first wave's rows are kept


def test_a_study_that_cannot_decide_stops_at_its_budget_and_says_so(tmp_path, joined_here):
    """No true difference: 2 + 2 configurations of budget cannot decide; the
    study stops at the budget, exit 0, and the report says 'undecided at budget'."""
    space = tmp_path / "budget.yaml"
    space.write_text(re.sub(r"until: .*", "until: {budget: {samples: 4}, wave: 2}", STUDY)
                     .replace("samples: 4\n", "samples: 2\n").replace("crf: 0.03", "crf: 0.0")
                     .replace("epoch_seconds: 0.4", "epoch_seconds: 0.0"))
    out = tmp_path / "out"
    r = joined_here("run", str(space), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "stopped after 4 configurations: budget spent: 4 configurations (8 trials)" in r.stderr
    assert "| classifier | softmax | crf | synthetic | 4 |" in r.stdout and "| undecided at budget | – |" in r.stdout
    # the hours budget's clock: the stored trials' span, by hand from the rows
    df = analysis.load(out)
    span = (pd.to_datetime(df.finished_at).max() - pd.to_datetime(df.started_at).min()).total_seconds() / 3600
    assert hours_spent(str(out)) == pytest.approx(span) and 0 < span < 0.1


@pytest.mark.skipif(not RG_CSV.is_file(), reason=f"R&G raw results not found at {RG_CSV} "
                                                  "(set SEEDSWEEP_SHARED_DATA to the shared data folder)")
def test_a_replay_of_the_rg_results_decides_from_their_configurations(tmp_path):
    out = analysis.import_csv(RG_CSV, tmp_path / "rg")
    until_file = tmp_path / "until.yaml"
    until_file.write_text("until: {decide: [Decoder]}\n")
    specs, results = analysis.comparisons_of(out)
    until = read_until(until_file, {s.choice: list(s.options) for s in specs}, "imported")
    df = analysis.load(out)
    tracked = {t.task: t for t in track(df, until, specs, results)}
    assert set(tracked) == {"POS", "Chunking", "NER", "Entities", "Events"}
    for task, cmp in analysis.compare_tasks(df, "Decoder", options=["Softmax", "CRF"],
                                            ignore=specs[0].ignore, results=results, n_bootstrap=10).items():
        t = tracked[task]
        # the oracle: compare's paired configurations and win share, computed by its own code path
        assert t.n == cmp.n, task
        assert np.mean(t.values) == pytest.approx(cmp.shares["Softmax"], abs=1e-9), task
    spec = next(s for s in specs if s.choice == "Decoder")
    pos = units(df, "Decoder", "Softmax", "CRF", ignore=spec.ignore, results=results)["POS"].values
    assert len(pos) == tracked["POS"].n
    r = seedsweep("replay", str(out), "--until", str(until_file))
    assert r.returncode == 0, r.stderr
    for task, t in tracked.items():                      # the command prints what track() decides
        then = "B better" if task != "Events" else "A better"           # R&G: CRF ahead except on Events
        assert f"| Decoder | Softmax | CRF | {task} | {t.decided_at} | {then} |" in r.stdout, task
        assert t.sequence.upper[t.decided_at - 1] < 0.5 if then == "B better" else t.sequence.lower[t.decided_at - 1] > 0.5
        assert t.decided_at < t.n                        # decided before all its stored configurations
    assert "| Decoder | Softmax | CRF | Chunking | 14 | B better |" in r.stdout


def test_a_replay_until_file_is_read_the_study_files_way(tmp_path):
    """Syntax errors name line and column, a duplicate key is refused, an empty
    or missing file is named: the study-file loader's messages, exit 2."""
    out = tmp_path / "run"
    write_synthetic_run(out, STUDY.replace("epoch_seconds: 0.4", "epoch_seconds: 0.0"))
    cases = {"syntax": ("until:\n  decide: [classifier\n  delta: 0.05\n", "line 3, column 8", "not valid YAML"),
             "duplicate": ("until:\n  decide: [classifier]\n  decide: [classifier]\n", "line 3, column 3",
                           "duplicate key"),
             "empty": ("", "", "the file is empty"),
             "missing": (None, "", "no such until file")}
    for name, (text, where, problem) in cases.items():
        path = tmp_path / f"{name}.yaml"
        if text is not None:
            path.write_text(text)
        r = seedsweep("replay", str(out), "--until", str(path))
        assert r.returncode == 2, (name, r.stderr)
        assert f"{path}{', ' + where if where else ''}: " in r.stderr and problem in r.stderr, (name, r.stderr)


def test_plan_sizes_both_designs_from_a_pilot_and_the_fixed_sizes_reach_their_power(tmp_path):
    from scipy import stats as st

    from seedsweep.analysis.stats.planning import fixed_configurations

    pilot = tmp_path / "pilot"
    write_synthetic_run(pilot, STUDY.replace("epoch_seconds: 0.4", "epoch_seconds: 0.0"))   # CRF wins all 4
    space = tmp_path / "s.yaml"
    space.write_text(STUDY)
    r = seedsweep("plan", str(space), "--pilot", str(pilot), "--reps", "20")
    assert r.returncode == 0, r.stderr
    n_share = fixed_configurations(np.zeros(0), statistic="share", delta=0.05, alpha=0.05)
    head = "| classifier | softmax | crf | synthetic | 4 | 0.0000 |"
    assert f"{head} fixed | {n_share} | {2 * n_share:,} |" in r.stdout, r.stdout
    # every resample of an all-wins pilot is all wins: ten wins decide at 95 % (test_sequential), and the
    # study looks after its first wave of 4 and then every 4 (until.wave): at 12
    assert f"{head} exact | 12 | 24 | 0.00 | 12 | 1000 |" in r.stdout, r.stdout
    # spending at the recommended budget B (looks: 4, then the rest in 29 waves): the first look n at which
    # n straight wins' two-sided exact tail 2 / 2^n is within the level OBF spending allows by n / B
    from seedsweep.analysis.stats.groupseq import spent
    from seedsweep.analysis.stats.spending import spending_looks
    row = re.search(re.escape(head) + r" spending \| (\d+) \| [\d,]+ \| [\d.]+ \| \d+ \| (\d+) \|", r.stdout)
    assert row, r.stdout
    budget = int(row.group(2))
    assert int(row.group(1)) == next(n for n in spending_looks(4, budget) if 2 * 0.5 ** n <= spent(n / budget, 0.05))
    assert budget <= 1.1 * n_share, (budget, n_share)
    assert "Cheapest that keeps the error rate: exact (its slowest comparison's median: 12 configurations)" in r.stdout
    # the oracles: exact power of the sign test (binomial tails) and of the paired t-test (noncentral t)
    n = n_share
    lo, hi = st.binom.ppf(0.025, n, 0.5) - 1, st.binom.isf(0.025, n, 0.5) + 1      # two-sided rejection region
    power = st.binom.cdf(lo, n, 0.55) + st.binom.sf(hi - 1, n, 0.55)
    assert 0.77 < power < 0.83, (n, power)
    values = np.random.default_rng(5).normal(0.0, 0.02, size=40)
    n = fixed_configurations(values, statistic="mean", delta=0.01, alpha=0.01)
    effect = 0.01 / np.std(values, ddof=1)
    crit = st.t.ppf(1 - 0.005, n - 1)
    power = st.nct.sf(crit, n - 1, effect * np.sqrt(n)) + st.nct.cdf(-crit, n - 1, effect * np.sqrt(n))
    assert 0.77 < power < 0.83, (n, power)
    bad = seedsweep("plan", "search_spaces/quickstart.yaml", "--pilot", str(pilot))
    assert bad.returncode == 2 and "no until: block" in bad.stderr
