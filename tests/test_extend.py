"""A study's stopping rule is frozen on resume, its looks are kept, and a
budget grows only through ``seedsweep extend`` (issue 50, item 2).

The conditional error is checked against Brownian paths simulated here (an
oracle computed another way than the recursion); the level of the "double
the budget when undecided" habit with ``extend`` by simulation (the full
20,000-study run is ``benchmarks/extend_level.py``, its result in
``benchmarks/results/extend_level-2026-12-04.json``); the command's refusals
exit 2 with nothing written; one extension runs on Ray to its new budget."""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import uuid

import numpy as np
import pytest

from seedsweep import analysis
from seedsweep.analysis.stats.extension import conditional_error, extended_decision, stage_two
from seedsweep.analysis.stats.groupseq import boundaries
from benchmarks.extend_level import simulate
from seedsweep.study.store.rundir import RunDir
from tests.rundirs import write_synthetic_run
from tests.test_adaptive import seedsweep

SPENDING = """
name: extend
family: synthetic
samples: 4
seeds: 1
compare: {classifier: [softmax, crf]}
space: {units: {choice: [25, 50, 100]}, lr: {loguniform: [1.0e-3, 1.0e-1]}}
task: {effects: {classifier: {crf: EFFECT}}, noise: 0.002, epoch_noise: 0.0}
fixed: {epoch_seconds: 0.0}
train: {max_epochs: 1, patience: 1}
until: {method: spending, budget: {samples: BUDGET}}
"""


def study(effect: float, budget: int) -> str:
    return SPENDING.replace("EFFECT", str(effect)).replace("BUDGET", str(budget))


@pytest.mark.parametrize("kind, stop, z", [("obf", 1, 0.8), ("pocock", 0, -1.5), ("obf", 2, 2.0)])
def test_the_conditional_error_is_the_chance_brownian_paths_cross_later(kind, stop, z):
    """From Z = z at look ``stop`` of five equal looks, 400,000 paths of the
    score S = Z sqrt(t), with independent normal increments, simulated here:
    the share that crosses a later boundary matches within 4 SE."""
    fractions = [0.2, 0.4, 0.6, 0.8, 1.0]
    c = boundaries(fractions, 0.05, kind).z
    rng = np.random.default_rng(2)
    reps = 400_000
    s = np.full(reps, z * math.sqrt(fractions[stop]))
    crossed = np.zeros(reps, dtype=bool)
    for k in range(stop + 1, len(fractions)):
        s = s + rng.standard_normal(reps) * math.sqrt(fractions[k] - fractions[k - 1])
        crossed |= np.abs(s / math.sqrt(fractions[k])) >= c[k]
    oracle = crossed.mean()
    found = conditional_error(fractions, 0.05, kind, stop, z)
    assert abs(found - oracle) <= 4 * math.sqrt(oracle * (1 - oracle) / reps) + 1e-4, (found, oracle)
    assert conditional_error(fractions, 0.05, kind, len(fractions) - 1, z) == 0.0     # nothing left after the last


def test_the_new_stage_tests_only_the_new_configurations_at_the_level_left():
    """Stage two sees the units after the stop: 12 straight wins there decide;
    the same wins before the stop do not count; a level of 0 changes nothing."""
    record = {"budget": 24, "samples": 12, "sequences": [{"choice": "c", "a": "A", "b": "B", "task": "t",
                                                          "units": 12, "conditional_error": 0.01}]}
    key = ("c", "A", "B", "t")
    after = np.r_[np.full(12, 0.5), np.ones(12)]
    before = np.r_[np.ones(12), np.full(12, 0.5)]
    assert extended_decision(after, "share", record, key, 24, "futile", 8) == ("A better", 24)
    assert extended_decision(before, "share", record, key, 24, "futile", 8) == ("undecided", None)
    assert extended_decision(after, "share", record, key, 20, "futile", 8) == ("undecided", None)   # not yet at 24
    assert extended_decision(after, "share", record, key, 12, "futile", 8) == ("futile", 8)         # a look taken
    record["sequences"][0]["conditional_error"] = 0.0
    assert extended_decision(after, "share", record, key, 24, "undecided", None) == ("undecided", None)
    # 12 of 12 wins: the two-sided exact p is 2 * 2^-12 = 2^-11, by hand
    assert stage_two(np.ones(12), "share", 0.99 * 2 ** -11) == ("undecided", 2 ** -11)
    assert stage_two(np.ones(12), "share", 2 ** -11) == ("A better", 2 ** -11)
    assert stage_two(np.zeros(12), "share", 2 ** -11)[0] == "B better"


