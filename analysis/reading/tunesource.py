"""Reading a Ray Tune experiment folder for ``seedsweep import``: what
``tune.Tuner(...).fit()`` writes under ``RunConfig(storage_path=…, name=…)``,
one folder per trial holding ``params.json`` (the trial's configuration) and
``result.json`` (one JSON object per ``tune.report``; ``progress.csv`` when
that is missing), and ``error.txt`` when the trial raised.

Each trial becomes one row: its parameters (nested dictionaries flattened
with ``/``, lists kept as JSON text), the metric named as the test score and,
with a dev metric, the dev score. With a dev metric the trial's scores are
those of its best dev report (``mode``), as seedsweep's own trials are; with
none, those of its last report. A trial that raised, or never reported the
test metric, is kept as ``failed`` with the reason. Every report is kept as an
epoch (``training_iteration``), with every numeric metric it reported.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from seedsweep.study.errors import UserError
from seedsweep.study.store.rundir import RunDir

from .imported import spec_from_flags, write_import

__all__ = ["read_tune", "is_tune_experiment", "TuneTrials", "import_tune"]

_FIX_FOLDER = ("Give the folder tune.Tuner wrote: <storage_path>/<name> of its RunConfig (by default "
               "~/ray_results/<name>), whose trial folders hold params.json and result.json.")


def is_tune_experiment(folder: Path) -> bool:
    """A folder with at least one trial folder holding ``params.json``."""
    return folder.is_dir() and any((d / "params.json").is_file() for d in folder.iterdir() if d.is_dir())


def _flatten(params: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dictionaries as ``outer/inner`` keys; lists and other objects as JSON text.

    >>> _flatten({"opt": {"name": "adam", "lr": 0.1}, "layers": [2, 3], "seed": 1})
    {'opt/name': 'adam', 'opt/lr': 0.1, 'layers': '[2, 3]', 'seed': 1}
    """
    out: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, name + "/"))
        elif value is None or isinstance(value, (str, int, float, bool)):
            out[name] = value
        else:
            out[name] = json.dumps(value, sort_keys=True, default=str)
    return out


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(str(path), f"cannot be read as JSON ({exc}).",
                        "Restore the file from the experiment's copy, or move the trial folder out of the "
                        "experiment folder to import the others.") from None


def _reports(trial: Path) -> list[dict[str, Any]]:
    """The trial's reports, in order: ``result.json`` lines, else ``progress.csv`` rows."""
    result = trial / "result.json"
    if result.is_file():
        reports = []
        for number, line in enumerate(result.read_text(errors="replace").splitlines(), 1):
            if not line.strip():
                continue
            try:
                reports.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise UserError(f"{result}, line {number}", f"is not a JSON object ({exc.msg}).",
                                "Restore the file, or delete the broken last line if the trial was killed "
                                "while writing it.") from None
        return reports
    progress = trial / "progress.csv"
    if progress.is_file():
        with progress.open(newline="") as f:
            return [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(f)]
    return []


def _number(text: str) -> Any:
    try:
        return float(text) if text not in ("", None) else None
    except ValueError:
        return text


def _finite(value: Any) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return math.nan
    return v if math.isfinite(v) else math.nan


class TuneTrials:
    """A Tune experiment read: ``rows`` (one per trial), ``epochs`` (one per
    report) and the metrics any trial reported."""

    def __init__(self, rows: pd.DataFrame, epochs: pd.DataFrame, metrics: list[str], folders: list[Path]) -> None:
        self.rows, self.epochs, self.metrics, self.folders = rows, epochs, metrics, folders


