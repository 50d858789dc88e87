"""What the idle workers a private Ray starts for its first driver cost a small `seedsweep run`.

Ray starts one worker process per CPU when the first driver connects, with no
runtime environment; Tune gives every trial actor one (its ``env_vars``), so
those workers never run a trial. ``seedsweep run`` turns that start off for the
private Ray it starts (``RAY_prestart_worker_first_driver=0``, read by the
raylet from its environment; a user's own setting wins). Both ways here, in
one run, alternating: Ray's default (the variable set to 1 by this script: the
peer) and seedsweep's. Each run is the same 6-trial synthetic study (or,
``--study adaptive``, test_adaptive's ``until:`` study) on a private Ray with
``--num-cpus 2`` (or ``--cpus N``), into a fresh folder; ``--ray-start``: joined to a head
started for the run by ``ray start --head`` with the variable in its environment, as a
cluster file's start command would set it (seedsweep's own way there is 0).
CPU-seconds are the machine's busy time from ``/proc/stat`` over each run
(every process), wall seconds beside; the Ray worker processes of the run
are counted by a look every 0.1 s: trial actors and workers that only ever
sat idle, with the largest resident memory one of those held. Nothing else
should run meanwhile::

    RAY_AUTH_MODE=disabled .venv/bin/python benchmarks/prestart.py --json benchmarks/results/prestart-2026-12-07.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from benchmarks.ray_cost import busy_seconds  # noqa: E402  (the machine's busy CPU-s, /proc/stat)
from tests.conftest import (free_port, idle_workers_and_trial_actors, remove_tagged,  # noqa: E402
                            titles_while_running)
from tests.test_address import SPACE  # noqa: E402  (3 configurations x 2 options, 3 epochs)
from tests.test_adaptive import STUDY as ADAPTIVE  # noqa: E402  (an until: study, waves of 4 configurations)

#: ``--study``: the 6-trial study, or test_adaptive's until: study (24 trials in 3 waves, 0.2 s epochs)
STUDIES = {"small": SPACE, "adaptive": ADAPTIVE.replace("epoch_seconds: 0.4", "epoch_seconds: 0.2")}


def one_run(space: Path, folder: Path, cpus: int, prestart: str | None, ray_start: bool = False) -> dict:
    """One private-Ray run; ``prestart``: the variable's value (None: unset, seedsweep's own setting).
    ``ray_start``: the run joins (``--address``) a head started for it with ``ray start --head``, the
    variable in that command's environment as a cluster file's start command would set it (unset: 0)."""
    tag, ray_tmp = uuid.uuid4().hex, tempfile.mkdtemp(prefix="ssp-", dir="/tmp")
    env = {**os.environ, "SEEDSWEEP_TEST_TAG": tag, "RAY_TMPDIR": ray_tmp, "RAY_AUTH_MODE": "disabled"}
    env.pop("RAY_ADDRESS", None)
    env.pop("RAY_prestart_worker_first_driver", None)
    if prestart is not None:
        env["RAY_prestart_worker_first_driver"] = prestart
    rss: dict[int, int] = {}
    cpu, wall = busy_seconds(), time.monotonic()
    where = ["--num-cpus", str(cpus)]
    try:
        if ray_start:
            port = free_port()
            head = subprocess.run([str(Path(sys.executable).parent / "ray"), "start", "--head", f"--port={port}",
                                   f"--num-cpus={cpus}", f"--temp-dir={ray_tmp}", "--include-dashboard=false",
                                   "--disable-usage-stats"], capture_output=True, text=True, timeout=180,
                                  env={**env, "RAY_prestart_worker_first_driver": prestart or "0"})
            if head.returncode != 0:
                raise SystemExit(head.stderr)
            where = ["--address", f"127.0.0.1:{port}"]
        proc = subprocess.Popen([sys.executable, "-m", "seedsweep", "run", str(space), "--out",
                                 str(folder / uuid.uuid4().hex), "--quiet", *where],
                                env=env, cwd=HERE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        _, err, titles = titles_while_running(proc, tag, ray_tmp, rss)
        cpu, wall = busy_seconds() - cpu, time.monotonic() - wall
    finally:
        remove_tagged(tag, ray_tmp)
    if proc.returncode != 0:
        raise SystemExit(err)
    idle, actors = idle_workers_and_trial_actors(titles)
    return {"cpu_s": cpu, "wall_s": wall, "trial_actors": len(actors), "idle_workers": len(idle),
            "idle_worker_rss_mib": max((rss[pid] for pid in idle), default=0) / 2**20}


def main() -> None:
    """Both ways, ``--reps`` runs each, alternating; medians printed and optionally written."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=6)
    p.add_argument("--cpus", type=int, default=2)
    p.add_argument("--study", choices=sorted(STUDIES), default="small")
    p.add_argument("--ray-start", action="store_true",
                   help="join a head started with `ray start --head` (the variable in its environment), not a private Ray")
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    ways = {"ray default (prestart)": "1", "seedsweep (no prestart)": None}
    runs: dict[str, list[dict]] = {way: [] for way in ways}
    folder = Path(tempfile.mkdtemp(prefix="prestart-"))
    try:
        space = folder / "cost.yaml"
        space.write_text(STUDIES[args.study])
        for _ in range(args.reps):
            for way, value in ways.items():
                runs[way].append(one_run(space, folder, args.cpus, value, args.ray_start))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    out: dict = {"runs": runs, "medians": {}}
    for way, rows in runs.items():
        out["medians"][way] = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        m = out["medians"][way]
        print(f"{way:24s} median {m['cpu_s']:.2f} CPU-s, {m['wall_s']:.2f} s wall, {m['trial_actors']:.0f} trial "
              f"actors, {m['idle_workers']:.0f} idle workers ({m['idle_worker_rss_mib']:.0f} MiB each)")
    a, b = (out["medians"][w] for w in ways)
    out["cpu_ratio"], out["wall_ratio"] = b["cpu_s"] / a["cpu_s"], b["wall_s"] / a["wall_s"]
    print(f"seedsweep / ray default: {out['cpu_ratio']:.2f} of the CPU-seconds, {out['wall_ratio']:.2f} of the wall time")
    out.update(reps=args.reps, cpus=args.cpus, study=args.study, ray_start=args.ray_start, machine_cpus=os.cpu_count(),
               python=platform.python_version(), command="benchmarks/prestart.py " + " ".join(sys.argv[1:]))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
