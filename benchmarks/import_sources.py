"""What an import costs against reading the same source with the source's own
API, for each source, in one run (ratios, not absolute times):

* Ray Tune: a folder of N trial folders (``params.json``, ``result.json`` with
  3 reports each), against reading every trial with pandas
  (``pd.read_json(..., lines=True)`` and ``json.load`` of its parameters);
* Optuna: a SQLite study of N trials (3 intermediate values each), against
  ``optuna.load_study(...).trials_dataframe()``;
* MLflow: a SQLite store of N runs (2 params, 2 metrics), against
  ``mlflow.search_runs``: the latest values (``--score`` only), and with
  ``--dev-score`` (each run's two metric histories) against ``search_runs``
  plus ``MlflowClient.get_metric_history`` of the same two metrics per run;
* W&B: an export of N rows, against ``pd.read_csv``.

``seedsweep import``'s side is the whole import (read, check, write the run
directory, hash for the manifest), called in-process as the command calls it.
Each side is timed ``--repeat`` times, alternating, and the best is kept.

    .venv/bin/python benchmarks/import_sources.py --trials 10000 --json benchmarks/results/import_sources-2026-12-06.json

Issue 55's goal: each import at most 1.25x the source's own read.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def draws(n: int, seed: int = 0) -> list[tuple[str, float, int, float, float]]:
    """N random-search trials: (optimizer, lr, seed, dev, test)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        opt, lr = ("adam", "sgd")[i % 2], float(10 ** rng.uniform(-4, -1))
        dev = 0.8 + 0.01 * math.log10(lr) + rng.normal(0, 0.01)
        out.append((opt, lr, i % 3, dev, dev - 0.01))
    return out


def write_tune(folder: Path, rows) -> None:
    for i, (opt, lr, seed, dev, test) in enumerate(rows):
        t = folder / f"trainable_{i:06d}"
        t.mkdir(parents=True)
        (t / "params.json").write_text(json.dumps({"optimizer": opt, "lr": lr, "seed": seed}))
        (t / "result.json").write_text("".join(json.dumps({"dev_acc": dev - 0.01 * (2 - k), "test_acc": test,
                                                           "training_iteration": k + 1, "trial_id": f"t{i}"}) + "\n"
                                               for k in range(3)))


def read_tune_with_pandas(folder: Path) -> pd.DataFrame:
    frames = []
    for t in sorted(folder.iterdir()):
        reports = pd.read_json(t / "result.json", lines=True)
        for k, v in json.loads((t / "params.json").read_text()).items():
            reports[k] = v
        frames.append(reports)
    return pd.concat(frames, ignore_index=True)


def write_optuna(db: Path, rows) -> str:
    import optuna
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    url = f"sqlite:///{db}"
    study = optuna.create_study(study_name="bench", storage=url, direction="maximize")
    dists = {"optimizer": CategoricalDistribution(["adam", "sgd"]), "lr": FloatDistribution(1e-4, 1e-1, log=True),
             "seed": IntDistribution(0, 2)}
    study.add_trials([optuna.trial.create_trial(
        params={"optimizer": opt, "lr": lr, "seed": seed}, distributions=dists, value=dev,
        intermediate_values={k: dev - 0.01 * (2 - k) for k in range(3)}, user_attrs={"test_acc": test})
        for opt, lr, seed, dev, test in rows])
    return url


def write_mlflow(db: Path, rows) -> str:
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param

    uri = f"sqlite:///{db}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("bench")
    now = int(time.time() * 1000)
    for opt, lr, seed, dev, test in rows:
        run = client.create_run(exp, tags={"seed": str(seed)}).info.run_id
        client.log_batch(run, params=[Param("optimizer", opt), Param("lr", str(lr))],
                         metrics=[Metric("dev_acc", dev - 0.01 * (2 - k), now, k) for k in range(3)]
                         + [Metric("test_acc", test, now, k) for k in range(3)])
        client.set_terminated(run)
    return uri


def write_wandb(path: Path, rows) -> None:
    lines = ["Name,State,Notes,User,Tags,Created,Runtime,Sweep,optimizer,lr,seed,dev_acc,test_acc,_step,_runtime"]
    lines += [f"run-{i},finished,,me,,2026-12-01T10:00:00,{100 + i},sw,{opt},{lr},{seed},{dev},{test},30,{100.5 + i}"
              for i, (opt, lr, seed, dev, test) in enumerate(rows)]
    path.write_text("\n".join(lines) + "\n")