def read_tune(folder: str | Path, score: str | None, dev_score: str | None = None, *, mode: str = "max") -> TuneTrials:
    """The trials of the Tune experiment in ``folder`` (see the module docstring)."""
    folder = Path(folder)
    if not is_tune_experiment(folder):
        raise UserError(str(folder), "is not a Ray Tune experiment folder: no trial folder in it holds params.json.",
                        _FIX_FOLDER)
    trials = sorted(d for d in folder.iterdir() if d.is_dir() and (d / "params.json").is_file())
    rows, epochs, metrics = [], [], {}
    sign = 1.0 if mode == "max" else -1.0
    for trial in trials:
        params = _json(trial / "params.json")
        if not isinstance(params, dict):
            raise UserError(str(trial / "params.json"), "holds no mapping of parameters.", _FIX_FOLDER)
        reports = _reports(trial)
        key = str(next((r["trial_id"] for r in reports if r.get("trial_id")), trial.name))
        for r in reports:
            metrics.update({k: None for k, v in r.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
        scored = [r for r in reports if score in r and math.isfinite(_finite(r[score]))]
        best = None
        if dev_score is not None:
            judged = [r for r in scored if math.isfinite(_finite(r.get(dev_score)))]
            best = max(judged, key=lambda r: sign * _finite(r[dev_score])) if judged else None
        elif scored:
            best = scored[-1]
        error = trial / "error.txt"
        reason = None
        if error.is_file():
            lines = [ln for ln in error.read_text(errors="replace").splitlines() if ln.strip()]
            reason = "the trial raised: " + (lines[-1].strip() if lines else "(empty error.txt)")
        elif best is None:
            reason = f"reported no {dev_score + ' and ' if dev_score else ''}{score}"
        row = {**_flatten(params), "__key": key, "__folder": trial.name, "__reports": len(reports),
               "__score": _finite(best[score]) if best is not None else math.nan,
               "__dev": _finite(best.get(dev_score)) if best is not None and dev_score else math.nan,
               "__reason": reason}
        rows.append(row)
        for number, r in enumerate(reports, 1):
            it = r.get("training_iteration")
            epoch = {"trial_key": key, "epoch": int(it) if isinstance(it, (int, float)) and it == it else number,
                     "test_score": _finite(r.get(score)), "dev_score": _finite(r.get(dev_score)) if dev_score
                     else math.nan}
            epoch.update({f"metric/{k}": _finite(v) for k, v in r.items()
                          if isinstance(v, (int, float)) and not isinstance(v, bool)})
            epochs.append(epoch)
    names = sorted(metrics)
    for flag, name in (("--score", score), ("--dev-score", dev_score)):
        if name is not None and name not in metrics:
            raise UserError(f"{folder}: {flag} {name}", f"no trial reported a metric {name!r}.",
                            f"Name one the trials reported: {', '.join(names[:30]) or '(none: no trial reported)'}.")
    if score is None:
        raise UserError(f"{folder}: --score", "a Tune experiment needs the reported metric that is the test score.",
                        f"Name it with --score (and the dev metric with --dev-score): {', '.join(names[:30])}.")
    return TuneTrials(pd.DataFrame(rows), pd.DataFrame(epochs), names, trials)


def _digest(trials: list[Path]) -> str:
    """One SHA-256 over the experiment's trial files (their names and bytes), for the manifest."""
    h = hashlib.sha256()
    for trial in trials:
        for name in ("params.json", "result.json", "progress.csv", "error.txt"):
            f = trial / name
            if f.is_file():
                h.update(f"{trial.name}/{name}\0".encode() + f.read_bytes() + b"\0")
    return h.hexdigest()


def import_tune(folder: str | Path, out: str | Path, *, score: str | None, dev_score: str | None = None,
                choice: str | None = None, options: Sequence[str] | None = None, ignore: Sequence[str] = (),
                results: Sequence[str] = (), seed: str | None = None, mode: str = "max",
                task_name: str | None = None, command: list[str] | None = None) -> Path:
    """Import the Ray Tune experiment in ``folder`` as the run directory
    ``out`` (flags as :func:`analysis.reading.imported.import_csv`; ``score``
    and ``dev_score`` name reported metrics, ``choice`` and ``seed``
    parameters, nested ones as ``outer/inner``); returns its path."""
    folder, out = Path(folder), Path(out)
    RunDir.check_import_target(out)
    read = read_tune(folder, score, dev_score, mode=mode)
    rows = read.rows.rename(columns={"__score": score, "__dev": dev_score} if dev_score else {"__score": score})
    keys, reasons = rows.pop("__key").astype(str).tolist(), rows.pop("__reason").tolist()
    rows = rows.rename(columns={"__folder": "tune_trial", "__reports": "tune_reports"})
    spec = spec_from_flags(folder, rows, task=None, score=score, dev_score=dev_score, choice=choice, options=options,
                           ignore=ignore, results=[*results, "tune_trial", "tune_reports"], mode=mode)
    source = {"source": str(folder.resolve()), "kind": "ray tune", "sha256": _digest(read.folders),
              "rows": int(len(rows)), "columns": [str(c) for c in rows.columns], "metrics": read.metrics,
              "preset": None}
    return write_import(folder, out, rows, spec, source, keys=keys, task_name=task_name, seed=seed, reasons=reasons,
                        epochs=read.epochs, command=command, study=folder.name)
