"""One trial of the encoder family: embed once (cached), sample per seed, score."""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ...errors import UserError
from ...files import stable_hash, write_bytes
from ..base import ModelBase, check_settings
from ..modelsources import load_failure, model_source, parse_model
from ..sentencedata import cached_sentences
from ..vectors import load_vectors
from .dispersion import dispersion, knn_accuracy
from .settings import LIMITS, settings_of, vectors_source

if TYPE_CHECKING:
    from ..view import StudyView

__all__ = ["EncoderModel", "embed", "balanced_sample", "RANDOM_INIT_SEED"]

#: random weights are drawn once per option from this seed, so every trial seed judges the same encoder
RANDOM_INIT_SEED = 0
CACHE_VERSION = 1
_WORD = re.compile(r"\w+|[^\w\s]")
_SPLITS = ("dev", "test")


def balanced_sample(labels: np.ndarray, per_class: int, seed: int | Sequence[int]) -> np.ndarray:
    """Sorted indices of ``per_class`` examples of every class (all of a smaller
    class), drawn without replacement by a generator seeded with ``seed``.

    >>> balanced_sample(np.array([0, 0, 0, 1, 1, 1, 1]), 2, seed=1).tolist()
    [0, 1, 3, 5]
    """
    rng = np.random.default_rng(seed)
    out = [rng.choice(np.flatnonzero(labels == c), size=min(per_class, int((labels == c).sum())), replace=False)
           for c in np.unique(labels)]
    return np.sort(np.concatenate(out))


def _mean_vectors(texts: list[str], source: str) -> np.ndarray:
    tokens = [_WORD.findall(t.lower()) for t in texts]
    words, matrix = load_vectors(source, {w for ts in tokens for w in ts})
    index = {w: i for i, w in enumerate(words)}
    out = np.zeros((len(texts), matrix.shape[1]), np.float32)
    for i, ts in enumerate(tokens):
        rows = [index[w] for w in ts if w in index]
        if rows:                                   # a text without a known word stays at the origin
            out[i] = matrix[rows].mean(axis=0)
    return out


def _encoder_vectors(texts: list[str], s: dict[str, Any]) -> np.ndarray:
    import torch
    from transformers import AutoConfig, AutoModel, AutoTokenizer
    from transformers import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    model_spec = parse_model(s["model"])
    source = model_source(model_spec.base)
    try:
        tok = AutoTokenizer.from_pretrained(source)
        config = AutoConfig.from_pretrained(source, **({} if model_spec.layers is None else
                                                       {"num_hidden_layers": model_spec.layers}))
        if model_spec.pretrained and s["pretrained"]:
            net = AutoModel.from_pretrained(source, config=config)
        else:
            torch.manual_seed(RANDOM_INIT_SEED)
            net = AutoModel.from_config(config)
    except (OSError, ValueError) as exc:
        raise load_failure(s["model"], exc) from None
    net.eval()
    layer, n_states = int(s["layer"]), config.num_hidden_layers + 1
    if not -n_states <= layer < n_states:
        raise UserError(f"layer {layer}", f"{s['model']} has {n_states} hidden states (embeddings and "
                        f"{n_states - 1} layers).", f"Use a layer in [{-n_states}, {n_states - 1}].")
    order = np.argsort([len(t) for t in texts], kind="stable")        # similar lengths: little padding
    out = np.zeros((len(texts), config.hidden_size), np.float32)
    size = int(s["batch_size"])
    with torch.inference_mode():
        for b in range(0, len(texts), size):
            rows = order[b:b + size]
            enc = tok([texts[i] for i in rows], padding=True, truncation=True, max_length=int(s["max_length"]),
                      return_tensors="pt")
            hidden = net(**enc, output_hidden_states=True).hidden_states[layer]
            if s["pooling"] == "cls":
                vec = hidden[:, 0]
            else:
                mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                vec = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)
            out[rows] = vec.float().numpy()
    return out


