"""Table rows of one finished trial: what the driver's callback stores and
what the tests' fixtures build, in one place.

A trial's last report (``final``) becomes an outcome; :func:`trial_row` joins
identity, hyperparameters and outcome into one row of the trials schema;
:func:`epoch_rows` and :func:`confusion_rows` turn the per-epoch reports into
rows of the epochs and confusion tables.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

import pyarrow as pa

from ..schema import CONFUSION, EPOCHS, TrialSpec

__all__ = ["trial_row", "epoch_rows", "confusion_rows", "outcome_of", "parse_time", "nan_to_none"]


def parse_time(value: str | None) -> datetime | None:
    """An ISO time as reported by a worker (None stays None)."""
    return datetime.fromisoformat(value) if value else None


def nan_to_none(x: Any) -> Any:
    """NaN as a missing value (Parquet null), anything else unchanged.

    >>> nan_to_none(float("nan")) is None, nan_to_none(0.5)
    (True, 0.5)
    """
    return None if isinstance(x, float) and math.isnan(x) else x


def outcome_of(final: dict[str, Any]) -> dict[str, Any]:
    """The outcome columns of a trial from its last (``final``) report."""
    return {
        "status": final["status"], "reason": final["reason"], "error": None,
        "epochs_run": final["epochs_run"], "best_epoch": final["best_epoch"],
        "dev_score": nan_to_none(final["dev_score_best"]),
        "test_score": nan_to_none(final["test_score_best"]),
        "test_score_max": nan_to_none(final["test_score_max"]),
        "test_score_last": nan_to_none(final.get("test_score_last", float("nan"))),
        "metric": final["metric"], "train_seconds": final["train_seconds"], "node": final["node"],
        "gpu_ids": final.get("gpu_ids"),
        "started_at": parse_time(final["started_at"]), "finished_at": parse_time(final["finished_at"]),
        **{k: nan_to_none(v) for k, v in (final.get("results") or {}).items()},
    }


def trial_row(study: str, task: str, trial: TrialSpec, schema: pa.Schema, outcome: dict[str, Any]) -> pa.Table:
    """One row of the trials table: identity, hyperparameters, outcome. The
    option is stored as text, exactly as written in the study file."""
    row: dict[str, Any] = {
        "study": study, "task": task, "trial_key": trial.key,
        "config_id": trial.config_id, "choice": trial.choice, "option": str(trial.option), "seed": trial.seed,
    }
    row.update(trial.hparams)
    row.update(trial.extra)
    row.update(outcome)
    return pa.Table.from_pylist([{f.name: row.get(f.name) for f in schema}], schema=schema)


def epoch_rows(key: str, rows: list[dict[str, Any]]) -> pa.Table:
    """The epochs-table rows of trial ``key`` from its per-epoch reports."""
    return pa.Table.from_pylist([{**{f.name: r.get(f.name) for f in EPOCHS}, "trial_key": key} for r in rows],
                                schema=EPOCHS)


def confusion_rows(key: str, rows: list[dict[str, Any]]) -> pa.Table | None:
    """The confusion counts that epoch rows carry (``details`` of a classifying
    family), as rows of the ``confusion`` table; None when there are none."""
    out = []
    for r in rows:
        c = r.get("confusion")
        if not c:
            continue
        labels = c["labels"]
        for split in ("dev", "test"):
            for g, counts in enumerate(c.get(split, [])):
                out.extend({"trial_key": key, "epoch": r["epoch"], "split": split, "gold": labels[g],
                            "predicted": labels[p], "count": int(n)} for p, n in enumerate(counts))
    return pa.Table.from_pylist(out, schema=CONFUSION) if out else None
