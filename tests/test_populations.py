"""Populations in one pass (``train.vectorize_seeds``): each seed of a
vectorised group follows the lone trial with its seed (per epoch, for each of
the four sentence architectures), a population's spread matches lone seeds'
(KS), a diverging member leaves without stopping the others, the engine
stores one row and one epochs part per seed, a resume trains only the
missing seeds, and ``check`` refuses the option where a family cannot."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from seedsweep import study
from seedsweep.study.execution.runner import plan_study, populations
from seedsweep.study.execution.trial import run_group, run_trial
from seedsweep.study.families.sentence import population as population_module
from seedsweep.study.spec.spacefile import parse_space
from seedsweep.study.store.rundir import RunDir

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("SEEDSWEEP_SHARED_DATA", REPO.parent / "shared" / "data"))
BED = REPO / "testbeds" / "sst_phenomena.yaml"
needs_sst = pytest.mark.skipif(not (DATA / "sst5" / "train.txt").is_file(),
                               reason=f"SST-5 not found under {DATA} (set SEEDSWEEP_SHARED_DATA to the shared data folder)")


def sst_space(arch: str, *, seeds: str = "4", fixed: str = "", train: str = "max_epochs: 4, patience: 2",
              size: str = "train_sentences: 600, dev_sentences: 300, test_sentences: 300", where: str = "pop.yaml"):
    text = f"""
