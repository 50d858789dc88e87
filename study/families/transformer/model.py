"""One trial of the transformer family: fine-tuning with early stopping on dev."""

from __future__ import annotations

import functools
import json
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base import ModelBase, check_settings
from ..evalsets import eval_sets, label_ids
from ..modelsources import load_failure, parse_model
from ..sentencedata import cached_sentences
from .settings import LIMITS, TINY, option_source, settings_of

if TYPE_CHECKING:
    from ..view import StudyView

__all__ = ["TransformerModel"]

EVAL_BATCH = 128
LOSS_FALL = 1e-3    # a "falling" loss: an epoch mean below the first epoch's by this relative margin


@functools.lru_cache(maxsize=4)
def _tokenizer(source: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(source)


@functools.lru_cache(maxsize=8)
def _encoded(task_json: str, source: str, max_length: int):
    """Token ids of every split (truncated to ``max_length``), shared by the
    trials of one worker process."""
    data = cached_sentences(task_json)
    tok = _tokenizer(source)
    out = {}
    for split in ("train", "dev", "test"):
        part = getattr(data, split)
        ids = tok(part.texts, truncation=True, max_length=max_length)["input_ids"]
        out[split] = (ids, np.asarray(part.labels, dtype=np.int64))
    return out, int(tok.pad_token_id or 0)


class TransformerModel(ModelBase):
    """One trial of the transformer family (see the module docstring)."""

    def __init__(self, space: "StudyView", hparams: dict[str, Any], seed: int) -> None:
        # trials set their own thread counts; set here (in the worker), never at import
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import torch
        from transformers import AutoConfig, AutoModelForSequenceClassification, BertConfig
        from transformers import logging as hf_logging
        from transformers import get_linear_schedule_with_warmup

        hf_logging.set_verbosity_error()
        self.torch = torch
        self.s = s = settings_of(space, hparams)
        check_settings(s, LIMITS, space.path, "transformer")
        task_json = json.dumps(space.task, sort_keys=True)
        self.data = cached_sentences(task_json)
        source = option_source(s["model"])
        try:
            self.splits, self.pad_id = _encoded(task_json, source, int(s["max_length"]))
        except (OSError, ValueError) as exc:
            raise load_failure(s["model"], exc) from None
        self.eval_names: list[str] = []
        for es in eval_sets(tuple(space.evaluate)):         # scored every epoch, stored at the best dev epoch
            ids = _tokenizer(source)(list(es.texts), truncation=True, max_length=int(s["max_length"]))["input_ids"]
            labels = label_ids(es.labels, self.data.label_names, f"evaluate: {es.source} ({es.name})")
            self.splits = {**self.splits, f"eval:{es.name}": (ids, np.asarray(labels, np.int64))}
            self.eval_names.append(es.name)
        self.eval_accuracy: dict[int, dict[str, float]] = {}
        n_labels = len(self.data.label_names)
        label_maps = {"id2label": dict(enumerate(self.data.label_names)),
                      "label2id": {n: i for i, n in enumerate(self.data.label_names)}}
        model_spec = parse_model(s["model"])
        try:
            if model_spec.base == TINY:
                config = BertConfig(vocab_size=_tokenizer(source).vocab_size, hidden_size=32, num_hidden_layers=2,
                                    num_attention_heads=2, intermediate_size=64, num_labels=n_labels, **label_maps)
                self._set_dropout(config, float(s["classifier_dropout"]))
                self.net = AutoModelForSequenceClassification.from_config(config)
            else:
                layers = {} if model_spec.layers is None else {"num_hidden_layers": model_spec.layers}
                config = AutoConfig.from_pretrained(source, num_labels=n_labels, **label_maps, **layers)
                self._set_dropout(config, float(s["classifier_dropout"]))
                if model_spec.pretrained:     # (with @N: the first N layers' weights)
                    self.net = AutoModelForSequenceClassification.from_pretrained(source, config=config)
                else:                   # random: the architecture, initialised from the trial's seed
                    self.net = AutoModelForSequenceClassification.from_config(config)
        except (OSError, ValueError) as exc:
            raise load_failure(s["model"], exc) from None
        self.device = torch.device("cuda" if torch.cuda.is_available() and space.resources.gpu > 0 else "cpu")
        self.net.to(self.device)
        groups: dict[bool, list] = {True: [], False: []}      # weight decay: not on biases and norms
        for n, p in self.net.named_parameters():
            groups[not (n.endswith("bias") or "LayerNorm" in n or "layer_norm" in n)].append(p)
        n_train = len(self.splits["train"][1])
        steps = space.train.max_epochs * -(-n_train // int(s["batch_size"]))
        if s["optimizer"] == "adam":        # the original protocol: Adam at a constant rate
            self.optimizer = torch.optim.Adam(self.net.parameters(), lr=float(s["lr"]))
            self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda step: 1.0)
        else:
            self.optimizer = torch.optim.AdamW([{"params": groups[True], "weight_decay": float(s["weight_decay"])},
                                                {"params": groups[False], "weight_decay": 0.0}], lr=float(s["lr"]))
            self.scheduler = get_linear_schedule_with_warmup(self.optimizer, int(float(s["warmup"]) * steps), steps)
        self.order = np.random.default_rng(seed)
        self.losses: list[float] = []
        self.dev_accuracy: dict[int, float] = {}
        self.confusion: dict[int, dict[str, list[list[int]]]] = {}
        self.losses_at: dict[int, dict[str, float]] = {}
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
        size = int(self.s["batch_size"])
        order = self.order.permutation(len(self.splits["train"][1]))
        total, count = 0.0, 0
        for b in range(0, len(order), size):
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
        scores, losses = {}, {}
        self.confusion[epoch] = {}
        for split in ("dev", "test"):
            pred, losses[split] = self._predict(split)
            gold = self.splits[split][1]
            scores[split] = float((pred == gold).mean())
            self.confusion[epoch][split] = np.bincount(gold * k + pred, minlength=k * k).reshape(k, k).tolist()
        dev_loss = losses["dev"]
        self.eval_accuracy[epoch] = {name: float((self._predict(f"eval:{name}")[0] == self.splits[f"eval:{name}"][1])
                                                 .mean()) for name in self.eval_names}
        self.losses_at[epoch] = losses
        self.dev_accuracy[epoch] = scores["dev"]
        select = scores["dev"] if self.stop_on == "accuracy" else -dev_loss
        return scores["dev"], scores["test"], select

    def details(self, epoch: int) -> dict[str, Any]:
        """What an epoch's stored row carries beyond the scores: the dev and test
        loss (the epochs table's dev_loss, test_loss) and the confusion matrices."""
        if epoch not in self.confusion:
            return {}
        losses = self.losses_at.get(epoch, {})
        return {"confusion": {"labels": list(self.data.label_names), **self.confusion[epoch]},
                "dev_loss": losses.get("dev"), "test_loss": losses.get("test")}

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

    def results(self, best_epoch: int) -> dict[str, Any]:
        """Accuracy on each evaluation set at the best dev epoch (``eval_<name>``)."""
        scores = self.eval_accuracy.get(best_epoch, {})
        return {f"eval_{name}": scores.get(name, float("nan")) for name in self.eval_names}
