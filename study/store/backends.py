"""The two :class:`~study.store.storage.Storage` backends of a run directory: a
local (or mounted) folder and an object store, and :func:`open_storage`,
which picks one from the path.

>>> s = open_storage("runs/quickstart")
>>> type(s).__name__, s.join("trials", "a.parquet").as_posix()
('LocalStorage', 'runs/quickstart/trials/a.parquet')
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ..errors import UserError
from ..files import TMP_PREFIX, is_uri, write_bytes, write_json, write_table
from .storage import Storage, Vanished, read_part, read_part_metadata

__all__ = ["LocalStorage", "ObjectStorage", "open_storage"]


class LocalStorage(Storage):
    """A run directory on the local filesystem (or a mounted shared one)."""

    def __init__(self, path: str | Path) -> None:
        self.root = Path(path)
        self.name = str(self.root)

    def join(self, *names: str) -> Path:
        return self.root.joinpath(*names)

    def child(self, folder, name: str) -> Path:
        return Path(folder) / name

    def where(self, path) -> str:
        return str(path)

    def is_file(self, path) -> bool:
        return Path(path).is_file()

    def is_folder(self, path) -> bool:
        return Path(path).is_dir()

    def list(self, folder) -> dict[str, Path]:
        try:
            with os.scandir(folder) as entries:
                return {e.name: Path(e.path) for e in entries}
        except FileNotFoundError:
            return {}

    def read_table(self, path, columns: list[str] | None = None) -> pa.Table:
        return read_part(path, columns)

    def read_metadata(self, path) -> dict | None:
        return read_part_metadata(path)

    def read_text(self, path) -> str:
        return Path(path).read_text()

    def write_table(self, table: pa.Table, path) -> None:
        write_table(table, path)

    def write_bytes(self, data: bytes, path) -> None:
        write_bytes(data, path)

    def write_json(self, data: dict[str, Any], path) -> None:
        write_json(data, path)

    def delete(self, path) -> None:
        Path(path).unlink()

    def rename(self, path, target) -> None:
        Path(path).replace(target)

    def prepare(self, folders: list) -> None:
        for folder in folders:
            folder.mkdir(parents=True, exist_ok=True)
            for entry in folder.iterdir():
                if entry.name.startswith(TMP_PREFIX):
                    entry.unlink()

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold ``DIR/.lock`` (an advisory ``flock``: the kernel releases it
        when the holder dies, so a killed run never blocks the next one)."""
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise UserError(self.name, "another seedsweep process is writing this run directory.",
                                "Wait for it to finish or stop it; one run directory has one writer.") from None
            yield
        finally:
            os.close(fd)

    def stamp(self, path) -> tuple:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise Vanished(str(path)) from None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def check_out(self, manifest_path) -> None:
        out = self.root
        if out.exists() and not out.is_dir():
            raise UserError(str(out), "exists and is not a folder.", "Give a new or existing run directory as --out.")
        if out.is_dir() and not Path(manifest_path).exists():
            leftovers = [p.name for p in out.iterdir() if p.name != ".lock" and not p.name.startswith(TMP_PREFIX)]
            if leftovers:
                raise UserError(str(out), f"is a folder with other files ({', '.join(sorted(leftovers)[:3])}…) and no "
                                "manifest.json, so it is not a seedsweep run directory.",
                                "Give a new or empty folder as --out, or an existing run directory.")

    def local_folder(self, *names: str) -> str:
        return str(self.join(*names))


