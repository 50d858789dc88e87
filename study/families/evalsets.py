"""Evaluation sets and augmentation: what a study's ``evaluate:`` names.

``evaluate:`` lists test beds (``.yaml``, :mod:`study.testbeds`) and
(text, label) tables (``.tsv``/``.txt`` tab-separated, ``.csv``; columns
``text`` and ``label``). Every trial of a classifying family (``sentence``,
``transformer``) scores each set with the weights of its best dev epoch and
stores the accuracy as the result column ``eval_<name>``: one per
phenomenon of a test bed (only its ``eval`` sentences), one per table (named
after the file's stem). Result columns are never pairing keys; any can be
the ``score`` of ``compare``.

``augment: <phenomenon>`` with ``augment_factor: k`` (sentence family) adds
the phenomenon's ``train`` sentences -- from the test beds of ``evaluate`` --
k times to the training data.

Relative paths are read from the current directory, as ``task.path`` is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UserError
from ..testbeds import read_testbed
from .sentencedata import read_table

if TYPE_CHECKING:
    from .view import StudyView

__all__ = ["EvalSet", "eval_sets", "eval_columns", "augmentation", "phenomena", "label_ids", "check_evaluate",
           "describe_eval_sets"]


@dataclass(frozen=True)
class EvalSet:
    """One scored set: ``texts[i]`` has the label named ``labels[i]``."""

    name: str                    # the column is eval_<name>
    source: str
    texts: tuple[str, ...]
    labels: tuple[str, ...]

    @property
    def column(self) -> str:
        """The trials table's column of this set's scores (``eval_<name>``)."""
        return f"eval_{self.name}"


def _is_testbed(path: str) -> bool:
    return path.lower().endswith((".yaml", ".yml"))


def _table_name(path: str) -> str:
    return re.sub(r"[^a-z0-9_]+", "_", Path(path).stem.lower()).strip("_") or "table"


def eval_sets(paths: tuple[str, ...]) -> list[EvalSet]:
    """The sets ``paths`` name, in order; a name given twice is a user error."""
    out: list[EvalSet] = []
    for path in paths:
        if _is_testbed(path):
            bed = read_testbed(path)
            for phenomenon in bed.phenomena:
                rows = bed.sentences("eval", phenomenon)
                out.append(EvalSet(phenomenon, path, tuple(r.text for r in rows), tuple(r.label for r in rows)))
        else:
            split, names = read_table(Path(path).expanduser())
            out.append(EvalSet(_table_name(path), path, tuple(split.texts), tuple(names[i] for i in split.labels)))
    seen: dict[str, str] = {}
    for s in out:
        if s.name in seen:
            raise UserError(f"evaluate: {s.source}", f"the set '{s.name}' (column {s.column}) is also given by "
                            f"{seen[s.name]}.", "Rename the phenomenon or the file: every column needs its own name.")
        seen[s.name] = s.source
    return out


def eval_columns(space: "StudyView") -> dict[str, str]:
    """The result columns ``evaluate:`` adds: ``eval_<name>`` -> ``float``."""
    return {s.column: "float" for s in eval_sets(space.evaluate)}


def phenomena(space: "StudyView") -> list[str]:
    """The phenomena of the test beds ``evaluate:`` names (what ``augment`` may be)."""
    return [p for path in space.evaluate if _is_testbed(path) for p in read_testbed(path).phenomena]


def augmentation(space: "StudyView", phenomenon: str) -> tuple[list[str], list[str]]:
    """(texts, label names) of ``phenomenon``'s train sentences."""
    for path in space.evaluate:
        if _is_testbed(path):
            bed = read_testbed(path)
            if phenomenon in bed.phenomena:
                rows = bed.sentences("train", phenomenon)
                return [r.text for r in rows], [r.label for r in rows]
    raise UserError(f"{space.path}: augment", f"no test bed of evaluate: has the phenomenon {phenomenon!r}.",
                    f"Use none or one of: {', '.join(phenomena(space)) or '(name a test bed in evaluate:)'}.")


def label_ids(labels, label_names: tuple[str, ...], where: str) -> list[int]:
    """Label names as the dataset's indices; a label the dataset lacks is a user error."""
    index = {n: i for i, n in enumerate(label_names)}
    for label in labels:
        if label not in index:
            raise UserError(where, f"the label {label!r} is not one of the dataset's labels ({', '.join(label_names)}).",
                            "Write the test bed's or table's labels as the training data names them.")
    return [index[x] for x in labels]


def check_evaluate(space: "StudyView", classifies: bool, family: str) -> None:
    """``evaluate:`` only for classifying families; every file readable and well formed."""
    if not space.evaluate:
        return
    if not classifies:
        raise UserError(f"{space.path}: evaluate", f"the {family} family does not classify sentences, so it cannot "
                        "score evaluation sets.", "Remove evaluate:, or use the sentence or transformer family.")
    for i, path in enumerate(space.evaluate):
        try:
            eval_sets((path,))
        except UserError as err:         # say which entry of which study file named it
            raise UserError(f"{space.path}: evaluate[{i}]: {err.where}", err.problem, err.fix) from None
    eval_sets(space.evaluate)


def describe_eval_sets(space: "StudyView") -> list[str]:
    """One line per evaluation set, for ``seedsweep check --resolve``."""
    return [f"evaluation set {s.name} ({s.source}): {len(s.texts)} sentences, column {s.column}"
            for s in eval_sets(space.evaluate)]
