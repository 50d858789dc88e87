"""Sentence-classification data: the Stanford Sentiment Treebank and (text, label) tables.

Readers return a :class:`Labelled` split (texts and integer labels over the
dataset's label names). Errors a user can cause -- a missing file, a broken
tree, a missing column, an empty file, a label the training file never has --
raise :class:`~study.errors.UserError` naming the file and the line.

Datasets a search space can name in ``task.dataset``:

* ``sst5`` -- the Stanford Sentiment Treebank (Socher et al. 2013) with its
  official splits, train 8,544 / dev 1,101 / test 2,210 sentences, five
  labels (0 very negative … 4 very positive). Files ``train.txt``,
  ``dev.txt``, ``test.txt`` hold one PTB-style tree per line with a label on
  every node; the sentence label is the root's. ``task.phrases: true`` trains
  on every labelled phrase of the training trees (deduplicated) instead of
  the root sentences only; dev and test are always root sentences.
* ``sst2`` -- the same trees with neutral (2) sentences dropped and labels
  0–1 → negative, 3–4 → positive (phrases likewise).
* ``table`` -- any (text, label) files: ``task.train``, ``task.dev``,
  ``task.test`` paths to TSV (``.tsv``/``.txt``) or CSV (``.csv``) files with
  a header; ``task.text_column`` (default ``text``) and ``task.label_column``
  (default ``label``). The label names are the training file's, sorted.

SST files are found like the tagging corpora (:mod:`study.families.datasets`):
``task.path``, then ``$SEEDSWEEP_DATA/sst5/``, then the download cache.
The treebank is distributed only inside a zip archive, so nothing is
downloaded: give a folder with the three files.

``task.train_sentences`` (with ``task.subset_seed``, default 0) trains on a
random subset of that many training examples, the same for every trial.
``task.dev_sentences`` and ``task.test_sentences`` do the same for the dev
and test sets -- for runs that must fit a small machine; a score on a test
subset is not the published benchmark's, so declare it as a deviation.
"""

from __future__ import annotations

import csv
import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from ..files import note_read
from .datasets import DatasetInfo, resolve_files, subset_rows

__all__ = ["Labelled", "Dataset", "read_sst_trees", "read_table", "load_sentences", "cached_sentences", "SENTENCE_DATASETS",
           "TASK_KEYS"]

SENTENCE_DATASETS = ("sst5", "sst2", "table")
TASK_KEYS = {"dataset", "path", "name", "phrases", "train_sentences", "subset_seed", "train", "dev", "test",
             "text_column", "label_column", "dev_sentences", "test_sentences"}
SST5_LABELS = ("very negative", "negative", "neutral", "positive", "very positive")
SST2_LABELS = ("negative", "positive")
_PTB_ESCAPES = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}"}
_TOKEN = re.compile(r"\(|\)|[^\s()]+")


@dataclass
class Labelled:
    """One split: ``texts[i]`` has label ``labels[i]`` (an index into the dataset's names)."""

    texts: list[str]
    labels: list[int]

    def __len__(self) -> int:
        return len(self.texts)


@dataclass
class Dataset:
    name: str
    label_names: tuple[str, ...]
    train: Labelled
    dev: Labelled
    test: Labelled
    note: str = ""


def _leaf(token: str) -> str:
    token = _PTB_ESCAPES.get(token, token)
    return token.replace("\\/", "/").replace("\\*", "*")


def _parse_tree(line: str, where: str) -> list[tuple[int, list[str]]]:
    """Every labelled node of one tree as (label, leaves), root first."""
    tokens = _TOKEN.findall(line)
    nodes: list[tuple[int, list[str]]] = []
    stack: list[tuple[int, list[str]]] = []
    i = 0
    try:
        while i < len(tokens):
            tok = tokens[i]
            if tok == "(":
                label = int(tokens[i + 1])
                node = (label, [])
                nodes.append(node)
                stack.append(node)
                i += 2
            elif tok == ")":
                done = stack.pop()
                if stack:
                    stack[-1][1].extend(done[1])
                i += 1
            else:
                if not stack:
                    raise ValueError("a word outside any bracket")
                stack[-1][1].append(_leaf(tok))
                i += 1
    except (ValueError, IndexError) as exc:
        raise UserError(where, f"not a labelled PTB tree ({exc}).",
                        "Each line must be one tree like '(3 (2 It) (4 works))' with integer labels.") from None
    if stack or not nodes or not nodes[0][1]:
        raise UserError(where, "unbalanced brackets or an empty tree.",
                        "Each line must be one complete tree; check that the file was not truncated.")
    return nodes