def test_doubling_the_budget_with_extend_keeps_the_level_and_editing_until_did_not():
    """1,000 null studies (win share, budget 20, O'Brien-Fleming type): the
    extension's false winners stay within α + 3 SE, whether the study ran to
    its budget or was interrupted at half of it (then the conditional error
    is most of the level); rerunning every look with the edited budget (what
    a resume did before until: was frozen) declares more false winners."""
    out = simulate(1000, 20, "share", kind="obf", edited_reps=1000)
    assert out["extend"] <= out["ceiling"] and out["edited"] > out["extend"], out
    half = simulate(1000, 20, "mean", kind="obf", edited_reps=0, stop_at=0.5)
    assert half["extend"] <= half["ceiling"], half


#: the Ray temp folders _env made (short paths under /tmp: Ray's socket paths are length-limited)
_MADE: list[str] = []


def _env():
    _MADE.append(tempfile.mkdtemp(prefix="sse-", dir="/tmp"))
    return {**os.environ, "RAY_AUTH_MODE": "disabled", "SEEDSWEEP_TEST_TAG": uuid.uuid4().hex, "RAY_TMPDIR": _MADE[-1]}


@pytest.fixture(autouse=True, scope="module")
def _remove_ray_folders():
    """The module's Ray temp folders go when it ends (they were left in /tmp)."""
    yield
    for folder in _MADE:
        shutil.rmtree(folder, ignore_errors=True)


def _listing(path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_a_changed_until_and_an_extension_without_level_are_refused_with_nothing_written(tmp_path):
    out = tmp_path / "run"
    write_synthetic_run(out, study(0.0, 4))                         # the whole design: its last look taken
    before = _listing(out)
    changed = tmp_path / "changed.yaml"
    changed.write_text(study(0.0, 8))
    env = _env()
    try:
        r = seedsweep("run", str(changed), "--out", str(out), "--num-cpus", "1", "--quiet", env=env)
        started = os.listdir(env["RAY_TMPDIR"])
    finally:
        shutil.rmtree(env["RAY_TMPDIR"], ignore_errors=True)
    assert r.returncode == 2, r.stderr
    assert started == [], "refused after a private Ray started: the stored study is compared first"
    assert ": until" in r.stderr and "until.budget.samples was 4, now 8" in r.stderr and "seedsweep extend" in r.stderr
    r = seedsweep("extend", str(out), "--budget", "8", env=_env())
    assert r.returncode == 2, r.stderr
    assert "no level left" in r.stderr and "last planned look (4 configurations)" in r.stderr
    r = seedsweep("extend", str(out), "--budget", "3", env=_env())
    assert r.returncode == 2 and "must exceed the study's 4 configurations" in r.stderr, r.stderr
    assert _listing(out) == before                                  # nothing written by any of them


@pytest.mark.slow
def test_an_extension_runs_to_its_budget_tests_the_new_configurations_and_keeps_its_looks(tmp_path, joined_here):
    """A spending study of budget 8 stopped after its first wave of 4 (as an
    hours budget stops one); extended to 12 it runs 8 new configurations, CRF
    winning each, and decides at the level left; the looks are kept; a
    second extension and a resume with the original file change nothing."""
    out = tmp_path / "run"
    space = tmp_path / "study.yaml"
    space.write_text(study(0.03, 8))
    write_synthetic_run(out, study(0.03, 8))
    r = joined_here("extend", str(out), "--budget", "12")
    assert r.returncode == 0, r.stderr
    ext = json.loads((out / "extension.json").read_text())
    (entry,) = ext["sequences"]
    assert ext["budget"] == 12 and ext["from_budget"] == 8 and entry["units"] == 4
    # softmax (A) loses 4 of 4: z = (0 - 2) / sqrt(4 / 4) = -2 at fraction 4/8; the looks left at 5, 6, 7 and 8 of 8
    assert entry["z"] == -2.0 and "level left" in r.stderr
    assert entry["conditional_error"] == pytest.approx(
        conditional_error([0.5, 0.625, 0.75, 0.875, 1.0], 0.05, "obf", 0, -2.0), abs=1e-12)
    looks = RunDir(out).read_looks()
    assert [x["configurations"] for x in looks][0] == 4 and looks[-1]["configurations"] == 12
    assert looks[0]["sequences"][0]["boundary"] > looks[0]["sequences"][0]["z"]     # undecided at the first look
    section = analysis.report(str(out), n_bootstrap=50).split("\n\n**", 1)[0]
    assert "| classifier | softmax | crf | synthetic | 12 |" in section and "B better | 12 |" in section
    assert "Extended (seedsweep extend) from 8 to 12 configurations" in section
    r = seedsweep("extend", str(out), "--budget", "16", env=_env())
    assert r.returncode == 2 and "extended to 12 configurations already" in r.stderr, r.stderr
    r = joined_here("run", str(space), "--out", str(out), "--quiet")
    assert r.returncode == 0 and "stopped after 12 configurations" in r.stderr, r.stderr
