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

__all__ = ["RunDir", "RemoteRunDir", "is_uri", "write_table", "write_json", "write_text", "build_manifest", "file_sha256", "SCHEMA_VERSION"]

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


def write_text(text: str, path: Path) -> None:
    """Write ``text`` to ``path`` atomically (temporary name, then rename)."""
    path = Path(path)
    tmp = path.parent / f"{_TMP}{uuid.uuid4().hex}-{path.name}.partial"
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_json(data: dict[str, Any], path: Path) -> None:
    """Write ``data`` as indented JSON to ``path`` atomically."""
    write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n", path)


def file_sha256(path: str | Path) -> str:
    """The SHA-256 hex digest of a file, read in 1 MiB blocks."""
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _read_part(path: Path, columns: list[str] | None = None) -> pa.Table:
    try:
        return pq.read_table(path, columns=columns)
    except (OSError, pa.ArrowInvalid) as exc:
        raise UserError(str(path), f"this Parquet file cannot be read ({exc}).",
                        "Move it away (its trial will run again on the next 'seedsweep run') "
                        "or restore it from a backup.") from None


def _concat(tables: list[pa.Table]) -> pa.Table | None:
    tables = [t for t in tables if t is not None]
    if not tables:
        return None
    return pa.concat_tables(tables, promote_options="permissive")


def is_uri(path: str | Path) -> bool:
    """``s3://…``, ``gs://…`` (any ``scheme://``): a run directory on an object store."""
    return isinstance(path, str) and "://" in path


