"""A study whose run directory is an ``s3://`` URI, on a real S3-compatible
server on loopback (moto's server mode in its own process), behind a proxy
that fails a share of the requests (``tests/flakyproxy.py``), read back by
``analysis.load``; a second run resumes from the objects it finds there."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from seedsweep import analysis
from tests.conftest import REPO, free_port

pytestmark = pytest.mark.slow

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
               "AWS_EC2_METADATA_DISABLED": "true"}


@pytest.fixture
def s3_server():
    port = free_port()
    env = {**os.environ, **CREDENTIALS}
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail("moto server did not start")
    try:
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def assert_only_whole_objects(fs, root: str) -> None:
    """Every object under ``root`` is a run-directory file, and whole: JSON that
    parses, Parquet that reads (a partial upload would fail one or the other)."""
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    infos = [i for i in fs.get_file_info(pafs.FileSelector(root, recursive=True)) if i.type == pafs.FileType.File]
    names = sorted(i.path[len(root) + 1:] for i in infos)
    assert {"manifest.json", "configs.parquet"} <= set(names), names
    for info, name in zip(sorted(infos, key=lambda i: i.path), names):
        if name in ("manifest.json", "progress.json"):
            with fs.open_input_stream(info.path) as fh:
                json.loads(fh.read().decode())
        else:
            top, base = name.split("/")[0], name.split("/")[-1]
            table = (base if top == "shards" else top).split(".")[0].split("-")[0]  # a part, shard or compacted table
            assert table in ("configs", "trials", "epochs", "confusion"), name
            assert name.endswith(".parquet"), name
            pq.read_table(info.path, filesystem=fs)


def test_a_failed_upload_leaves_no_object(s3_server, monkeypatch):
    """A part whose writing fails half-way (here: inside the Parquet writer)
    must not appear in the store, not even as a truncated object."""
    import pyarrow as pa
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    from seedsweep.study.store.rundir import RunDir

    for k, v in CREDENTIALS.items():
        monkeypatch.setenv(k, v)
    fs = pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{s3_server}", scheme="http", allow_bucket_creation=True)
    fs.create_dir("failing")
    rd = RunDir(f"s3://failing/run?endpoint_override=127.0.0.1:{s3_server}&scheme=http")
    rd.prepare()
    table = pa.table({"trial_key": ["c00000/x=a/seed=1"], "epoch": [1]})

    def broken(self, *args, **kwargs):
        raise OSError("the writer broke half-way")

    monkeypatch.setattr(pq.ParquetWriter, "write_table", broken)
    with pytest.raises(OSError, match="half-way"):
        rd.write_trial("c00000/x=a/seed=1", table, table)
    monkeypatch.undo()
    objects = [i.path for i in fs.get_file_info(pafs.FileSelector("failing/run", recursive=True))
               if i.type == pafs.FileType.File]
    assert objects == [], f"a failed write left {objects}"


FLAKY_STUDY = """
name: on-a-flaky-store
family: synthetic
samples: 4
seeds: 2
compare: {classifier: [softmax, crf]}
task: {effects: {classifier: {crf: 0.03}}, noise: 0.003}
fixed: {epoch_seconds: 0.2}
train: {max_epochs: 3}
"""


def test_a_study_on_a_flaky_object_store_writes_resumes_compacts_and_reads_with_nothing_lost(
        s3_server, tmp_path, space_file, monkeypatch, worker_ray):
    """A study whose run directory is an ``s3://`` URI. Every request to the
    store goes through ``tests/flakyproxy.py``, which fails 10 % of them (500
    before the store sees the request, 503 SlowDown, 500 after the store did
    it) and slows 1 %. The study writes and compacts (a fold every 4 parts)
    through it; then the store stops taking writes (an outage) and the study
    stops with exit 2 once a write has failed its retries; it resumes when the
    store is back, and is read back by ``analysis.load``, ``status``,
    ``report`` and a compaction: every trial once, nothing lost, no partial object."""
    import pyarrow.fs as pafs

    from tests.flakyproxy import FlakyProxy

    for k, v in CREDENTIALS.items():
        monkeypatch.setenv(k, v)
    direct = pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{s3_server}", scheme="http", allow_bucket_creation=True)
    direct.create_dir("flaky")
    ray_tmp = tempfile.mkdtemp(prefix="ssf-", dir="/tmp")
    env = {**os.environ, **CREDENTIALS, "RAY_TMPDIR": ray_tmp, "RAY_AUTH_MODE": "disabled", "SEEDSWEEP_FOLD_PARTS": "4",
           "SEEDSWEEP_S3_RETRIES": "4"}
    env.pop("RAY_ADDRESS", None)

    def stored() -> int:
        found = direct.get_file_info(pafs.FileSelector("flaky/run/trials", allow_not_found=True))
        return len([i for i in found if i.base_name.endswith(".parquet")])

    with FlakyProxy(s3_server, fail=0.10, slow=0.01, seed=7) as proxy:
        uri = f"s3://flaky/run?endpoint_override=127.0.0.1:{proxy.port}&scheme=http"
        # the driver writes the store, so both runs join the worker's Ray (its workers only train)
        cmd = [sys.executable, "-m", "seedsweep", "run", str(space_file(FLAKY_STUDY)), "--out", uri,
               "--address", worker_ray]
        try:
            first = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True)
            deadline = time.monotonic() + 240
            while stored() < 3 and time.monotonic() < deadline and first.poll() is None:
                time.sleep(0.1)
            proxy.outage = True
            err = first.communicate(timeout=240)[1]
            proxy.outage = False
            message = [line for line in err.splitlines() if line.startswith("seedsweep: error:")]
            assert first.returncode == 2 and len(message) == 1, err[-3000:]
            assert "s3://flaky/run" in message[0] and "refused a write after 5 tries" in message[0], message
            assert "run the same command again to resume" in message[0] and "Traceback" not in err
            before = stored()
            assert 3 <= before < 16, before
            again = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=600)
            assert again.returncode == 0, again.stderr[-3000:]
            assert "already stored" in again.stderr and "missing 0" in again.stderr, again.stderr[-2000:]
            assert "win share" in again.stdout                  # the end-of-run tables read the objects back
        finally:
            shutil.rmtree(ray_tmp, ignore_errors=True)
        from seedsweep.cli import main
        from seedsweep.study.store.rundir import RunDir

        assert main(["status", uri]) == 0
        assert main(["report", uri]) == 0
        df = analysis.load(uri)
        assert_only_whole_objects(direct, "flaky/run")
        RunDir(uri).compact()               # one object per table, the parts deleted, the same rows
        assert not direct.get_file_info(pafs.FileSelector("flaky/run/trials", allow_not_found=True))
        compacted = analysis.load(uri)
        epochs = analysis.load_epochs(uri)
        counts = dict(proxy.counts)
    assert counts["requests"] > 200 and proxy.failed >= 10 and counts["outage"] >= 5, counts  # the faults happened
    assert len(df) == 16 and df["trial_key"].is_unique and (df["status"] == "ok").all()
    assert sorted(compacted["trial_key"]) == sorted(df["trial_key"])
    assert analysis.compare(compacted, "classifier").best == "crf"
    assert len(epochs) == 16 * 3 and not epochs.duplicated(["trial_key", "epoch"]).any()
    assert_only_whole_objects(direct, "flaky/run")
    print(f"flaky store: {counts}; {len(df)} of 16 trials stored, 0 lost, 0 duplicated")


def test_a_tuned_study_writes_to_an_object_store_and_asks_what_a_local_run_asks(s3_server, tmp_path, monkeypatch,
                                                                                  joined_here):
    """A tuned study whose run directory is an ``s3://`` URI: its Optuna
    journals live in a local cache folder, rebuilt from the stored rows when
    lost; every trial key is stored once, and the asks (the parameters of
    every search position) are those of the same file run into a local folder."""
    import pyarrow.fs as pafs

    from seedsweep.study.store.studies import journal_path
    from tests.test_tuned import SMALL

    for k, v in CREDENTIALS.items():
        monkeypatch.setenv(k, v)
    direct = pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{s3_server}", scheme="http", allow_bucket_creation=True)
    direct.create_dir("tuned")
    space = tmp_path / "tuned.yaml"
    space.write_text(SMALL.replace("budget: 16, replicates: 2, wave: 4", "budget: 6, replicates: 2, wave: 2")
                     .replace("epoch_seconds: 0.1", "epoch_seconds: 0.0"))
    uri = f"s3://tuned/run?endpoint_override=127.0.0.1:{s3_server}&scheme=http"
    ray_tmp = tempfile.mkdtemp(prefix="sst3-", dir="/tmp")
    env = {**os.environ, **CREDENTIALS, "RAY_TMPDIR": ray_tmp, "RAY_AUTH_MODE": "disabled"}
    env.pop("RAY_ADDRESS", None)

    def run(out) -> subprocess.CompletedProcess:
        return joined_here("run", str(space), "--out", out, "--quiet", env=env)       # the driver writes the store

    try:
        r = run(uri)
        assert r.returncode == 0, r.stderr[-3000:]
        journal = journal_path(uri, "crf", 1)
        from seedsweep.study.processes import records_folder
        assert journal.is_file() and journal.is_relative_to(records_folder("optuna"))
        shutil.rmtree(journal.parent)                        # the cache is lost: rebuilt from the stored rows
        again = run(uri)
        assert again.returncode == 0 and "0 to run" in again.stderr, again.stderr[-3000:]
        assert journal.is_file()
        local = run(str(tmp_path / "local"))
        assert local.returncode == 0, local.stderr[-3000:]
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    remote = analysis.load(uri).set_index("trial_key").sort_index()
    here = analysis.load(tmp_path / "local").set_index("trial_key").sort_index()
    assert len(remote) == remote.index.nunique() == 2 * 2 * 6, "every key once"
    cols = ["lr", "dropout", "momentum", "search", "position"]
    assert remote[cols].equals(here[cols]), "the same asks as a local run of the same file"
    names = {i.base_name for i in direct.get_file_info(pafs.FileSelector("tuned/run", allow_not_found=True))}
    assert "optuna" not in names, "the journals stay local"
