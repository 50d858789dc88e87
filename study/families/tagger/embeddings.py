"""Pretrained word embeddings and the paper's word preprocessing.

Sources: :mod:`study.families.vectors` (``glove-6b-50d``, a text file, or a
name in ``$SEEDSWEEP_EMBEDDINGS``).

Vocabulary (Reimers & Gurevych's preprocessing): a token is looked up as
written, then lower-cased, then lower-cased with every digit replaced by
``0``; the first hit gives its vector. Training tokens that none of the three
finds and that occur at least ``min_count`` (50) times in the training data get
a new vector drawn uniformly from ±0.25; every other token maps to UNKNOWN
(also uniform ±0.25), and index 0 is PADDING (zeros). Vectors are drawn from a
generator seeded by the trial's seed. Embeddings are frozen unless the
search space sets ``train_embeddings: true``.

Casing (the paper's extra feature): each token gets one of eight classes
(padding, other, numeric, mainly numeric, all lower, all upper, initial
upper, contains digit), embedded in 10 trained dimensions by the model.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from ..vectors import PACKAGED, load_vectors

__all__ = ["Vocabulary", "build_vocabulary", "load_vectors", "casing", "CASINGS", "normalize_number",
           "PACKAGED"]

CASINGS = ("PADDING", "other", "numeric", "mainly_numeric", "allLower", "allUpper", "initialUpper",
           "contains_digit")
_DIGIT = re.compile(r"[0-9]")


def normalize_number(word: str) -> str:
    """Lower-case with every digit replaced by 0 ("1,234.5" -> "0,000.0")."""
    return _DIGIT.sub("0", word.lower())


def casing(word: str) -> int:
    """Index of the casing class of ``word`` in :data:`CASINGS`."""
    digits = sum(ch.isdigit() for ch in word)
    share = digits / max(len(word), 1)
    if word.isdigit():
        return CASINGS.index("numeric")
    if share > 0.5:
        return CASINGS.index("mainly_numeric")
    if word.islower():
        return CASINGS.index("allLower")
    if word.isupper():
        return CASINGS.index("allUpper")
    if word[:1].isupper():
        return CASINGS.index("initialUpper")
    if digits:
        return CASINGS.index("contains_digit")
    return CASINGS.index("other")


@dataclass
class Vocabulary:
    """Word index and the initial embedding matrix (row 0 PADDING, row 1 UNKNOWN)."""

    index: dict[str, int]
    vectors: np.ndarray
    found: int            # corpus word types with a pretrained vector
    new: int              # frequent training words given a new random vector

    def lookup(self, word: str) -> int:
        """The row of ``word``: as written, lower-cased, digits normalised, else the unknown word's."""
        for key in (word, word.lower(), normalize_number(word)):
            i = self.index.get(key)
            if i is not None:
                return i
        return 1


def build_vocabulary(source: str, train_tokens: Iterable[str], other_tokens: Iterable[str] = (), *,
                     min_count: int = 50, seed: int = 0) -> Vocabulary:
    """The embedding rows the corpus needs (see the module docstring)."""
    train_counts = Counter(train_tokens)
    types = set(train_counts) | set(other_tokens)
    keys = set()
    for w in types:
        keys.update((w, w.lower(), normalize_number(w)))
    words, matrix = load_vectors(source, keys)
    rng = np.random.default_rng(seed)
    dim = matrix.shape[1]
    index: dict[str, int] = {}
    rows = [np.zeros(dim, np.float32), rng.uniform(-0.25, 0.25, dim).astype(np.float32)]
    for w, v in zip(words, matrix):
        if w not in index:
            index[w] = len(rows)
            rows.append(v)
    found = sum(1 for w in types if any(k in index for k in (w, w.lower(), normalize_number(w))))
    new = 0
    for w, n in sorted(train_counts.items()):
        if n >= min_count and not any(k in index for k in (w, w.lower(), normalize_number(w))):
            index[w] = len(rows)
            rows.append(rng.uniform(-0.25, 0.25, dim).astype(np.float32))
            new += 1
    return Vocabulary(index=index, vectors=np.stack(rows), found=found, new=new)