class RunDir:
    """A run directory on the local filesystem (or a mounted shared one).
    ``RunDir("s3://bucket/dir")`` gives a :class:`RemoteRunDir` instead."""

    def __new__(cls, path: str | Path):
        if cls is RunDir and is_uri(path):
            return super().__new__(RemoteRunDir)
        return super().__new__(cls)

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.trials_dir = self.path / "trials"
        self.epochs_dir = self.path / "epochs"
        self.manifest_path = self.path / "manifest.json"
        self.configs_path = self.path / "configs.parquet"
        self.compacted_trials = self.path / "trials.parquet"
        self.compacted_epochs = self.path / "epochs.parquet"
        self.progress_path = self.path / "progress.json"
        self.confusion_dir = self.path / "confusion"
        self.compacted_confusion = self.path / "confusion.parquet"

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

    # Storage primitives: the rest of the class is written in terms of these,
    # and RemoteRunDir overrides only them (plus paths, manifest, lock, prepare).
    def _is_file(self, path) -> bool:
        return Path(path).is_file()

    def _read_table(self, path, columns: list[str] | None = None) -> pa.Table:
        return _read_part(path, columns)

    def _write_table(self, table: pa.Table, path) -> None:
        write_table(table, path)

    def _delete(self, path) -> None:
        Path(path).unlink()

    def configs(self) -> pa.Table | None:
        if not self._is_file(self.configs_path):
            return None
        return self._read_table(self.configs_path)

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
        if self._is_file(self.compacted_trials):
            keys |= set(self._read_table(self.compacted_trials, ["trial_key"])["trial_key"].to_pylist())
        return keys

    def _read(self, folder, compacted_path) -> pa.Table | None:
        """Parts of ``folder`` plus the compacted file; a part replaces the
        compacted rows of its trial key."""
        parts = self._part_keys(folder)
        tables = [self._read_table(p) for p in parts.values()]
        if self._is_file(compacted_path):
            compacted = self._read_table(compacted_path)
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

    def read_progress(self) -> dict[str, Any] | None:
        """The driver's live progress file (running trials, updated_at), or None."""
        try:
            return json.loads(self._read_text(self.progress_path))
        except (OSError, ValueError):
            return None

    def _read_text(self, path) -> str:
        return Path(path).read_text()

    def write_progress(self, progress: dict[str, Any]) -> None:
        write_json(progress, self.progress_path)

    def read_confusion(self) -> pa.Table | None:
        """Stored confusion counts (families that classify), or None."""
        return self._read(self.confusion_dir, self.compacted_confusion)

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
        for folder in (self.path, self.trials_dir, self.epochs_dir, self.confusion_dir):
            folder.mkdir(parents=True, exist_ok=True)
            for entry in folder.iterdir():
                if entry.name.startswith(_TMP):
                    entry.unlink()

    def write_trial(self, key: str, trial_row: pa.Table, epoch_rows: pa.Table,
                    confusion: pa.Table | None = None) -> None:
        """Store one finished trial: its epochs (and confusion) parts, then its
        trials part -- a trial row is the last thing written."""
        self._write_table(epoch_rows, self.part_path(self.epochs_dir, key))
        if confusion is not None and confusion.num_rows:
            self._write_table(confusion, self.part_path(self.confusion_dir, key))
        self._write_table(trial_row, self.part_path(self.trials_dir, key))

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        write_json(manifest, self.manifest_path)

    def write_configs(self, configs: pa.Table) -> None:
        self._write_table(configs, self.configs_path)

    def check_out(self) -> None:
        """Raise a :class:`UserError` unless this may become (or is) a run directory."""
        out = self.path
        if out.exists() and not out.is_dir():
            raise UserError(str(out), "exists and is not a folder.", "Give a new or existing run directory as --out.")
        if out.is_dir() and not (out / "manifest.json").exists():
            leftovers = [p.name for p in out.iterdir() if p.name != ".lock" and not p.name.startswith(".tmp-")]
            if leftovers:
                raise UserError(str(out), f"is a folder with other files ({', '.join(sorted(leftovers)[:3])}…) and no "
                                "manifest.json, so it is not a seedsweep run directory.",
                                "Give a new or empty folder as --out, or an existing run directory.")

    def compact(self) -> tuple[int, int]:
        """Merge every part into ``trials.parquet`` / ``epochs.parquet``; returns
        (trial rows, epoch rows). Safe to kill at any moment: the merged file is
        written whole before the parts it holds are removed."""
        trial_parts = self._part_keys(self.trials_dir)
        epoch_parts = self._part_keys(self.epochs_dir)
        confusion_parts = self._part_keys(self.confusion_dir)
        trials = self.read_trials()
        epochs = self.read_epochs()
        confusion = self.read_confusion()
        if confusion is not None:
            self._write_table(confusion.sort_by([("trial_key", "ascending"), ("epoch", "ascending")]),
                              self.compacted_confusion)
        if trials is not None:
            self._write_table(trials.sort_by("trial_key"), self.compacted_trials)
        if epochs is not None:
            self._write_table(epochs.sort_by([("trial_key", "ascending"), ("epoch", "ascending")]),
                              self.compacted_epochs)
        for p in list(trial_parts.values()) + list(epoch_parts.values()) + list(confusion_parts.values()):
            self._delete(p)
        return (0 if trials is None else trials.num_rows, 0 if epochs is None else epochs.num_rows)


