"""Where a run directory's files live: a local (or mounted) folder, or an object store.

A :class:`Storage` offers the few primitives a run directory is built from
-- join names into a path, tell whether a file exists, list a folder, read
and write a whole file, delete one, hold the writer's lock -- and nothing
about what the files mean: :class:`study.store.rundir.RunDir` composes one and
knows the layout; :mod:`study.store.shards` folds and resolves through the same
public methods.

Both backends keep the store's promise that every file is whole or absent:
locally a file is written under a temporary name and renamed into place; an
object is uploaded in one request, which becomes visible only when it
completes.

The two backends are :mod:`study.store.backends`.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import UserError

__all__ = ["Storage", "Vanished", "read_part", "read_part_metadata", "read_parts"]


class Vanished(Exception):
    """A file a reader listed was removed before it was read (a fold or merge ran)."""


def _read_local(path, read: Callable):
    """``read(path)`` on a local Parquet file: :class:`Vanished` when it was
    removed after being listed, a :class:`UserError` naming it when it is not
    Parquet."""
    try:
        return read(path)
    except FileNotFoundError:
        raise Vanished(str(path)) from None
    except (OSError, pa.ArrowInvalid) as exc:
        if not os.path.exists(path):
            raise Vanished(str(path)) from None
        raise UserError(str(path), f"this Parquet file cannot be read ({exc}).",
                        "Move it away (its trial will run again on the next 'seedsweep run') "
                        "or restore it from a backup.") from None


def read_part(path, columns: list[str] | None = None) -> pa.Table:
    """One local Parquet file (only ``columns`` of it, those it has);
    :class:`Vanished` when it was removed after being listed."""
    def read(p):
        f = pq.ParquetFile(p)
        names = set(f.schema_arrow.names)
        return f.read(columns=None if columns is None else [c for c in columns if c in names], use_threads=False)

    return _read_local(path, read)


def read_part_metadata(path) -> dict | None:
    """The schema metadata of one local Parquet file (its footer only);
    :class:`Vanished` when it was removed after being listed."""
    return _read_local(path, lambda p: pq.read_schema(p).metadata)


_POOL: ThreadPoolExecutor | None = None


def read_parts(read: Callable, paths: list, columns: list[str] | None = None) -> list[pa.Table]:
    """``read(path, columns)`` for each path, on a thread pool (Arrow decodes
    without the GIL), in the order given."""
    global _POOL
    if len(paths) < 4:
        return [read(p, columns) for p in paths]
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=min(16, 4 * (os.cpu_count() or 1)), thread_name_prefix="seedsweep-read")
    return list(_POOL.map(lambda p: read(p, columns), paths))


class Storage(ABC):
    """The storage primitives of one run directory rooted at :attr:`root`.

    Paths are what :meth:`join` returns (a :class:`~pathlib.Path` locally, a
    string on an object store); every other method takes them back."""

    #: True for object stores: no rename, no lock, no ``stat``.
    remote: bool = False
    #: what a user calls the run directory in messages ("folder", "URI")
    noun: str = "folder"
    #: the run directory as the user wrote it (for messages)
    name: str
    root: Any

    @abstractmethod
    def join(self, *names: str):
        """The path of ``names`` under the root."""

    @abstractmethod
    def child(self, folder, name: str):
        """The path of ``name`` in ``folder`` (a path :meth:`join` gave)."""

    @abstractmethod
    def where(self, path) -> str:
        """``path`` as a message names it."""

    @abstractmethod
    def is_file(self, path) -> bool:
        """Whether ``path`` is a stored file."""

    @abstractmethod
    def is_folder(self, path) -> bool:
        """Whether ``path`` may hold a run directory's files (object stores have no folders: always true)."""

    @abstractmethod
    def list(self, folder) -> dict[str, Any]:
        """File name -> path of the files in ``folder`` (none when it is missing)."""

    @abstractmethod
    def read_table(self, path, columns: list[str] | None = None) -> pa.Table:
        """One Parquet file (only ``columns`` of it, those it has); :class:`Vanished` if it is gone."""

    @abstractmethod
    def read_metadata(self, path) -> dict | None:
        """The key-value metadata of one Parquet file's schema (its footer only); :class:`Vanished` if it is gone."""

    def read_many_metadata(self, paths: list) -> list[dict | None]:
        """:meth:`read_metadata` of several files, read in parallel, in the order given."""
        return read_parts(lambda path, _columns: self.read_metadata(path), paths)

    def read_many(self, paths: list, columns: list[str] | None = None) -> list[pa.Table]:
        """Several files, read in parallel, in the order given."""
        return read_parts(self.read_table, paths, columns)

    @abstractmethod
    def read_text(self, path) -> str:
        """A whole text file (``OSError`` when it cannot be read)."""

    @abstractmethod
    def write_table(self, table: pa.Table, path) -> None:
        """Write ``table`` as Parquet to ``path``, whole or not at all."""

    @abstractmethod
    def write_bytes(self, data: bytes, path) -> None:
        """Write ``data`` to ``path``, whole or not at all."""

    @abstractmethod
    def write_json(self, data: dict[str, Any], path) -> None:
        """Write ``data`` as indented JSON to ``path``, whole or not at all."""

    @abstractmethod
    def delete(self, path) -> None:
        """Remove the file ``path``."""

    @abstractmethod
    def rename(self, path, target) -> None:
        """Give the file ``path`` the name ``target``."""

    @abstractmethod
    def prepare(self, folders: list) -> None:
        """Create ``folders`` and remove the temporary files a killed writer left in them."""

    @abstractmethod
    def locked(self):
        """A context manager held for as long as this process writes the directory."""

    @abstractmethod
    def stamp(self, path) -> tuple | None:
        """What changes when ``path`` is rewritten in place (None: files are never rewritten in place)."""

    @abstractmethod
    def check_out(self, manifest_path) -> None:
        """Raise a :class:`UserError` unless the root may become (or is) a run directory."""

    def local_folder(self, *names: str) -> str | None:
        """A folder on this machine under the root (None on an object store)."""
        return None
