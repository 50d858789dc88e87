"""Tagging schemes for chunks: BIO, IOB and IOBES, and conversions between them.

* **BIO** (IOB2): the first token of every chunk is ``B-T``, the others ``I-T``.
* **IOB** (IOB1, the CoNLL-2000 distribution's original scheme): a chunk
  starts with ``I-T`` unless it directly follows a chunk of the same type, in
  which case it starts with ``B-T``.
* **IOBES**: ``S-T`` for a one-token chunk, else ``B-T`` … ``I-T`` … ``E-T``.

Chunks are read with the rules of the CoNLL-2000 evaluation script
(``conlleval``): a chunk ends where the next tag cannot continue it and starts
where a tag cannot continue the previous one -- so an ``I-T`` after ``O`` (or
after a chunk of another type) opens a chunk, as the script counts it.
Conversions go through these chunks, so every valid sequence round-trips
exactly; an invalid one is first read as the script reads it.
"""

from __future__ import annotations

from typing import Sequence

__all__ = ["SCHEMES", "split_tag", "chunks", "from_chunks", "convert", "valid_tag", "is_valid"]

SCHEMES = ("BIO", "IOB", "IOBES")
_PREFIXES = {"BIO": "BI", "IOB": "BI", "IOBES": "BIES"}


def split_tag(tag: str) -> tuple[str, str]:
    """``"B-NP"`` -> ``("B", "NP")``; ``"O"`` -> ``("O", "")`` (the script's split at the first hyphen)."""
    if "-" in tag:
        prefix, kind = tag.split("-", 1)
        return prefix, kind
    return tag, ""


def valid_tag(tag: str, scheme: str) -> bool:
    """Whether ``tag`` is a tag of ``scheme`` (``O`` or a known prefix, a hyphen and a type)."""
    if tag == "O":
        return True
    prefix, kind = split_tag(tag)
    return "-" in tag and bool(kind) and prefix in _PREFIXES[scheme]


# The two predicates of the CoNLL-2000 evaluation script, rule for rule
# (prefix and type of the previous and the current tag). The script knows B,
# I, O and E but not S, so IOBES sequences are read by :func:`_iobes_chunks`
# and converted to BIO before scoring.
_ENDS = frozenset({("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"), ("E", "E"), ("E", "I"), ("E", "O")})
_STARTS = frozenset({("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"), ("E", "E"), ("E", "I"), ("O", "E")})


def _boundary(pairs: frozenset, pair: tuple[str, str], own: str, prev_type: str, kind: str) -> bool:
    """The script's rule: a listed (previous, current) prefix pair, or a type
    change next to a tag that is not ``O``/``.`` (``own``), or a bracket."""
    return pair in pairs or (own not in ("O", ".") and prev_type != kind) or own in ("[", "]")


def _end_of_chunk(prev: str, tag: str, prev_type: str, kind: str) -> bool:
    return _boundary(_ENDS, (prev, tag), prev, prev_type, kind)


def _start_of_chunk(prev: str, tag: str, prev_type: str, kind: str) -> bool:
    return _boundary(_STARTS, (prev, tag), tag, prev_type, kind)


def _conlleval_chunks(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    out = []
    start = None
    prev, prev_type = "O", ""
    for i, tag in enumerate(list(tags) + ["O"]):          # a sentence boundary reads as O
        prefix, kind = split_tag(tag)
        if start is not None and _end_of_chunk(prev, prefix, prev_type, kind):
            out.append((prev_type, start, i - 1))
            start = None
        if _start_of_chunk(prev, prefix, prev_type, kind):
            start = i
        prev, prev_type = prefix, kind
    return out


def _iobes_chunks(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """IOBES reading: S-T is a chunk; B-T opens one; I-T and E-T continue an
    open chunk of type T (E-T closes it) and otherwise open one, as the
    script treats an I- after O; O closes."""
    out = []
    start, open_type = None, None
    for i, tag in enumerate(tags):
        prefix, kind = split_tag(tag)
        continues = start is not None and open_type == kind and prefix in ("I", "E")
        if start is not None and not continues:
            out.append((open_type, start, i - 1))
            start, open_type = None, None
        if prefix == "O" or not kind:
            continue
        if start is None:
            start, open_type = i, kind
        if prefix in ("S", "E"):
            out.append((kind, start, i))
            start, open_type = None, None
    if start is not None:
        out.append((open_type, start, len(tags) - 1))
    return out


def chunks(tags: Sequence[str], scheme: str | None = None) -> list[tuple[str, int, int]]:
    """The chunks of one sentence as (type, first, last) token indices.

    BIO and IOB tags are read exactly as ``conlleval`` reads them; IOBES tags
    (``scheme="IOBES"``, or any ``S-``/``E-`` tag) as :func:`_iobes_chunks` says.

    >>> chunks(["B-NP", "I-NP", "O", "I-VP", "B-NP"])
    [('NP', 0, 1), ('VP', 3, 3), ('NP', 4, 4)]
    """
    if scheme == "IOBES" or any(t[:2] in ("S-", "E-") for t in tags):
        return _iobes_chunks(tags)
    return _conlleval_chunks(tags)


def from_chunks(chunk_list: Sequence[tuple[str, int, int]], length: int, scheme: str) -> list[str]:
    """Tags of a sentence of ``length`` tokens holding ``chunk_list`` in ``scheme``."""
    if scheme not in SCHEMES:
        raise ValueError(f"unknown tagging scheme {scheme!r}; use one of {SCHEMES}")
    tags = ["O"] * length
    previous_end, previous_type = -2, None
    for kind, first, last in sorted(chunk_list, key=lambda c: c[1]):
        if scheme == "IOBES":
            if first == last:
                tags[first] = f"S-{kind}"
            else:
                tags[first] = f"B-{kind}"
                tags[last] = f"E-{kind}"
                for j in range(first + 1, last):
                    tags[j] = f"I-{kind}"
        else:
            for j in range(first, last + 1):
                tags[j] = f"I-{kind}"
            if scheme == "BIO" or (previous_end == first - 1 and previous_type == kind):
                tags[first] = f"B-{kind}"
        previous_end, previous_type = last, kind
    return tags


def convert(tags: Sequence[str], to: str, source: str | None = None) -> list[str]:
    """Re-tag one sentence in the scheme ``to`` (through its chunks).

    >>> convert(["B-NP", "I-NP", "B-NP", "O", "B-VP"], "IOB")
    ['I-NP', 'I-NP', 'B-NP', 'O', 'I-VP']
    >>> convert(["B-NP", "I-NP", "B-NP", "O", "B-VP"], "IOBES")
    ['B-NP', 'E-NP', 'S-NP', 'O', 'S-VP']
    """
    return from_chunks(chunks(tags, source), len(tags), to)


def is_valid(tags: Sequence[str], scheme: str) -> bool:
    """Whether ``tags`` is exactly what ``scheme`` writes for its chunks."""
    return all(valid_tag(t, scheme) for t in tags) and list(tags) == convert(tags, scheme, scheme)
