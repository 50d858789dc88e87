"""Populations on one device, without Ray: k lone seeds one after another against one vectorised population.

``benchmarks/populations.py`` measures populations through the whole engine
on this machine's two cores. This script measures what the vectorised
population buys on an accelerator, where a step's cost is mostly kernel
launches and a lone network leaves the device idle: it drives the sentence
family's own model classes in one process (:class:`SentenceModel` for a lone
seed, :class:`Population` for k seeds at once), with ``resources: {gpu: 1}``
so that both put their tensors on the GPU, on SST-2 with a fixed training
subset and a fixed number of epochs (no early stopping, so both do the same
work). Ray is not used (the GPU machine lent here has no Ray; a trial's
work is the same inside a Ray worker), so the engine's overhead per trial
-- about 1 s at Ray's start, the store -- is left out on both sides.

Per architecture it prints, side by side:

* ``lone``: the seconds of one lone seed's epochs (training and scoring dev
  and test), the mean over ``--lone-seeds`` seeds run one after another,
  times k: what k lone trials cost run one after another on the device;
* ``population``: the seconds of the k seeds' population's epochs;
* their ratio, and each way's test accuracy (mean, sd) after the last epoch.

The lone cost of k seeds is the measured mean of ``--lone-seeds`` lone seeds
times k (lone seeds are independent runs of the same work; running all k
would only multiply the device time). Packing several lone trials on one GPU
at once (``resources: {gpu: 0.25}``) is another peer, not measured here.

Usage (the shared data's SST-5 trees; GloVe, or any vectors file holding the
SST vocabulary)::

    .venv/bin/python benchmarks/populations_device.py --data ../shared/data \\
        [--vectors glove-6b-50d] [--seeds 20] [--lone-seeds 5] [--epochs 3] [--json out.json]

    # a vectors file of the SST vocabulary only (small enough to travel to a GPU machine):
    .venv/bin/python benchmarks/populations_device.py --data ../shared/data --write-vectors sst_vectors.txt
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from seedsweep.study.families.sentence.model import SentenceModel, tokens
from seedsweep.study.families.sentence.population import Population
from seedsweep.study.families.sentencedata import load_sentences
from seedsweep.study.families.vectors import load_vectors
from seedsweep.study.schema import TrialSpec
from seedsweep.study.spec.spacefile import load_space

ARCHS = ("fc", "cnn", "lstm", "attention")
SPACE = """
name: populations-device
family: sentence
samples: 1
seeds: {seeds}
compare: {{architecture: [fc, cnn, lstm, attention]}}
task: {{dataset: sst2, path: {sst}, train_sentences: {train}, dev_sentences: 400, test_sentences: 600}}
fixed: {{embeddings: {vectors}}}
train: {{max_epochs: {epochs}, patience: null}}
resources: {{cpu: 1, gpu: {gpu}}}
"""


def write_vectors(data: Path, source: str, out: Path) -> int:
    """The rows of ``source`` for every word of SST-5 (all splits), as a GloVe text file."""
    words: set[str] = set()
    for name in ("sst2", "sst5"):
        ds = load_sentences({"dataset": name, "path": str(data / "sst5")})
        for split in (ds.train, ds.dev, ds.test):
            for text in split.texts:
                words.update(tokens(text))
    vocab, matrix = load_vectors(source, words)
    with out.open("w") as f:
        for w, row in zip(vocab, matrix):
            if w in words:
                f.write(w + " " + " ".join(f"{x:.6g}" for x in row) + "\n")
    return len(words & set(vocab))


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def lone(space, arch: str, seed: int, epochs: int) -> tuple[list[float], float]:
    torch.manual_seed(seed)
    np.random.seed(seed)
    model = SentenceModel(space, {"architecture": arch}, seed)
    device = model.prep.device
    times, test = [], float("nan")
    for epoch in range(1, epochs + 1):
        sync(device)
        t0 = time.perf_counter()
        model.train_epoch(epoch)
        _, test = model.evaluate(epoch)
        sync(device)
        times.append(time.perf_counter() - t0)
    return times, test


def population(space, arch: str, seeds: list[int], epochs: int) -> tuple[list[float], list[float]]:
    trials = [TrialSpec(f"{arch}-{s}", "c0", "architecture", arch, s, (("architecture", arch),)) for s in seeds]
    pop = Population(space, trials)
    times, scores = [], []
    for epoch in range(1, epochs + 1):
        sync(pop.device)
        t0 = time.perf_counter()
        pop.train_epoch(epoch)
        scores = pop.evaluate(epoch)
        sync(pop.device)
        times.append(time.perf_counter() - t0)
    return times, [s[1] for s in scores if s is not None]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path("../shared/data"), help="the folder holding sst5/")
    ap.add_argument("--vectors", default="glove-6b-50d")
    ap.add_argument("--write-vectors", type=Path, help="write the SST vocabulary's vectors here and stop")
    ap.add_argument("--train", type=int, default=2000)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--lone-seeds", type=int, default=5)
    ap.add_argument("--cpu", action="store_true", help="run on the CPU even where CUDA is available")
    ap.add_argument("--threads", type=int, default=1, help="CPU threads (a Ray trial with cpu: 1 has one)")
    ap.add_argument("--archs", default=",".join(ARCHS))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.write_vectors:
        n = write_vectors(args.data, args.vectors, args.write_vectors)
        print(f"{n} words written to {args.write_vectors}")
        return
    torch.set_num_threads(args.threads)
    gpu = 0 if args.cpu or not torch.cuda.is_available() else 1
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "study.yaml"
        path.write_text(SPACE.format(seeds=args.seeds, sst=(args.data / "sst5").resolve(), train=args.train,
                                     vectors=args.vectors, epochs=args.epochs, gpu=gpu))
        space = load_space(path)
    device = "cuda: " + torch.cuda.get_device_name(0) if gpu else f"cpu ({args.threads} thread)"
    print(f"device {device}; torch {torch.__version__}; SST-2, {args.train} training sentences, {args.epochs} epochs; "
          f"{args.seeds} seeds per population, lone cost = mean of {args.lone_seeds} lone seeds x {args.seeds}")
    lone(space, "fc", 999, 1)                          # warm-up: CUDA context, kernels, the data cache
    seeds = list(range(1, args.seeds + 1))
    results = {}
    print(f"{'arch':<10} {'lone s/epoch (k seeds)':>22} {'population s/epoch':>19} {'ratio':>6}   "
          f"{'lone test mean (sd)':>20} {'population test mean (sd)':>26}")
    for arch in args.archs.split(","):
        runs = [lone(space, arch, s, args.epochs) for s in seeds[: args.lone_seeds]]
        lone_epoch = statistics.mean(statistics.mean(t) for t, _ in runs)
        lone_tests = [test for _, test in runs]
        pop_times, pop_tests = population(space, arch, seeds, args.epochs)
        pop_epoch = statistics.mean(pop_times)
        k_lone = lone_epoch * args.seeds
        results[arch] = {"lone_epoch_seconds_one_seed": lone_epoch, "lone_epoch_seconds_k_seeds": k_lone,
                         "lone_epoch_seconds_each": [t for t, _ in runs],
                         "population_epoch_seconds": pop_epoch, "population_epoch_seconds_each": pop_times,
                         "ratio": k_lone / pop_epoch,
                         "lone_test": lone_tests, "population_test": pop_tests}
        print(f"{arch:<10} {k_lone:>22.2f} {pop_epoch:>19.3f} {k_lone / pop_epoch:>5.1f}x   "
              f"{statistics.mean(lone_tests):>12.4f} ({statistics.stdev(lone_tests):.4f}) "
              f"{statistics.mean(pop_tests):>18.4f} ({statistics.stdev(pop_tests):.4f})", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"benchmark": "populations_device", "device": device,
                                         "torch": torch.__version__, "platform": platform.platform(),
                                         "args": {k: str(v) for k, v in vars(args).items()},
                                         "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
