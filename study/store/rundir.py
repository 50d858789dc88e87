"""The run directory: one Parquet part per finished trial, written whole or not at all.

:class:`RunDir` is the only code that knows the paths of a run directory:
every command, the analysis package and the dashboard read and write one
through it; where the files live (a folder, an object store) is its
:class:`~study.store.storage.Storage`.

Layout of ``DIR`` (``--out DIR``)::

    manifest.json              what ran, with what (see :mod:`study.store.manifest`)
    configs.parquet            config_id -> sampled hyperparameters
    trials/<escaped key>.parquet   one row: the trial's outcome
    epochs/<escaped key>.parquet   its per-epoch rows
    trials.parquet, epochs.parquet compacted rows (``seedsweep compact``)
    confusion/, confusion.parquet  confusion counts (families that classify)
    progress.json              the running driver's progress (advisory)
    cache/                     what a family's trials share (the encoder family's embeddings)
    import.json                imported directories only: the comparisons to report
    .lock                      held (flock) by the one process writing DIR

Every file is written whole or not at all (:mod:`study.files`). Readers skip
dot-files; the next ``run`` removes temporary files left by a killed writer. The epochs part of a
trial is written before its trials part: a trial counts as stored once its
trials part exists. A part overrides a compacted row with the same key
(that is how ``--retry-failed`` replaces a failed row after compaction).
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import UserError
from ..files import TMP_PREFIX, stat_stamp, write_json
from ..schema import escape_key, unescape_key
from .backends import open_storage
from .shards import compact_all, fold, read_resolved, shard_name, shard_seq, stored_keys
from .stamps import stamp, stamps_of
from .storage import Storage, Vanished

__all__ = ["RunDir", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1


class RunDir:
    """A run directory, on whichever :class:`~study.store.storage.Storage` its path
    names: a local (or mounted) folder, or an object store for a URI
    (``RunDir("s3://bucket/dir?endpoint_override=…")``)."""

    def __init__(self, path: str | Path) -> None:
        self.storage: Storage = open_storage(path)
        s = self.storage
        self.path = s.root if not s.remote else s.name       # a Path locally; the URI on an object store
        self.trials_dir = s.join("trials")
        self.epochs_dir = s.join("epochs")
        self.manifest_path = s.join("manifest.json")
        self.configs_path = s.join("configs.parquet")
        self.shards_dir = s.join("shards")
        self.compacted_trials = s.join("trials.parquet")
        self.compacted_epochs = s.join("epochs.parquet")
        self.progress_path = s.join("progress.json")
        self.confusion_dir = s.join("confusion")
        self.compacted_confusion = s.join("confusion.parquet")
        self.import_path = s.join("import.json")
        self.looks_path = s.join("looks.json")            # an adaptive study's looks, as taken
        self.extension_path = s.join("extension.json")    # ``seedsweep extend``: the budget raised, and the alpha left
        #: the sealed claims' SHA-256, stamped into every trials part written (study.store.stamps); the driver sets it
        self.seal: str | None = None
        self.cache_dir: str | None = s.local_folder("cache")   # what trials share (e.g. embeddings); on an
        #                                                          object store trials cache in SEEDSWEEP_CACHE
        #: the user's code's trial folders and program logs (work/<key>/, work/<key>.log); None on an object store
        self.work_dir: str | None = s.local_folder("work")

    def __str__(self) -> str:
        return str(self.path)

    @property
    def remote(self) -> bool:
        """True for a run directory on an object store."""
        return self.storage.remote

    # ---------------------------------------------------------------- state

    def exists(self) -> bool:
        """Whether the directory holds a manifest (is a run directory)."""
        return self.storage.is_file(self.manifest_path)

    def require(self) -> None:
        """Raise a :class:`UserError` unless this is a run directory."""
        s = self.storage
        if not s.is_folder(self.path):
            raise UserError(str(self.path), "no such run directory.",
                            "Give the --out folder of a 'seedsweep run'.")
        if not self.exists():
            message = ("holds no manifest.json, so it is not a run directory." if s.remote else
                       "this folder has no manifest.json, so it is not a run directory.")
            raise UserError(str(self.path), message, f"Give the --out {s.noun} of a 'seedsweep run'.")

    def manifest(self) -> dict[str, Any]:
        """The manifest (a :class:`UserError` names it when it cannot be read)."""
        try:
            return json.loads(self.storage.read_text(self.manifest_path))
        except (OSError, json.JSONDecodeError) as exc:
            raise UserError(self.storage.where(self.manifest_path), f"cannot read the manifest ({exc}).",
                            "Restore it from a backup; it records the study's YAML.") from None

    def configs(self) -> pa.Table | None:
        """The sampled configurations (``configs.parquet``), or None before the first run."""
        if not self.storage.is_file(self.configs_path):
            return None
        return self.storage.read_table(self.configs_path)

    def part_path(self, folder, key: str):
        """The path of ``key``'s part in ``folder``."""
        return self.storage.child(folder, f"{escape_key(key)}.parquet")

    def part_keys(self, folder) -> dict:
        """Trial key -> path of the parts in ``folder`` (one of :meth:`folder`)."""
        return {unescape_key(name[: -len(".parquet")]): p for name, p in self.storage.list(folder).items()
                if not name.startswith(".") and name.endswith(".parquet")}

    # Layers (study.store.shards): the compacted file, shards, parts.
    def folder(self, table: str):
        """The parts folder of ``table`` (trials, epochs or confusion)."""
        return {"trials": self.trials_dir, "epochs": self.epochs_dir, "confusion": self.confusion_dir}[table]

    def compacted_path(self, table: str):
        """The compacted file of ``table`` (trials, epochs or confusion)."""
        return {"trials": self.compacted_trials, "epochs": self.compacted_epochs,
                "confusion": self.compacted_confusion}[table]

    def shard_path(self, table: str, seq: int):
        """The path of ``table``'s shard number ``seq``."""
        return self.storage.join("shards", shard_name(table, seq))

    def shards(self, table: str) -> list[tuple[int, Path]]:
        """(number, path) of the table's shards, oldest first."""
        found = [(shard_seq(name), p) for name, p in self.storage.list(self.shards_dir).items()]
        return sorted((s[1], p) for s, p in found if s is not None and s[0] == table)

    def next_shard(self) -> int:
        """A shard number above every shard of every table."""
        seqs = [s[1] for s in map(shard_seq, self.storage.list(self.shards_dir)) if s is not None]
        return max(seqs, default=0) + 1

    def stored_keys(self) -> set[str]:
        """Trial keys with a stored row (a part, a shard row or a compacted row):
        the parts' names and the key column of the larger files."""
        return stored_keys(self)

    def read_trials(self, columns: list[str] | None = None) -> pa.Table | None:
        """Every stored trial row (only ``columns``, when given); a part wins over
        a compacted row of the same key."""
        return read_resolved(self, "trials", columns)

    def read_epochs(self, columns: list[str] | None = None) -> pa.Table | None:
        """Every stored epoch row (a part replaces the compacted rows of its key)."""
        return read_resolved(self, "epochs", columns)

    def read_progress(self) -> dict[str, Any] | None:
        """The driver's live progress file (running trials, updated_at), or None."""
        try:
            return json.loads(self.storage.read_text(self.progress_path))
        except (OSError, ValueError):
            return None

    def write_progress(self, progress: dict[str, Any]) -> None:
        """Replace the driver's progress file."""
        self.storage.write_json(progress, self.progress_path)

    def _read_json(self, path, what: str) -> Any:
        if not self.storage.is_file(path):
            return None
        try:
            return json.loads(self.storage.read_text(path))
        except (OSError, ValueError) as exc:
            raise UserError(self.storage.where(path), f"cannot read {what} ({exc}).",
                            "Restore the file from a backup; without it the study's decisions cannot be checked.") \
                from None

    def read_looks(self) -> list[dict[str, Any]]:
        """An adaptive study's looks as they were taken (configurations, decisions, boundaries), in order."""
        return list(self._read_json(self.looks_path, "the record of the study's looks") or [])

    def write_looks(self, looks: list[dict[str, Any]]) -> None:
        """Replace the record of the looks (written whole after each look)."""
        self.storage.write_json(looks, self.looks_path)

    def read_extension(self) -> dict[str, Any] | None:
        """The extension of a finished study (``seedsweep extend``), or None."""
        return self._read_json(self.extension_path, "the study's extension")

    def write_extension(self, extension: dict[str, Any]) -> None:
        """Record an extension (before any trial of it runs)."""
        self.storage.write_json(extension, self.extension_path)

    def read_confusion(self, columns: list[str] | None = None) -> pa.Table | None:
        """Stored confusion counts (families that classify), or None."""
        return read_resolved(self, "confusion", columns)

    # --------------------------------------------------------------- writing

    def locked(self):
        """Held for as long as this process writes the directory: ``DIR/.lock``
        (an advisory ``flock``) locally; nothing on an object store (one
        writer by convention)."""
        return self.storage.locked()

    def prepare(self) -> None:
        """Create the folders and remove temporary files a killed writer left."""
        self.storage.prepare([self.storage.root, self.trials_dir, self.epochs_dir, self.confusion_dir,
                              self.shards_dir])

    def write_trial(self, key: str, trial_row: pa.Table, epoch_rows: pa.Table,
                    confusion: pa.Table | None = None) -> pa.Table:
        """Store one finished trial: its epochs (and confusion) parts, then its
        trials part -- a trial row is the last thing written, stamped with
        :attr:`seal` when claims are sealed. Returns the trials table as written."""
        write = self.storage.write_table
        write(epoch_rows, self.part_path(self.epochs_dir, key))
        if confusion is not None and confusion.num_rows:
            write(confusion, self.part_path(self.confusion_dir, key))
        if self.seal:
            trial_row = stamp(trial_row, [self.seal])
        write(trial_row, self.part_path(self.trials_dir, key))
        return trial_row

    def seal_stamps(self) -> dict[str, int]:
        """Each hash stamped in the trials files (parts, shards, compacted
        file) and how many files carry it (:mod:`study.store.stamps`); footers only."""
        files = list(self.part_keys(self.trials_dir).values()) + [p for _, p in self.shards("trials")]
        if self.storage.is_file(self.compacted_trials):
            files.append(self.compacted_trials)
        counts: dict[str, int] = {}
        for path in files:
            try:
                metadata = self.storage.read_metadata(path)
            except Vanished:                 # folded or merged meanwhile: its stamps moved into a shard
                continue
            for h in stamps_of(metadata):
                counts[h] = counts.get(h, 0) + 1
        return counts

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        """Replace the manifest, whole or not at all."""
        self.storage.write_json(manifest, self.manifest_path)

    @property
    def claims_path(self):
        """The sealed claims file (study.store.sealing)."""
        return self.storage.join("claims.yaml")

    def write_claims(self, data: bytes) -> None:
        """Write the sealed claims file (:mod:`study.store.sealing` records its hash)."""
        self.storage.write_bytes(data, self.claims_path)

    def supersede_claims(self, n: int) -> str:
        """Keep the sealed claims as ``claims-superseded-<n>.yaml``; returns its name."""
        name = f"claims-superseded-{n}.yaml"
        self.storage.rename(self.claims_path, self.storage.join(name))
        return name

    def write_configs(self, configs: pa.Table) -> None:
        """Write the sampled configurations."""
        self.storage.write_table(configs, self.configs_path)

    def check_out(self) -> None:
        """Raise a :class:`UserError` unless this may become (or is) a run directory."""
        self.storage.check_out(self.manifest_path)

    def read_import_spec(self) -> dict[str, Any] | None:
        """The raw ``import.json`` of an imported directory (None for a seedsweep run)."""
        if not self.storage.is_file(self.import_path):
            return None
        try:
            return json.loads(self.storage.read_text(self.import_path))
        except (OSError, json.JSONDecodeError) as exc:
            raise UserError(str(self.import_path), f"cannot read the import description ({exc}).",
                            "Restore it, or import the source file again into a new folder.") from None

    def signature(self) -> str:
        """Changes whenever a trial is stored, the directory is compacted, the
        driver's progress file or the manifest or sealed claims are rewritten (cheap: a few ``stat`` calls).
        Not torn: taken again (up to 10 times) until the trials folder's time is the same after its listing."""
        for _ in range(10):
            parts = [stat_stamp(p) for p in (self.trials_dir, self.shards_dir, self.compacted_trials,
                                             self.progress_path, self.import_path, self.manifest_path, self.claims_path)]
            try:
                parts.append(str(len(os.listdir(self.trials_dir))))
            except OSError:
                parts.append("0")
            if stat_stamp(self.trials_dir) == parts[0]:
                break
        return "|".join(parts)

    @staticmethod
    def check_import_target(out: str | Path) -> None:
        """Raise a :class:`UserError` unless ``out`` is new or an empty folder."""
        out = Path(out)
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise UserError(str(out), "already exists and is not empty.",
                            "Choose a new --out folder (an import never overwrites a run directory).")

    @classmethod
    def create_imported(cls, out: str | Path, trials: pa.Table, import_spec: dict[str, Any],
                        manifest: dict[str, Any], epochs: pa.Table | None = None) -> "RunDir":
        """Write an imported run directory (``trials.parquet``, ``import.json``,
        ``manifest.json``, and ``epochs.parquet`` where the source has them) into
        a temporary folder beside ``out`` and rename it into place: a failed import leaves nothing."""
        out = Path(out)
        cls.check_import_target(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.parent / f"{TMP_PREFIX}import-{uuid.uuid4().hex}"
        tmp.mkdir()
        try:
            staged = cls(tmp)
            pq.write_table(trials, staged.compacted_trials)
            if epochs is not None:
                pq.write_table(epochs, staged.compacted_epochs)
            write_json(import_spec, staged.import_path)
            write_json(manifest, staged.manifest_path)
            if out.exists():
                out.rmdir()
            os.rename(tmp, out)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp)
        return cls(out)

    def compact(self) -> tuple[int, int]:
        """Merge every part and shard into ``trials.parquet`` / ``epochs.parquet``
        (and ``confusion.parquet``); returns (trial rows, epoch rows). Safe to
        kill at any moment (see :mod:`study.store.shards`)."""
        return compact_all(self)

    def fold(self, min_parts: int = 1, known: dict | None = None) -> int:
        """Fold the trials parts into a new shard when at least ``min_parts`` wait
        (the running driver calls it, with ``known``: the tables it wrote);
        returns the trials folded."""
        return fold(self, min_parts, known)
