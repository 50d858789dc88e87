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
from typing import Any

import pandas as pd

from seedsweep.study.errors import UserError

from .sources import SourceTrials, finite as _finite, flatten as _flatten, import_source, number as _cell, require_metric

__all__ = ["read_tune", "is_tune_experiment", "import_tune"]

_FIX_FOLDER = ("Give the folder tune.Tuner wrote: <storage_path>/<name> of its RunConfig (by default "
               "~/ray_results/<name>), whose trial folders hold params.json and result.json.")


def is_tune_experiment(folder: Path) -> bool:
    """A folder with at least one trial folder holding ``params.json``."""
    return folder.is_dir() and any((d / "params.json").is_file() for d in folder.iterdir() if d.is_dir())


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
            return [{k: _cell(v) for k, v in row.items()} for row in csv.DictReader(f)]
    return []


def read_tune(folder: str | Path, score: str | None, dev_score: str | None = None, *, mode: str = "max") -> SourceTrials:
    """The trials of the Tune experiment in ``folder`` (see the module docstring)."""
    folder = Path(folder)
    if not is_tune_experiment(folder):
        raise UserError(str(folder), "is not a Ray Tune experiment folder: no trial folder in it holds params.json.",
                        _FIX_FOLDER)
    trials = sorted(d for d in folder.iterdir() if d.is_dir() and (d / "params.json").is_file())
    rows, keys, reasons, epochs, metrics = [], [], [], [], {}
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
        row = {**_flatten(params), "tune_trial": trial.name, "tune_reports": len(reports),
               score: _finite(best[score]) if best is not None else math.nan}
        if dev_score:
            row[dev_score] = _finite(best.get(dev_score)) if best is not None else math.nan
        rows.append(row)
        keys.append(key)
        reasons.append(reason)
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
        require_metric(str(folder), flag, name, names)
    if score is None:
        raise UserError(f"{folder}: --score", "a Tune experiment needs the reported metric that is the test score.",
                        f"Name it with --score (and the dev metric with --dev-score): {', '.join(names[:30])}.")
    return SourceTrials(pd.DataFrame(rows), keys, [None] * len(keys), reasons, pd.DataFrame(epochs), names,
                        "ray tune", _digest(trials), ["tune_trial", "tune_reports"], folder.name)


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
                mode: str = "max", **flags) -> Path:
    """Import the Ray Tune experiment in ``folder`` as the run directory
    ``out`` (flags as :func:`analysis.reading.imported.import_csv`; ``score``
    and ``dev_score`` name reported metrics, ``choice`` and ``seed``
    parameters, nested ones as ``outer/inner``); returns its path."""
    read = read_tune(folder, score, dev_score, mode=mode)
    return import_source(Path(folder).resolve(), read, out, score=score, dev_score=dev_score, mode=mode, **flags)
