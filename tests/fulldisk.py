"""A study whose run directory's disk fills up, on a real small filesystem.

Run by ``tests/test_faults.py`` (and ``benchmarks/soak.py``) as its own
process: ``python tests/fulldisk.py WORK SIZE_KIB [--study FILE]``. It mounts a
tmpfs of ``SIZE_KIB`` at ``WORK/disk`` (as root, or inside a user namespace
that ``unshare -Urm`` made, where an unprivileged user may mount one), runs
the study into it with the real CLI until the disk is full, checks what is on
the disk, grows the filesystem (``mount -o remount``: the space is freed),
resumes, and prints one JSON line with what it found; the mount is removed
at the end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from seedsweep.study.execution.runner import plan_study  # noqa: E402
from seedsweep.study.store.studies import load_study  # noqa: E402
from seedsweep.study.store.rundir import RunDir  # noqa: E402
from tests.test_kill import SPACE  # noqa: E402

#: the SIGKILL test's study, more configurations, shorter epochs
STUDY = SPACE.replace("name: killme", "name: fulldisk").replace("samples: 10", "samples: 12").replace(
    "epoch_seconds: 0.08", "epoch_seconds: 0.02").replace("max_epochs: 4", "max_epochs: 3")


def on_disk(out: Path) -> dict:
    """Temporary files left, unreadable Parquet files, and the stored trial keys (duplicates kept)."""
    temporary = [str(p) for p in out.rglob(".tmp-*")] if out.exists() else []
    unreadable = []
    for p in out.rglob("*.parquet") if out.exists() else []:
        try:
            pq.read_table(p)
        except Exception:  # noqa: BLE001 -- any failure to read is the finding
            unreadable.append(str(p))
    table = RunDir(out).read_trials(["trial_key"]) if (out / "manifest.json").is_file() else None
    keys = [] if table is None else table["trial_key"].to_pylist()
    return {"temporary": temporary, "unreadable": unreadable, "keys": keys}


def main() -> None:
    work, size = Path(sys.argv[1]), int(sys.argv[2])
    study = Path(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--study" else None
    disk = work / "disk"
    disk.mkdir(parents=True, exist_ok=True)
    if study is None:
        study = work / "study.yaml"
        study.write_text(STUDY)
    grid = sorted(t.key for t in plan_study(load_study(study))[1])
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}k", "tmpfs", str(disk)], check=True)
    try:
        out = disk / "run"
        env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
        cmd = [sys.executable, "-m", "seedsweep", "run", str(study), "--out", str(out), "--num-cpus", "2", "--quiet"]
        full = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
        before = on_disk(out)
        subprocess.run(["mount", "-o", f"remount,size={64 * 1024}k", str(disk)], check=True)
        resumed = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
        after = on_disk(out)
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
    print(json.dumps({"grid": grid, "full": {"code": full.returncode, "stderr": full.stderr[-4000:]},
                      "before": before, "resumed": {"code": resumed.returncode, "stderr": resumed.stderr[-4000:]},
                      "after": after}))


if __name__ == "__main__":
    main()
