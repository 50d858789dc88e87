"""What an adaptive study's waves cost against one run of the same trials
(issue 51: the suite's adaptive, spending, extend and tuned tests run many
short waves).

The same 32 configurations x 2 options of zero-work synthetic trials, run on
one Ray started once with ``ray start --head`` (as the suite's ``worker_ray``):
once as a plain study (``samples: 32``, one ``Tuner.fit``) and once as an
adaptive study that cannot decide (no effect; ``until: {budget: {samples: 32},
wave: 4}``: a first wave of 4 and seven more). Until commit 35862c0 each wave
was its own ``Tuner.fit`` with its own trial actors: 41.5 against 12.3 CPU-s,
4.2 CPU-s a wave after the first (``wave_cost-2026-12-06-per-wave-fits.json``,
that commit's runner, waves and tuned modules checked out). Since then the waves
share one fit (``study.execution.fitsession``): 13.9 against 9.6 CPU-s, 0.6 CPU-s a
wave (``wave_cost-2026-12-06-one-fit.json``, the same machine minutes later). CPU-seconds are the machine's busy time from
``/proc/stat`` over each run (the driver, Ray's daemons and workers); nothing
else should run meanwhile::

    RAY_AUTH_MODE=disabled .venv/bin/python benchmarks/wave_cost.py --json benchmarks/results/wave_cost-2026-12-06.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from benchmarks.ray_cost import medians, one_run, start_head, timed_run  # noqa: E402
from tests.conftest import free_port, kill_tagged, wait_gone  # noqa: E402

BASE = """
name: waves
family: synthetic
samples: {samples}
seeds: 1
compare: {{classifier: [softmax, crf]}}
space: {{units: {{choice: [25, 50, 100]}}, lr: {{loguniform: [1.0e-3, 1.0e-1]}}}}
task: {{noise: 0.01, epoch_noise: 0.0}}
fixed: {{epoch_seconds: 0.0}}
train: {{max_epochs: 1, patience: 1}}
"""
ONE = BASE.format(samples=32)
WAVES = BASE.format(samples=4) + "until: {budget: {samples: 32}, wave: 4}\n"


def main() -> None:
    """Both ways on one head, ``--reps`` runs each; medians printed and optionally written."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    tag, ray_tmp = uuid.uuid4().hex, tempfile.mkdtemp(prefix="ssw-", dir="/tmp")
    env = {**os.environ, "SEEDSWEEP_TEST_TAG": tag, "RAY_AUTH_MODE": "disabled"}
    env.pop("RAY_ADDRESS", None)
    port = free_port()
    results: dict[str, list[tuple[float, float]]] = {"one run": [], "8 waves": []}
    waves_seen: list[int] = []
    with tempfile.TemporaryDirectory() as folder:
        one, waves = Path(folder) / "one.yaml", Path(folder) / "waves.yaml"
        one.write_text(ONE)
        waves.write_text(WAVES)
        try:
            start_head(port, ray_tmp, env)
            address = ["--address", f"127.0.0.1:{port}"]
            for _ in range(args.reps):
                results["one run"].append(one_run(one, Path(folder), address, env))
                cpu, wall, n = waves_run(waves, Path(folder) / uuid.uuid4().hex, address, env)
                results["8 waves"].append((cpu, wall))
                waves_seen.append(n)
        finally:
            kill_tagged(tag, ray_tmp)
            wait_gone(tag, timeout=30, ray_tmp=ray_tmp, orphans=True)
            shutil.rmtree(ray_tmp, ignore_errors=True)
    out = medians(results)
    out["waves_per_run"] = waves_seen
    extra = waves_seen[0] - 1
    out["cpu_s_per_extra_wave"] = (out["8 waves"]["median_cpu_s"] - out["one run"]["median_cpu_s"]) / extra
    out["wall_s_per_extra_wave"] = (out["8 waves"]["median_wall_s"] - out["one run"]["median_wall_s"]) / extra
    out.update(reps=args.reps, trials=64, cpus=os.cpu_count(), python=platform.python_version(),
               command="benchmarks/wave_cost.py " + " ".join(sys.argv[1:]))
    for way in results:
        print(f"{way:8s} median {out[way]['median_cpu_s']:.1f} CPU-s, {out[way]['median_wall_s']:.1f} s wall")
    print(f"each wave after the first: {out['cpu_s_per_extra_wave']:.2f} CPU-s, {out['wall_s_per_extra_wave']:.2f} s")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


def waves_run(space: Path, out: Path, address: list[str], env: dict) -> tuple[float, float, int]:
    """CPU-seconds, wall seconds and the number of waves of one adaptive run into ``out``."""
    cpu, wall, err = timed_run(["run", str(space), "--out", str(out), *address], env)
    waves = err.count("[seedsweep] waves: ")
    if waves != 8:
        raise SystemExit(f"expected 8 waves (the budget), saw {waves}:\n" + err[-2000:])
    return cpu, wall, waves


if __name__ == "__main__":
    main()
