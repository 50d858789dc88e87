"""A study whose run directory is an ``s3://`` URI, on a real S3-compatible
server on loopback (moto's server mode in its own process), read back by
``analysis.load``; a second run resumes from the objects it finds there."""

from __future__ import annotations

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
        cmd = [sys.executable, "-m", "study", "run", str(space_file(STUDY)), "--out", uri]
        first = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
        assert first.returncode == 0, first.stderr
        assert "win share" in first.stdout                 # the end-of-run tables read the objects back
        again = subprocess.run(cmd + ["--quiet"], env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr
        assert "ran 0, skipped 12 already stored" in again.stderr
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    names = sorted(i.base_name for i in fs.get_file_info(pafs.FileSelector("results/studies/on-s3", recursive=True)))
    assert "manifest.json" in names and "configs.parquet" in names
    assert not any(n.startswith(".tmp-") or n.endswith(".partial") for n in names)
    df = analysis.load(uri)
    assert len(df) == 12 and df["trial_key"].is_unique and (df["status"] == "ok").all()
    assert analysis.compare(df, "classifier").best == "crf"
    assert len(analysis.load_epochs(uri)) == 12 * 3
    from study.cli import main

    assert main(["status", uri]) == 0
    assert main(["report", uri]) == 0
    # compaction on the object store: one object per table, parts deleted, same rows
    from study.store import RunDir

    RunDir(uri).compact()
    assert len(analysis.load(uri)) == 12
    assert not fs.get_file_info(pafs.FileSelector("results/studies/on-s3/trials", allow_not_found=True))
