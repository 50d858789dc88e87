"""A study whose run directory is an ``s3://`` URI, on a real S3-compatible
server on loopback (moto's server mode in its own process), read back by
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

import analysis
from tests.conftest import REPO
from tests.test_address import free_port

pytestmark = pytest.mark.slow

STUDY = """
name: on-s3
family: synthetic
samples: 3
seeds: 2
compare: {classifier: [softmax, crf]}
task: {effects: {classifier: {crf: 0.03}}, noise: 0.003}
train: {max_epochs: 3}
"""

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
            table = name.split("/")[0].split(".")[0].split("-")[0]     # a part, a shard, or a compacted table
            assert table in ("configs", "trials", "epochs", "confusion"), name
            assert name.endswith(".parquet"), name
            pq.read_table(info.path, filesystem=fs)


def test_a_failed_upload_leaves_no_object(s3_server, monkeypatch):
    """A part whose writing fails half-way (here: inside the Parquet writer)
    must not appear in the store, not even as a truncated object."""
    import pyarrow as pa
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    from study.store import RunDir

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


def test_a_study_writes_its_run_directory_to_s3_and_resumes_there(s3_server, tmp_path, space_file, monkeypatch):
    import pyarrow.fs as pafs

    for k, v in CREDENTIALS.items():
        monkeypatch.setenv(k, v)
    fs = pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{s3_server}", scheme="http", allow_bucket_creation=True)
    fs.create_dir("results")
    uri = f"s3://results/studies/on-s3?endpoint_override=127.0.0.1:{s3_server}&scheme=http"
    ray_tmp = tempfile.mkdtemp(prefix="sss-", dir="/tmp")
    env = {**os.environ, **CREDENTIALS, "RAY_TMPDIR": ray_tmp, "RAY_AUTH_MODE": "disabled"}
    env.pop("RAY_ADDRESS", None)
    try:
        cmd = [sys.executable, "-m", "seedsweep", "run", str(space_file(STUDY)), "--out", uri]
        first = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
        assert first.returncode == 0, first.stderr
        assert "win share" in first.stdout                 # the end-of-run tables read the objects back
        again = subprocess.run(cmd + ["--quiet"], env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr
        assert "ran 0, skipped 12 already stored" in again.stderr
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert_only_whole_objects(fs, "results/studies/on-s3")
    df = analysis.load(uri)
    assert len(df) == 12 and df["trial_key"].is_unique and (df["status"] == "ok").all()
    assert analysis.compare(df, "classifier").best == "crf"
    assert len(analysis.load_epochs(uri)) == 12 * 3
    from seedsweep.cli import main

    assert main(["status", uri]) == 0
    assert main(["report", uri]) == 0
    # compaction on the object store: one object per table, parts deleted, same rows
    from study.store import RunDir

    RunDir(uri).compact()
    assert len(analysis.load(uri)) == 12
    assert not fs.get_file_info(pafs.FileSelector("results/studies/on-s3/trials", allow_not_found=True))


FLAKY_STUDY = """
name: on-a-flaky-store
family: synthetic
samples: 6
seeds: 2
compare: {classifier: [softmax, crf]}
task: {effects: {classifier: {crf: 0.03}}, noise: 0.003}
fixed: {epoch_seconds: 0.2}
train: {max_epochs: 3}
"""


def test_a_study_on_a_flaky_object_store_loses_nothing(s3_server, tmp_path, space_file, monkeypatch):
    """Every request to the store goes through ``tests/flakyproxy.py``, which
    fails 10 % of them (500 before the store sees the request, 503 SlowDown,
    500 after the store did it) and slows 2 %. The study writes and compacts
    (a fold every 4 parts) through it, is interrupted, resumes, is compacted
    and read back: every trial once, nothing lost, no partial object."""
    import signal

    import pyarrow.fs as pafs

    from tests.flakyproxy import FlakyProxy

    for k, v in CREDENTIALS.items():
        monkeypatch.setenv(k, v)
    direct = pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{s3_server}", scheme="http", allow_bucket_creation=True)
    direct.create_dir("flaky")
    ray_tmp = tempfile.mkdtemp(prefix="ssf-", dir="/tmp")
    env = {**os.environ, **CREDENTIALS, "RAY_TMPDIR": ray_tmp, "RAY_AUTH_MODE": "disabled", "SEEDSWEEP_FOLD_PARTS": "4"}
    env.pop("RAY_ADDRESS", None)

    def stored() -> int:
        found = direct.get_file_info(pafs.FileSelector("flaky/run/trials", allow_not_found=True))
        return len([i for i in found if i.base_name.endswith(".parquet")])

    with FlakyProxy(s3_server, fail=0.10, slow=0.02, seed=7) as proxy:
        uri = f"s3://flaky/run?endpoint_override=127.0.0.1:{proxy.port}&scheme=http"
        cmd = [sys.executable, "-m", "seedsweep", "run", str(space_file(FLAKY_STUDY)), "--out", uri, "--quiet"]
        try:
            first = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            deadline = time.monotonic() + 240
            while stored() < 3 and time.monotonic() < deadline and first.poll() is None:
                time.sleep(0.1)
            first.send_signal(signal.SIGINT)
            log = first.communicate(timeout=240)[0].decode()
            assert first.returncode != 0 and "run the same command again to resume" in log, log[-3000:]
            again = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=600)
            assert again.returncode == 0, again.stderr[-3000:]
            assert "already stored" in again.stderr and "missing 0" in again.stderr, again.stderr[-2000:]
        finally:
            shutil.rmtree(ray_tmp, ignore_errors=True)
        from study.store import RunDir

        RunDir(uri).compact()
        df = analysis.load(uri)
        epochs = analysis.load_epochs(uri)
        counts = dict(proxy.counts)
    assert counts["requests"] > 200 and proxy.failed >= 10, counts      # the faults did happen
    assert len(df) == 24 and df["trial_key"].is_unique and (df["status"] == "ok").all()
    assert len(epochs) == 24 * 3 and not epochs.duplicated(["trial_key", "epoch"]).any()
    assert_only_whole_objects(direct, "flaky/run")
    print(f"flaky store: {counts}; {len(df)} of 24 trials stored, 0 lost, 0 duplicated")
