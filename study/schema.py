"""The ground floor: the run-directory contract shared by ``study`` (writer),
the model families and ``analysis`` (reader).

Trial keys: ``"{config_id}/{choice}={option}/seed={seed}"`` (:func:`trial_key`)
name a trial everywhere (Tune, the store, the tables); :func:`escape_key`
turns one into a file name (``/`` and other unsafe characters %-escaped), so
an option may itself hold a ``/`` (a hub id, a model folder) and still round
trip. :class:`TrialSpec` is one trial as a family receives it, and
:class:`Train` the training protocol a family states as its defaults.

``trials``: one row per finished trial -- identity columns, one typed column
per hyperparameter (named exactly as its YAML key), then the outcome columns.
``epochs``: one row per trained epoch of a stored trial.
``confusion``: for families that classify (transformer), one row per
(trial, epoch, split, gold label, predicted label) with its count.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

import pyarrow as pa

__all__ = ["IDENTITY", "TUNED", "OUTCOME", "EPOCHS", "CONFUSION", "STATUSES", "RESERVED_NAMES", "Scalar", "Train",
           "TrialSpec", "trial_key", "escape_key", "unescape_key", "trials_schema"]

Scalar = str | int | float | bool | None

STATUSES = ("ok", "diverged", "failed", "stopped")   # stopped: an imported trial a pruner or scheduler ended early

IDENTITY = pa.schema([
    ("study", pa.string()), ("task", pa.string()), ("trial_key", pa.string()),
    ("config_id", pa.string()), ("choice", pa.string()), ("option", pa.string()),
    ("seed", pa.int64()),
])

#: identity columns of a tuned study's trials (``tune:``), after IDENTITY: the
#: search (option and replicate), its replicate and the trial's place in it
TUNED = pa.schema([("search", pa.string()), ("replicate", pa.int64()), ("position", pa.int64())])

OUTCOME = pa.schema([
    ("status", pa.string()), ("reason", pa.string()), ("error", pa.string()),
    ("epochs_run", pa.int64()), ("best_epoch", pa.int64()),
    ("dev_score", pa.float64()), ("test_score", pa.float64()), ("test_score_max", pa.float64()),
    ("test_score_last", pa.float64()), ("metric", pa.string()), ("train_seconds", pa.float64()), ("node", pa.string()),
    ("gpu_ids", pa.string()),
    ("attempt", pa.int64()),
    ("started_at", pa.timestamp("us", tz="UTC")), ("finished_at", pa.timestamp("us", tz="UTC")),
])

EPOCHS = pa.schema([
    ("trial_key", pa.string()), ("epoch", pa.int64()), ("train_loss", pa.float64()),
    ("dev_score", pa.float64()), ("test_score", pa.float64()), ("seconds", pa.float64()),
    ("dev_loss", pa.float64()), ("test_loss", pa.float64()),          # where the family computes them
])

CONFUSION = pa.schema([
    ("trial_key", pa.string()), ("epoch", pa.int64()), ("split", pa.string()), ("gold", pa.string()),
    ("predicted", pa.string()), ("count", pa.int64()),
])


def trials_schema(hyperparameters: dict[str, pa.DataType], *, tuned: bool = False) -> pa.Schema:
    """Identity columns (and a tuned study's search columns), the
    hyperparameter columns in the given order, outcome columns."""
    identity = list(IDENTITY) + (list(TUNED) if tuned else [])
    return pa.schema(identity + [pa.field(n, t) for n, t in hyperparameters.items()] + list(OUTCOME))


#: Columns of the trials and epochs tables; hyperparameters may not use these names.
RESERVED_NAMES = frozenset(
    {f.name for f in IDENTITY} | {f.name for f in TUNED} | {f.name for f in OUTCOME} | {f.name for f in EPOCHS}
)


@dataclass(frozen=True)
class Train:
    """The training protocol: early stopping on the dev score, retries, timeout."""

    max_epochs: int
    patience: int | None            # None: no early stopping (the test score is still the best dev epoch's)
    metric: str
    mode: str
    timeout_s: float | None
    retries: int
    vectorize_seeds: bool = False   # train a population (the seeds of one configuration and option) as one model


def trial_key(config_id: str, choice: str, option: Scalar, seed: int) -> str:
    """The key of one trial; the option is written as given.

    >>> trial_key("c00003", "classifier", "crf", 2)
    'c00003/classifier=crf/seed=2'
    """
    return f"{config_id}/{choice}={option}/seed={seed}"


def escape_key(key: str) -> str:
    """A file name for a trial key (``/`` and other unsafe characters %-escaped).

    >>> escape_key("c00000/model=org/name/seed=1")
    'c00000%2Fmodel=org%2Fname%2Fseed=1'
    """
    return quote(key, safe="=-_.+")


def unescape_key(name: str) -> str:
    """Inverse of :func:`escape_key`.

    >>> unescape_key(escape_key("c00000/model=./models/x y/seed=1"))
    'c00000/model=./models/x y/seed=1'
    """
    return unquote(name)


@dataclass(frozen=True)
class TrialSpec:
    """Everything one trial needs: its identity and its effective hyperparameters."""

    key: str
    config_id: str
    choice: str
    option: Scalar
    seed: int
    params: tuple[tuple[str, Any], ...]
    extra: tuple[tuple[str, Any], ...] = ()      # identity columns beyond the key's (a tuned trial's search, …)

    @property
    def hparams(self) -> dict[str, Any]:
        """Hyperparameter name -> value (null where a ``when`` condition does not hold)."""
        return dict(self.params)

    def to_json(self) -> str:
        """A compact JSON text of this trial: how it travels to its Ray worker
        inside Tune's trial config (each trial carries only its own spec)."""
        return json.dumps([self.key, self.config_id, self.choice, self.option, self.seed,
                           [list(p) for p in self.params]], separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> "TrialSpec":
        """The trial spec :meth:`to_json` wrote."""
        key, config_id, choice, option, seed, params = json.loads(text)
        return cls(key=key, config_id=config_id, choice=choice, option=option, seed=seed,
                   params=tuple((n, v) for n, v in params))
