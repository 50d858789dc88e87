"""One trial of the sentence family: a small classifier trained with early stopping on dev."""

from __future__ import annotations

import functools
import json
import re
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base import ModelBase, check_settings
from ..evalsets import augmentation, eval_sets, label_ids
from ..sentencedata import cached_sentences
from ..vectors import load_vectors
from .settings import LIMITS, auto_width, n_params, settings_of

if TYPE_CHECKING:
    from ..view import StudyView

__all__ = ["SentenceModel", "Prepared", "tokens", "Encoded", "order_seed"]

EVAL_BATCH = 256
CLIP = 5.0
_CLITIC = re.compile(r"(\w)(n't|'s|'re|'ve|'ll|'d|'m)\b")
_TOKEN = re.compile(r"n't|'[a-z]+|[^\W_]+(?:-[^\W_]+)*|[^\w\s]")


def tokens(text: str) -> list[str]:
    """Lower-cased PTB-style tokens, as the SST trees write them.

    >>> tokens("Anna didn't like it's ending -- a well-made mess.")
    ['anna', 'did', "n't", 'like', 'it', "'s", 'ending', '-', '-', 'a', 'well-made', 'mess', '.']
    """
    return _TOKEN.findall(_CLITIC.sub(r"\1 \2", text.lower()))


class Encoded:
    """Every text a trial reads as word ids (0 padding, 1 unknown) over one vector matrix."""

    def __init__(self, splits: dict[str, list[str]], source: str) -> None:
        toks = {name: [tokens(t) or ["<unk>"] for t in texts] for name, texts in splits.items()}
        wanted = {w for seqs in toks.values() for seq in seqs for w in seq}
        words, matrix = load_vectors(source, wanted)
        self.dim = matrix.shape[1]
        index = {w: i + 2 for i, w in enumerate(words)}
        self.vectors = np.concatenate([np.zeros((2, self.dim), np.float32), np.asarray(matrix, np.float32)])
        self.ids = {name: [np.asarray([index.get(w, 1) for w in seq], np.int64) for seq in seqs]
                    for name, seqs in toks.items()}
        self.coverage = sum(w in index for seqs in toks.values() for seq in seqs for w in seq) / max(
            1, sum(len(seq) for seqs in toks.values() for seq in seqs))


@functools.lru_cache(maxsize=4)
def _encoded(task_json: str, evaluate: tuple[str, ...], source: str, augment_texts: tuple[str, ...]) -> Encoded:
    """The word ids of every split, shared by the trials of one worker process."""
    data = cached_sentences(task_json)
    splits = {"train": data.train.texts, "dev": data.dev.texts, "test": data.test.texts, "augment": list(augment_texts)}
    for s in eval_sets(evaluate):
        splits[f"eval:{s.name}"] = list(s.texts)
    return Encoded(splits, source)


class Prepared:
    """What every trial of one configuration and option shares: settings, the
    splits as word ids with labels (augmentation included), the evaluation
    sets, the vector matrix and the width."""

    def __init__(self, space: "StudyView", hparams: dict[str, Any]) -> None:
        self.s = s = settings_of(space, hparams)
        check_settings(s, LIMITS, space.path, "sentence")
        task = dict(space.task) if s["phrases"] is None else {**space.task, "phrases": bool(s["phrases"])}
        task_json = json.dumps(task, sort_keys=True)
        self.data = data = cached_sentences(task_json)
        self.names = names = data.label_names
        aug_texts, aug_labels = ([], []) if s["augment"] == "none" else augmentation(space, s["augment"])
        self.enc = enc = _encoded(task_json, tuple(space.evaluate), str(s["embeddings"]), tuple(aug_texts))
        k = int(s["augment_factor"])
        aug_ids = label_ids(aug_labels, names, f"{space.path}: augment {s['augment']}")
        self.splits = {"train": (enc.ids["train"] + enc.ids["augment"] * k,
                                 np.asarray(list(data.train.labels) + aug_ids * k, np.int64)),
                       "dev": (enc.ids["dev"], np.asarray(data.dev.labels, np.int64)),
                       "test": (enc.ids["test"], np.asarray(data.test.labels, np.int64))}
        self.eval_names = []
        for es in eval_sets(tuple(space.evaluate)):
            labels = label_ids(es.labels, names, f"evaluate: {es.source} ({es.name})")
            self.splits[f"eval:{es.name}"] = (enc.ids[f"eval:{es.name}"], np.asarray(labels, np.int64))
            self.eval_names.append(es.name)
        import torch        # the device: only where a model trains

        # a GPU when the study asks for one and this worker has one (Ray sets CUDA_VISIBLE_DEVICES)
        self.device = torch.device("cuda" if space.resources.gpu > 0 and torch.cuda.is_available() else "cpu")
        self.arch = arch = str(s["architecture"])
        self.width = int(s["width"] or auto_width(arch, enc.dim, len(names), int(s["params_target"])))
        self.max_length = int(s["max_length"])

    def batch(self, split: str, rows):
        """Word ids (padded with 0), lengths and labels of ``rows`` of a split, as tensors on :attr:`device`."""
        import torch

        seqs, labels = self.splits[split]
        cut = [seqs[i][: self.max_length] for i in rows]
        lengths = np.asarray([len(x) for x in cut], np.int64)
        ids = np.zeros((len(rows), int(lengths.max())), np.int64)
        for j, x in enumerate(cut):
            ids[j, : len(x)] = x
        d = self.device
        return (torch.from_numpy(ids).to(d), torch.from_numpy(lengths).to(d),
                torch.from_numpy(labels[np.asarray(rows)]).to(d))

    def eval_batches(self, split: str):
        """The split in batches of :data:`EVAL_BATCH`, sorted by length (less padding)."""
        seqs = self.splits[split][0]
        order = np.argsort([len(x) for x in seqs], kind="stable")
        for start in range(0, len(seqs), EVAL_BATCH):
            yield self.batch(split, order[start:start + EVAL_BATCH])

    def results(self, params: int, scores: dict[str, float]) -> dict[str, Any]:
        """The family's result columns of one trial (``scores``: its best dev epoch's evaluation sets)."""
        return {"params": params, "units": self.width,
                **{f"eval_{name}": scores.get(name, float("nan")) for name in self.eval_names}}

    def network(self):
        """A new network of this configuration (its weights drawn from torch's global generator)."""
        import torch

        from .network import build_network, trainable_parameters     # torch at import: only when a model trains

        net = build_network(self.arch, torch.from_numpy(self.enc.vectors), self.width, len(self.names),
                            float(self.s["dropout"]))
        count = trainable_parameters(net)
        assert count == n_params(self.arch, self.width, self.enc.dim, len(self.names)), "parameter formula out of date"
        return net, count

    def collapse_reason(self, dev_accuracy: float) -> str | None:
        """Why a run with this best dev accuracy counts as collapsed (no better than the majority label), or None."""
        labels = self.splits["dev"][1]
        rate = float(np.bincount(labels).max()) / len(labels)
        if dev_accuracy <= rate:
            return f"collapsed: best dev accuracy {dev_accuracy:.4f} is no better than " \
                   f"answering the most frequent label ({rate:.4f})"
        return None


