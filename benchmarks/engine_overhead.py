"""How much does seedsweep cost on top of a bare Ray Tune loop?

Two measurements, each run through seedsweep (``study.run``: sampling, trial
grid, driver-side Parquet store, progress line) and through a bare Ray Tune
loop with the same settings (function trainable, one CPU per trial,
``reuse_actors=True``, ``verbose=0``, Tune's auto loggers off), on one shared
local Ray:

1. throughput: 1,000 zero-work trials (one epoch, no sleep) -> trials per second;
2. overhead: 40 trials of about 2 s each (4 epochs of 0.5 s) -> study wall time
   divided by (sum of trial times / parallel slots); 1.0 is perfect packing.

Usage::

    .venv/bin/python benchmarks/engine_overhead.py [--trials 1000] [--slow 40] [--repeat 3] [--json out.json]

Prints a side-by-side table; figures are ratios against the bare loop on the
same machine in the same run, never absolute targets.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")

import ray  # noqa: E402
from ray import tune  # noqa: E402

from seedsweep import study  # noqa: E402
from seedsweep.study.store.rundir import RunDir  # noqa: E402

SPACE = """
name: bench
family: synthetic
samples: {samples}
seeds: 1
compare:
  classifier: [softmax, crf]
space:
  lr: {{loguniform: [1.0e-4, 1.0e-2]}}
  optimizer: {{choice: [adam, nadam, sgd]}}
fixed: {{epoch_seconds: {seconds}}}
train: {{max_epochs: {epochs}, patience: 100}}
"""


def _bare_trainable(config):
    seconds, epochs = config["seconds"], config["epochs"]
    t0 = time.perf_counter()
    for epoch in range(1, epochs + 1):
        if seconds:
            time.sleep(seconds)
        tune.report({"epoch": epoch, "score": 0.5, "trial_seconds": time.perf_counter() - t0})


def bare_tune(n: int, seconds: float, epochs: int) -> tuple[float, float]:
    """Wall time and the sum of trial times of ``n`` trials through a bare Tune loop."""
    storage = tempfile.mkdtemp(prefix="bench-bare-")
    tuner = tune.Tuner(
        tune.with_resources(_bare_trainable, {"cpu": 1}),
        param_space={"i": tune.grid_search(list(range(n))), "seconds": seconds, "epochs": epochs},
        tune_config=tune.TuneConfig(reuse_actors=True),
        run_config=tune.RunConfig(storage_path=storage, verbose=0),
    )
    t0 = time.perf_counter()
    results = tuner.fit()
    wall = time.perf_counter() - t0
    busy = sum(r.metrics.get("trial_seconds", 0.0) for r in results if r.metrics)
    return wall, busy


def seedsweep(n: int, seconds: float, epochs: int, folder: Path) -> tuple[float, float]:
    """Wall time and the sum of trial times of ``n`` trials through ``study.run``."""
    path = folder / f"bench-{n}-{seconds}.yaml"
    path.write_text(SPACE.format(samples=n // 2, seconds=seconds, epochs=epochs))
    out = folder / f"run-{n}-{seconds}-{time.monotonic_ns()}"
    with open(os.devnull, "w") as quiet:
        t0 = time.perf_counter()
        summary = study.run(path, out, stream=quiet)
        wall = time.perf_counter() - t0
    assert summary.counts.get("ok") == n, summary
    busy = float(sum(RunDir(out).read_trials()["train_seconds"].to_pylist()))
    return wall, busy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=1000, help="zero-work trials for the throughput figure")
    parser.add_argument("--slow", type=int, default=40, help="trials of about 2 s for the overhead figure")
    parser.add_argument("--repeat", type=int, default=3, help="alternate the two arms this many times; "
                        "medians are reported (Ray's timing on a small machine varies by +-20%% run to run)")
    parser.add_argument("--cpus", type=int, default=os.cpu_count(), help="CPUs of the local Ray (parallel slots)")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()

    ray_tmp = tempfile.mkdtemp(prefix="bench-", dir="/tmp")
    ray.init(address="local", num_cpus=args.cpus, include_dashboard=False, log_to_driver=False,
             logging_level=logging.WARNING, _temp_dir=ray_tmp)
    for name in ("ray.tune", "ray.train", "ray.air"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    folder = Path(tempfile.mkdtemp(prefix="bench-runs-"))
    slots = args.cpus
    runs: dict[str, dict[str, list[float]]] = {arm: {"trials_per_s": [], "overhead_ratio": []}
                                                for arm in ("bare_tune", "seedsweep")}
    try:
        bare_tune(20, 0.0, 1)  # warm-up: worker start-up is paid by neither arm
        for _ in range(args.repeat):
            for arm, fn in (("bare_tune", lambda n, s, e: bare_tune(n, s, e)),
                            ("seedsweep", lambda n, s, e: seedsweep(n, s, e, folder))):
                wall, _ = fn(args.trials, 0.0, 1)
                runs[arm]["trials_per_s"].append(args.trials / wall)
                wall, busy = fn(args.slow, 0.5, 4)
                runs[arm]["overhead_ratio"].append(wall / (busy / slots))
    finally:
        ray.shutdown()

    figures = {arm: {k: statistics.median(v) for k, v in m.items()} for arm, m in runs.items()}
    b, s = figures["bare_tune"], figures["seedsweep"]
    for arm, m in runs.items():
        print(f"{arm}: trials/s {[round(x, 1) for x in m['trials_per_s']]}, "
              f"overhead {[round(x, 3) for x in m['overhead_ratio']]}")
    print(f"engine overhead, {slots} parallel slots, median of {args.repeat} alternating runs")
    print(f"{'':38}{'bare Ray Tune':>15}{'seedsweep':>12}{'ratio':>9}")
    print(f"{f'{args.trials} zero-work trials: trials/s':38}{b['trials_per_s']:>15.1f}{s['trials_per_s']:>12.1f}"
          f"{s['trials_per_s'] / b['trials_per_s']:>9.2f}")
    print(f"{f'{args.slow} trials of ~2 s: overhead ratio':38}{b['overhead_ratio']:>15.3f}{s['overhead_ratio']:>12.3f}"
          f"{s['overhead_ratio'] / b['overhead_ratio']:>9.2f}")
    print("(overhead ratio = wall time / (sum of trial times / slots); seedsweep should keep >= 0.90 of the "
          "bare throughput and <= 1.10x its overhead ratio)")
    if args.json:
        Path(args.json).write_text(json.dumps({"slots": slots, "trials": args.trials, "slow": args.slow,
                                               "repeat": args.repeat, "median": figures, "runs": runs},
                                              indent=2) + "\n")


if __name__ == "__main__":
    main()
