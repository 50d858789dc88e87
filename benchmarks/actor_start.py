"""What a new Ray trial actor costs before its first trial, in parts.

Every trial actor Tune starts is a new Ray worker process with a runtime
environment of its own (Tune's ``env_vars``), so no idle worker is reused.
Before it trains it has paid for: the worker process's start (Python, ``import
ray``, connecting to the raylet and the GCS), then ``import ray.tune`` (Tune's
trainable classes live there, and Ray Tune's package imports Ray Train, Ray Data
and pandas), then seedsweep's trial code and the family. This measures those
three parts in one private Ray, for ``--reps`` fresh actors: the actor's own
CPU-seconds (user + system, from ``psutil``) after it answered its first call,
and the CPU-seconds of each import inside it. Nothing else should run
meanwhile::

    RAY_AUTH_MODE=disabled .venv/bin/python benchmarks/actor_start.py --json benchmarks/results/actor_start-2026-12-07.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

#: what a trial actor of the synthetic family imports after Ray Tune
SEEDSWEEP = ("seedsweep.study.execution.trial", "seedsweep.study.families.synthetic")


def main() -> None:
    """``--reps`` fresh actors, one after another; medians printed and optionally written."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    import psutil  # noqa: I001 -- the benchmark's own imports, after its arguments are read
    import ray

    os.environ.setdefault("RAY_prestart_worker_first_driver", "0")     # as seedsweep starts its private Ray
    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False,
             _temp_dir=tempfile.mkdtemp(prefix="ssa-", dir="/tmp"))

    @ray.remote(num_cpus=1, runtime_env={"env_vars": {"SEEDSWEEP_BENCH": "1"}})
    class Actor:
        def pid(self) -> int:
            return os.getpid()

        def cpu_of_import(self, names: tuple[str, ...]) -> float:
            import importlib

            start = time.process_time()
            for name in names:
                importlib.import_module(name)
            return time.process_time() - start

    rows = []
    try:
        for _ in range(args.reps):
            actor = Actor.remote()
            pid = ray.get(actor.pid.remote())
            t = psutil.Process(pid).cpu_times()
            started = t.user + t.system
            tune = ray.get(actor.cpu_of_import.remote(("ray.tune",)))
            ours = ray.get(actor.cpu_of_import.remote(SEEDSWEEP))
            t = psutil.Process(pid).cpu_times()
            rows.append({"process_start": started, "import_ray_tune": tune, "import_seedsweep_trial_and_family": ours,
                         "total": t.user + t.system})
            ray.kill(actor)
            time.sleep(1.0)
    finally:
        ray.shutdown()
    medians = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    for k, v in medians.items():
        print(f"{k:36s} {v:5.2f} CPU-s (median of {args.reps})")
    out = {"runs": rows, "medians": medians, "reps": args.reps, "machine_cpus": os.cpu_count(),
           "python": platform.python_version(), "command": "benchmarks/actor_start.py " + " ".join(sys.argv[1:])}
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