def order_seed(s: dict[str, Any], seed: int) -> int:
    """The seed of a trial's data order: ``order_seed`` when set, else the trial's seed."""
    return seed if s["order_seed"] is None else int(s["order_seed"])


class SentenceModel(ModelBase):
    """One trial of the sentence family (see the package docstring)."""

    def __init__(self, space: "StudyView", hparams: dict[str, Any], seed: int) -> None:
        import torch

        self.torch = torch
        self.prep = prep = Prepared(space, hparams)
        self.s, self.splits, self.eval_names, self.width = prep.s, prep.splits, prep.eval_names, prep.width
        self.net, self.params = prep.network()
        self.net.to(prep.device)
        s = self.s
        self.optimizer = torch.optim.Adam([p for p in self.net.parameters() if p.requires_grad], lr=float(s["lr"]),
                                          weight_decay=float(s["weight_decay"]))
        self.order = np.random.default_rng(order_seed(s, seed))
        self.dev_accuracy: dict[int, float] = {}
        self.eval_accuracy: dict[int, dict[str, float]] = {}

    def _batch(self, split: str, rows):
        return self.prep.batch(split, rows)

    # ----------------------------------------------------------- Model API
    def train_epoch(self, epoch: int) -> float:
        t = self.torch
        self.net.train()
        n = len(self.splits["train"][1])
        size = int(self.s["batch_size"])
        order = self.order.permutation(n)
        total = 0.0
        for b in range(0, n, size):
            ids, lengths, y = self._batch("train", order[b:b + size])
            loss = t.nn.functional.cross_entropy(self.net(ids, lengths), y)
            if not t.isfinite(loss):
                return float("nan")
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            t.nn.utils.clip_grad_norm_(self.net.parameters(), CLIP)
            self.optimizer.step()
            total += float(loss.detach()) * len(y)
        return total / max(n, 1)

    def accuracy(self, split: str) -> float:
        """Accuracy of the current weights on one split."""
        correct = 0
        self.net.eval()
        with self.torch.no_grad():
            for ids, lengths, y in self.prep.eval_batches(split):
                correct += int((self.net(ids, lengths).argmax(-1) == y).sum())
        return correct / len(self.splits[split][1])

    def evaluate(self, epoch: int) -> tuple[float, float]:
        dev, test = self.accuracy("dev"), self.accuracy("test")
        self.dev_accuracy[epoch] = dev
        self.eval_accuracy[epoch] = {name: self.accuracy(f"eval:{name}") for name in self.eval_names}
        return dev, test

    def collapse_reason(self, best_epoch: int) -> str | None:
        return self.prep.collapse_reason(self.dev_accuracy.get(best_epoch, 0.0))

    def results(self, best_epoch: int) -> dict[str, Any]:
        return self.prep.results(self.params, self.eval_accuracy.get(best_epoch, {}))