def embed(texts: list[str], s: dict[str, Any]) -> np.ndarray:
    """The vectors of ``texts`` under the settings ``s`` (n × d, float32)."""
    source = vectors_source(s["model"])
    return _mean_vectors(texts, source) if source is not None else _encoder_vectors(texts, s)


def cache_key(s: dict[str, Any], task_json: str, split: str) -> str:
    """What the vectors of one split depend on, as a digest."""
    source = vectors_source(s["model"])
    if source is not None:
        what = {"vectors": source}
    else:
        model_spec = parse_model(s["model"])
        what = {"model": model_spec.base, "source": model_source(model_spec.base),
                "pretrained": model_spec.pretrained and s["pretrained"],
                "layers": model_spec.layers, "pooling": s["pooling"], "layer": int(s["layer"]),
                "max_length": int(s["max_length"])}
    text = json.dumps({**what, "task": task_json, "split": split, "version": CACHE_VERSION}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


@functools.lru_cache(maxsize=8)
def _memory(key: str, texts: tuple[str, ...], settings_json: str) -> np.ndarray:
    return embed(list(texts), json.loads(settings_json))


def cached_embeddings(cache_dir: str | None, key: str, texts: list[str], s: dict[str, Any]) -> np.ndarray:
    """The vectors of ``texts`` from ``cache_dir/encoder-<key>.npy``, computed
    and stored (whole or not at all) on first use; without a cache folder,
    kept in this process only."""
    settings_json = json.dumps(s, sort_keys=True)
    if cache_dir is None:
        return _memory(key, tuple(texts), settings_json)
    path = Path(cache_dir) / f"encoder-{key}.npy"
    if path.is_file():
        try:
            return np.load(path)
        except (OSError, ValueError):
            pass                                     # unreadable: computed again and replaced
    vectors = embed(texts, s)
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    np.save(buffer, vectors)
    write_bytes(buffer.getvalue(), path)
    return vectors


class EncoderModel(ModelBase):
    """One trial: the split vectors (cached), a class-balanced sample per split, the scores."""

    def __init__(self, space: "StudyView", hparams: dict[str, Any], seed: int, *, config_id: str = "",
                 cache_dir: str | None = None) -> None:
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")   # in the worker, never at import
        self.s = s = settings_of(space, hparams)
        check_settings(s, LIMITS, space.path, "encoder")
        task_json = json.dumps(space.task, sort_keys=True)
        data = cached_sentences(task_json)
        self.label_names = data.label_names
        self.draw = [seed, stable_hash(config_id)]       # the same sentences for every option of a draw
        t0 = time.perf_counter()
        self.vectors = {split: cached_embeddings(cache_dir, cache_key(s, task_json, split),
                                                 list(getattr(data, split).texts), s) for split in _SPLITS}
        self.embed_seconds = time.perf_counter() - t0
        self.labels = {split: np.asarray(getattr(data, split).labels) for split in _SPLITS}
        self.scores: dict[str, Any] = {}

    def train_epoch(self, epoch: int) -> float:
        return 0.0                                    # nothing is trained

    def evaluate(self, epoch: int) -> tuple[float, float]:
        t0 = time.perf_counter()
        out = {}
        for i, split in enumerate(_SPLITS):
            idx = balanced_sample(self.labels[split], int(self.s["per_class"]), self.draw + [i])
            x, y = self.vectors[split][idx], self.labels[split][idx]
            out[split] = (dispersion(x, y), x, y)
        d, x, y = out["test"]
        self.scores = {
            "dispersion_A": d.A, "dispersion_B": d.B,
            "sigma2": json.dumps({self.label_names[c]: v for c, v in d.sigma2.items()}),
            "knn_accuracy": knn_accuracy(x, y, int(self.s["k"])), "sentences": int(len(y)),
        }
        self.score_seconds = time.perf_counter() - t0
        return out["dev"][0].M, d.M

    def results(self, best_epoch: int) -> dict[str, Any]:
        return {**self.scores, "embed_seconds": self.embed_seconds, "score_seconds": self.score_seconds}
