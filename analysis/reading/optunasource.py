"""Reading an Optuna study for ``seedsweep import --storage URL --study NAME``:
a relational storage (``sqlite:///study.db``, or any URL Optuna's
``RDBStorage`` opens) or a journal file (``JournalFileBackend``; a path, or
``journal:PATH``), read through ``optuna.load_study``.

Each trial becomes one row: its parameters under their names, its user
attributes (``user_attrs/<name>``: results, never pairing keys, unless named by
``--seed`` or ``--choice``), ``optuna_number`` and ``optuna_state``.
The metrics are the objective's ``value`` (a multi-objective study's
``values/0``, ``values/1``…, or the names the study set with
``set_metric_names``) and every numeric user attribute, so ``--score
user_attrs/test_acc --dev-score value`` reads a study whose objective is the
dev score and which stored the test score beside it. Intermediate values
(``trial.report(value, step)``) are kept as epochs (``metric/intermediate``).

``COMPLETE`` trials are ``ok`` (``failed`` without the score), ``FAIL``
trials ``failed`` and ``PRUNED`` trials ``stopped``, each with the state (and
the pruned step, or Optuna's recorded failure reason) as the reason;
``RUNNING`` and ``WAITING`` trials are kept as ``failed``: they had not ended
when the study was read.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from seedsweep.study.errors import UserError

from .sources import SourceTrials, canonical_digest, finite, flatten, import_source, require_metric

__all__ = ["read_optuna", "import_optuna", "open_optuna_storage"]

_FIX_STORAGE = ("Give the storage the study was created with: sqlite:///PATH/study.db (three slashes, then the "
                "path), another database URL, or the path of a journal file (JournalFileBackend).")


def open_optuna_storage(storage: str):
    """The Optuna storage behind ``storage``, opened without creating anything (a located error otherwise)."""
    import optuna   # the importer of Optuna studies only: the rest of the analysis does not need it

    if storage.startswith("sqlite:///"):
        path = Path(storage[len("sqlite:///"):])
        if not path.is_file():
            raise UserError(f"--storage {storage}", f"no such SQLite file: {path}.", _FIX_STORAGE)
    elif "://" not in storage:
        path = Path(storage.removeprefix("journal:"))
        if not path.is_file():
            raise UserError(f"--storage {storage}", "is neither a database URL nor an existing journal file.",
                            _FIX_STORAGE)
        from optuna.storages.journal import JournalFileBackend   # (the same: the journal backend)

        try:
            return optuna.storages.JournalStorage(JournalFileBackend(str(path)))
        except Exception as exc:      # a file that is not a journal: Optuna raises its own errors
            raise UserError(f"--storage {storage}", f"cannot be read as an Optuna journal ({exc}).",
                            _FIX_STORAGE) from None
    try:
        return optuna.storages.RDBStorage(storage, skip_compatibility_check=False)
    except Exception as exc:          # a URL that does not open: SQLAlchemy's or Optuna's own errors
        raise UserError(f"--storage {storage}", f"does not open as an Optuna storage ({type(exc).__name__}: "
                        f"{str(exc).splitlines()[0][:200]}).", _FIX_STORAGE) from None


def _metric_names(study, n: int) -> list[str]:
    names = getattr(study, "metric_names", None)
    if names and len(names) == n:
        return list(names)
    return ["value"] if n == 1 else [f"values/{i}" for i in range(n)]


def read_optuna(storage: str, study_name: str | None, score: str | None, dev_score: str | None = None) -> SourceTrials:
    """The trials of the Optuna study ``study_name`` in ``storage`` (see the module docstring)."""
    import optuna   # (as above)

    opened = open_optuna_storage(storage)
    names = optuna.study.get_all_study_names(opened)
    if study_name is None and len(names) != 1:
        raise UserError(f"--storage {storage}", f"holds {len(names)} studies; which one to import is not said.",
                        f"Name it with --study: {', '.join(names[:30]) or '(none)'}.")
    study_name = study_name or names[0]
    if study_name not in names:
        raise UserError(f"--storage {storage}: --study {study_name}", "no study of that name in the storage.",
                        f"Name one it holds: {', '.join(names[:30]) or '(none: the storage is empty)'}.")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.load_study(study_name=study_name, storage=opened)
    trials = study.get_trials(deepcopy=False)
    objectives = _metric_names(study, len(study.directions))
    rows, keys, statuses, reasons, epochs, records, attr_columns = [], [], [], [], [], [], {}
    metrics: dict[str, None] = {name: None for name in objectives}
    for t in trials:
        attrs = flatten(t.user_attrs, "user_attrs/")
        attr_columns.update(dict.fromkeys(attrs))
        metrics.update({k: None for k, v in attrs.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
        values = dict(zip(objectives, t.values)) if t.values is not None else {}
        reported = {**values, **attrs}
        row: dict[str, Any] = {**flatten(t.params), **attrs, "optuna_number": t.number, "optuna_state": t.state.name}
        row[score] = finite(reported.get(score))
        if dev_score:
            row[dev_score] = finite(reported.get(dev_score))
        rows.append(row)
        keys.append(f"optuna-{t.number}")
        state = t.state.name
        if state == "COMPLETE":
            statuses.append(None)
            reasons.append(None if math.isfinite(row[score]) else f"reported no {score}")
        elif state == "PRUNED":
            statuses.append("stopped")
            last = max(t.intermediate_values) if t.intermediate_values else None
            reasons.append("optuna state PRUNED" + (f" at step {last}" if last is not None else ""))
        else:
            why = t.system_attrs.get("fail_reason") if state == "FAIL" else "not ended when the study was read"
            statuses.append("failed")
            reasons.append(f"optuna state {state}" + (f": {str(why).splitlines()[-1][:300]}" if why else ""))
        for step, value in sorted(t.intermediate_values.items()):
            epochs.append({"trial_key": keys[-1], "epoch": int(step), "test_score": math.nan,
                           "dev_score": finite(value) if dev_score == "value" else math.nan,
                           "metric/intermediate": finite(value)})
        records.append([t.number, state, t.params, t.values, t.user_attrs, sorted(t.intermediate_values.items())])
    if trials and any(t.intermediate_values for t in trials):
        metrics["intermediate"] = None
    where = f"--storage {storage} --study {study_name}"
    if score is None:
        raise UserError(f"{where}: --score", "an Optuna study needs the metric that is the test score.",
                        f"Name it with --score (and the dev metric with --dev-score): {', '.join(metrics)}.")
    for flag, name in (("--score", score), ("--dev-score", dev_score)):
        require_metric(where, flag, name, [m for m in metrics if m != "intermediate"])
    return SourceTrials(pd.DataFrame(rows), keys, statuses, reasons, pd.DataFrame(epochs), list(metrics), "optuna",
                        canonical_digest(records), ["optuna_number", "optuna_state", *attr_columns], study_name)


def import_optuna(storage: str, study_name: str | None, out: str | Path, *, score: str | None,
                  dev_score: str | None = None, **flags) -> Path:
    """Import the Optuna study ``study_name`` of ``storage`` as the run directory ``out`` (flags as
    :func:`analysis.reading.imported.import_csv`; ``choice`` and ``seed`` name parameters or user attributes,
    the latter as ``user_attrs/<name>``); returns its path."""
    read = read_optuna(storage, study_name, score, dev_score)
    return import_source(f"{storage} (study {read.name})", read, out, score=score, dev_score=dev_score, **flags)
