"""Model families: what a study trains.

A family turns one trial (its hyperparameters, seed and the study's ``task``)
into a :class:`Model` that the shared training loop (:mod:`study.trial`)
drives epoch by epoch. Families are imported lazily, so validating a space of
one family never imports another's heavy dependencies.

Interface of a family module's ``FAMILY`` object:

* ``name``; ``train_defaults`` (a :class:`~study.space.Train`); ``uses_torch``
* ``validate(space)``: schema checks of ``task`` and ``fixed`` (no I/O)
* ``resolve(space)``: check that data, embeddings and models can be found
* ``build(space, trial)``: a :class:`Model` for one trial (after seeding)
"""

from __future__ import annotations

import importlib
from typing import Protocol

from .errors import UserError

__all__ = ["Model", "get_family", "FAMILIES"]

#: family name -> module holding its ``FAMILY``. ``tagger`` and ``transformer``
#: are planned (issues 3 and 7) and are refused until they exist.
FAMILIES = {"synthetic": "study.synthetic", "tagger": "study.tagger"}


class Model(Protocol):
    """One trial's model as the training loop sees it."""

    def train_epoch(self, epoch: int) -> float:
        """Train one epoch; return the mean training loss (NaN/inf means diverged)."""

    def evaluate(self, epoch: int) -> tuple[float, float]:
        """Return ``(dev_score, test_score)`` after ``epoch``."""


def get_family(name: str, *, where: str = "family"):
    """The family object registered under ``name``; a :class:`UserError` otherwise."""
    if name not in FAMILIES:
        raise UserError(where, f"unknown family {name!r}.",
                        f"Families available in this version: {', '.join(sorted(FAMILIES))}.")
    return importlib.import_module(FAMILIES[name]).FAMILY
