"""What every import source hands over (a Ray Tune folder, an Optuna study,
an MLflow experiment, a W&B runs export) and the one way it becomes a run
directory.

A source reader returns :class:`SourceTrials`: one row per trial (its
parameters, the scores under the names the user gave, the source's own
columns), each trial's key, status and reason, every report as an epoch row,
the metrics any trial reported, and one digest of what was read for the
manifest. :func:`import_source` checks the user's flags against those rows
and writes the run directory through
:func:`analysis.reading.imported.write_import` (whole or not at all).

A trial's status is ``ok``, ``failed`` (it raised, or never reported the
score) or ``stopped`` (a pruner or scheduler ended it early: its last report
is not a finished trial's score, so like a failed trial it is counted and
shown, never scored).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from seedsweep.study.errors import UserError
from seedsweep.study.store.rundir import RunDir

from .imported import spec_from_flags, write_import

__all__ = ["SourceTrials", "import_source", "canonical_digest", "finite", "number", "flatten", "require_metric"]


def finite(value: Any) -> float:
    """``value`` as a float, NaN where it is not a finite number."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return math.nan
    return v if math.isfinite(v) else math.nan


def number(text: Any) -> Any:
    """Text as an int or a float where it reads as one (MLflow keeps every parameter as text), else unchanged.

    >>> [number("3"), number("0.01"), number("adam"), number(""), number(None)]
    [3, 0.01, 'adam', None, None]
    """
    if text is None or text == "":
        return None
    if not isinstance(text, str):
        return text
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def flatten(params: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dictionaries as ``outer/inner`` keys; lists and other objects as JSON text.

    >>> flatten({"opt": {"name": "adam", "lr": 0.1}, "layers": [2, 3], "seed": 1})
    {'opt/name': 'adam', 'opt/lr': 0.1, 'layers': '[2, 3]', 'seed': 1}
    """
    out: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, name + "/"))
        elif value is None or isinstance(value, (str, int, float, bool)):
            out[name] = value
        else:
            out[name] = json.dumps(value, sort_keys=True, default=str)
    return out


def canonical_digest(records: Sequence[Any]) -> str:
    """SHA-256 of the records as canonical JSON: the same trials read from any storage give the same digest."""
    h = hashlib.sha256()
    for record in records:
        h.update(json.dumps(record, sort_keys=True, default=str).encode() + b"\n")
    return h.hexdigest()


def require_metric(where: str, flag: str, name: str | None, metrics: Sequence[str], what: str = "trial") -> None:
    """A located error unless the metric ``name`` (given with ``flag``) is one of ``metrics``."""
    if name is not None and name not in metrics:
        raise UserError(f"{where}: {flag} {name}", f"no {what} reported a metric {name!r}.",
                        f"Name one the {what}s reported: {', '.join(list(metrics)[:30]) or '(none reported any)'}.")


@dataclass
class SourceTrials:
    """One source read: ``rows`` (one per trial: parameters, the score columns, the source's own columns),
    ``keys``/``statuses``/``reasons`` (one each per row; a status None is ``ok`` when the score is finite),
    ``epochs`` (``trial_key``, ``epoch``, ``test_score``, ``dev_score``, ``metric/<name>``), ``metrics`` (every
    metric any trial reported), ``kind`` and ``digest`` for the manifest, ``result_columns`` (the source's
    bookkeeping: never pairing keys) and ``name`` (the study's name)."""
    rows: pd.DataFrame
    keys: list[str]
    statuses: list[str | None]
    reasons: list[str | None]
    epochs: pd.DataFrame
    metrics: list[str]
    kind: str
    digest: str
    result_columns: list[str]
    name: str


def import_source(where: str | Path, read: SourceTrials, out: str | Path, *, score: str | None,
                  dev_score: str | None = None, choice: str | None = None, options: Sequence[str] | None = None,
                  ignore: Sequence[str] = (), results: Sequence[str] = (), seed: str | None = None,
                  mode: str = "max", task: str | None = None, task_name: str | None = None,
                  command: list[str] | None = None) -> Path:
    """Write the trials ``read`` from ``where`` as the run directory ``out`` (flags as
    :func:`analysis.reading.imported.import_csv`; ``task``: the column naming each trial's task); returns its path."""
    out = Path(out)
    RunDir.check_import_target(out)
    spec = spec_from_flags(Path(str(where)), read.rows, task=task, score=score, dev_score=dev_score, choice=choice,
                           options=options, ignore=ignore, mode=mode,
                           results=[*results, *(c for c in read.result_columns if c not in (seed, choice, task))])
    source = {"source": str(where), "kind": read.kind, "sha256": read.digest, "rows": int(len(read.rows)),
              "columns": [str(c) for c in read.rows.columns], "metrics": read.metrics, "preset": None}
    return write_import(Path(str(where)), out, read.rows, spec, source, keys=read.keys, task_name=task_name,
                        seed=seed, reasons=read.reasons, statuses=read.statuses, epochs=read.epochs,
                        command=command, study=read.name)
