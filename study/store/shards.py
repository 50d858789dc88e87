"""Compaction while a study runs: finished parts folded into shards, and how readers resolve them.

A run directory holds each table (``trials``, ``epochs``, ``confusion``) in
up to three layers, from oldest to newest:

1. the compacted file (``trials.parquet``), written by ``seedsweep compact``
   or by an import;
2. shards (``shards/trials-000007.parquet``), numbered in the order they
   were written: the driver folds finished parts into a new shard every
   :data:`FOLD_PARTS` trials, and merges the shards into one when there are
   more than :data:`MAX_SHARDS`;
3. parts, one file per trial key.

A reader takes a key's rows from the newest layer that holds the key (a
part, else the highest-numbered shard holding it, else the compacted file).
That one rule makes every step here safe to kill at any moment, because
nothing is removed before what replaces it is written whole:

* fold: write the epochs and confusion shards, then the trials shard; then
  remove the epochs and confusion parts, then the trials parts. A kill in
  between leaves rows both in a shard and in a part; the part wins and holds
  the same rows, and the next fold puts them into a newer shard.
* merge: write the merged shard (numbered above every other), then remove
  the shards it holds, oldest first.
* full compaction: write the compacted files, remove every shard oldest
  first, then the parts. A remaining shard is always a newest one for its
  keys, so it holds what the compacted file holds.

Readers list the layers and then read them; a file removed in between (a
fold or merge ran) makes them list again (:class:`Vanished`).
"""

from __future__ import annotations

import os
import re
import time
from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import UserError
from .stamps import union
from .storage import Vanished

__all__ = ["FOLD_PARTS", "MAX_SHARDS", "TABLES", "resolve", "fold", "merge", "compact_all",
           "shard_name", "shard_seq", "fold_parts", "read_resolved", "stored_keys", "Cached"]

#: The driver folds parts into a shard once this many trials parts are waiting
#: (``SEEDSWEEP_FOLD_PARTS`` overrides); at the run's end it folds what is left
#: when at least a fifth of that is waiting, so small studies keep their parts.
FOLD_PARTS = 500
#: More shards than this of one table are merged into one.
MAX_SHARDS = 16
TABLES = ("trials", "epochs", "confusion")
SORT = {"trials": [("trial_key", "ascending")],
        "epochs": [("trial_key", "ascending"), ("epoch", "ascending")],
        "confusion": [("trial_key", "ascending"), ("epoch", "ascending")]}
_SHARD = re.compile(r"^(trials|epochs|confusion)-(\d{6,})\.parquet$")


def _again(rd, what: str, step: Callable):
    """``step()``, listed and read again when a file vanished under it."""
    for _ in range(20):
        try:
            return step()
        except Vanished:
            continue
    raise UserError(str(rd.path), f"the {what} files kept changing while being read.",
                    "Try again; if it persists, stop the other process writing this run directory.")


def read_resolved(rd, table: str, columns: list[str] | None = None):
    """``table`` of ``rd`` over its layers (only ``columns``, when given)."""
    want = None if columns is None else list(dict.fromkeys(["trial_key", *columns]))
    data = _again(rd, table, lambda: resolve(_layers(rd, table, want)))
    if data is not None and columns is not None and "trial_key" not in columns:
        data = data.drop_columns(["trial_key"])
    return data


def stored_keys(rd) -> set[str]:
    """Trial keys with a stored row: the trials parts' names, and the key
    column of the shards and the compacted file (no other column is read)."""
    def step():
        files = [p for _, p in rd.shards("trials")]
        if rd.storage.is_file(rd.compacted_trials):
            files.append(rd.compacted_trials)
        keys = set(rd.part_keys(rd.trials_dir))
        for t in rd.storage.read_many(files, ["trial_key"]):
            keys.update(t["trial_key"].to_pylist())
        return keys | set(rd.part_keys(rd.trials_dir))
    return _again(rd, "trials", step)