class ObjectStorage(Storage):
    """A run directory on an object store (``s3://bucket/dir``, ``gs://…``),
    through pyarrow's filesystems. Options go into the URI's query, e.g.
    ``s3://bucket/dir?endpoint_override=127.0.0.1:9000&scheme=http``;
    credentials come from the usual environment (``AWS_ACCESS_KEY_ID``, …).

    An object store has no rename and no lock: one run directory has one
    writer (the driver) by convention, and temporary files never exist here.
    """

    remote = True
    noun = "URI"
    #: reads of an object tried again after a failure the SDK did not retry away
    rereads = 3
    #: retries of a failed S3 request (500, 503 SlowDown, a lost connection),
    #: each after an exponential back-off (the AWS SDK's default strategy: 25 ms
    #: doubling, about 26 s in all); a request still failing after the 11th try
    #: fails its operation. ``SEEDSWEEP_S3_RETRIES`` sets another number.
    retries = 10

    def __init__(self, uri: str) -> None:
        self.name = str(uri)
        try:
            self.fs, root = pafs.FileSystem.from_uri(self.name)
        except (pa.ArrowInvalid, OSError, ValueError) as exc:
            raise UserError(self.name, f"not a usable storage URI ({exc}).",
                            "Use s3://bucket/folder (options as ?endpoint_override=HOST:PORT&scheme=http) or a "
                            "local path.") from None
        raw = os.environ.get("SEEDSWEEP_S3_RETRIES", "")
        if raw:
            if not raw.isdigit():
                raise UserError("SEEDSWEEP_S3_RETRIES", f"expected a whole number of retries >= 0, got {raw!r}.",
                                "Set it to e.g. 10, or unset it for the default.")
            self.retries = int(raw)
        if isinstance(self.fs, pafs.S3FileSystem):
            # The same options, with the retries stated here rather than left to a library default.
            options = self.fs.__reduce__()[1][0]
            self.fs = pafs.S3FileSystem(**options, retry_strategy=pafs.AwsDefaultS3RetryStrategy(self.retries))
        self.root = root.rstrip("/")

    def join(self, *names: str) -> str:
        return "/".join([self.root, *names])

    def child(self, folder, name: str) -> str:
        return f"{folder}/{name}"

    def where(self, path) -> str:
        return f"{self.name}: {str(path)[len(self.root) + 1:]}"

    def is_file(self, path) -> bool:
        try:
            return self.fs.get_file_info(path).type == pafs.FileType.File
        except OSError as exc:
            raise UserError(self.name, f"the storage cannot be reached ({exc}).",
                            "Check the URI, the endpoint and the credentials.") from None

    def is_folder(self, path) -> bool:
        return True

    def list(self, folder) -> dict[str, str]:
        infos = self.fs.get_file_info(pafs.FileSelector(folder, allow_not_found=True))
        return {info.base_name: info.path for info in infos if info.type == pafs.FileType.File}

    def read_table(self, path, columns: list[str] | None = None) -> pa.Table:
        def read(fh):
            f = pq.ParquetFile(fh)
            wanted = None if columns is None else [c for c in columns if c in set(f.schema_arrow.names)]
            return f.read(columns=wanted, use_threads=False)

        return self._read(path, read)

    def read_metadata(self, path) -> dict | None:
        return self._read(path, lambda fh: pq.read_schema(fh).metadata)

    def _read(self, path, read: Callable):
        """``read`` on the object ``path`` opened for random access. A request
        that fails after the SDK's own retries, or a body cut off on the way
        (which the SDK does not retry), is tried again, up to :attr:`rereads`
        more times after 0.5, 1, 2 s; an object that arrives whole but does not
        parse is named as unreadable at once."""
        for attempt in range(self.rereads + 1):
            try:
                with self.fs.open_input_file(path) as fh:
                    return read(fh)
            except FileNotFoundError:
                raise Vanished(path) from None
            except pa.ArrowInvalid as exc:
                raise UserError(f"{self.name}: {path}", f"this Parquet object cannot be read ({exc}).",
                                "Delete it (its trial will run again) or restore it.") from None
            except OSError as exc:
                if attempt == self.rereads:
                    raise UserError(f"{self.name}: {path}", f"this object could not be fetched from the store "
                                    f"after {self.rereads + 1} reads ({exc}).",
                                    "Check that the store is reachable (endpoint, credentials, throttling), then "
                                    "run the command again; the object itself may well be intact.") from None
                time.sleep(0.5 * 2 ** attempt)

    def read_text(self, path) -> str:
        with self.fs.open_input_stream(path) as fh:
            return fh.read().decode()

    def write_bytes(self, data: bytes, path) -> None:
        """Upload ``data`` as the object ``path`` in one request: a failure
        before or during it leaves no object (nothing is streamed piecemeal)."""
        with self.fs.open_output_stream(path) as fh:
            fh.write(data)

    def write_table(self, table: pa.Table, path) -> None:
        buffer = pa.BufferOutputStream()
        pq.write_table(table, buffer)           # serialised whole in memory first: a failure here uploads nothing
        self.write_bytes(buffer.getvalue().to_pybytes(), path)

    def write_json(self, data: dict[str, Any], path) -> None:
        self.write_bytes((json.dumps(data, indent=2, default=str) + "\n").encode(), path)

    def delete(self, path) -> None:
        self.fs.delete_file(path)

    def rename(self, path, target) -> None:
        self.fs.move(path, target)

    def prepare(self, folders: list) -> None:
        for folder in folders:
            self.fs.create_dir(folder, recursive=True)

    @contextmanager
    def locked(self) -> Iterator[None]:
        yield                                       # no locks on object stores: one writer by convention

    def stamp(self, path) -> None:
        return None                                 # objects are never rewritten in place: the name is enough

    def check_out(self, manifest_path) -> None:
        self.is_file(manifest_path)                 # reachable (raises a UserError otherwise)


def open_storage(path: str | Path) -> Storage:
    """The storage of a run directory: :class:`ObjectStorage` for a URI
    (``s3://…``), :class:`LocalStorage` for anything else."""
    return ObjectStorage(str(path)) if is_uri(path) else LocalStorage(path)
