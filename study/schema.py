"""The table contract shared by ``study`` (writer) and ``analysis`` (reader).

``trials``: one row per finished trial -- identity columns, one typed column
per hyperparameter (named exactly as its YAML key), then the outcome columns.
``epochs``: one row per trained epoch of a stored trial.
``confusion``: for families that classify (transformer), one row per
(trial, epoch, split, gold label, predicted label) with its count.
"""

from __future__ import annotations

import pyarrow as pa

__all__ = ["IDENTITY", "OUTCOME", "EPOCHS", "CONFUSION", "STATUSES", "trials_schema"]

STATUSES = ("ok", "diverged", "failed")

IDENTITY = pa.schema([
    ("study", pa.string()), ("task", pa.string()), ("trial_key", pa.string()),
    ("config_id", pa.string()), ("choice", pa.string()), ("option", pa.string()),
    ("seed", pa.int64()),
])

OUTCOME = pa.schema([
    ("status", pa.string()), ("reason", pa.string()), ("error", pa.string()),
    ("epochs_run", pa.int64()), ("best_epoch", pa.int64()),
    ("dev_score", pa.float64()), ("test_score", pa.float64()), ("test_score_max", pa.float64()),
    ("metric", pa.string()), ("train_seconds", pa.float64()), ("node", pa.string()),
    ("attempt", pa.int64()),
    ("started_at", pa.timestamp("us", tz="UTC")), ("finished_at", pa.timestamp("us", tz="UTC")),
])

EPOCHS = pa.schema([
    ("trial_key", pa.string()), ("epoch", pa.int64()), ("train_loss", pa.float64()),
    ("dev_score", pa.float64()), ("test_score", pa.float64()), ("seconds", pa.float64()),
])

CONFUSION = pa.schema([
    ("trial_key", pa.string()), ("epoch", pa.int64()), ("split", pa.string()), ("gold", pa.string()),
    ("predicted", pa.string()), ("count", pa.int64()),
])


def trials_schema(hyperparameters: dict[str, pa.DataType]) -> pa.Schema:
    """Identity columns, the hyperparameter columns in the given order, outcome columns."""
    return pa.schema(list(IDENTITY) + [pa.field(n, t) for n, t in hyperparameters.items()] + list(OUTCOME))