def fold_parts() -> int:
    """Trials parts that make a fold (:data:`FOLD_PARTS`, or ``SEEDSWEEP_FOLD_PARTS``)."""
    raw = os.environ.get("SEEDSWEEP_FOLD_PARTS", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else FOLD_PARTS


def shard_name(table: str, seq: int) -> str:
    """``shard_name("trials", 7) == "trials-000007.parquet"``."""
    return f"{table}-{seq:06d}.parquet"


def shard_seq(name: str) -> tuple[str, int] | None:
    """(table, number) of a shard file name, or None.

    >>> shard_seq("epochs-000012.parquet"), shard_seq("notes.txt")
    (('epochs', 12), None)
    """
    m = _SHARD.match(name)
    return (m.group(1), int(m.group(2))) if m else None


def _concat(tables: list[pa.Table]) -> pa.Table | None:
    tables = [t for t in tables if t is not None]
    if not tables:
        return None
    return union([pa.concat_tables(tables, promote_options="permissive")] + tables)     # with every seal stamp


def resolve(layers: list[pa.Table | None]) -> pa.Table | None:
    """The rows of ``layers`` (oldest first), each trial key's rows taken from
    the newest layer that holds the key.

    >>> old = pa.table({"trial_key": ["a", "b"], "v": [1, 2]})
    >>> new = pa.table({"trial_key": ["b"], "v": [20]})
    >>> sorted(resolve([old, new]).to_pylist(), key=lambda r: r["trial_key"])
    [{'trial_key': 'a', 'v': 1}, {'trial_key': 'b', 'v': 20}]
    """
    out, seen = [], None
    for table in reversed([t for t in layers if t is not None and t.num_rows]):
        keys = pc.unique(table["trial_key"])
        if seen is not None:
            overlap = pc.is_in(table["trial_key"], value_set=seen)
            if pc.any(overlap).as_py():
                table = table.filter(pc.invert(overlap))
            seen = pa.concat_arrays([seen, keys.filter(pc.invert(pc.is_in(keys, value_set=seen)))])
        else:
            seen = keys
        out.append(table)
    return _concat(out[::-1])


def _layers(rd, table: str, columns: list[str] | None) -> list[pa.Table | None]:
    """The table's layers (compacted file, shards in order, parts) as read now.

    Listed newest first (parts, then shards, then the compacted file) and read
    oldest first, so a fold or merge running meanwhile can hide nothing: a
    file it removed after the listing raises :class:`Vanished` instead."""
    parts = rd.part_keys(rd.folder(table))
    shards = [p for _, p in rd.shards(table)]
    compacted = rd.compacted_path(table)
    layers = [rd.storage.read_table(compacted, columns) if rd.storage.is_file(compacted) else None]
    layers += rd.storage.read_many(shards, columns)
    layers.append(_concat(rd.storage.read_many(list(parts.values()), columns)))
    return layers


def _hold() -> None:
    """Wait ``SEEDSWEEP_FOLD_HOLD`` seconds between writing and removing (unset:
    no wait). Only the kill tests set it, to aim a SIGKILL into that window."""
    raw = os.environ.get("SEEDSWEEP_FOLD_HOLD", "")
    if raw:
        time.sleep(float(raw))


def fold(rd, min_parts: int = 1, known: dict | None = None) -> int:
    """Fold the stored trials' parts into one new shard per table, when at
    least ``min_parts`` trials parts wait; returns the trials folded. Only the
    writer (the driver's store thread, under the directory's lock) calls it.
    ``known`` maps a trial key to the tables its parts were written from
    (``{"trials": ..., "epochs": ..., "confusion": ...}``): those parts are
    not read back."""
    trial_parts = rd.part_keys(rd.trials_dir)
    if not trial_parts or len(trial_parts) < min_parts:
        return 0
    keys = set(trial_parts)
    known = known or {}
    seq = rd.next_shard()
    folded: dict[str, list] = {}
    for table in ("epochs", "confusion", "trials"):            # the trials shard last, as a part is stored
        parts = trial_parts if table == "trials" else {k: p for k, p in rd.part_keys(rd.folder(table)).items()
                                                       if k in keys}
        kept = {k: known[k][table] for k in parts if known.get(k, {}).get(table) is not None}
        unread = [p for k, p in parts.items() if k not in kept]
        data = _concat(list(kept.values()) + rd.storage.read_many(unread))
        if data is not None and data.num_rows:
            rd.storage.write_table(data.sort_by(SORT[table]), rd.shard_path(table, seq))
        folded[table] = list(parts.values())
    _hold()
    for table in ("epochs", "confusion", "trials"):
        for path in folded[table]:
            rd.storage.delete(path)
    if len(rd.shards("trials")) > MAX_SHARDS:
        merge(rd)
    return len(trial_parts)


def merge(rd) -> None:
    """Merge every shard of each table into one, numbered above them all."""
    seq = rd.next_shard()
    old = {table: rd.shards(table) for table in TABLES}
    for table in ("epochs", "confusion", "trials"):
        if not old[table]:
            continue
        data = resolve(rd.storage.read_many([p for _, p in old[table]]))
        if data is not None:
            rd.storage.write_table(data.sort_by(SORT[table]), rd.shard_path(table, seq))
    for table in TABLES:
        for _, path in old[table]:            # oldest first
            rd.storage.delete(path)


def compact_all(rd) -> tuple[int, int]:
    """Every layer into the compacted files; returns (trial rows, epoch rows)."""
    parts = {table: list(rd.part_keys(rd.folder(table)).values()) for table in TABLES}
    shards = sorted(((seq, path) for table in TABLES for seq, path in rd.shards(table)), key=lambda s: s[0])
    counts = {}
    for table in ("confusion", "epochs", "trials"):
        data = resolve(_layers(rd, table, None))
        counts[table] = 0 if data is None else data.num_rows
        if data is not None:
            rd.storage.write_table(data.sort_by(SORT[table]), rd.compacted_path(table))
    for _, path in shards:                    # oldest first: what remains is newest for its keys
        rd.storage.delete(path)
    for table in ("epochs", "confusion", "trials"):
        for path in parts[table]:
            rd.storage.delete(path)
    return counts["trials"], counts["epochs"]


class Cached:
    """A reader that keeps what it read: each call to :meth:`table` reads only
    the files that are new or changed since the last call (new parts, a new
    shard) and reuses the rest (the live dashboard's refresh)."""

    def __init__(self, rd) -> None:
        self.rd = rd
        self.files: dict[str, dict] = {table: {} for table in TABLES}

    def _stamp(self, path):
        return self.rd.storage.stamp(path)      # None on an object store: objects are never rewritten in place

    def table(self, table: str) -> pa.Table | None:
        """``table`` resolved over its layers, as :meth:`RunDir.read_trials` gives it."""
        rd, cache = self.rd, self.files[table]

        def step():
            parts = list(rd.part_keys(rd.folder(table)).values())      # listed newest first, as _layers
            shards = [p for _, p in rd.shards(table)]
            compacted = rd.compacted_path(table)
            files = ([compacted] if rd.storage.is_file(compacted) else []) + shards + parts
            stamps = {str(p): self._stamp(p) for p in files}            # before reading: a rewrite shows next time
            stale = [p for p in files if cache.get(str(p), (None,))[0] != stamps[str(p)] or str(p) not in cache]
            read = dict(zip(map(str, stale), rd.storage.read_many(stale)))
            fresh = {k: (stamps[k], read[k] if k in read else cache[k][1]) for k in stamps}
            layers = [fresh[str(compacted)][1] if str(compacted) in fresh else None]
            layers += [fresh[str(p)][1] for p in shards]
            layers.append(_concat([fresh[str(p)][1] for p in parts]))
            return fresh, resolve(layers)

        fresh, data = _again(rd, table, step)
        self.files[table] = fresh                  # files that went away are forgotten
        return data
