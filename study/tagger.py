"""The ``tagger`` family: the BiLSTM sequence tagger of Reimers & Gurevych (2017).

Network (every part selectable from a search space; defaults in brackets):

* input per token: the frozen pretrained word vector (``embeddings``
  [glove-6b-50d], :mod:`study.embeddings`), a trained 10-dim casing vector,
  and optionally a character representation (``chars``: ``none`` | ``cnn`` --
  30-dim characters, 30 filters of width 3, max-pooled (Ma & Hovy 2016) |
  ``lstm`` -- a BiLSTM of 25 units per direction over the characters, final
  states concatenated (Lample et al. 2016)) [none];
* ``layers`` stacked BiLSTM layers [2] of ``units`` units per direction [100];
* ``classifier``: ``softmax`` (per-token cross-entropy) or ``crf`` (a
  linear-chain CRF, :mod:`study.crf`) [softmax];
* ``dropout`` [variational] with rates ``dropout_output`` [0.25] and
  ``dropout_recurrent`` [0.25] (the paper's grid: 0, 0.05, 0.1, 0.25, 0.5):

  - ``none``: nothing is masked;
  - ``naive``: the output of every BiLSTM layer is multiplied by a fresh
    Bernoulli mask at **every time step** (rate ``dropout_output``);
    the recurrent state is not masked;
  - ``variational``: one mask per sentence, the **same at every time step**,
    on the output of every BiLSTM layer (rate ``dropout_output``) and on the
    recurrent state h_{t−1} fed back into each direction's LSTM (rate
    ``dropout_recurrent``; Gal & Ghahramani 2016).

  Masks scale kept units by 1/(1 − rate); nothing is masked at evaluation.

Training (:class:`TaggerModel`): ``optimizer`` sgd | adagrad | adadelta |
rmsprop | adam | nadam [nadam] with the defaults of their papers as Keras
ships them (SGD starts at 0.1 and follows the paper code's schedule: 0.05
from epoch 3, 0.01 from epoch 5); ``clip_value`` (clip every gradient
element to ±v) and ``clip_norm`` (rescale the whole gradient to norm ≤ v,
Pascanu et al. 2013), each 0 (off) or one of 1, 3, 5, 10 [clip_norm 1];
mini-batches of ``batch_size`` [32] sentences **of equal length**, as the
paper's code builds them: sentences are grouped by length, each group is
shuffled and cut into ceil(n / batch) near-equal batches, and the order of
the batches is shuffled every epoch (no padding, no packing); ``scheme`` BIO
| IOB | IOBES [BIO] re-tags the training data of chunk corpora, and
predictions are converted back to BIO before scoring with
:func:`study.metrics.chunk_prf` (POS: token accuracy). Early stopping, the
test score at the best dev epoch and the ``diverged`` status (a non-finite
loss) come from the shared loop in :mod:`study.trial`.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from .errors import UserError
from .families import check_task_and_names
from .space import Space, Train

__all__ = ["FAMILY", "TaggerModel", "DEFAULTS", "settings_of"]

DEFAULTS: dict[str, Any] = {
    "classifier": "softmax", "optimizer": "nadam", "dropout": "variational", "dropout_output": 0.25,
    "dropout_recurrent": 0.25, "chars": "none", "layers": 2, "units": 100, "scheme": "BIO", "batch_size": 32,
    "clip_value": 0.0, "clip_norm": 1.0, "embeddings": "glove-6b-50d", "train_embeddings": False,
    "casing": True, "min_count": 50, "lr": None,
}
CHOICES = {
    "classifier": ("softmax", "crf"), "optimizer": ("sgd", "adagrad", "adadelta", "rmsprop", "adam", "nadam"),
    "dropout": ("none", "naive", "variational"), "chars": ("none", "cnn", "lstm"), "scheme": ("BIO", "IOB", "IOBES"),
}
EVAL_BATCH = 256     # sentences per prediction batch (no gradients: larger is faster)
TASK_KEYS = {"dataset", "path", "train_sentences", "subset_seed", "column", "name"}


def settings_of(space: Space, hparams: dict[str, Any]) -> dict[str, Any]:
    """Defaults, then ``fixed``, then the trial's hyperparameters (null = unset)."""
    out = dict(DEFAULTS)
    out.update(dict(space.fixed))
    out.update({k: v for k, v in hparams.items() if v is not None})
    return out


# ------------------------------------------------------------------ network


def _torch():
    import torch
    from torch import nn

    return torch, nn


