"""One trial of the tagger: corpus encoding, equal-length batches, the
paper's optimizers, one training epoch and scoring (chunk F1 or accuracy)."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base import ModelBase, check_settings
from .corpora import load_corpus
from .embeddings import build_vocabulary, casing
from .metrics import chunk_prf, token_accuracy
from .network import Network, torch_modules
from .schemes import convert
from .settings import EVAL_BATCH, LIMITS, settings_of

if TYPE_CHECKING:
    from ..view import StudyView

__all__ = ["TaggerModel"]


@dataclass
class _Split:
    """A corpus split grouped by sentence length: length -> arrays."""

    groups: dict[int, dict[str, np.ndarray]]     # words (n, T), casing (n, T), chars (n, T, L), tags (n, T), index (n,)
    gold: list[list[str]]                        # original (BIO or POS) tags in file order
    tokens: int


@lru_cache(maxsize=4)
def _corpus(task_json: str):
    return load_corpus(json.loads(task_json))


def _encode(sentences, vocab, char_index, tag_index, scheme, corpus_scheme) -> _Split:
    by_len: dict[int, list[int]] = defaultdict(list)
    for i, s in enumerate(sentences):
        by_len[len(s)].append(i)
    groups = {}
    for n, idx in by_len.items():
        words = np.array([[vocab.lookup(w) for w in sentences[i].tokens] for i in idx], dtype=np.int64)
        cas = np.array([[casing(w) for w in sentences[i].tokens] for i in idx], dtype=np.int64)
        L = max(1, min(30, max(len(w) for i in idx for w in sentences[i].tokens)))
        chars = np.zeros((len(idx), n, L), dtype=np.int64)
        for r, i in enumerate(idx):
            for t, w in enumerate(sentences[i].tokens):
                ids = [char_index.get(ch, 1) for ch in w[:L]]
                chars[r, t, :len(ids)] = ids
        tags = []
        for i in idx:
            seq = list(sentences[i].tags)
            if corpus_scheme is not None and scheme != corpus_scheme:
                seq = convert(seq, scheme, corpus_scheme)
            tags.append([tag_index.get(t, 0) for t in seq])
        groups[n] = {"words": words, "casing": cas, "chars": chars, "tags": np.array(tags, dtype=np.int64),
                     "index": np.array(idx, dtype=np.int64)}
    return _Split(groups, [list(s.tags) for s in sentences], sum(len(s) for s in sentences))


class TaggerModel(ModelBase):
    """One trial of the tagger family (see the module docstring)."""

    def __init__(self, space: "StudyView", hparams: dict[str, Any], seed: int) -> None:
        torch, _ = torch_modules()
        self.torch = torch
        self.s = s = settings_of(space, hparams)
        check_settings(s, LIMITS, f"{space.path}", "tagger")
        self.rng = np.random.default_rng(seed)
        corpus = _corpus(json.dumps(space.task, sort_keys=True))
        self.corpus = corpus
        self.scheme = s["scheme"] if corpus.scheme is not None else None
        vocab = build_vocabulary(s["embeddings"], (w for x in corpus.train for w in x.tokens),
                                 (w for split in (corpus.dev, corpus.test) for x in split for w in x.tokens),
                                 min_count=int(s["min_count"]), seed=seed)
        self.vocab = vocab
        chars = sorted({ch for x in corpus.train for w in x.tokens for ch in w})
        char_index = {ch: i + 2 for i, ch in enumerate(chars)}              # 0 padding, 1 unknown
        train_tags = [t for x in corpus.train
                      for t in (convert(list(x.tags), self.scheme, corpus.scheme)
                                if self.scheme and self.scheme != corpus.scheme else x.tags)]
        self.tags = sorted(set(train_tags))
        tag_index = {t: i for i, t in enumerate(self.tags)}
        self.train, self.dev, self.test = (_encode(split, vocab, char_index, tag_index, self.scheme, corpus.scheme)
                                           for split in (corpus.train, corpus.dev, corpus.test))
        self.net = Network.build(s, vocab.vectors, len(chars) + 2, len(self.tags))
        self.optimizer = _optimizer(torch, s, [p for p in self.net.parameters() if p.requires_grad])
        self.use_chars = s["chars"] != "none"

    # ---------------------------------------------------------- batching
    def batches(self, split: _Split, *, shuffle: bool, size: int | None = None):
        """Equal-length mini-batches (the paper code's scheme, see the module docstring)."""
        size = size or int(self.s["batch_size"])
        out = []
        lengths = sorted(split.groups)
        for n in lengths:
            g = split.groups[n]
            order = self.rng.permutation(len(g["index"])) if shuffle else np.arange(len(g["index"]))
            bins = math.ceil(len(order) / size)
            per = math.ceil(len(order) / bins)
            for b in range(bins):
                out.append((n, order[b * per:(b + 1) * per]))
        if shuffle:
            out = [out[i] for i in self.rng.permutation(len(out))]
        return out

    def _tensors(self, g, rows):
        t = self.torch
        chars = t.from_numpy(g["chars"][rows]) if self.use_chars else None
        return t.from_numpy(g["words"][rows]), t.from_numpy(g["casing"][rows]), chars

    # ----------------------------------------------------------- Model API
    def train_epoch(self, epoch: int) -> float:
        _set_lr(self.optimizer, self.s, epoch)
        self.net.train()
        total, count = 0.0, 0
        for n, rows in self.batches(self.train, shuffle=True):
            loss = self.step(n, rows)
            if not math.isfinite(loss):
                return float("nan")
            total += loss * len(rows)
            count += len(rows)
        return total / max(count, 1)

    def batch_loss(self, n: int, rows) -> float:
        """The loss of the training sentences ``rows`` of length ``n`` as the
        network stands, without dropout and without a step."""
        g = self.train.groups[n]
        self.net.eval()
        try:
            with self.torch.no_grad():
                return float(self.net.loss(*self._tensors(g, rows), self.torch.from_numpy(g["tags"][rows])))
        finally:
            self.net.train()

    def step(self, n: int, rows) -> float:
        """One optimizer step on the training sentences ``rows`` of length ``n``
        (gradient clipping as configured); returns the batch loss before the
        step (NaN, and no step, when it is not finite)."""
        t = self.torch
        g = self.train.groups[n]
        words, cas, chars = self._tensors(g, rows)
        loss = self.net.loss(words, cas, chars, t.from_numpy(g["tags"][rows]))
        if not t.isfinite(loss):
            return float("nan")
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        params = [p for p in self.net.parameters() if p.grad is not None]
        if float(self.s["clip_value"]) > 0:
            t.nn.utils.clip_grad_value_(params, float(self.s["clip_value"]))
        if float(self.s["clip_norm"]) > 0:
            t.nn.utils.clip_grad_norm_(params, float(self.s["clip_norm"]))
        self.optimizer.step()
        return float(loss.detach())

    def predict(self, split: _Split) -> list[list[str]]:
        """Predicted tags of every sentence, in file order, in the corpus's scheme."""
        self.net.eval()
        out: list[list[str] | None] = [None] * len(split.gold)
        for n, rows in self.batches(split, shuffle=False, size=EVAL_BATCH):
            g = split.groups[n]
            pred = self.net.predict(*self._tensors(g, rows))
            for r, p in zip(g["index"][rows], pred):
                tags = [self.tags[k] for k in p]
                if self.scheme and self.scheme != self.corpus.scheme:
                    tags = convert(tags, self.corpus.scheme, self.scheme)
                out[r] = tags
        return out  # type: ignore[return-value]

    def score(self, split: _Split) -> float:
        """F1 of the chunks (or token accuracy, for POS corpora) on ``split``."""
        pred = self.predict(split)
        if self.corpus.metric == "accuracy":
            return token_accuracy(split.gold, pred)
        return chunk_prf(split.gold, pred)[2]

    def evaluate(self, epoch: int) -> tuple[float, float]:
        return self.score(self.dev), self.score(self.test)


_LR = {"sgd": 0.1, "adagrad": 0.01, "adadelta": 1.0, "rmsprop": 0.001, "adam": 0.001, "nadam": 0.002}
_SGD_SCHEDULE = ((5, 0.01), (3, 0.05), (1, 0.1))      # from epoch -> learning rate (the paper's code)


def _optimizer(torch, s, params):
    name = s["optimizer"]
    lr = float(s["lr"]) if s.get("lr") is not None else _LR[name]
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr)
    if name == "adagrad":
        return torch.optim.Adagrad(params, lr=lr, eps=1e-7)
    if name == "adadelta":
        return torch.optim.Adadelta(params, lr=lr, rho=0.95, eps=1e-7)
    if name == "rmsprop":
        return torch.optim.RMSprop(params, lr=lr, alpha=0.9, eps=1e-7)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, betas=(0.9, 0.999), eps=1e-7)
    return torch.optim.NAdam(params, lr=lr, betas=(0.9, 0.999), eps=1e-7, momentum_decay=0.004)


def _set_lr(optimizer, s, epoch: int) -> None:
    if s["optimizer"] != "sgd" or s.get("lr") is not None:
        return
    lr = next(rate for start, rate in _SGD_SCHEDULE if epoch >= start)
    for group in optimizer.param_groups:
        group["lr"] = lr
