"""A real two-node Ray cluster on this machine (separate `ray start`
processes, each with its own temp dir): a study runs across both nodes into
an object store, the worker node's raylet is SIGKILLed while it trains a
trial, and the study still stores every trial exactly once, the interrupted
one on its second attempt. (The same with a user's function whose files the
worker node cannot see, into a local run directory: tests/test_shipping.py.)
Only the processes this test started are stopped, by PID."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil
import pytest

from seedsweep import analysis
from seedsweep.study.store.rundir import RunDir
from tests.conftest import REPO, free_port, holds_file_under, kill_tagged, wait_gone
from tests.test_s3 import CREDENTIALS, s3_server  # noqa: F401 -- the fixture

pytestmark = pytest.mark.slow

STUDY = """
name: two-nodes
family: synthetic
samples: 3
seeds: 1
compare: {classifier: [softmax, crf]}
fixed: {epoch_seconds: 0.6}
train: {max_epochs: 5, patience: 5, retries: 3}
"""
def _raylet(temp_dir: str) -> psutil.Process | None:
    for proc in psutil.process_iter(["pid", "name", "cmdline"]):
        try:
            if "raylet" in (proc.info["name"] or "") and holds_file_under(proc.pid, temp_dir):
                return proc
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return None


@pytest.fixture
def run_dir(s3_server, monkeypatch):  # noqa: F811 -- the fixture
    """Where the study writes: an s3:// URI on a loopback S3 server."""
    import pyarrow.fs as pafs

    for k, v in CREDENTIALS.items():
        monkeypatch.setenv(k, v)
    pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{s3_server}", scheme="http",
                      allow_bucket_creation=True).create_dir("cluster-results")
    return f"s3://cluster-results/two-nodes?endpoint_override=127.0.0.1:{s3_server}&scheme=http"


def test_a_worker_node_dies_mid_trial_and_every_trial_is_stored_once(run_dir, space_file):
    tag = uuid.uuid4().hex
    head_tmp = tempfile.mkdtemp(prefix="ssh-", dir="/tmp")
    worker_tmp = tempfile.mkdtemp(prefix="ssw-", dir="/tmp")
    base = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "SEEDSWEEP_DATA")}
    head_env = {**base, "SEEDSWEEP_TEST_TAG": tag, "RAY_TMPDIR": head_tmp, "RAY_AUTH_MODE": "disabled"}
    worker_env = {**base, "SEEDSWEEP_TEST_TAG": tag + "-worker", "RAY_TMPDIR": worker_tmp,
                  "RAY_AUTH_MODE": "disabled"}
    ray_cli = str(Path(sys.executable).parent / "ray")
    port = free_port()
    out = run_dir
    driver = None
    try:
        head = subprocess.run([ray_cli, "start", "--head", f"--port={port}", "--num-cpus=1", f"--temp-dir={head_tmp}",
                               "--include-dashboard=false", "--disable-usage-stats"],
                              env=head_env, capture_output=True, text=True, timeout=120)
        assert head.returncode == 0, head.stderr
        worker = subprocess.run([ray_cli, "start", f"--address=127.0.0.1:{port}", "--num-cpus=1",
                                 f"--temp-dir={worker_tmp}", "--disable-usage-stats"],
                                env=worker_env, capture_output=True, text=True, timeout=120)
        assert worker.returncode == 0, worker.stderr
        raylet = _raylet(worker_tmp)
        assert raylet is not None, "the worker node's raylet was not found"

        study_file = space_file(STUDY)
        driver = subprocess.Popen([sys.executable, "-m", "seedsweep", "run", str(study_file), "--out", str(out),
                                   "--address", f"127.0.0.1:{port}", "--quiet"],
                                  env=head_env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # wait until both nodes have stored a trial, then kill the worker node while its next trial trains
        deadline = time.monotonic() + 180
        nodes: set[str] = set()
        while time.monotonic() < deadline and len(nodes) < 2:
            time.sleep(0.5)
            if RunDir(out).exists() and RunDir(out).stored_keys():
                nodes = set(analysis.load(out)["node"])
        assert len(nodes) == 2, f"trials ran on {len(nodes)} node(s) only"
        time.sleep(1.2)                      # inside the worker's next 3-second trial
        raylet.kill()
        stdout, stderr = driver.communicate(timeout=400)
        assert driver.returncode == 0, stderr[-3000:]
        # while the cluster still runs: `ray start` wrote its address file into the
        # test's own temp dir, and no global address file points at this cluster
        # (a later `ray.init(address="auto")` elsewhere must not find it)
        own = Path(head_tmp) / "ray_current_cluster"
        assert own.is_file() and own.read_text().strip().endswith(f":{port}"), sorted(os.listdir(head_tmp))
        default = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
        assert not default.is_file() or not default.read_text().strip().endswith(f":{port}")
    finally:
        if driver is not None and driver.poll() is None:
            driver.kill()
        kill_tagged(tag, head_tmp)
        kill_tagged(tag + "-worker", worker_tmp)
        left = wait_gone(tag, timeout=30, ray_tmp=head_tmp) + wait_gone(tag + "-worker", 30, worker_tmp)
        shutil.rmtree(head_tmp, ignore_errors=True)      # with it the address file `ray start` wrote
        shutil.rmtree(worker_tmp, ignore_errors=True)
    assert left == []
    df = analysis.load(out)
    assert len(df) == 6 and df["trial_key"].is_unique and (df["status"] == "ok").all()
    assert df["node"].nunique() == 2
    assert (df["attempt"] >= 2).any(), df[["trial_key", "node", "attempt"]]
    nodes = RunDir(out).manifest()["accelerators"]["nodes"]
    assert len(nodes) == 2 and [n["CPU"] for n in nodes] == [1.0, 1.0]      # the manifest records the cluster
