"""Compaction while a study runs (study.store.shards): folds, merges and full
compactions killed at every step leave the rows a reader sees unchanged, and
the next step completes them.

The oracle is a plain dict of the last row written per trial key, kept while
the directory is built; the store's layered read must agree with it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from seedsweep.study.store import shards
from seedsweep.study.store.rows import EPOCHS
from seedsweep.study.store.rundir import RunDir

SCHEMA = pa.schema([("trial_key", pa.string()), ("status", pa.string()), ("attempt", pa.int64()),
                    ("test_score", pa.float64())])


class Crash(Exception):
    """Stands for a SIGKILL at one step of a compaction."""


def write(rd: RunDir, oracle: dict, key: str, status: str, attempt: int, epochs: int) -> None:
    score = None if status == "failed" else round(0.5 + attempt / 10 + len(key) / 1000, 6)
    row = pa.Table.from_pylist([{"trial_key": key, "status": status, "attempt": attempt, "test_score": score}],
                               schema=SCHEMA)
    ep = pa.Table.from_pylist([{"trial_key": key, "epoch": e, "dev_score": e / 10 + attempt}
                               for e in range(1, epochs + 1)], schema=EPOCHS)
    rd.write_trial(key, row, ep)
    oracle[key] = (status, attempt, score, epochs)


def seen(rd: RunDir) -> dict:
    """What a reader sees: key -> (status, attempt, score, number of epochs)."""
    trials = rd.read_trials()
    epochs = rd.read_epochs()
    n_epochs = {}
    for k in epochs["trial_key"].to_pylist():
        n_epochs[k] = n_epochs.get(k, 0) + 1
    keys = trials["trial_key"].to_pylist()
    assert len(keys) == len(set(keys)), "a trial key read twice"
    return {r["trial_key"]: (r["status"], r["attempt"], r["test_score"], n_epochs.get(r["trial_key"], 0))
            for r in trials.to_pylist()}


def build(path: Path) -> tuple[RunDir, dict]:
    """A directory with every layer: a compacted file, two shards, parts, and
    keys whose newest row is in a newer layer than an older row (a retried
    failure)."""
    rd = RunDir(path)
    rd.prepare()
    oracle: dict = {}
    for i in range(6):
        write(rd, oracle, f"c{i:05d}/x=a/seed=1", "failed" if i % 3 == 0 else "ok", 1, 2)
    rd.compact()
    for i in (0, 3):                      # retried after compaction: a part overrides the compacted row
        write(rd, oracle, f"c{i:05d}/x=a/seed=1", "ok", 2, 3)
    for i in range(6, 10):
        write(rd, oracle, f"c{i:05d}/x=a/seed=1", "failed" if i == 7 else "ok", 1, 2)
    rd.fold()
    write(rd, oracle, "c00007/x=a/seed=1", "ok", 2, 4)      # a shard row replaced by a part
    write(rd, oracle, "c00003/x=a/seed=1", "ok", 3, 1)
    rd.fold()
    for i in range(10, 13):
        write(rd, oracle, f"c{i:05d}/x=a/seed=1", "ok", 1, 2)
    write(rd, oracle, "c00007/x=a/seed=1", "diverged", 3, 5)
    assert len(rd.shards("trials")) == 2 and rd.part_keys(rd.trials_dir)
    return rd, oracle


def crashing(rd: RunDir, at: int, step: str) -> RunDir:
    """``rd`` whose ``at``-th write (or delete) raises :class:`Crash` instead."""
    count = {"n": 0}
    real = getattr(rd.storage, step)

    def maybe(*args):
        count["n"] += 1
        if count["n"] == at:
            raise Crash(step)
        return real(*args)

    setattr(rd.storage, step, maybe)
    return rd


OPERATIONS = {"fold": lambda rd: rd.fold(), "merge": shards.merge, "compact": lambda rd: rd.compact()}


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_a_compaction_killed_at_any_step_loses_nothing_and_the_next_completes_it(tmp_path, operation):
    template, oracle = build(tmp_path / "template")
    assert seen(template) == oracle
    run = OPERATIONS[operation]
    crashes = 0
    for step in ("write_table", "delete"):
        for at in range(1, 40):
            path = tmp_path / f"{step}-{at}"
            shutil.copytree(template.path, path)
            rd = crashing(RunDir(path), at, step)
            try:
                run(rd)
            except Crash:
                crashes += 1
            else:
                break                              # past the last step of this kind
            finally:
                rd.storage.__dict__.pop(step, None)
            assert seen(rd) == oracle, f"{operation} killed at {step} #{at} changed what readers see"
            assert rd.stored_keys() == set(oracle)
            run(rd)                                # the next compaction completes it
            assert seen(rd) == oracle
            assert set(rd.part_keys(rd.epochs_dir)) <= set(rd.part_keys(rd.trials_dir)), \
                "epochs parts left behind that no later fold would take"
            if operation == "compact":
                assert not rd.shards("trials") and not rd.part_keys(rd.trials_dir)
            write(rd, dict(oracle), "c09999/x=a/seed=1", "ok", 1, 1)    # and the store goes on
            rd.fold()
            assert len(seen(rd)) == len(oracle) + 1
    assert crashes >= 4, "every write and delete of the operation is a crash point"


def test_fold_takes_only_stored_trials_and_merge_bounds_the_shards(tmp_path, monkeypatch):
    rd = RunDir(tmp_path / "run")
    rd.prepare()
    oracle: dict = {}
    orphan = pa.Table.from_pylist([{"trial_key": "c00099/x=a/seed=1", "epoch": 1}], schema=EPOCHS)
    rd.storage.write_table(orphan, rd.part_path(rd.epochs_dir, "c00099/x=a/seed=1"))    # killed before its trials part
    for i in range(3):
        write(rd, oracle, f"c{i:05d}/x=a/seed=1", "ok", 1, 2)
    assert rd.fold(min_parts=4) == 0 and not rd.shards("trials")
    assert rd.fold(min_parts=3) == 3
    assert rd.part_keys(rd.epochs_dir) == {"c00099/x=a/seed=1": rd.part_path(rd.epochs_dir, "c00099/x=a/seed=1")}
    for i in range(3, 3 + shards.MAX_SHARDS):
        write(rd, oracle, f"c{i:05d}/x=a/seed=1", "ok", 1, 2)
        rd.fold()
    assert len(rd.shards("trials")) == 1, "more than MAX_SHARDS shards are merged into one"
    assert rd.shards("trials")[0][0] == shards.MAX_SHARDS + 2
    assert seen(rd) == oracle


def test_readers_read_only_the_columns_they_ask_for(tmp_path):
    rd, oracle = build(tmp_path / "run")
    t = rd.read_trials(["status"])
    assert t.column_names == ["status"] and t.num_rows == len(oracle)
    assert sorted(t["status"].to_pylist()) == sorted(v[0] for v in oracle.values())
    t = rd.read_trials(["trial_key", "attempt", "not_a_column"])
    assert t.column_names == ["trial_key", "attempt"]
    assert dict(zip(t["trial_key"].to_pylist(), t["attempt"].to_pylist())) == {k: v[1] for k, v in oracle.items()}



def test_the_cached_reader_reads_only_what_changed_and_agrees_with_a_fresh_read(tmp_path):
    rd, oracle = build(tmp_path / "run")
    reads: list[str] = []
    real = rd.storage.read_table
    rd.storage.read_table = lambda path, columns=None: reads.append(Path(path).name) or real(path, columns)
    cached = shards.Cached(rd)

    def check(expect_reads: int | None):
        reads.clear()
        got = cached.table("trials")
        assert sorted(got.to_pylist(), key=lambda r: r["trial_key"]) == \
            sorted(RunDir(rd.path).read_trials().to_pylist(), key=lambda r: r["trial_key"])
        if expect_reads is not None:
            assert len(reads) == expect_reads, reads

    check(None)
    check(0)                                            # nothing changed: nothing read
    write(rd, oracle, "c00020/x=a/seed=1", "ok", 1, 2)
    check(1)                                            # one new part: one file read
    write(rd, oracle, "c00020/x=a/seed=1", "failed", 2, 1)     # a part replaced in place (--retry-failed)
    check(1)
    rd.fold()
    check(1)                                            # the parts became one new shard
    shards.merge(rd)
    check(1)
    assert {r["trial_key"] for r in cached.table("trials").to_pylist()} == set(oracle)

KILLED_STUDY = """
name: fold-kill
family: synthetic
samples: 12
seeds: 1
compare:
  classifier: [softmax, crf]