class RemoteRunDir(RunDir):
    """A run directory on an object store (``s3://bucket/dir``, ``gs://…``),
    through pyarrow's filesystems. Options go into the URI's query, e.g.
    ``s3://bucket/dir?endpoint_override=127.0.0.1:9000&scheme=http``;
    credentials come from the usual environment (``AWS_ACCESS_KEY_ID``, …).

    An object store has no rename and no lock. Every file is still whole or
    absent: each is uploaded as one object, which becomes visible only when
    the upload completes. There is no ``flock``: one run directory has one
    writer (the driver) by convention. Temporary files never exist here.
    """

    def __init__(self, path: str | Path) -> None:
        import pyarrow.fs as pafs

        self.uri = str(path)
        try:
            self.fs, root = pafs.FileSystem.from_uri(self.uri)
        except (pa.ArrowInvalid, OSError, ValueError) as exc:
            raise UserError(self.uri, f"not a usable storage URI ({exc}).",
                            "Use s3://bucket/folder (options as ?endpoint_override=HOST:PORT&scheme=http) or a "
                            "local path.") from None
        self.root = root.rstrip("/")
        self.path = self.uri                      # for messages
        self.trials_dir = f"{self.root}/trials"
        self.epochs_dir = f"{self.root}/epochs"
        self.manifest_path = f"{self.root}/manifest.json"
        self.configs_path = f"{self.root}/configs.parquet"
        self.compacted_trials = f"{self.root}/trials.parquet"
        self.compacted_epochs = f"{self.root}/epochs.parquet"
        self.progress_path = f"{self.root}/progress.json"
        self.confusion_dir = f"{self.root}/confusion"
        self.compacted_confusion = f"{self.root}/confusion.parquet"

    def _is_file(self, path: str) -> bool:
        import pyarrow.fs as pafs

        try:
            return self.fs.get_file_info(path).type == pafs.FileType.File
        except OSError as exc:
            raise UserError(self.uri, f"the storage cannot be reached ({exc}).",
                            "Check the URI, the endpoint and the credentials.") from None

    def _read_table(self, path: str, columns: list[str] | None = None) -> pa.Table:
        try:
            return pq.read_table(path, columns=columns, filesystem=self.fs)
        except (OSError, pa.ArrowInvalid) as exc:
            raise UserError(f"{self.uri}: {path}", f"this Parquet object cannot be read ({exc}).",
                            "Delete it (its trial will run again) or restore it.") from None

    def _write_table(self, table: pa.Table, path: str) -> None:
        pq.write_table(table, path, filesystem=self.fs)        # one object, visible when complete

    def _delete(self, path: str) -> None:
        self.fs.delete_file(path)

    def exists(self) -> bool:
        return self._is_file(self.manifest_path)

    def require(self) -> None:
        if not self.exists():
            raise UserError(self.uri, "holds no manifest.json, so it is not a run directory.",
                            "Give the --out URI of a 'seedsweep run'.")

    def manifest(self) -> dict[str, Any]:
        try:
            with self.fs.open_input_stream(self.manifest_path) as fh:
                return json.loads(fh.read().decode())
        except (OSError, json.JSONDecodeError) as exc:
            raise UserError(f"{self.uri}: manifest.json", f"cannot read the manifest ({exc}).",
                            "Restore it from a backup; it records the study's YAML.") from None

    def part_path(self, folder, key: str) -> str:
        return f"{folder}/{escape_key(key)}.parquet"

    def _part_keys(self, folder) -> dict[str, str]:
        import pyarrow.fs as pafs

        infos = self.fs.get_file_info(pafs.FileSelector(folder, allow_not_found=True))
        out = {}
        for info in infos:
            name = info.base_name
            if info.type == pafs.FileType.File and not name.startswith(".") and name.endswith(".parquet"):
                out[unescape_key(name[: -len(".parquet")])] = info.path
        return out

    @contextmanager
    def locked(self) -> Iterator[None]:
        yield                                       # no locks on object stores: one writer by convention

    def prepare(self) -> None:
        for folder in (self.root, self.trials_dir, self.epochs_dir, self.confusion_dir):
            self.fs.create_dir(folder, recursive=True)

    def _read_text(self, path: str) -> str:
        with self.fs.open_input_stream(path) as fh:
            return fh.read().decode()

    def _write_json(self, data: dict[str, Any], path: str) -> None:
        with self.fs.open_output_stream(path) as fh:          # one object, visible when complete
            fh.write((json.dumps(data, indent=2, default=str) + "\n").encode())

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        self._write_json(manifest, self.manifest_path)

    def write_progress(self, progress: dict[str, Any]) -> None:
        self._write_json(progress, self.progress_path)

    def check_out(self) -> None:
        self._is_file(self.manifest_path)           # reachable (raises a UserError otherwise)


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