class _Network:
    """Built lazily so that validating a space never imports torch."""

    @staticmethod
    def build(s: dict[str, Any], vectors: np.ndarray, n_chars: int, n_tags: int):
        torch, nn = _torch()
        from .crf import CRF

        class CharCNN(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(n_chars, 30, padding_idx=0)
                self.conv = nn.Conv1d(30, 30, kernel_size=3, padding=1)
                self.dim = 30

            def forward(self, chars):                      # (N, L) -> (N, 30)
                x = self.conv(self.emb(chars).transpose(1, 2))
                x = x.masked_fill((chars == 0).unsqueeze(1), -1e4)
                return x.max(dim=2).values

        class CharLSTM(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(n_chars, 30, padding_idx=0)
                self.lstm = nn.LSTM(30, 25, batch_first=True, bidirectional=True)
                self.dim = 50

            def forward(self, chars):
                lengths = (chars != 0).sum(1).clamp(min=1)
                packed = nn.utils.rnn.pack_padded_sequence(self.emb(chars), lengths.cpu(), batch_first=True,
                                                           enforce_sorted=False)
                _, (h, _) = self.lstm(packed)
                return torch.cat([h[0], h[1]], dim=1)

        class BiLSTM(nn.Module):
            """One BiLSTM layer (``nn.LSTM``'s parameters). With a recurrent
            dropout rate, training runs the recurrence step by step so that
            h_{t-1} is masked by one mask per sentence and direction, the same
            at every time step; evaluation (and rate 0) uses the fused kernel."""

            def __init__(self, d_in, units, rate):
                super().__init__()
                self.units, self.rate = units, rate
                self.lstm = nn.LSTM(d_in, units, batch_first=True, bidirectional=True)

            def direction(self, x, suffix, mask):
                lstm = self.lstm
                w_ih, w_hh = getattr(lstm, "weight_ih_l0" + suffix), getattr(lstm, "weight_hh_l0" + suffix)
                bias = getattr(lstm, "bias_ih_l0" + suffix) + getattr(lstm, "bias_hh_l0" + suffix)
                xp = nn.functional.linear(x, w_ih, bias)               # (B, T, 4H), gates i, f, g, o
                B, T, _ = xp.shape
                h = xp.new_zeros(B, self.units)
                c = xp.new_zeros(B, self.units)
                outs = []
                for t in range(T):
                    i, f, g, o = (xp[:, t] + nn.functional.linear(h * mask, w_hh)).chunk(4, dim=1)
                    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                    h = torch.sigmoid(o) * torch.tanh(c)
                    outs.append(h)
                return torch.stack(outs, dim=1)

            def forward(self, x):                                     # (B, T, D), equal lengths
                if not self.training or self.rate <= 0:
                    return self.lstm(x)[0]
                keep = 1 - self.rate
                masks = [torch.bernoulli(x.new_full((x.shape[0], self.units), keep)) / keep for _ in range(2)]
                out_f = self.direction(x, "", masks[0])
                out_b = self.direction(x.flip(1), "_reverse", masks[1]).flip(1)
                return torch.cat([out_f, out_b], dim=2)

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.words = nn.Embedding.from_pretrained(torch.tensor(vectors), freeze=not s["train_embeddings"],
                                                          padding_idx=0)
                d = vectors.shape[1]
                self.casing = nn.Embedding(8, 10) if s["casing"] else None
                d += 10 if s["casing"] else 0
                self.chars = {"cnn": CharCNN, "lstm": CharLSTM}.get(s["chars"], lambda: None)()
                d += self.chars.dim if self.chars is not None else 0
                self.dropout, self.p_out = s["dropout"], float(s["dropout_output"])
                rec = float(s["dropout_recurrent"]) if s["dropout"] == "variational" else 0.0
                self.lstms = nn.ModuleList()
                for _ in range(int(s["layers"])):
                    self.lstms.append(BiLSTM(d, int(s["units"]), rec))
                    d = 2 * int(s["units"])
                self.out = nn.Linear(d, n_tags)
                self.crf = CRF(n_tags) if s["classifier"] == "crf" else None

            def mask_outputs(self, h):
                if not self.training or self.dropout == "none" or self.p_out <= 0:
                    return h
                keep = 1 - self.p_out
                if self.dropout == "naive":              # a fresh mask at every time step
                    m = torch.bernoulli(h.new_full(h.shape, keep))
                else:                                    # variational: one mask per sentence
                    m = torch.bernoulli(h.new_full((h.shape[0], 1, h.shape[2]), keep))
                return h * m / keep

            def emissions(self, words, casing, chars):
                parts = [self.words(words)]
                if self.casing is not None:
                    parts.append(self.casing(casing))
                if self.chars is not None:
                    B, T = words.shape
                    parts.append(self.chars(chars.view(B * T, -1)).view(B, T, -1))
                h = torch.cat(parts, dim=2)
                for layer in self.lstms:
                    h = self.mask_outputs(layer(h))
                return self.out(h)

            def loss(self, words, casing, chars, tags):
                e = self.emissions(words, casing, chars)
                if self.crf is not None:
                    return self.crf.nll(e, tags)
                return nn.functional.cross_entropy(e.reshape(-1, e.shape[-1]), tags.reshape(-1))

            @torch.no_grad()
            def predict(self, words, casing, chars):
                e = self.emissions(words, casing, chars)
                if self.crf is not None:
                    return self.crf.decode(e)
                return e.argmax(dim=2).tolist()

        return Net()


# --------------------------------------------------------------------- data


@dataclass
class _Split:
    """A corpus split grouped by sentence length: length -> arrays."""

    groups: dict[int, dict[str, np.ndarray]]     # words (n, T), casing (n, T), chars (n, T, L), tags (n, T), index (n,)
    gold: list[list[str]]                        # original (BIO or POS) tags in file order
    tokens: int


@lru_cache(maxsize=4)
def _corpus(task_json: str):
    from .corpora import load_corpus

    return load_corpus(json.loads(task_json))


def _encode(sentences, vocab, char_index, tag_index, scheme, corpus_scheme) -> _Split:
    from .embeddings import casing
    from .schemes import convert

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


class TaggerModel:
    """One trial of the tagger family (see the module docstring)."""

    def __init__(self, space: Space, hparams: dict[str, Any], seed: int) -> None:
        torch, _ = _torch()
        from .embeddings import build_vocabulary
        from .schemes import convert

        self.torch = torch
        self.s = s = settings_of(space, hparams)
        _validate_settings(s, where=f"{space.path}")
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
        self.net = _Network.build(s, vocab.vectors, len(chars) + 2, len(self.tags))
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
        t = self.torch
        _set_lr(self.optimizer, self.s, epoch)
        self.net.train()
        total, count = 0.0, 0
        for n, rows in self.batches(self.train, shuffle=True):
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
            total += float(loss.detach()) * len(rows)
            count += len(rows)
        return total / max(count, 1)

    def predict(self, split: _Split) -> list[list[str]]:
        """Predicted tags of every sentence, in file order, in the corpus's scheme."""
        from .schemes import convert

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
        from .metrics import chunk_prf, token_accuracy

        pred = self.predict(split)
        if self.corpus.metric == "accuracy":
            return token_accuracy(split.gold, pred)
        return chunk_prf(split.gold, pred)[2]

    def evaluate(self, epoch: int) -> tuple[float, float]:
        return self.score(self.dev), self.score(self.test)


# ---------------------------------------------------------------- training


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


def _validate_settings(s: dict[str, Any], where: str) -> None:
    for key, allowed in CHOICES.items():
        if s.get(key) not in allowed:
            raise UserError(f"{where}: {key}", f"{s.get(key)!r} is not a {key} of the tagger family.",
                            f"Use one of: {', '.join(allowed)}.")
    for key, lo, hi in (("layers", 1, 3), ("units", 1, 2048), ("batch_size", 1, 4096)):
        v = s.get(key)
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise UserError(f"{where}: {key}", f"expected an integer in [{lo}, {hi}], got {v!r}.", "Fix the value.")
    for key in ("dropout_output", "dropout_recurrent"):
        v = s.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 1:
            raise UserError(f"{where}: {key}", f"expected a rate in [0, 1), got {v!r}.", "Use e.g. 0.25.")
    for key in ("clip_value", "clip_norm"):
        v = s.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise UserError(f"{where}: {key}", f"expected 0 (off) or a positive threshold, got {v!r}.",
                            "Use 0, 1, 3, 5 or 10.")


class _Tagger:
    name: str = "tagger"
    uses_torch: bool = True
    train_defaults: Train = Train(max_epochs=30, patience=5, metric="f1", mode="max", timeout_s=None, retries=1)

    def validate(self, space: Space) -> None:
        from .corpora import DATASETS

        check_task_and_names(space, "tagger", TASK_KEYS, DATASETS, DEFAULTS)
        for choice, options in space.choices.items():
            if choice in CHOICES:
                bad = [o for o in options if o not in CHOICES[choice]]
                if bad:
                    raise UserError(f"{space.path}: compare.{choice}", f"unknown option(s) {bad}.",
                                    f"Use: {', '.join(CHOICES[choice])}.")
        for p in space.params:
            if p.name in CHOICES and p.kind == "choice":
                bad = [v for v in p.values if v not in CHOICES[p.name]]
                if bad:
                    raise UserError(f"{space.path}: space.{p.name}", f"unknown value(s) {bad}.",
                                    f"Use: {', '.join(CHOICES[p.name])}.")
        if space.fixed:
            _validate_settings(settings_of(space, {}), where=f"{space.path}: fixed")

    def resolve(self, space: Space) -> list[str]:
        from .corpora import load_corpus
        from .embeddings import load_vectors

        corpus = load_corpus(dict(space.task))
        source = settings_of(space, {})["embeddings"]
        words, matrix = load_vectors(source, {"the"})
        return [f"dataset {corpus.name}: train {len(corpus.train)}, dev {len(corpus.dev)}, test {len(corpus.test)} "
                f"sentences ({corpus.metric})", f"embeddings {source}: {matrix.shape[1]} dimensions"]

    def build(self, space: Space, trial) -> TaggerModel:
        return TaggerModel(space, trial.hparams, trial.seed)


FAMILY = _Tagger()
