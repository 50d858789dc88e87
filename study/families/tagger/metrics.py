"""Scores of a tagger: chunk precision/recall/F1 as the CoNLL-2000 script
computes them, and token accuracy (POS).

``chunk_prf`` counts a predicted chunk as correct when a gold chunk has the
same type, first and last token; precision = correct / predicted chunks,
recall = correct / gold chunks, F1 their harmonic mean (0 when both are 0).
Chunks are read with the script's rules (:mod:`~study.families.tagger.schemes`), sentence by
sentence (the script treats a sentence boundary as an ``O``). IOBES
sequences -- which the script does not know -- are converted to BIO first.
"""

from __future__ import annotations

from typing import Sequence

from .schemes import chunks, convert

__all__ = ["chunk_prf", "token_accuracy"]


def _bio(tags: Sequence[str]) -> list[str]:
    if any(t[:2] in ("S-", "E-") for t in tags):
        return convert(tags, "BIO", "IOBES")
    return list(tags)


def chunk_prf(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> tuple[float, float, float]:
    """(precision, recall, F1) as fractions over sentences of tags.

    >>> chunk_prf([["B-NP", "I-NP", "O"]], [["B-NP", "B-NP", "O"]])
    (0.0, 0.0, 0.0)
    >>> chunk_prf([["B-NP", "O", "B-VP"]], [["B-NP", "O", "I-VP"]])
    (1.0, 1.0, 1.0)
    """
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold sentences but {len(pred)} predicted")
    correct = n_gold = n_pred = 0
    for g, p in zip(gold, pred):
        if len(g) != len(p):
            raise ValueError(f"a sentence has {len(g)} gold tags but {len(p)} predicted")
        gc = set(chunks(_bio(g)))
        pc = chunks(_bio(p))
        n_gold += len(gc)
        n_pred += len(pc)
        correct += sum(1 for c in pc if c in gc)
    precision = correct / n_pred if n_pred else 0.0
    recall = correct / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def token_accuracy(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> float:
    """Share of tokens whose predicted tag equals the gold tag."""
    total = right = 0
    for g, p in zip(gold, pred, strict=True):
        if len(g) != len(p):
            raise ValueError(f"a sentence has {len(g)} gold tags but {len(p)} predicted")
        total += len(g)
        right += sum(a == b for a, b in zip(g, p))
    return right / total if total else 0.0