def read_sst_trees(path: str | Path, *, phrases: bool = False, binary: bool = False) -> Labelled:
    """Root sentences (or, with ``phrases``, every distinct labelled phrase) of an SST tree file.

    With ``binary``, neutral items are dropped and labels become 0 (0–1) or 1 (3–4)."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UserError(str(path), f"cannot read the file ({exc.strerror}).", "Check the path.") from None
    texts: list[str] = []
    labels: list[int] = []
    seen: set[str] = set()
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        nodes = _parse_tree(line, f"{path}:{lineno}")
        for label, leaves in (nodes if phrases else nodes[:1]):
            if not 0 <= label <= 4:
                raise UserError(f"{path}:{lineno}", f"label {label} is outside 0–4.", "SST labels are 0 to 4.")
            text = " ".join(leaves)
            if phrases:
                if text in seen:
                    continue
                seen.add(text)
            if binary:
                if label == 2:
                    continue
                label = int(label > 2)
            texts.append(text)
            labels.append(label)
    if not texts:
        raise UserError(str(path), "no trees in the file.", "Give a file with one labelled tree per line.")
    return Labelled(texts, labels)


def _rows(path: Path, text_column: str, label_column: str) -> list[tuple[str, str, int]]:
    delimiter = "," if path.suffix.lower() == ".csv" else "\t"
    try:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.reader(f, delimiter=delimiter)
            header = next(reader, None)
            if header is None:
                raise UserError(str(path), "the file is empty.", "Give a file with a header and one row per text.")
            for column in (text_column, label_column):
                if column not in header:
                    raise UserError(f"{path}:1", f"no column {column!r} in the header ({', '.join(header)}).",
                                    "Name the columns with task.text_column and task.label_column.")
            ti, li = header.index(text_column), header.index(label_column)
            out = []
            for lineno, row in enumerate(reader, 2):
                if not row:
                    continue
                if len(row) <= max(ti, li):
                    raise UserError(f"{path}:{lineno}", f"{len(row)} fields, the header has {len(header)}.",
                                    "Quote texts holding the delimiter, or fix the row.")
                out.append((row[ti], row[li].strip(), lineno))
    except OSError as exc:
        raise UserError(str(path), f"cannot read the file ({exc.strerror}).", "Check the path.") from None
    if not out:
        raise UserError(str(path), "no rows below the header.", "Give at least one (text, label) row.")
    return out


def read_table(path: str | Path, *, text_column: str = "text", label_column: str = "label",
               label_names: tuple[str, ...] | None = None) -> tuple[Labelled, tuple[str, ...]]:
    """A TSV or CSV (text, label) file; label names are its sorted labels unless given."""
    path = Path(path)
    note_read(path)
    rows = _rows(path, text_column, label_column)
    names = label_names or tuple(sorted({label for _, label, _ in rows}))
    index = {n: i for i, n in enumerate(names)}
    labels = []
    for _, label, lineno in rows:
        if label not in index:
            raise UserError(f"{path}:{lineno}", f"label {label!r} does not occur in the training file.",
                            f"Use one of: {', '.join(names)}.")
        labels.append(index[label])
    return Labelled([t for t, _, _ in rows], labels), names


def _subset(split: Labelled, n: int | None, seed: int) -> Labelled:
    keep = subset_rows(len(split), n, seed)
    return split if keep is None else Labelled([split.texts[i] for i in keep], [split.labels[i] for i in keep])


def _sst_files(task: dict) -> dict[str, Path]:
    info = DatasetInfo("sst5", {"train": "train.txt", "dev": "dev.txt", "test": "test.txt"}, lambda f, t: None)
    return resolve_files(info, task.get("path"), fetch=False)


@functools.lru_cache(maxsize=4)
def cached_sentences(task_json: str) -> Dataset:
    """:func:`load_sentences` of the task given as sorted JSON, kept per worker
    process: the trials a worker runs read their data once."""
    return load_sentences(json.loads(task_json))


def load_sentences(task: dict) -> Dataset:
    """The dataset a search space's ``task`` names, with the subsets it asks for."""
    for key in ("train_sentences", "dev_sentences", "test_sentences"):
        n = task.get(key)
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise UserError(f"task.{key}", f"{n!r} is not a number of sentences.", "Give a whole number ≥ 1.")
    data = _load_sentences(task)
    seed = int(task.get("subset_seed", 0))
    dev, test = _subset(data.dev, task.get("dev_sentences"), seed), _subset(data.test, task.get("test_sentences"), seed)
    return Dataset(data.name, data.label_names, data.train, dev, test, data.note)


def _load_sentences(task: dict) -> Dataset:
    name = task.get("dataset")
    if name not in SENTENCE_DATASETS:
        raise UserError(f"task.dataset {name!r}", "unknown dataset for sentence classification.",
                        f"Use one of: {', '.join(SENTENCE_DATASETS)}.")
    n, seed = task.get("train_sentences"), int(task.get("subset_seed", 0))
    if name in ("sst5", "sst2"):
        files = _sst_files(task)
        binary = name == "sst2"
        phrases = bool(task.get("phrases", False))
        train = read_sst_trees(files["train"], phrases=phrases, binary=binary)
        dev = read_sst_trees(files["dev"], binary=binary)
        test = read_sst_trees(files["test"], binary=binary)
        note = "SST official splits" + (", all labelled training phrases" if phrases else ", root sentences")
        return Dataset(name, SST2_LABELS if binary else SST5_LABELS, _subset(train, n, seed), dev, test, note)
    for role in ("train", "dev", "test"):
        if not task.get(role):
            raise UserError(f"task.{role}", "missing for dataset 'table'.",
                            "Give task.train, task.dev and task.test as paths to TSV or CSV files.")
    columns = {"text_column": task.get("text_column", "text"), "label_column": task.get("label_column", "label")}
    train, names = read_table(Path(task["train"]).expanduser(), **columns)
    dev, _ = read_table(Path(task["dev"]).expanduser(), label_names=names, **columns)
    test, _ = read_table(Path(task["test"]).expanduser(), label_names=names, **columns)
    return Dataset(str(task.get("name") or "table"), names, _subset(train, n, seed), dev, test, "")