def best_of(repeat: int, peer, ours) -> tuple[float, float]:
    """The best of ``repeat`` alternating timings of each side."""
    p, o = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        peer()
        p.append(time.perf_counter() - t)
        t = time.perf_counter()
        ours()
        o.append(time.perf_counter() - t)
    return min(p), min(o)


def main() -> int:
    """Build the four sources, time both sides of each, print and optionally write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    from seedsweep.analysis.reading.importers import import_any

    rows = draws(args.trials)
    work = Path(tempfile.mkdtemp(prefix="import-bench-"))
    outs = iter(range(10_000))

    def ours(source=None, seed="seed", **kw):
        def call():
            out = work / f"out-{next(outs)}"
            import_any(source, out, choice="optimizer", seed=seed, **kw)
            shutil.rmtree(out)
        return call

    results = {}
    try:
        t0 = time.perf_counter()
        write_tune(work / "tune", rows)
        optuna_url = write_optuna(work / "optuna.db", rows)
        mlflow_uri = write_mlflow(work / "mlflow.db", rows)
        write_wandb(work / "wandb.csv", rows)
        built = time.perf_counter() - t0

        import mlflow
        import optuna

        mlflow.set_tracking_uri(mlflow_uri)
        exp = mlflow.get_experiment_by_name("bench").experiment_id

        def histories():
            from mlflow import MlflowClient

            client = MlflowClient(tracking_uri=mlflow_uri)
            runs = mlflow.search_runs([exp], max_results=100_000)
            for rid in runs["run_id"]:
                client.get_metric_history(rid, "dev_acc")
                client.get_metric_history(rid, "test_acc")

        cases = {
            "ray tune (pandas per trial)": (lambda: read_tune_with_pandas(work / "tune"),
                                            ours(str(work / "tune"), score="test_acc", dev_score="dev_acc")),
            "optuna (trials_dataframe)": (
                lambda: optuna.load_study(study_name="bench", storage=optuna_url).trials_dataframe(),
                ours(storage=optuna_url, score="user_attrs/test_acc", dev_score="value")),
            "mlflow latest values (search_runs)": (
                lambda: mlflow.search_runs([exp], max_results=100_000),
                ours(tracking_uri=mlflow_uri, experiment="bench", score="test_acc", seed="tags/seed")),
            "mlflow histories (search_runs + get_metric_history x2)": (
                histories, ours(tracking_uri=mlflow_uri, experiment="bench", score="test_acc", dev_score="dev_acc",
                                seed="tags/seed")),
            "wandb export (pd.read_csv)": (lambda: pd.read_csv(work / "wandb.csv"),
                                           ours(str(work / "wandb.csv"), score="test_acc", dev_score="dev_acc")),
        }
        for name, (peer, mine) in cases.items():
            p, o = best_of(args.repeat, peer, mine)
            results[name] = {"peer_s": round(p, 3), "seedsweep_s": round(o, 3), "ratio": round(o / p, 3)}
            print(f"{name:58s} peer {p:8.3f} s   seedsweep import {o:8.3f} s   ratio {o / p:5.2f}", flush=True)
        # The W&B export's own read is a 5 ms CSV parse, less than writing any run directory costs: the floor is
        # that read plus writing the same frame to Parquet plus the manifest every run directory carries.
        from seedsweep.study.store.manifest import imported_manifest

        def floor():
            pd.read_csv(work / "wandb.csv").to_parquet(work / "floor.parquet")
            imported_manifest(study="floor", imported={}, command=None)
        f, o = best_of(args.repeat, floor, cases["wandb export (pd.read_csv)"][1])
        results["wandb export (pd.read_csv)"].update({"floor_s": round(f, 3), "floor_ratio": round(o / f, 3)})
        print(f"{'wandb floor (read_csv + to_parquet + manifest)':58s} floor {f:7.3f} s   seedsweep import {o:8.3f} s"
              f"   ratio {o / f:5.2f}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    record = {"trials": args.trials, "repeat": args.repeat, "built_s": round(built, 1), "goal_ratio": 1.25,
              "cases": results, "commit": commit.stdout.strip(), "cpus": os.cpu_count()}
    if args.json:
        args.json.write_text(json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
