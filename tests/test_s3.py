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
            assert name == "configs.parquet" or name.split("/")[0] in ("trials", "epochs", "confusion"), name
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
