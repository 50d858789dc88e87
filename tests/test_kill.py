"""SIGKILL the real CLI at any moment: a rerun completes the study with every
trial key exactly once, stored parts unchanged, no partial file, and no Ray
process of ours left behind."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil
import pyarrow.parquet as pq
import pytest

from seedsweep.study.execution.runner import plan_study
from seedsweep.study.store.studies import load_study
from seedsweep.study.store.rundir import RunDir
from tests.conftest import REPO, holds_file_under, kill_tagged, remove_tagged, tagged_processes, wait_gone

pytestmark = pytest.mark.slow

SPACE = """
name: killme
family: synthetic
samples: 10
seeds: 2
compare:
  classifier: [softmax, crf]
task: {effects: {classifier: {crf: 0.02}}}
space:
  lr: {loguniform: [1.0e-4, 1.0e-2]}
  optimizer: {choice: [adam, sgd]}
fixed: {epoch_seconds: 0.08}
train: {max_epochs: 4, patience: 2}
"""


def snapshot(out: Path) -> dict[str, str]:
    """sha256 of every stored part (trials and epochs)."""
    found = {}
    for folder in ("trials", "epochs"):
        for p in sorted((out / folder).glob("*.parquet")):
            if p.name.startswith("."):
                continue
            found[f"{folder}/{p.name}"] = hashlib.sha256(p.read_bytes()).hexdigest()
    return found


def stored(out: Path) -> int:
    folder = out / "trials"
    return len([p for p in folder.glob("*.parquet") if not p.name.startswith(".")]) if folder.is_dir() else 0


def sigkill_when_stored(cmd: list[str], out: Path, count: int, env: dict, why: str) -> int:
    """Start ``cmd`` (a driver writing ``out``), SIGKILL it once ``count``
    trials are stored (``why``: the failure when it ended first); returns the trials stored then."""
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while stored(out) < count and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, why
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return stored(out)


def sigint_when_stored(cmd: list[str], out: Path, count: int, env: dict) -> tuple[int, str]:
    """Start ``cmd`` (a driver writing ``out``), send it SIGINT (Ctrl-C) once ``count``
    trials are stored; returns its exit code and its output."""
    proc = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while stored(out) < count and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    log = proc.communicate(timeout=120)[0].decode()
    return proc.returncode, log


def test_sigkill_at_any_moment_then_resume(tmp_path, space_file):
    tag = uuid.uuid4().hex
    ray_tmp = tempfile.mkdtemp(prefix="ssk-", dir="/tmp")  # short: Ray socket paths are length-limited
    env = {**os.environ, "SEEDSWEEP_TEST_TAG": tag, "RAY_TMPDIR": ray_tmp, "RAY_AUTH_MODE": "disabled"}
    path = space_file(SPACE)
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "seedsweep", "run", str(path), "--out", str(out), "--num-cpus", "2", "--quiet"]
    grid_keys = {t.key for t in plan_study(load_study(path))[1]}

    def start():
        return subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def kill_when(proc, ready, limit=120.0):
        deadline = time.monotonic() + limit
        while not ready() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        assert proc.poll() is None, f"the run ended before it could be killed:\n{proc.stdout.read().decode()}"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        killed.append(proc.pid)

    killed: list[int] = []

    try:
        # 1. early, during start-up: before Ray is up and before any trial ran
        proc = start()
        kill_when(proc, lambda: out.exists())
        assert stored(out) == 0

        # 2. and 3. while parts are being written, at two different moments
        kept: dict[str, str] = {}
        orphans = 0
        for target in (3, 9):
            proc = start()
            kill_when(proc, lambda t=target: stored(out) >= t)
            orphans = max(orphans, len(tagged_processes(tag, ray_tmp)))
            now = snapshot(out)
            assert {k: now[k] for k in kept} == kept, "a part stored before a kill changed"
            kept = now
        assert 0 < stored(out) < len(grid_keys)
        assert orphans > 0, "the process finder must see the Ray daemons a killed driver leaves"

        # after the kills, before any rerun: every visible part is whole (temporary
        # files may be left: a writer killed mid-file); the rerun must remove them,
        # so one more is planted where a killed writer would have left it
        visible = [p for folder in ("trials", "epochs") for p in (out / folder).glob("*.parquet")
                   if not p.name.startswith(".")]
        assert visible
        for part in visible:
            pq.read_table(part)
        temporary = [p.name for folder in (out, out / "trials", out / "epochs") for p in folder.iterdir()
                     if p.name.startswith(".tmp-")]
        planted = out / "trials" / ".tmp-0123456789abcdef-c00000%2Fx%3Dy%2Fseed%3D1.parquet.partial"
        planted.write_bytes(b"PAR1 half a file")
        print(f"temporary files left by the kills: {temporary}")

        # the rerun completes the study
        proc = start()
        log = proc.communicate(timeout=300)[0].decode()
        assert proc.returncode == 0, log
        stored_before = len([k for k in kept if k.startswith("trials/")])
        assert f"{stored_before} already stored" in log, log
    finally:
        # the agents of the killed drivers' raylets exit on Ray's own 60 s clock
        # (tests/conftest.py, orphaned_agent); everything else must be gone
        leftover = wait_gone(tag, timeout=150, ray_tmp=ray_tmp, orphans=True)
        kill_tagged(tag, ray_tmp)
        shutil.rmtree(ray_tmp, ignore_errors=True)

    final = snapshot(out)
    assert {k: final[k] for k in kept} == kept, "parts stored before the kills must be unchanged"
    rd = RunDir(out)
    table = rd.read_trials()
    keys = table["trial_key"].to_pylist()
    assert sorted(keys) == sorted(grid_keys), "every trial key exactly once"
    leftovers = [p.name for folder in (out, out / "trials", out / "epochs") for p in folder.iterdir()
                 if p.name.startswith(".tmp-")]
    assert not planted.exists() and leftovers == [], f"partial files left after the rerun: {leftovers}"
    for p in list((out / "trials").glob("*.parquet")) + list((out / "epochs").glob("*.parquet")):
        pq.read_table(p)  # every part is whole
    statuses = table["status"].to_pylist()
    assert statuses.count("ok") + statuses.count("diverged") + statuses.count("failed") == len(grid_keys)
    assert statuses.count("ok") == len(grid_keys)
    assert set(rd.read_epochs()["trial_key"].to_pylist()) == grid_keys
    assert leftover == [], f"Ray processes of this test still running: {[p.pid for p in leftover]}"
    # the rerun removed the Tune folders the killed drivers could not remove themselves
    stale = [n for n in os.listdir(tempfile.gettempdir())
             if any(n.startswith(f"seedsweep-tune-{pid}-") for pid in killed)]
    assert stale == [], stale


def test_ctrl_c_stores_no_half_trained_trial_and_resume_completes(tmp_path, space_file):
    tag = uuid.uuid4().hex
    ray_tmp = tempfile.mkdtemp(prefix="ssc-", dir="/tmp")
    env = {**os.environ, "SEEDSWEEP_TEST_TAG": tag, "RAY_TMPDIR": ray_tmp, "RAY_AUTH_MODE": "disabled"}
    path = space_file(SPACE.replace("epoch_seconds: 0.08", "epoch_seconds: 0.3").replace("samples: 10", "samples: 3"))
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "seedsweep", "run", str(path), "--out", str(out), "--num-cpus", "2", "--quiet"]
    try:
        code, log = sigint_when_stored(cmd, out, 2, env)
        assert code != 0, "an interrupted study must not exit 0"
        assert "run the same command again to resume" in log, log
        table = RunDir(out).read_trials()
        assert set(table["status"].to_pylist()) == {"ok"}, "a stopped trial is not a result"
        before = table.num_rows
        proc = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert f"{before} already stored" in proc.stderr
    finally:
        kill_tagged(tag, ray_tmp)
        shutil.rmtree(ray_tmp, ignore_errors=True)
    table = RunDir(out).read_trials()
    assert table.num_rows == 12 and set(table["status"].to_pylist()) == {"ok"}


def test_the_next_command_clears_a_sigkilled_drivers_ray_agents(tmp_path, space_file):
    """A SIGKILLed driver's raylet agents would wait out Ray's 60 s publish
    timeout; the next command, started at once, clears them as it starts.
    The agents are stopped (SIGSTOP) before the driver is killed, so none can
    leave on Ray's clock while the next command starts, however long that
    takes on a busy machine: only the clearing can end them."""
    from seedsweep.study.execution.raydaemons import records_dir

    tag = uuid.uuid4().hex
    ray_tmp = tempfile.mkdtemp(prefix="ssg-", dir="/tmp")
    env = {**os.environ, "SEEDSWEEP_TEST_TAG": tag, "RAY_TMPDIR": ray_tmp, "RAY_AUTH_MODE": "disabled"}
    # 12 trials: the second command's claim is in its start and its clean exit, not in how much it runs
    space = space_file(SPACE.replace("epoch_seconds: 0.08", "epoch_seconds: 0.3").replace("samples: 10", "samples: 3"))
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "seedsweep", "run", str(space), "--out", str(out), "--quiet", "--num-cpus", "2"]
    try:
        first = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 240
        while stored(out) < 2 and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert first.poll() is None, "the study ended before its driver could be killed"
        sessions = [p for p in Path(ray_tmp).glob("**/session_2*") if p.is_dir() and not p.is_symlink()]
        assert len(sessions) == 1, sessions
        dead = str(sessions[0].resolve())

        def agents() -> list[psutil.Process]:      # the dead session's agents, found by psutil (the oracle)
            found = []
            for proc in psutil.process_iter(["pid", "name"]):
                try:
                    if proc.info["name"].startswith("ray::") and "Agent" in proc.info["name"] \
                            and proc.status() != psutil.STATUS_ZOMBIE and holds_file_under(proc.pid, dead):
                        found.append(proc)
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
            return found

        stopped = agents()
        assert len(stopped) == 2, stopped             # the dashboard agent and the runtime-env agent
        for proc in stopped:
            proc.suspend()
        first.send_signal(signal.SIGKILL)
        first.wait()
        killed_at = time.monotonic()
        second = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True)
        record = records_dir() / f"{second.pid}.json"
        while not record.exists() and second.poll() is None and time.monotonic() < killed_at + 300:
            time.sleep(0.05)
        assert record.exists(), "the next command's private Ray did not start"
        left = agents()
        assert left == [], f"agents of the killed driver's Ray alive {time.monotonic() - killed_at:.0f} s later"
        _, err = second.communicate(timeout=300)
        assert second.returncode == 0, err
        assert "missing 0" in err
        assert not record.exists(), "a clean shutdown forgets its record"
    finally:
        remove_tagged(tag, ray_tmp)
