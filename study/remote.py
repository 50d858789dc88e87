"""Run directories on object stores (``s3://…``, ``gs://…``) through pyarrow's filesystems."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from .errors import UserError
from .schema import escape_key
from .shards import Vanished, shard_name
from .store import RunDir

__all__ = ["RemoteRunDir"]


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
        self.shards_dir = f"{self.root}/shards"
        self.compacted_trials = f"{self.root}/trials.parquet"
        self.compacted_epochs = f"{self.root}/epochs.parquet"
        self.progress_path = f"{self.root}/progress.json"
        self.confusion_dir = f"{self.root}/confusion"
        self.compacted_confusion = f"{self.root}/confusion.parquet"
        self.import_path = f"{self.root}/import.json"
        self.cache_dir = None                     # trials cache in SEEDSWEEP_CACHE on their own machine

    remote = True

    def _is_file(self, path: str) -> bool:
        import pyarrow.fs as pafs

        try:
            return self.fs.get_file_info(path).type == pafs.FileType.File
        except OSError as exc:
            raise UserError(self.uri, f"the storage cannot be reached ({exc}).",
                            "Check the URI, the endpoint and the credentials.") from None

    def _read_table(self, path: str, columns: list[str] | None = None) -> pa.Table:
        try:
            with self.fs.open_input_file(path) as fh:
                f = pq.ParquetFile(fh)
                if columns is not None:
                    columns = [c for c in columns if c in set(f.schema_arrow.names)]
                return f.read(columns=columns, use_threads=False)
        except FileNotFoundError:
            raise Vanished(path) from None
        except (OSError, pa.ArrowInvalid) as exc:
            raise UserError(f"{self.uri}: {path}", f"this Parquet object cannot be read ({exc}).",
                            "Delete it (its trial will run again) or restore it.") from None

    def _put(self, data: bytes, path: str) -> None:
        """Upload ``data`` as the object ``path`` in one request: a failure
        before or during it leaves no object (nothing is streamed piecemeal)."""
        with self.fs.open_output_stream(path) as fh:
            fh.write(data)

    def _write_table(self, table: pa.Table, path: str) -> None:
        buffer = pa.BufferOutputStream()
        pq.write_table(table, buffer)           # serialised whole in memory first: a failure here uploads nothing
        self._put(buffer.getvalue().to_pybytes(), path)

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

    def shard_path(self, table: str, seq: int) -> str:
        return f"{self.shards_dir}/{shard_name(table, seq)}"

    def _list(self, folder) -> dict[str, str]:
        import pyarrow.fs as pafs

        infos = self.fs.get_file_info(pafs.FileSelector(folder, allow_not_found=True))
        return {info.base_name: info.path for info in infos if info.type == pafs.FileType.File}

    @contextmanager
    def locked(self) -> Iterator[None]:
        yield                                       # no locks on object stores: one writer by convention

    def prepare(self) -> None:
        for folder in (self.root, self.trials_dir, self.epochs_dir, self.confusion_dir, self.shards_dir):
            self.fs.create_dir(folder, recursive=True)

    def _read_text(self, path: str) -> str:
        with self.fs.open_input_stream(path) as fh:
            return fh.read().decode()

    def _write_json(self, data: dict[str, Any], path: str) -> None:
        self._put((json.dumps(data, indent=2, default=str) + "\n").encode(), path)

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        self._write_json(manifest, self.manifest_path)

    def write_progress(self, progress: dict[str, Any]) -> None:
        self._write_json(progress, self.progress_path)

    def check_out(self) -> None:
        self._is_file(self.manifest_path)           # reachable (raises a UserError otherwise)

    def signature(self) -> str:
        """One listing instead of ``stat`` calls: stored keys and the progress time."""
        progress = self.read_progress() or {}
        return f"{len(self.stored_keys())}|{progress.get('updated_at', '')}"
