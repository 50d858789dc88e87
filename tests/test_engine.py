"""The study engine end to end on a real local Ray: rows, pairing, determinism,
growth, failures and retries, compaction."""

from __future__ import annotations

import hashlib
import signal
from pathlib import Path

import pytest

from seedsweep import analysis
from seedsweep import study
from seedsweep.study import UserError
from seedsweep.study.store.rundir import RunDir

pytestmark = pytest.mark.slow

STUDY = """
name: engine
family: synthetic
samples: {samples}
seeds: {seeds}
compare:
  classifier: [softmax, crf, mlp]
task:
  effects: {{classifier: {{softmax: 0.0, crf: 0.03, mlp: -0.01}}}}
  noise: 0.005
{task_extra}
sampler_seed: 11
space:
  optimizer: {{choice: [adam, nadam, sgd]}}
  dropout: {{choice: [none, variational]}}
  dropout_rate: {{uniform: [0.0, 0.5], when: {{dropout: [variational]}}}}
  lr: {{loguniform: [1.0e-4, 1.0e-2]}}
train: {{max_epochs: 6, patience: 2{train_extra}}}
"""


def make(space_file, samples=6, seeds=2, task_extra="", train_extra="", name="space.yaml"):
    return space_file(STUDY.format(samples=samples, seeds=seeds, task_extra=task_extra, train_extra=train_extra), name)


def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.parquet"))}


def test_study_stores_one_row_per_trial_paired_and_finds_the_injected_winner(space_file, tmp_path, ray_local):
    out = tmp_path / "run"
    handlers = {n: signal.getsignal(getattr(signal, n)) for n in ("SIGINT", "SIGUSR1")}
    summary = study.run(make(space_file, samples=8, seeds=2), out)
    assert summary.total == 8 * 3 * 2 and summary.counts == {"ok": 48}
    # the fit ran in this (main) thread: Tune's Ctrl-C handler is gone with it, this process's own is back
    assert {n: signal.getsignal(getattr(signal, n)) for n in handlers} == handlers
    assert len(list((out / "trials").glob("*.parquet"))) == 48
    df = analysis.load(out)
    assert len(df) == 48 and df.trial_key.is_unique
    hyper = ["optimizer", "dropout", "dropout_rate", "lr"]
    per_config = df.groupby("config_id")[hyper].nunique(dropna=False)
    assert (per_config == 1).all().all(), "options and seeds of a configuration must share its hyperparameters"
    assert (df.classifier == df.option).all()
    assert df.dropout_rate.isna().eq(df.dropout == "none").all()
    cmp = analysis.compare(df, "classifier")
    assert cmp.n == 8 and cmp.best == "crf" and cmp.shares["crf"] > 0.5
    epochs = analysis.load_epochs(out)
    assert set(epochs.trial_key) == set(df.trial_key)
    assert (epochs.groupby("trial_key").size() == df.set_index("trial_key").epochs_run).all()
    assert (df.attempt == 1).all() and df.node.notna().all() and (df.test_score_max >= df.test_score).all()
    manifest = RunDir(out).manifest()
    assert manifest["yaml_sha256"] == hashlib.sha256(manifest["yaml"].encode()).hexdigest()
    assert manifest["versions"]["ray"] == "2.60.0" and manifest["accelerators"]["CPU"] >= 1


def test_fresh_runs_agree_and_growth_keeps_every_stored_part(space_file, tmp_path, ray_local):
    a, b = tmp_path / "a", tmp_path / "b"
    study.run(make(space_file, samples=3, seeds=1), a)
    study.run(make(space_file, samples=3, seeds=1, name="again.yaml"), b)
    assert (a / "configs.parquet").read_bytes() == (b / "configs.parquet").read_bytes()
    cols = ["trial_key", "dev_score", "test_score", "test_score_max", "best_epoch", "epochs_run"]
    assert analysis.load(a)[cols].equals(analysis.load(b)[cols])

    before = digests(a / "trials") | {"e/" + k: v for k, v in digests(a / "epochs").items()}
    configs_before = RunDir(a).configs()
    grown = study.run(make(space_file, samples=5, seeds=3, name="grown.yaml"), a)
    assert grown.skipped == 9 and grown.scheduled == 5 * 3 * 3 - 9 and grown.counts == {"ok": 45}
    after = digests(a / "trials") | {"e/" + k: v for k, v in digests(a / "epochs").items()}
    assert {k: after[k] for k in before} == before, "stored parts must stay byte-for-byte"
    assert RunDir(a).configs().slice(0, 3).equals(configs_before)
    assert len(RunDir(a).manifest()["history"]) == 1

    again = study.run(make(space_file, samples=5, seeds=3, name="grown.yaml"), a)
    assert again.scheduled == 0 and again.skipped == 45