space:
  lr: {loguniform: [1.0e-4, 1.0e-2]}
fixed: {epoch_seconds: 0.02}
train: {max_epochs: 1, patience: 1}
"""


@pytest.mark.slow
def test_a_driver_killed_while_it_compacts_resumes_with_every_key_once(tmp_path, space_file, joined_here):
    """The real CLI (on a Ray of its own), SIGKILLed inside a fold (its shards
    written, its parts not yet removed), then resumed (joined to the worker's
    Ray, in this process): every key stored once, nothing lost or changed."""
    from seedsweep.study.execution.runner import plan_study
    from seedsweep.study.store.studies import load_study
    from tests.conftest import REPO, remove_tagged

    tag = uuid.uuid4().hex
    ray_tmp = tempfile.mkdtemp(prefix="ssf-", dir="/tmp")
    path = space_file(KILLED_STUDY)
    out = tmp_path / "run"
    env = {**os.environ, "SEEDSWEEP_TEST_TAG": tag, "RAY_TMPDIR": ray_tmp, "RAY_AUTH_MODE": "disabled",
           "SEEDSWEEP_FOLD_PARTS": "6"}
    cmd = [sys.executable, "-m", "seedsweep", "run", str(path), "--out", str(out), "--num-cpus", "2", "--quiet"]
    grid = {t.key for t in plan_study(load_study(path))[1]}
    rd = RunDir(out)
    try:
        proc = subprocess.Popen(cmd, env={**env, "SEEDSWEEP_FOLD_HOLD": "120"}, cwd=REPO,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 180
        while not (rd.shards_dir.is_dir() and rd.shards("trials")) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stdout.read().decode()
            time.sleep(0.05)
        assert rd.shards("trials"), "no fold started within 3 minutes"
        proc.send_signal(signal.SIGKILL)          # inside the fold: shards written, parts not yet removed
        proc.wait()
        shard_keys = set(pq.read_table(rd.shards("trials")[0][1], columns=["trial_key"])["trial_key"].to_pylist())
        part_keys = set(rd.part_keys(rd.trials_dir))
        assert len(shard_keys) >= 6 and shard_keys <= part_keys, "the kill must land between writing and removing"
        before = {r["trial_key"]: r for r in rd.read_trials(["trial_key", "status", "test_score",
                                                             "finished_at"]).to_pylist()}
        assert len(before) == len(part_keys) and set(before) == rd.stored_keys()
        epochs_before = rd.read_epochs()
        assert epochs_before.num_rows == len(before), "each stored trial's one epoch, read once"

        done = joined_here("run", str(path), "--out", str(out), "--quiet", env=env)
        log = done.stdout + done.stderr
        assert done.returncode == 0, log
        assert f"{len(before)} already stored" in log, log
    finally:
        remove_tagged(tag, ray_tmp)
    after = rd.read_trials(["trial_key", "status", "test_score", "finished_at"]).to_pylist()
    keys = [r["trial_key"] for r in after]
    assert sorted(keys) == sorted(grid), "every trial key exactly once"
    assert {r["trial_key"]: r for r in after if r["trial_key"] in before} == before, "a stored row changed"
    epochs = rd.read_epochs()["trial_key"].to_pylist()
    assert sorted(epochs) == sorted(grid)
    assert len(rd.shards("trials")) >= 2 and len(rd.part_keys(rd.trials_dir)) < 6


def test_a_fold_from_the_tables_the_driver_wrote_equals_one_that_reads_the_parts(tmp_path):
    rd = RunDir(tmp_path / "a")
    rd.prepare()
    known, oracle = {}, {}
    for i in range(5):
        key = f"c{i:05d}/x=a/seed=1"
        write(rd, oracle, key, "ok", 1, 3)
        known[key] = {"trials": rd.storage.read_table(rd.part_path(rd.trials_dir, key)),
                      "epochs": rd.storage.read_table(rd.part_path(rd.epochs_dir, key)), "confusion": None}
    shutil.copytree(rd.path, tmp_path / "b")
    other = RunDir(tmp_path / "b")
    reads: list[str] = []
    real = rd.storage.read_table
    rd.storage.read_table = lambda path, columns=None: reads.append(Path(path).name) or real(path, columns)
    assert rd.fold(known=known) == other.fold() == 5
    assert reads == [], "the parts the driver wrote are not read back"
    for table in ("trials", "epochs"):
        assert pq.read_table(rd.shards(table)[0][1]).equals(pq.read_table(other.shards(table)[0][1]))


def test_a_failing_fold_warns_once_keeps_the_parts_and_lets_go_of_the_tables(tmp_path, monkeypatch):
    import io

    from seedsweep.study.execution.callback import StoreAndProgress

    rd = RunDir(tmp_path / "run")
    rd.prepare()
    oracle: dict = {}
    for i in range(3):
        write(rd, oracle, f"c{i:05d}/x=a/seed=1", "ok", 1, 2)
    stream = io.StringIO()
    callback = StoreAndProgress(rd, None, {}, pa.schema([]), {}, stream, 3)
    calls = []

    def broken(min_parts=1, known=None):
        calls.append(dict(known or {}))
        raise OSError("disk full")

    monkeypatch.setattr(rd, "fold", broken)
    for round_ in range(2):
        callback.written = {f"k{round_}": {"trials": None, "epochs": None, "confusion": None}}
        callback.fold(1)
        assert callback.written == {}, "the kept tables are let go after a failed fold"
    assert [list(c) for c in calls] == [["k0"], ["k1"]]
    assert stream.getvalue().count("could not compact") == 1 and "disk full" in stream.getvalue()
    assert seen(rd) == oracle and not rd.shards("trials")          # every part intact, nothing folded
