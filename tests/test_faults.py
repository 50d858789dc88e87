"""Faults a weekend run meets: the run directory's disk fills up.

The disk is a real small filesystem (a tmpfs, mounted by ``tests/fulldisk.py``
as root, or inside a user namespace made by ``unshare -Urm`` otherwise), not
an injected error: the ``OSError(ENOSPC)`` comes from the kernel.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow


def full_disk_run(tmp_path, size_kib: int) -> dict:
    """``tests/fulldisk.py`` on a tmpfs of ``size_kib``: its JSON report."""
    cmd = [sys.executable, str(REPO / "tests" / "fulldisk.py"), str(tmp_path), str(size_kib)]
    if os.geteuid() != 0 or os.environ.get("SEEDSWEEP_TEST_UNSHARE"):
        cmd = ["unshare", "--user", "--map-root-user", "--mount"] + cmd    # a private mount namespace
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_a_full_disk_stops_the_study_with_a_located_message_and_a_resume_completes(tmp_path):
    found = full_disk_run(tmp_path, 160)
    grid, full, before, after = found["grid"], found["full"], found["before"], found["after"]
    disk = str(tmp_path / "disk")
    # the study stopped with exit 2 and one located paragraph: where, how much space, how to resume
    assert full["code"] == 2, full["stderr"]
    message = [line for line in full["stderr"].splitlines() if line.startswith("seedsweep: error:")]
    assert len(message) == 1, full["stderr"]
    assert disk in message[0] and "no space left" in message[0] and "MiB free of" in message[0]
    assert "run the same command again" in message[0] and "Traceback" not in full["stderr"]
    # nothing half-written: no temporary file, every Parquet file whole, no key twice
    assert before["temporary"] == [] and before["unreadable"] == []
    stored = Counter(before["keys"])
    assert 0 < len(stored) < len(grid), f"the disk must fill mid-study ({len(stored)} of {len(grid)} stored)"
    assert max(stored.values()) == 1 and set(stored) <= set(grid)
    # space freed: the resume runs only what is missing and ends with every key once
    assert found["resumed"]["code"] == 0, found["resumed"]["stderr"]
    assert f"{len(stored)} already stored" in found["resumed"]["stderr"]
    assert sorted(after["keys"]) == grid and after["temporary"] == [] and after["unreadable"] == []
    print(f"full disk: {len(stored)} of {len(grid)} trials stored when it filled; after the resume "
          f"{len(after['keys'])} stored, 0 lost, {len(after['keys']) - len(set(after['keys']))} duplicated")


OOM_STUDY = """
name: oom
family: synthetic
samples: 1
seeds: 2
compare: {classifier: [softmax, crf]}
task: {allocate: {crf: 3072}, noise: 0.003}
train: {max_epochs: 2, retries: 1}
"""


def worker_cgroup_parent() -> str | None:
    """A new cgroup-v1 memory folder below this process's own, or None where
    cgroups cannot be made here (no memory controller, not root)."""
    from seedsweep.study.execution.failures import memory_cgroup

    mine = memory_cgroup()
    if mine is None or mine[1] != 1 or not os.access(mine[0], os.W_OK):
        return None
    parent = os.path.join(mine[0], f"seedsweep-oom-{os.getpid()}")
    try:
        os.mkdir(parent)
    except OSError:
        return None
    return parent


def test_a_worker_the_kernel_kills_for_memory_is_stored_as_out_of_memory_after_its_retries(tmp_path, space_file):
    """A synthetic option allocates 3 GiB in a worker limited to 1 GiB (a
    memory cgroup of its own, set by ``tests/cgroupworker``): the kernel's
    OOM killer SIGKILLs it. Its trials are retried once, then stored as
    failed with the reason 'out of memory'; the other option's trials finish."""
    import tempfile

    from seedsweep import analysis
    from tests.conftest import kill_tagged, wait_gone

    parent = worker_cgroup_parent()
    if parent is None:
        pytest.skip("no writable cgroup-v1 memory controller here to limit a worker's memory")
    tag = f"oom-{os.getpid()}"
    ray_tmp = tempfile.mkdtemp(prefix="sso-", dir="/tmp")
    env = {**os.environ, "RAY_TMPDIR": ray_tmp, "RAY_AUTH_MODE": "disabled", "SEEDSWEEP_TEST_TAG": tag,
           "SEEDSWEEP_TEST_WORKER_CGROUP": parent, "SEEDSWEEP_TEST_WORKER_LIMIT_MIB": "1024",
           "PYTHONPATH": os.pathsep.join([str(REPO / "tests" / "cgroupworker"), os.environ.get("PYTHONPATH", "")])}
    env.pop("RAY_ADDRESS", None)
    out = tmp_path / "run"

    def into_parent():                  # the driver, and so Ray, starts inside the test's cgroup
        with open(os.path.join(parent, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    try:
        r = subprocess.run([sys.executable, "-m", "seedsweep", "run", str(space_file(OOM_STUDY)), "--out", str(out)],
                           env=env, cwd=REPO, capture_output=True, text=True, timeout=600, preexec_fn=into_parent)
        assert wait_gone(tag, 60, ray_tmp, orphans=True) == []
    finally:
        kill_tagged(tag, ray_tmp)
        for here, folders, _ in os.walk(parent, topdown=False):
            for name in folders:
                os.rmdir(os.path.join(here, name))
        os.rmdir(parent)
    assert r.returncode == 0, r.stderr[-3000:]
    df = analysis.load(out)
    assert len(df) == 4 and df["trial_key"].is_unique
    crf, softmax = df[df["classifier"] == "crf"], df[df["classifier"] == "softmax"]
    assert (softmax["status"] == "ok").all()
    assert (crf["status"] == "failed").all() and (crf["reason"] == "out of memory").all(), crf[["reason", "error"]]
    assert (crf["attempt"] == 2).all()                      # train.retries: 1, so two attempts each
    assert crf["error"].str.contains("OOM killer ended a process").all()
    print(f"out of memory: {len(df)} of 4 trials stored ({(softmax['status'] == 'ok').sum()} ok, "
          f"{len(crf)} failed 'out of memory' after 2 attempts), 0 lost, 0 duplicated")
