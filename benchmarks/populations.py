"""Populations in one pass: 20 seeds of each sentence architecture, lone against vectorised.

One study (``samples: 1``, ``compare: architecture: [fc, cnn, lstm,
attention]``, 20 seeds, SST-2 with a fixed training subset, a fixed number
of epochs so that both ways do the same work) is run through seedsweep
on one local Ray with both cores: as lone trials (80 Ray trials, one CPU
each, two at a time), with ``train.vectorize_seeds: true`` (4 Ray trials of
20 seeds each, one CPU each, two at a time), and vectorised with one shared
data order. Every run goes through the whole engine (sampling, Tune, the
driver's store).

Printed side by side, per architecture and overall:

* the wall time of the whole study and trials per second;
* per architecture, the seconds its epochs took (training and scoring:
  the sum over lone trials of the epochs table's ``seconds``; for a
  population, the sum of its seeds' equal shares, which is the population's
  wall time per epoch) and their ratio -- loading GloVe and building the
  models is left out here on both sides (it is in ``train_seconds``, also
  recorded, and in the study's wall time);
* the test accuracy of each way's populations (mean, sd): lone and
  vectorised train the same models; a third run, ``shared-order``
  (``order_seed: 1``: one data order for every seed), shows what sharing the
  order buys in speed and costs in seed-to-seed spread.

Usage (the shared data's SST-5 trees)::

    SEEDSWEEP_DATA=../shared/data .venv/bin/python benchmarks/populations.py [--train 2000] [--epochs 3] \\
        [--seeds 20] [--json benchmarks/results/populations-DATE.json]

A fourth measurement bounds what batching can buy on this CPU (``ceiling``):
per architecture, one lone trial's first epoch (training and scoring, one
thread, as a Ray trial with one CPU runs it) is timed, and its matrix
arithmetic (products, convolutions, attention) is counted by
``torch.utils.flop_counter.FlopCounterMode`` on a second model with the same
seed. A vectorised population does the same arithmetic for each seed, so
even at the core's peak rate (the best of five 1024 x 1024 x 1024 float32
products, one thread) it cannot run a seed's epoch in less than
``flops / peak``; ``lone seconds / (flops / peak)`` is the largest speed-up
batching could give. Elementwise work is not counted, which only raises the
bound.

The tagger family is not vectorised (see the README, "Populations"), so
there is nothing of it to measure here.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")

import ray  # noqa: E402

from seedsweep import analysis  # noqa: E402
from seedsweep import study  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
ARCHS = ("fc", "cnn", "lstm", "attention")
MODES = ("lone", "vectorised", "shared-order")
SPACE = """
name: populations-{mode}
family: sentence
samples: 1
seeds: {seeds}
compare: {{architecture: [fc, cnn, lstm, attention]}}
task: {{dataset: sst2, train_sentences: {train}, dev_sentences: 400, test_sentences: 600}}
evaluate: [{bed}]
train: {{max_epochs: {epochs}, patience: null{vectorize}}}
resources: {{cpu: 1}}{fixed}
"""


def run_once(folder: Path, mode: str, args) -> dict:
    path = folder / f"{mode}.yaml"
    path.write_text(SPACE.format(mode=mode, seeds=args.seeds, train=args.train, epochs=args.epochs,
                                 bed=REPO / "testbeds" / "sst_phenomena.yaml",
                                 vectorize=", vectorize_seeds: true" if mode != "lone" else "",
                                 fixed="\nfixed: {order_seed: 1}" if mode == "shared-order" else ""))
    t0 = time.perf_counter()
    summary = study.run(path, folder / mode, num_cpus=2)
    wall = time.perf_counter() - t0
    df = analysis.load(folder / mode)
    assert summary.counts.get("ok", 0) + summary.counts.get("diverged", 0) == summary.total, summary.line()
    epochs = analysis.load_epochs(folder / mode).merge(df[["trial_key", "architecture"]], on="trial_key")
    per = {}
    for arch in ARCHS:
        rows = df[df.architecture == arch]
        per[arch] = {"cpu_seconds": float(rows.train_seconds.sum()), "trials": int(len(rows)),
                     "epoch_seconds": float(epochs[epochs.architecture == arch].seconds.sum()),
                     "test_mean": float(rows.test_score.mean()), "test_sd": float(rows.test_score.std(ddof=1))}
    return {"wall_seconds": wall, "trials": summary.total, "trials_per_second": summary.total / wall, "per": per}


def peak_gflops(size: int = 1024, repeats: int = 5) -> float:
    """The best rate of one thread on ``size``-cubed float32 matrix products."""
    import torch

    a, b = torch.randn(size, size), torch.randn(size, size)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t0)
    return 2 * size ** 3 / best / 1e9


def ceiling(folder: Path, args) -> dict:
    """Per architecture: one lone epoch's seconds and counted FLOPs, and the
    speed-up bound they give at the core's peak rate (module docstring)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from seedsweep.study.families import get_family
    from seedsweep.study.execution.runner import plan_study
    from seedsweep.study.spec.spacefile import parse_space
    from seedsweep.study.execution.trial import seed_everything

    path = folder / "ceiling.yaml"
    path.write_text(SPACE.format(mode="ceiling", seeds=1, train=args.train, epochs=1,
                                 bed=REPO / "testbeds" / "sst_phenomena.yaml", vectorize="", fixed=""))
    space = parse_space(path.read_text(), path=str(path))
    family = get_family("sentence")
    threads = torch.get_num_threads()
    out: dict = {}
    try:
        torch.set_num_threads(1)
        peak = peak_gflops()
        for trial in plan_study(space)[1]:
            arch = trial.option
            seed_everything(trial.seed, torch=True, threads=1)
            model = family.build(space, trial)
            model.train_epoch(1)                           # warm: the first epoch pays one-off costs
            t0 = time.perf_counter()
            model.train_epoch(2)
            model.evaluate(2)
            seconds = time.perf_counter() - t0
            seed_everything(trial.seed, torch=True, threads=1)
            model = family.build(space, trial)
            with FlopCounterMode(display=False) as counter:
                model.train_epoch(1)
                model.evaluate(1)
            flops = counter.get_total_flops()
            floor = flops / (peak * 1e9)
            out[arch] = {"epoch_seconds": seconds, "gflop": flops / 1e9, "gflops_achieved": flops / seconds / 1e9,
                         "floor_seconds": floor, "max_speedup": seconds / floor}
    finally:
        torch.set_num_threads(threads)
    return {"peak_gflops_one_thread": peak, "per": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", type=int, default=2000, help="training sentences (a fixed SST-2 subset)")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    temp = tempfile.mkdtemp(prefix="ssp-", dir="/tmp")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=temp)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            results = {mode: run_once(Path(tmp), mode, args) for mode in MODES}
    finally:
        ray.shutdown()
    with tempfile.TemporaryDirectory() as tmp:
        bound = ceiling(Path(tmp), args)
    lone = results["lone"]
    print(f"{args.seeds} seeds x 4 architectures, SST-2 {args.train} training sentences, {args.epochs} epochs, "
          f"2 CPUs, one CPU per Ray trial; vectorised: each seed its own data order (the default); "
          f"shared-order: order_seed 1 for every seed")
    print(f"{'epoch s':12} " + " ".join(f"{m:>13}" for m in MODES) + "   test accuracy mean ± sd per mode")
    ratios: dict[str, dict[str, float]] = {m: {} for m in MODES[1:]}
    for arch in ARCHS:
        cells, accs = [], []
        for m in MODES:
            per = results[m]["per"][arch]
            if m == "lone":
                cells.append(f"{per['epoch_seconds']:13.1f}")
            else:
                ratios[m][arch] = lone["per"][arch]["epoch_seconds"] / per["epoch_seconds"]
                cells.append(f"{per['epoch_seconds']:7.1f} {ratios[m][arch]:4.1f}x")
            accs.append(f"{per['test_mean']:.4f}±{per['test_sd']:.4f}")
        print(f"{arch:12} " + " ".join(cells) + "   " + "  ".join(accs))
    walls = {m: lone["wall_seconds"] / results[m]["wall_seconds"] for m in MODES[1:]}
    print(f"{'study wall':12} {lone['wall_seconds']:13.1f} " + " ".join(
        f"{results[m]['wall_seconds']:7.1f} {walls[m]:4.1f}x" for m in MODES[1:]))
    print(f"{'trials/s':12} " + " ".join(f"{results[m]['trials_per_second']:13.2f}" for m in MODES))
    print(f"ceiling: one thread's peak {bound['peak_gflops_one_thread']:.1f} GFLOP/s (float32 products); "
          "per lone epoch (training and scoring):")
    print(f"{'':12} {'seconds':>9} {'GFLOP':>8} {'GFLOP/s':>8} {'at peak s':>10} {'max speed-up':>13} {'measured':>9}")
    for arch, c in bound["per"].items():
        print(f"{arch:12} {c['epoch_seconds']:9.3f} {c['gflop']:8.2f} {c['gflops_achieved']:8.1f} "
              f"{c['floor_seconds']:10.3f} {c['max_speedup']:12.1f}x {ratios['vectorised'][arch]:8.1f}x")
    if args.json:
        args.json.write_text(json.dumps({
            "benchmark": "populations", "args": vars(args) | {"json": str(args.json)},
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
            "results": results, "epoch_seconds_ratio": ratios, "wall_ratio": walls, "ceiling": bound,
            "tagger": "not vectorised: see README, Populations",
        }, indent=2) + "\n")


if __name__ == "__main__":
    main()
