"""Does a tuned study (``tune:``) keep up with a plain Ray Tune + Optuna run of the same trials?

The same zero-work searches, on one shared local Ray, two ways:

* **seedsweep**: a tuned study of the synthetic family (one epoch, no sleep),
  2 options x 10 replicates x 32 trials = 640 trials, TPE, ``wave: auto``
  (4 trials per search per wave): :func:`study.execution.tuned.run_tuned`, with its
  Optuna journals, the driver-side Parquet store and the progress line.
* **plain Ray Tune + Optuna**: what a user writes without seedsweep, one
  ``tune.Tuner`` per search with Ray's ``OptunaSearch`` (the same TPE, seeded
  per replicate, the same space), 32 samples, searches one after another,
  a function trainable that reports one score (``reuse_actors=True``,
  ``verbose=0``, Tune's auto loggers off).

Usage::

    .venv/bin/python benchmarks/tuned_throughput.py [--replicates 10] [--budget 32] [--repeat 3] [--json out.json]

Prints trials per second side by side and their ratio (median of the
alternating repeats); the goal is seedsweep >= 0.9x the plain run.
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

import optuna  # noqa: E402
import ray  # noqa: E402
from ray import tune  # noqa: E402
from ray.tune.search.optuna import OptunaSearch  # noqa: E402

from seedsweep.study.execution.tuned import run_tuned  # noqa: E402

SPACE = """
name: bench-tuned
family: synthetic
compare: {{classifier: [softmax, crf]}}
task: {{optimum: {{lr: 0.003, units: 150}}, curvature: 0.3}}
space:
  lr: {{loguniform: [1.0e-5, 1.0e-1]}}
  units: {{int: [10, 300]}}
train: {{max_epochs: 1, patience: 1}}
tune: {{sampler: tpe, budget: {budget}, replicates: {replicates}}}
"""


def _plain_trainable(config):
    tune.report({"score": 0.8 - 0.3 * ((config["units"] - 150) / 290) ** 2})


def plain(options: int, replicates: int, budget: int) -> float:
    """Wall time of every search through one Tuner with OptunaSearch each."""
    storage = tempfile.mkdtemp(prefix="bench-plain-")
    space = {"lr": optuna.distributions.FloatDistribution(1e-5, 1e-1, log=True),
             "units": optuna.distributions.IntDistribution(10, 300)}
    t0 = time.perf_counter()
    for o in range(options):
        for r in range(replicates):
            search = OptunaSearch(space=space, metric="score", mode="max", sampler=optuna.samplers.TPESampler(seed=r))
            tuner = tune.Tuner(tune.with_resources(_plain_trainable, {"cpu": 1}),
                               tune_config=tune.TuneConfig(search_alg=search, num_samples=budget, reuse_actors=True),
                               run_config=tune.RunConfig(name=f"plain-{o}-{r}", storage_path=storage, verbose=0))
            results = tuner.fit()
            assert len(results) == budget
    return time.perf_counter() - t0


def seedsweep(replicates: int, budget: int, folder: Path) -> float:
    """Wall time of the same searches as one tuned study."""
    path = folder / "tuned.yaml"
    path.write_text(SPACE.format(budget=budget, replicates=replicates))
    out = folder / f"run-{time.monotonic_ns()}"
    with open(os.devnull, "w") as quiet:
        t0 = time.perf_counter()
        summary = run_tuned(path, out, stream=quiet)
        wall = time.perf_counter() - t0
    assert summary.counts.get("ok") == 2 * replicates * budget, summary
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicates", type=int, default=10)
    parser.add_argument("--budget", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3, help="alternate the two arms this many times (medians)")
    parser.add_argument("--cpus", type=int, default=os.cpu_count(), help="CPUs of the local Ray (parallel slots)")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    ray_tmp = tempfile.mkdtemp(prefix="bench-", dir="/tmp")
    ray.init(address="local", num_cpus=args.cpus, include_dashboard=False, log_to_driver=False,
             logging_level=logging.WARNING, _temp_dir=ray_tmp)
    for name in ("ray.tune", "ray.train", "ray.air"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    folder = Path(tempfile.mkdtemp(prefix="bench-tuned-"))
    trials = 2 * args.replicates * args.budget
    runs: dict[str, list[float]] = {"plain": [], "seedsweep": []}
    try:
        plain(1, 1, 8)                                 # warm-up: worker start-up is paid by neither arm
        for _ in range(args.repeat):
            runs["plain"].append(trials / plain(2, args.replicates, args.budget))
            runs["seedsweep"].append(trials / seedsweep(args.replicates, args.budget, folder))
    finally:
        ray.shutdown()
    med = {arm: statistics.median(v) for arm, v in runs.items()}
    for arm, v in runs.items():
        print(f"{arm}: trials/s {[round(x, 1) for x in v]}")
    print(f"tuned study, 2 options x {args.replicates} replicates x {args.budget} trials = {trials} zero-work "
          f"trials, {args.cpus} slots, median of {args.repeat} alternating runs")
    print(f"{'':24}{'plain Tune+Optuna':>19}{'seedsweep':>12}{'ratio':>9}")
    print(f"{'trials/s':24}{med['plain']:>19.1f}{med['seedsweep']:>12.1f}{med['seedsweep'] / med['plain']:>9.2f}")
    print("(goal: seedsweep >= 0.90x the plain run)")
    if args.json:
        Path(args.json).write_text(json.dumps({"slots": args.cpus, "trials": trials, "replicates": args.replicates,
                                               "budget": args.budget, "repeat": args.repeat, "median": med,
                                               "ratio": med["seedsweep"] / med["plain"], "runs": runs},
                                              indent=2) + "\n")


if __name__ == "__main__":
    main()
