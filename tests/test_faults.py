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