def test_a_change_that_alters_stored_configurations_is_refused(space_file, tmp_path, ray_local):
    out = tmp_path / "run"
    study.run(make(space_file, samples=2, seeds=1), out)
    manifest = (out / "manifest.json").read_bytes()
    changed = space_file(STUDY.format(samples=2, seeds=1, task_extra="", train_extra="")
                         .replace("[1.0e-4, 1.0e-2]", "[1.0e-5, 1.0e-2]"), "changed.yaml")
    with pytest.raises(UserError, match=r"configuration c00000 would change: lr"):
        study.run(changed, out)
    epochs = space_file(STUDY.format(samples=2, seeds=1, task_extra="", train_extra="")
                        .replace("max_epochs: 6", "max_epochs: 9"), "epochs.yaml")
    with pytest.raises(UserError, match="train.max_epochs changed from 6 to 9"):
        study.run(epochs, out)
    fixed = make(space_file, samples=2, seeds=1, name="fixed.yaml").read_text() + "fixed: {chars: cnn}\n"
    with pytest.raises(UserError, match="'fixed' changed"):
        study.run(space_file(fixed, "fixed.yaml"), out)
    assert (out / "manifest.json").read_bytes() == manifest, "a refused run writes nothing"
    assert study.run(make(space_file, samples=2, seeds=1, name="same.yaml"), out).scheduled == 0


def test_failures_are_retried_stored_with_their_error_and_retry_failed_replaces_them(space_file, tmp_path, ray_local):
    once = tmp_path / "markers"
    once.mkdir()
    broken = tmp_path / "broken-disk"
    broken.write_text("")
    extra = f"  fail_while_exists: {broken}\n  diverge: [mlp]\n"
    # one configuration of each option (3 trials; each failure costs Ray Tune a new trial actor)
    path = make(space_file, samples=1, seeds=1, task_extra=extra, train_extra=", retries: 1")
    out = tmp_path / "run"
    first = study.run(path, out)
    assert first.counts == {"failed": 3}
    df = analysis.load(out)
    assert (df.attempt == 2).all(), "one retry after the first failure"
    assert df.error.str.contains("broken-disk exists").all()
    assert df.reason.str.startswith("exception: RuntimeError: synthetic failure").all()

    again = study.run(path, out)  # a plain resume keeps failed rows
    assert again.scheduled == 0 and again.counts == {"failed": 3}

    broken.unlink()  # the environment is mended
    retried = study.run(path, out, retry_failed=True)
    assert retried.scheduled == 3 and retried.counts == {"ok": 2, "diverged": 1}
    df = analysis.load(out)
    assert len(df) == 3 and df.trial_key.is_unique
    assert (df.attempt == 3).all(), "attempts count on from the failed row"
    diverged = df[df.status == "diverged"]
    assert (diverged.option == "mlp").all() and diverged.reason.str.contains("non-finite").all()
    assert diverged.error.isna().all() and (diverged.epochs_run == 2).all()
    assert study.run(path, out, retry_failed=True).scheduled == 0, "diverged rows are results, not failures"


@pytest.mark.parametrize("how", ["fail_once_dir", "die_once_dir"],
                         ids=["first attempt raises", "first attempt's worker is SIGKILLed"])
