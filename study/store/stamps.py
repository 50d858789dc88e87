"""The seal stamp: the SHA-256 of the sealed claims, kept a second time inside
the trials files.

The manifest records the hash of the sealed claims file
(:mod:`study.store.sealing`); a reader that compares the file against it catches an
edit of the file. An edit of the manifest as well (its hash changed to match
an edited file) would pass that check, so every trials part written after
sealing carries the hash in its Parquet key-value metadata, under
:data:`SEAL_KEY`, and every shard or compacted file made from parts carries
the union of theirs. Files written before any sealing carry none.
:func:`study.store.sealing.verify` compares the stamps with the manifest.

>>> t = stamp(pa.table({"trial_key": ["a"]}), ["ab12"])
>>> stamps_of(t.schema.metadata)
{'ab12'}
>>> sorted(stamps_of(union([t, stamp(t, ["cd34"]), pa.table({"x": [1]})]).schema.metadata))
['ab12', 'cd34']
"""

from __future__ import annotations

import json
from typing import Iterable

import pyarrow as pa

__all__ = ["SEAL_KEY", "stamp", "stamps_of", "union"]

#: the Parquet key-value metadata key of the stamp (a JSON list of hashes)
SEAL_KEY = b"seedsweep.sealed_claims_sha256"


def stamps_of(metadata: dict | None) -> set[str]:
    """The hashes stamped in a schema's metadata (none when unstamped)."""
    raw = (metadata or {}).get(SEAL_KEY)
    if not raw:
        return set()
    try:
        found = json.loads(raw)
    except ValueError:
        return {f"unreadable stamp {raw[:40]!r}"}
    return {str(h) for h in found} if isinstance(found, list) else {str(found)}


def stamp(table: pa.Table, hashes: Iterable[str]) -> pa.Table:
    """``table`` with ``hashes`` (added to those it has) as its stamp; unchanged when there are none."""
    found = stamps_of(table.schema.metadata) | set(hashes)
    if not found:
        return table
    return table.replace_schema_metadata({**(table.schema.metadata or {}), SEAL_KEY: json.dumps(sorted(found))})


def union(tables: list[pa.Table]) -> pa.Table:
    """The first table stamped with the stamps of all (a concatenation keeps only the first's metadata)."""
    found: set[str] = set()
    for t in tables:
        found |= stamps_of(t.schema.metadata)
    return stamp(tables[0], found)
