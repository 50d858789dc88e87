"""What a small `seedsweep run` costs on a private Ray against joining a running one.

The same 6-trial synthetic study (3 configurations x 2 options, 3 epochs)
run ``--reps`` times each way, one after the other: on a private local Ray
(started and stopped by each run, as the suite's command-line tests did) and
with ``--address`` joining one Ray started once beforehand with ``ray start
--head`` (as the suite's ``worker_ray`` fixture does). CPU-seconds are the
machine's busy time from ``/proc/stat`` (every process: the driver, Ray's
daemons and workers) over each run; wall seconds beside. Nothing else should
run meanwhile. ``--idle S`` also measures what a started Ray costs while it
does nothing (the suite keeps one per pytest worker for the whole session):
the machine's busy time over ``S`` seconds with no Ray, then with the joined
run's head up and idle::

    RAY_AUTH_MODE=disabled .venv/bin/python benchmarks/ray_cost.py --json benchmarks/results/ray_cost-2026-12-05.json
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

from tests.conftest import free_port, kill_tagged, wait_gone  # noqa: E402
from tests.test_address import SPACE  # noqa: E402  (3 configurations x 2 options, 3 epochs)


def busy_seconds() -> float:
    """CPU-seconds the machine has been busy (all CPUs, every mode but idle and iowait)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def timed_run(args: list[str], env: dict) -> tuple[float, float, str]:
    """CPU-seconds, wall seconds and standard error of one ``seedsweep ARGS`` (exits on a failure)."""
    cpu, wall = busy_seconds(), time.monotonic()
    r = subprocess.run([sys.executable, "-m", "seedsweep", *args], env=env, cwd=HERE, capture_output=True, text=True,
                       timeout=600)
    if r.returncode != 0:
        raise SystemExit(r.stderr)
    return busy_seconds() - cpu, time.monotonic() - wall, r.stderr


def one_run(space: Path, folder: Path, extra: list[str], env: dict) -> tuple[float, float]:
    """CPU-seconds and wall seconds of one `seedsweep run` into a fresh folder."""
    cpu, wall, _ = timed_run(["run", str(space), "--out", str(folder / uuid.uuid4().hex), "--quiet", *extra], env)
    return cpu, wall


def start_head(port: int, ray_tmp: str, env: dict) -> None:
    """``ray start --head`` on ``port`` with 2 CPUs and its own temp folder (as the suite's ``worker_ray``);
    stop it with ``kill_tagged`` (``env`` carries the tag)."""
    started = subprocess.run([str(Path(sys.executable).parent / "ray"), "start", "--head", f"--port={port}",
                              "--num-cpus=2", f"--temp-dir={ray_tmp}", "--include-dashboard=false",
                              "--disable-usage-stats"], env={**env, "RAY_TMPDIR": ray_tmp},
                             capture_output=True, text=True, timeout=180)
    if started.returncode != 0:
        raise SystemExit(started.stderr)


def medians(results: dict[str, list[tuple[float, float]]]) -> dict[str, dict]:
    """Each way's CPU and wall seconds, and their medians."""
    return {way: {"cpu_s": [c for c, _ in runs], "wall_s": [w for _, w in runs],
                  "median_cpu_s": statistics.median(c for c, _ in runs),
                  "median_wall_s": statistics.median(w for _, w in runs)} for way, runs in results.items()}


def main() -> None:
    """Both ways, ``--reps`` runs each, medians printed and optionally written."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--json", type=Path)
    p.add_argument("--idle", type=float, default=60.0, help="seconds to watch an idle machine and an idle head")
    args = p.parse_args()
    tag, ray_tmp = uuid.uuid4().hex, tempfile.mkdtemp(prefix="ssb-", dir="/tmp")
    env = {**os.environ, "SEEDSWEEP_TEST_TAG": tag, "RAY_AUTH_MODE": "disabled"}
    env.pop("RAY_ADDRESS", None)
    port = free_port()
    results = {"private": [], "joined": []}
    with tempfile.TemporaryDirectory() as folder:
        space = Path(folder) / "cost.yaml"
        space.write_text(SPACE)
        idle_machine = busy_seconds()
        time.sleep(args.idle)
        idle_machine = busy_seconds() - idle_machine
        for _ in range(args.reps):
            results["private"].append(one_run(space, Path(folder), ["--num-cpus", "2"], env))
        try:
            head_cpu = busy_seconds()
            start_head(port, ray_tmp, env)
            head_cpu = busy_seconds() - head_cpu
            time.sleep(10)                     # past the head's own start-up work
            idle_ray = busy_seconds()
            time.sleep(args.idle)
            idle_ray = busy_seconds() - idle_ray
            for _ in range(args.reps):
                results["joined"].append(one_run(space, Path(folder), ["--address", f"127.0.0.1:{port}"], env))
        finally:
            kill_tagged(tag, ray_tmp)
            wait_gone(tag, timeout=30, ray_tmp=ray_tmp, orphans=True)
            shutil.rmtree(ray_tmp, ignore_errors=True)
    out = medians(results)
    out["head_start_cpu_s"] = head_cpu
    out["idle_seconds"] = args.idle
    out["idle_machine_cpu_s"], out["idle_head_cpu_s"] = idle_machine, idle_ray
    out["idle_head_cores"] = (idle_ray - idle_machine) / args.idle
    out["cpu_ratio_joined_to_private"] = out["joined"]["median_cpu_s"] / out["private"]["median_cpu_s"]
    out.update(reps=args.reps, cpus=os.cpu_count(), python=platform.python_version(),
               command="benchmarks/ray_cost.py " + " ".join(sys.argv[1:]))
    for way in ("private", "joined"):
        print(f"{way:8s} median {out[way]['median_cpu_s']:.1f} CPU-s, {out[way]['median_wall_s']:.1f} s wall")
    print(f"joined / private: {out['cpu_ratio_joined_to_private']:.2f} of the CPU-seconds "
          f"(the head's own start: {head_cpu:.1f} CPU-s, once per worker)")
    print(f"an idle head: {out['idle_head_cores']:.3f} of a core ({idle_ray:.1f} CPU-s in {args.idle:.0f} s, "
          f"{idle_machine:.1f} with no Ray)")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