name: pop
family: sentence
samples: 1
seeds: {seeds}
compare: {{augment: [none, negation]}}
task: {{dataset: sst2, path: {DATA / 'sst5'}, {size}}}
evaluate: [{BED}]
fixed: {{architecture: {arch}, dropout: 0.3{fixed}}}
train: {{{train}}}
"""
    return parse_space(text, path=where)


def vanilla(space):
    return [t for t in plan_study(space)[1] if t.option == "none"]


def lone_rows(space, trials):
    out = {}
    for t in trials:
        rows: list[dict] = []
        run_trial(space, t, rows.append)
        out[t.key] = rows
    return out


def group_rows(space, trials):
    out: dict[str, list[dict]] = {t.key: [] for t in trials}
    run_group(space, trials, lambda rows: [out[r["trial_key"]].append(r) for r in rows])
    return out


@needs_sst
@pytest.mark.parametrize("arch", ["fc", "cnn", "lstm", "attention"])
def test_each_seed_of_a_vectorised_group_follows_its_lone_trial(arch):
    """Shared data order (order_seed), CPU: per-epoch dev and test scores within
    1e-5 of the lone trial with the same seed, the same early stop, the same
    best-epoch evaluation-set scores."""
    space = sst_space(arch, fixed=", order_seed: 1", train="max_epochs: 6, patience: 1")
    trials = vanilla(space)
    lone, group = lone_rows(space, trials), group_rows(space, trials)
    epochs_run, worst = set(), 0.0
    for key, alone in lone.items():
        together = group[key]
        assert [r["epoch"] for r in together] == [r["epoch"] for r in alone], key
        for a, b in zip(alone, together):
            worst = max(worst, abs(a["dev_score"] - b["dev_score"]), abs(a["test_score"] - b["test_score"]))
            assert abs(a["dev_score"] - b["dev_score"]) <= 1e-5 and abs(a["test_score"] - b["test_score"]) <= 1e-5, \
                (key, a["epoch"], a["dev_score"], b["dev_score"], a["test_score"], b["test_score"])
        assert together[-1]["status"] == alone[-1]["status"] and together[-1]["best_epoch"] == alone[-1]["best_epoch"]
        for name, value in alone[-1]["results"].items():
            assert together[-1]["results"][name] == pytest.approx(value, abs=1e-5), (key, name)
        epochs_run.add(alone[-1]["epochs_run"])
    # the seeds really differ (else a shared initialisation would pass)
    assert len({tuple(r["dev_score"] for r in rows) for rows in lone.values()}) == len(lone)
    print(f"{arch}: epochs run per seed {sorted(epochs_run)}, largest score difference to the lone trial {worst:.1e}")


@needs_sst
def test_a_vectorised_population_spreads_like_lone_seeds():
    """30 vectorised seeds (the default scope: every seed its own data order)
    against 30 lone trials of other seeds: KS p > 0.05, σ within a factor 1.5."""
    train = "max_epochs: 3, patience: 2"
    size = "train_sentences: 800, dev_sentences: 300, test_sentences: 400"
    vec = sst_space("fc", seeds="[" + ", ".join(map(str, range(1, 31))) + "]", train=train + ", vectorize_seeds: true",
                    size=size)
    lone = sst_space("fc", seeds="[" + ", ".join(map(str, range(31, 61))) + "]", train=train, size=size)
    a = [rows[-1]["test_score_best"] for rows in group_rows(vec, vanilla(vec)).values()]
    b = [rows[-1]["test_score_best"] for rows in lone_rows(lone, vanilla(lone)).values()]
    ks = stats.ks_2samp(a, b)
    sa, sb = np.std(a, ddof=1), np.std(b, ddof=1)
    print(f"vectorised: mean {np.mean(a):.4f} sd {sa:.4f}; lone: mean {np.mean(b):.4f} sd {sb:.4f}; "
          f"KS D {ks.statistic:.3f} p {ks.pvalue:.3f}")
    assert len(a) == len(b) == 30
    assert sa > 0 and sb > 0
    assert ks.pvalue > 0.05
    assert max(sa, sb) / min(sa, sb) < 1.5


@needs_sst
def test_a_diverging_member_is_stored_diverged_and_the_others_follow_their_lone_trials(monkeypatch):
    space = sst_space("fc", fixed=", order_seed: 1", train="max_epochs: 3, patience: 3")
    trials = vanilla(space)
    lone = lone_rows(space, trials)
    built = population_module.Population.__init__

    def poisoned(self, space, trials):
        built(self, space, trials)
        with np.errstate(all="ignore"):
            self.weights["mlp.6.bias"].data[1] = float("nan")      # the second member's output layer

    monkeypatch.setattr(population_module.Population, "__init__", poisoned)
    group = group_rows(space, trials)
    bad = trials[1].key
    assert len(group[bad]) == 1 and group[bad][0]["status"] == "diverged", group[bad]
    assert "non-finite training loss" in group[bad][0]["reason"]
    for t in trials:
        if t.key == bad:
            continue
        assert [r["dev_score"] for r in group[t.key]] == pytest.approx([r["dev_score"] for r in lone[t.key]], abs=1e-5)
        assert group[t.key][-1]["status"] == "ok" and group[t.key][-1]["epochs_run"] == 3


def test_populations_group_the_seeds_of_a_configuration_and_option():
    space = parse_space("name: g\nfamily: synthetic\nsamples: 2\nseeds: 3\ncompare: {x: [a, b]}\n", path="g.yaml")
    groups = populations(plan_study(space)[1])
    assert len(groups) == 4
    for g in groups:
        assert len({(t.config_id, t.option) for t in g}) == 1 and [t.seed for t in g] == [1, 2, 3]


@pytest.mark.parametrize("family,extra", [
    ("synthetic", ""),
    ("tagger", "task: {dataset: conll2000}\n"),
])
def test_check_refuses_vectorize_seeds_where_the_family_cannot(tmp_path, family, extra):
    path = tmp_path / "v.yaml"
    path.write_text(f"name: v\nfamily: {family}\nsamples: 1\nseeds: 2\ncompare: {{classifier: [softmax, crf]}}\n"
                    f"{extra}train: {{vectorize_seeds: true}}\n")
    for command in ("check", "run"):
        args = [sys.executable, "-m", "seedsweep", command, str(path)] + (["--out", str(tmp_path / "o")]
                                                                       if command == "run" else [])
        done = subprocess.run(args, capture_output=True, text=True, cwd=REPO)
        assert done.returncode == 2, done.stderr
        assert f"{path}: train.vectorize_seeds" in done.stderr and family in done.stderr
    assert not (tmp_path / "o").exists()


def test_a_non_boolean_vectorize_seeds_and_a_bad_per_group_are_located(tmp_path):
    from seedsweep.study.errors import UserError

    base = "name: v\nfamily: sentence\nsamples: 1\nseeds: 2\ncompare: {architecture: [fc, cnn]}\ntask: {dataset: sst2}\n"
    with pytest.raises(UserError, match=r"train\.vectorize_seeds: expected true or false"):
        parse_space(base + "train: {vectorize_seeds: yes please}\n", path="v.yaml")
    with pytest.raises(UserError, match=r"train\.vectorize_seeds: expected true or false, got 2"):
        parse_space(base + "train: {vectorize_seeds: 2}\n", path="v.yaml")
    with pytest.raises(UserError, match=r"resources\.per_group"):
        parse_space(base + "resources: {per_group: 0}\n", path="v.yaml")
    space = parse_space(base + "train: {vectorize_seeds: true}\nresources: {cpu: 1, per_group: 2}\n", path="v.yaml")
    assert space.resources.of_trial(True) == {"cpu": 2.0, "gpu": 0.0}
    assert space.resources.of_trial(False) == {"cpu": 1.0, "gpu": 0.0}


VECTORISED = """
name: vec
family: sentence
samples: 2
seeds: 4
compare: {{augment: [none, negation]}}
space: {{architecture: {{choice: [fc, cnn]}}}}
task: {{dataset: sst2, path: {sst}, train_sentences: 400, dev_sentences: 200, test_sentences: 200}}
evaluate: [{bed}]
fixed: {{augment_factor: 2, lr: 3.0e-3}}
train: {{max_epochs: 6, patience: 1, vectorize_seeds: true}}
"""


@needs_sst
def test_a_vectorised_study_stores_every_seed_once_and_resumes_only_missing_seeds(tmp_path, ray_local):
    path = tmp_path / "vec.yaml"
    path.write_text(VECTORISED.format(sst=DATA / "sst5", bed=BED))
    out = tmp_path / "run"
    summary = study.run(path, out, num_cpus=2)
    grid = {t.key for t in plan_study(study.load_study(path))[1]}
    rd = RunDir(out)
    table = rd.read_trials().to_pandas()
    assert sorted(table.trial_key) == sorted(grid) and summary.total == 16
    assert set(rd.read_epochs()["trial_key"].to_pylist()) == grid
    assert table.groupby("trial_key").size().max() == 1
    assert set(table.params) == {40077, 40196}
    assert table.epochs_run.nunique() > 1, "early stopping per seed: seeds stop at different epochs"
    epochs = rd.read_epochs().to_pandas()
    per_key = epochs.groupby("trial_key").size()
    assert (per_key == table.set_index("trial_key").epochs_run.reindex(per_key.index)).all()
    manifest = rd.manifest()
    assert manifest["seed_scope"]["data order"] == "seed" and manifest["train"]["vectorize_seeds"] is True

    # two seeds of one population are lost: only they train again, and they
    # come back with the same scores (a member does not depend on its group)
    lost = sorted(table.trial_key)[:2]
    before = table.set_index("trial_key")
    parts = {p.name: p.read_bytes() for p in (out / "trials").glob("*.parquet") if not p.name.startswith(".")}
    for key in lost:
        for folder in ("trials", "epochs"):
            (out / folder / (key.replace("/", "%2F") + ".parquet")).unlink()
    again = study.run(path, out, num_cpus=2)
    assert again.scheduled == 2 and again.skipped == 14
    after = RunDir(out).read_trials().to_pandas().set_index("trial_key")
    assert sorted(after.index) == sorted(grid)
    for key in lost:
        for column in ("dev_score", "test_score", "epochs_run", "eval_negation"):
            assert after.loc[key, column] == pytest.approx(before.loc[key, column], abs=1e-9), (key, column)
    kept = {p.name: p.read_bytes() for p in (out / "trials").glob("*.parquet") if not p.name.startswith(".")}
    assert all(kept[name] == data for name, data in parts.items() if name in kept and
               name.replace("%2F", "/")[:-len(".parquet")] not in lost)


KILLED = """
name: killed-population
family: sentence
samples: 1
seeds: 8
compare: {{augment: [none, negation]}}
task: {{dataset: sst2, path: {sst}, train_sentences: 3000, dev_sentences: 150, test_sentences: 200}}
evaluate: [{bed}]
fixed: {{architecture: fc, dropout: 0.5, lr: 3.0e-3}}
train: {{max_epochs: 40, patience: 2, vectorize_seeds: true}}
"""


@needs_sst
@pytest.mark.slow
def test_a_driver_killed_mid_population_loses_only_its_unstored_seeds(tmp_path, joined_here):
    """SIGKILL the CLI (on a Ray of its own) once the first seed of a population
    is stored, while others still train; the rerun (joined to the worker's Ray,
    in this process) stores every seed key once and leaves the parts stored
    before the kill byte-identical."""
    import signal
    import tempfile
    import time
    import uuid

    from tests.conftest import remove_tagged
    from tests.test_kill import snapshot

    tag = uuid.uuid4().hex
    ray_tmp = tempfile.mkdtemp(prefix="ssv-", dir="/tmp")
    env = {**os.environ, "SEEDSWEEP_TEST_TAG": tag, "RAY_TMPDIR": ray_tmp, "RAY_AUTH_MODE": "disabled"}
    path = tmp_path / "killed.yaml"
    path.write_text(KILLED.format(sst=DATA / "sst5", bed=BED))
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "seedsweep", "run", str(path), "--out", str(out), "--num-cpus", "2", "--quiet"]
    grid = {t.key for t in plan_study(study.load_study(path))[1]}
    try:
        proc = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

        def partial() -> list[str]:
            """Populations with some seeds stored and some still training."""
            names = {p.name for p in (out / "trials").glob("*.parquet")} if (out / "trials").is_dir() else set()
            done = {k for k in grid if k.replace("/", "%2F") + ".parquet" in names}
            groups = {k.rsplit("/", 1)[0] for k in grid}
            return [g for g in groups if 0 < len({k for k in done if k.startswith(g + "/")}) < 8]

        deadline = time.monotonic() + 240
        while not partial() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        time.sleep(0.3)         # seeds are stored as they stop: the population stays partly stored meanwhile
        still = partial()
        assert proc.poll() is None, f"the run ended before it could be killed:\n{proc.stdout.read().decode()}"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert still, "no population was partly stored 0.3 s after its first seed: seeds are not stored as they stop"
        kept = snapshot(out)
        n_kept = len([k for k in kept if k.startswith("trials/")])
        assert 0 < n_kept < len(grid), f"the kill must fall inside the populations ({n_kept} of {len(grid)} stored)"
        rerun = joined_here("run", str(path), "--out", str(out), "--quiet")
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
        assert f"{n_kept} already stored, {len(grid) - n_kept} to run" in rerun.stdout + rerun.stderr
    finally:
        remove_tagged(tag, ray_tmp)
    final = snapshot(out)
    assert {k: final[k] for k in kept} == kept, "a part stored before the kill changed"
    keys = RunDir(out).read_trials()["trial_key"].to_pylist()
    assert sorted(keys) == sorted(grid), "every seed key stored exactly once"
    assert set(RunDir(out).read_epochs()["trial_key"].to_pylist()) == grid
    print(f"stored before the kill: {n_kept} of {len(grid)} seeds")
