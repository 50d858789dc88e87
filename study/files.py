"""The ground floor for bytes on disk: atomic writes and hashing.

Every file seedsweep writes is written whole or not at all: to a temporary
name in the same folder (a dot-file starting ``.tmp-``, ending ``.partial``)
and renamed into place, so a reader, or a process killed at any moment, sees
the whole file or none. Readers skip dot-files. Files are not fsync'ed: a
killed process cannot lose a renamed file, but after a power cut the
filesystem decides what survived.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import uuid
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["TMP_PREFIX", "write_table", "write_bytes", "write_text", "write_json", "file_sha256", "stable_hash", "is_uri",
           "note_read", "reads", "folder_under", "stat_stamp"]

#: Name prefix of a file still being written (readers skip it; ``prepare`` removes it).
TMP_PREFIX = ".tmp-"


def _temporary(path: Path) -> Path:
    return path.parent / f"{TMP_PREFIX}{uuid.uuid4().hex}-{path.name}.partial"


def write_table(table: pa.Table, path: str | Path) -> None:
    """Write ``table`` to ``path`` as Parquet, atomically (temporary name, then rename)."""
    _atomic(path, lambda tmp: pq.write_table(table, tmp))


def write_bytes(data: bytes, path: str | Path) -> None:
    """Write ``data`` to ``path`` atomically (temporary name, then rename)."""
    _atomic(path, lambda tmp: tmp.write_bytes(data))


def _atomic(path: str | Path, write) -> None:
    """``write(tmp)`` to a temporary name beside ``path``, then rename it to
    ``path``; on any failure the temporary file is removed and an ``OSError``
    names ``path``."""
    path = Path(path)
    tmp = _temporary(path)
    try:
        write(tmp)
        os.replace(tmp, path)
    except OSError as exc:
        raise _named(exc, path) from exc
    finally:
        if tmp.exists():
            tmp.unlink()


def _named(exc: OSError, path: Path) -> OSError:
    """``exc`` naming the file it was writing (a failed ``write()`` names none), its errno kept.

    >>> import errno
    >>> e = _named(OSError(errno.ENOSPC, "No space left on device"), Path("/d/run/manifest.json"))
    >>> e.errno == errno.ENOSPC, e.filename
    (True, '/d/run/manifest.json')
    """
    if exc.filename is not None or exc.errno is None:
        return exc
    return type(exc)(exc.errno, exc.strerror, str(path))


def write_text(text: str, path: str | Path) -> None:
    """Write ``text`` to ``path`` atomically (temporary name, then rename)."""
    write_bytes(text.encode(), path)


def write_json(data: dict[str, Any], path: str | Path) -> None:
    """Write ``data`` as indented JSON to ``path`` atomically."""
    write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n", path)


def file_sha256(path: str | Path) -> str:
    """The SHA-256 hex digest of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def stable_hash(text: str) -> int:
    """A 64-bit integer from ``text`` that is the same in every process and Python version.

    >>> stable_hash("lr") == stable_hash("lr") and stable_hash("lr") != stable_hash("layers")
    True
    """
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def is_uri(path: str | Path) -> bool:
    """``s3://…``, ``gs://…`` (any ``scheme://``): a run directory on an object store.

    >>> is_uri("s3://bucket/run"), is_uri("runs/quickstart")
    (True, False)
    """
    return isinstance(path, str) and "://" in path


# Files a study reads (corpora, embeddings, model folders), noted by the
# families' loaders while :func:`reads` collects: the runner resolves a study
# inside it and records every file's SHA-256 in the manifest.
_COLLECTORS: list[set[str]] = []


def note_read(path: str | Path) -> None:
    """Record that ``path`` (a file, or a folder: every file under it) is read."""
    if not _COLLECTORS:
        return
    path = Path(path).resolve()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else []
    for collector in _COLLECTORS:
        collector.update(str(f) for f in files)


@contextlib.contextmanager
def reads() -> Iterator[set[str]]:
    """Collect the paths :func:`note_read` is given while the block runs."""
    collected: set[str] = set()
    _COLLECTORS.append(collected)
    try:
        yield collected
    finally:
        _COLLECTORS.remove(collected)


def folder_under(base: str, path: str | None) -> Path:
    """``path`` resolved against ``base`` (the study file's folder; the working folder when empty), absolute
    as given; ``base`` itself when ``path`` is None (``task.working_dir``: usercode checks it, shipping uses it)."""
    root = Path(base or os.getcwd())
    given = Path(path or ".").expanduser()
    return (given if given.is_absolute() else root / given).resolve()


def stat_stamp(path: str | Path) -> str:
    """``mtime_ns:size`` of ``path`` (a file or folder), or ``-`` where there is nothing: what a
    run directory's signature is made of."""
    try:
        st = os.stat(path)
    except OSError:
        return "-"
    return f"{st.st_mtime_ns}:{st.st_size}"
