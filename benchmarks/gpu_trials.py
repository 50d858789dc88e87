"""Trials per second on a GPU against the same studies on CPU, through the
whole engine, with the device each trial got (issue 54, item 5).

Two studies, each run twice on one local Ray (every CPU and GPU of the
machine), once with ``resources: {cpu: C}`` and once with ``resources:
{cpu: C, gpu: F}`` (F of a GPU per trial: ``1/F`` trials share a device):

* ``transformer``: all-minilm-l6-v2 (the installed package, no hub) fine-tuned
  on an SST-5 subset written as TSV tables, ``compare: {lr: [...]}``;
* ``populations``: the sentence family's four architectures as vectorised
  populations (``train.vectorize_seeds: true``) on SST-2, from the SST-5
  trees and a vectors file of the SST vocabulary.

Printed side by side per study: trials, the study's wall seconds, trials per
second on each side and their ratio; and per GPU trial the device IDs Ray gave
it (``gpu_ids``): every GPU trial must name exactly one device and a CPU
trial none, or the script exits 1.

It runs where a GPU is (the device tool's machines); the suite does not need
it. ``--cpu-only`` runs the CPU half alone (to check the script anywhere).
The data travels as a small folder made on a machine with the shared data::

    .venv/bin/python benchmarks/gpu_trials.py --prepare build/gpu-data --shared ../shared/data
    # on the GPU machine (build/gpu-data carried):
    .venv/bin/python benchmarks/gpu_trials.py --data build/gpu-data --json benchmarks/results/gpu_trials-DATE.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.populations_device import SPACE, write_vectors  # noqa: E402

TRANSFORMER = """
name: gpu-transformer
family: transformer
samples: 1
seeds: {seeds}
compare: {{lr: [1.0e-4, 3.0e-4]}}
task: {{dataset: table, name: sst5-subset, train: {data}/train.tsv, dev: {data}/dev.tsv, test: {data}/test.tsv}}
fixed: {{model: all-minilm-l6-v2, batch_size: 16, max_length: 48, warmup: 0.1}}
train: {{max_epochs: {epochs}, patience: null}}
resources: {{cpu: {cpu}{gpu}}}
"""
# the populations study of benchmarks/populations_device.py, vectorised, with this script's resources
POPULATIONS = SPACE.replace("name: populations-device", "name: gpu-populations").replace(
    "patience: null}}", "patience: null, vectorize_seeds: true}}").replace(
    "resources: {{cpu: 1, gpu: {gpu}}}", "resources: {{cpu: {cpu}{gpu}}}")


def prepare(out: Path, shared: Path, vectors: str) -> None:
    """The folder to carry: an SST-5 subset as TSV tables, the SST-5 trees, the SST vocabulary's vectors."""
    import shutil

    from seedsweep.study.families.sentencedata import SST5_LABELS, read_sst_trees

    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    for split, n in {"train": 600, "dev": 200, "test": 250}.items():
        part = read_sst_trees(shared / "sst5" / f"{split}.txt")
        rows = sorted(rng.sample(range(len(part)), n))
        lines = ["text\tlabel"] + [f"{part.texts[i]}\t{SST5_LABELS[part.labels[i]]}" for i in rows]
        (out / f"{split}.tsv").write_text("\n".join(lines) + "\n")
    shutil.copytree(shared / "sst5", out / "sst5", dirs_exist_ok=True)
    print(f"{write_vectors(shared, vectors, out / 'sst_vectors.txt')} words' vectors; data in {out}")


def run_side(kind: str, text: str, folder: Path, gpu: float | None, args) -> dict:
    """One study on one side: wall seconds, trials per second, each trial's gpu_ids."""
    from seedsweep import analysis, study

    side = "gpu" if gpu else "cpu"
    path = folder / f"{kind}-{side}.yaml"
    data = args.data.resolve()
    path.write_text(text.format(seeds=args.seeds, epochs=args.epochs, data=data, cpu=args.cpu,
                                gpu=f", gpu: {gpu}" if gpu else "", sst=data / "sst5", train=2000,
                                vectors=data / "sst_vectors.txt"))
    t0 = time.perf_counter()
    summary = study.run(path, folder / f"{kind}-{side}")
    wall = time.perf_counter() - t0
    df = analysis.load(folder / f"{kind}-{side}")
    ids = df["gpu_ids"].fillna("").tolist()
    return {"trials": int(summary.total), "counts": dict(summary.counts), "wall_s": round(wall, 2),
            "trials_per_s": round(summary.total / wall, 4), "gpu_ids": ids}


def main() -> int:
    """Prepare the data, or run both studies on both sides, print, check the device IDs, write JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prepare", type=Path, help="write the folder to carry here and stop")
    ap.add_argument("--shared", type=Path, default=Path("../shared/data"))
    ap.add_argument("--vectors", default="glove-6b-50d")
    ap.add_argument("--data", type=Path, default=Path("build/gpu-data"))
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--cpu", type=float, default=2)
    ap.add_argument("--gpu", type=float, default=0.5, help="the fraction of a GPU one trial asks for")
    ap.add_argument("--studies", default="transformer,populations")
    ap.add_argument("--cpu-only", action="store_true")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.prepare:
        prepare(args.prepare, args.shared, args.vectors)
        return 0
    import torch

    if not args.cpu_only and not torch.cuda.is_available():
        print("no GPU here (torch.cuda.is_available() is False): run it on a GPU machine, or pass --cpu-only")
        return 2
    texts = {"transformer": TRANSFORMER, "populations": POPULATIONS}
    record = {"machine": platform.node(), "gpus": torch.cuda.device_count(),
              "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
              "gpu_fraction": args.gpu, "studies": {}}
    bad = []
    with tempfile.TemporaryDirectory(prefix="gpu-trials-") as tmp:
        for kind in args.studies.split(","):
            sides = {"cpu": run_side(kind, texts[kind], Path(tmp), None, args)}
            if not args.cpu_only:
                sides["gpu"] = run_side(kind, texts[kind], Path(tmp), args.gpu, args)
            record["studies"][kind] = sides
            line = f"{kind:12s} cpu {sides['cpu']['trials_per_s']:8.3f} trials/s"
            if "gpu" in sides:
                g = sides["gpu"]
                line += f"   gpu {g['trials_per_s']:8.3f} trials/s   x{g['trials_per_s'] / sides['cpu']['trials_per_s']:.2f}"
                bad += [f"{kind} gpu trial with gpu_ids {i!r}" for i in g["gpu_ids"] if len(i.split(",")) != 1 or not i]
            bad += [f"{kind} cpu trial with gpu_ids {i!r}" for i in sides["cpu"]["gpu_ids"] if i]
            print(line, flush=True)
    record["problems"] = bad
    if args.json:
        args.json.write_text(json.dumps(record, indent=2) + "\n")
    for problem in bad:
        print("PROBLEM:", problem)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
