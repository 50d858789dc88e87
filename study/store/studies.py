"""A study as the store holds it: its definition read back from a run
directory's manifest (a study is re-run, reported and judged from what was
stored, never from a study file that may have changed since), the hours
it has run, and a tuned study's Optuna journals. The readers in :mod:`analysis` use these without importing
anything that runs a study."""

from __future__ import annotations

import hashlib
import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..files import is_uri
from ..processes import records_folder
from ..schema import escape_key
from ..spec.space import Space
from ..spec.spacefile import load_space, parse_space
from .rundir import RunDir

__all__ = ["load_study", "study_from_manifest", "hours_spent", "span_hours", "journal_path"]


def load_study(path: str | os.PathLike | Space) -> Space:
    """A search space from a YAML file, or from a run directory's ``manifest.json``
    (a study is re-run from its manifest); a :class:`Space` is returned as it is
    (a study defined in Python, :func:`seedsweep.define`)."""
    if isinstance(path, Space):
        return path
    if is_uri(str(path)) or Path(path).is_dir():   # a run directory (local or on an object store)
        rd = RunDir(str(path) if is_uri(str(path)) else Path(path))
        if rd.exists() or rd.remote:
            rd.require()
            return study_from_manifest(rd.manifest(), str(rd.manifest_path))
    p = Path(path)
    if p.suffix == ".json" and p.exists():
        try:
            manifest = json.loads(p.read_text())
        except json.JSONDecodeError:
            manifest = None
        return study_from_manifest(manifest, str(p))
    return load_space(p)


def study_from_manifest(manifest: Any, where: str) -> Space:
    """The study a run directory's manifest holds (its YAML text, parsed as the study file was)."""
    try:
        text = manifest["yaml"]
    except (KeyError, TypeError):
        raise UserError(where, "not a seedsweep manifest (no 'yaml' entry).",
                        "Give a search-space YAML file or a run directory's manifest.json.") from None
    return parse_space(text, f"{where} (yaml)", base=manifest.get("space_base") or None)


def hours_spent(out: str) -> float:
    """Hours between the first stored trial's start and the last one's end
    (the study's span on record: a stop between runs counts, time before
    the first trial does not)."""
    table = RunDir(out).read_trials(["started_at", "finished_at"])
    if table is None or table.num_rows == 0:
        return 0.0
    return span_hours([t for c in ("started_at", "finished_at") for t in table.column(c).to_pylist()])


def span_hours(times) -> float:
    """Hours from the earliest to the latest of ``times`` (datetimes or ISO strings; empty ones skipped)."""
    parsed = [t if isinstance(t, datetime) else datetime.fromisoformat(str(t)) for t in times if t]
    return (max(parsed) - min(parsed)).total_seconds() / 3600 if parsed else 0.0


def journal_path(out: str | os.PathLike, option: Any, replicate: int) -> Path:
    """The Optuna journal of search (option, replicate): in the run directory
    ``out``, or for an object-store ``out`` in a local cache folder
    (``<tmp>/seedsweep-optuna-<uid>/<sha256 of the URI>``), which any machine
    rebuilds from the stored rows whenever it is missing or behind."""
    root = Path(out)
    if is_uri(str(out)):
        root = records_folder("optuna") / hashlib.sha256(str(out).rstrip("/").encode()).hexdigest()[:24]
    return root / "optuna" / f"{escape_key(str(option))}.r{replicate:02d}.journal"