def test_a_trial_whose_first_attempt_fails_is_retried_and_stored_once(space_file, tmp_path, ray_local, how):
    markers = tmp_path / "markers"
    markers.mkdir()
    out = tmp_path / "run"
    # 3 trials, each failing once (each retry is a new trial actor: 6 actors, not 12 as with 2 samples)
    summary = study.run(make(space_file, samples=1, seeds=1, task_extra=f"  {how}: {markers}\n"), out)
    assert summary.counts == {"ok": 3}
    df = analysis.load(out)
    assert (df.attempt == 2).all() and df.trial_key.is_unique
    assert len(list(markers.iterdir())) == 3
    assert len(analysis.load_epochs(out)) == df.epochs_run.sum(), "epochs of the failed attempt are not kept"


def test_a_worker_that_always_dies_is_stored_as_failed_and_the_study_finishes(space_file, tmp_path, ray_local):
    out = tmp_path / "run"
    path = make(space_file, samples=2, seeds=1, train_extra=", retries: 1", task_extra="  die: [mlp]\n")
    summary = study.run(path, out)
    assert summary.counts == {"ok": 4, "failed": 2}
    failed = analysis.load(out).query("status == 'failed'")
    assert (failed.option == "mlp").all() and (failed.attempt == 2).all()
    assert (failed.reason == "worker died").all(), failed.reason.tolist()
    assert failed.error.str.len().gt(0).all()


@pytest.mark.parametrize("text,reason", [
    ("ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.", "out of memory"),
    ("Traceback (most recent call last):\n  File \"x.py\", line 1\nMemoryError: Unable to allocate 4.00 GiB",
     "out of memory"),
    ("Traceback (most recent call last):\nValueError: MemoryError is not a reason here", "exception: ValueError"),
    ("ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.", "worker died"),
    ("Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: bad lr", "exception: ValueError: bad lr"),
])
def test_error_texts_are_classified(text, reason):
    from seedsweep.study.execution.failures import classify_error

    assert classify_error(text).startswith(reason)


def test_compact_merges_parts_and_every_reader_accepts_it(space_file, tmp_path, ray_local):
    out = tmp_path / "run"
    path = make(space_file, samples=3, seeds=1)
    study.run(path, out)
    before = analysis.load(out)
    trials, epochs = study.compact(out)
    assert trials == 9 and epochs == len(analysis.load_epochs(out))
    assert not list((out / "trials").glob("*.parquet")) and (out / "trials.parquet").exists()
    assert analysis.load(out).equals(before)
    assert study.run(path, out).scheduled == 0
    grown = study.run(make(space_file, samples=4, seeds=1, name="grown.yaml"), out)
    assert grown.scheduled == 3 and len(analysis.load(out)) == 12
    status = study.status(out)
    assert status.stored == 12 and status.by_status == {"ok": 12}
    assert "12/12 trials stored" in status.render()


def test_resume_refuses_a_folder_that_is_not_a_run_directory(space_file, tmp_path):
    out = tmp_path / "notes"
    out.mkdir()
    (out / "thesis.tex").write_text("x")
    with pytest.raises(UserError, match="not a seedsweep run directory"):
        study.run(make(space_file), out)
    assert sorted(p.name for p in out.iterdir()) == ["thesis.tex"]


def test_study_run_refuses_an_adaptive_or_tuned_study_file_instead_of_running_a_plain_grid(space_file, tmp_path):
    """The Python API's study.run once ran such a file as a plain grid (no stop when decided, no search):
    now it names the file and the key, says how to run it, and writes nothing."""
    base = "name: r\nfamily: synthetic\ncompare: {classifier: [softmax, crf]}\n"
    for key, block in (("until", "samples: 2\nseeds: 1\nuntil: {budget: {samples: 8}}\n"),
                       ("tune", "space: {lr: {loguniform: [1.0e-4, 1.0e-1]}}\ntune: {budget: 4}\n")):
        path = space_file(base + block, f"{key}.yaml")
        with pytest.raises(UserError, match=rf"{path}: {key}: study.run runs a study's plain grid") as err:
            study.run(path, tmp_path / key)
        assert "seedsweep run" in str(err.value) and not (tmp_path / key).exists()
