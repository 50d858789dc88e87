"""The run directory: one Parquet part per finished trial, written whole or not at all.

Layout of ``DIR`` (``--out DIR``)::

    manifest.json              what ran, with what (see :func:`build_manifest`)
    configs.parquet            config_id -> sampled hyperparameters
    trials/<escaped key>.parquet   one row: the trial's outcome
    epochs/<escaped key>.parquet   its per-epoch rows
    trials.parquet, epochs.parquet compacted rows (``seedsweep compact``)
    .lock                      held (flock) by the one process writing DIR

Every file is written to a temporary name in the same folder (a dot-file
starting ``.tmp-``, ending ``.partial``) and renamed into place, so a reader or a process killed
at any moment sees the whole file or none. Readers skip dot-files; the next
``run`` removes temporary files left by a killed writer. The epochs part of a
trial is written before its trials part: a trial counts as stored once its
trials part exists. A part overrides a compacted row with the same key
(that is how ``--retry-failed`` replaces a failed row after compaction).

Files are not fsync'ed: a killed process cannot lose a renamed file, but
after a power cut the filesystem decides what survived.
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import subprocess
import sys
import uuid
from contextlib import contextmanager
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from .errors import UserError
from .grid import escape_key, unescape_key

__all__ = ["RunDir", "write_table", "write_json", "build_manifest", "file_sha256", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1
_TMP = ".tmp-"


def write_table(table: pa.Table, path: Path) -> None:
    """Write ``table`` to ``path`` atomically (temporary name, then rename)."""
    tmp = path.parent / f"{_TMP}{uuid.uuid4().hex}-{path.name}.partial"
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_json(data: dict[str, Any], path: Path) -> None:
    """Write ``data`` as indented JSON to ``path`` atomically."""
    tmp = path.parent / f"{_TMP}{uuid.uuid4().hex}-{path.name}.partial"
    try:
        tmp.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def file_sha256(path: str | Path) -> str:
    """The SHA-256 hex digest of a file, read in 1 MiB blocks."""
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _read_part(path: Path) -> pa.Table:
    try:
        return pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise UserError(str(path), f"this Parquet file cannot be read ({exc}).",
                        "Move it away (its trial will run again on the next 'seedsweep run') "
                        "or restore it from a backup.") from None


def _concat(tables: list[pa.Table]) -> pa.Table | None:
    tables = [t for t in tables if t is not None]
    if not tables:
        return None
    return pa.concat_tables(tables, promote_options="permissive")


class RunDir:
    """A run directory on the local filesystem (or a mounted shared one)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.trials_dir = self.path / "trials"
        self.epochs_dir = self.path / "epochs"
        self.manifest_path = self.path / "manifest.json"
        self.configs_path = self.path / "configs.parquet"
        self.compacted_trials = self.path / "trials.parquet"
        self.compacted_epochs = self.path / "epochs.parquet"

    # ---------------------------------------------------------------- state

    def exists(self) -> bool:
        return self.manifest_path.exists()

    def require(self) -> None:
        """Raise a :class:`UserError` unless this is a run directory."""
        if not self.path.is_dir():
            raise UserError(str(self.path), "no such run directory.",
                            "Give the --out folder of a 'seedsweep run'.")
        if not self.manifest_path.exists():
            raise UserError(str(self.path), "this folder has no manifest.json, so it is not a run directory.",
                            "Give the --out folder of a 'seedsweep run'.")

    def manifest(self) -> dict[str, Any]:
        try:
            return json.loads(self.manifest_path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise UserError(str(self.manifest_path), f"cannot read the manifest ({exc}).",
                            "Restore it from a backup; it records the study's YAML.") from None

    def configs(self) -> pa.Table | None:
        if not self.configs_path.exists():
            return None
        return _read_part(self.configs_path)

    def part_path(self, folder: Path, key: str) -> Path:
        return folder / f"{escape_key(key)}.parquet"

    def _part_keys(self, folder: Path) -> dict[str, Path]:
        if not folder.is_dir():
            return {}
        out = {}
        with os.scandir(folder) as entries:
            for entry in entries:
                name = entry.name
                if name.startswith(".") or not name.endswith(".parquet"):
                    continue
                out[unescape_key(name[: -len(".parquet")])] = Path(entry.path)
        return out

    def stored_keys(self) -> set[str]:
        """Trial keys with a stored row (a part or a compacted row)."""
        keys = set(self._part_keys(self.trials_dir))
        if self.compacted_trials.exists():
            keys |= set(pq.read_table(self.compacted_trials, columns=["trial_key"])["trial_key"].to_pylist())
        return keys

    def _read(self, folder: Path, compacted_path: Path) -> pa.Table | None:
        """Parts of ``folder`` plus the compacted file; a part replaces the
        compacted rows of its trial key."""
        parts = self._part_keys(folder)
        tables = [_read_part(p) for p in parts.values()]
        if compacted_path.exists():
            compacted = _read_part(compacted_path)
            if parts:
                import pyarrow.compute as pc

                keep = pc.invert(pc.is_in(compacted["trial_key"], value_set=pa.array(list(parts), pa.string())))
                compacted = compacted.filter(keep)
            tables.insert(0, compacted)
        return _concat(tables)

    def read_trials(self) -> pa.Table | None:
        """Every stored trial row; a part wins over a compacted row of the same key."""
        return self._read(self.trials_dir, self.compacted_trials)

    def read_epochs(self) -> pa.Table | None:
        """Every stored epoch row (a part replaces the compacted rows of its key)."""
        return self._read(self.epochs_dir, self.compacted_epochs)

    # --------------------------------------------------------------- writing

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold ``DIR/.lock`` for as long as this process writes the directory.

        The lock is an advisory ``flock``: the kernel releases it when the
        holder dies, so a killed run never blocks the next one.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise UserError(str(self.path), "another seedsweep process is writing this run directory.",
                                "Wait for it to finish or stop it; one run directory has one writer.") from None
            yield
        finally:
            os.close(fd)

    def prepare(self) -> None:
        """Create the folders and remove temporary files a killed writer left."""
        for folder in (self.path, self.trials_dir, self.epochs_dir):
            folder.mkdir(parents=True, exist_ok=True)
            for entry in folder.iterdir():
                if entry.name.startswith(_TMP):
                    entry.unlink()

    def write_trial(self, key: str, trial_row: pa.Table, epoch_rows: pa.Table) -> None:
        """Store one finished trial: its epochs part, then its trials part."""
        write_table(epoch_rows, self.part_path(self.epochs_dir, key))
        write_table(trial_row, self.part_path(self.trials_dir, key))

    def compact(self) -> tuple[int, int]:
        """Merge every part into ``trials.parquet`` / ``epochs.parquet``; returns
        (trial rows, epoch rows). Safe to kill at any moment: the merged file is
        written whole before the parts it holds are removed."""
        trial_parts = self._part_keys(self.trials_dir)
        epoch_parts = self._part_keys(self.epochs_dir)
        trials = self.read_trials()
        epochs = self.read_epochs()
        if trials is not None:
            write_table(trials.sort_by("trial_key"), self.compacted_trials)
        if epochs is not None:
            write_table(epochs.sort_by([("trial_key", "ascending"), ("epoch", "ascending")]),
                        self.compacted_epochs)
        for p in list(trial_parts.values()) + list(epoch_parts.values()):
            p.unlink()
        return (0 if trials is None else trials.num_rows, 0 if epochs is None else epochs.num_rows)


# -------------------------------------------------------------------- manifest


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for dist in ("seedsweep", "ray", "torch", "transformers", "numpy", "pandas", "pyarrow", "scipy",
                 "optuna", "plotly", "pydantic", "PyYAML"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def _git() -> dict[str, Any]:
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=10)
        if commit.returncode != 0:
            return {"commit": None, "dirty": None}
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
        return {"commit": commit.stdout.strip(), "dirty": bool(dirty.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def build_manifest(space, *, accelerators: dict[str, Any], command: list[str]) -> dict[str, Any]:
    """The manifest of one ``seedsweep run`` invocation (see DESIGN.md)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "study": space.name,
        "family": space.family,
        "yaml": space.text,
        "yaml_sha256": space.sha256,
        "space_path": space.path,
        "sampler": space.sampler,
        "sampler_seed": space.sampler_seed,
        "n_configs": space.samples,
        "n_trials": space.n_trials,
        "git": _git(),
        "versions": _versions(),
        "platform": {"system": platform.platform(), "machine": platform.machine(),
                     "cpu_count": os.cpu_count()},
        "cpu_threads_per_trial": space.resources.cpu,
        "gpus_per_trial": space.resources.gpu,
        "accelerators": accelerators,
        "command": command,
        "argv0": sys.argv[0],
        "created_at": datetime.now(timezone.utc).isoformat(),
    }
