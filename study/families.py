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

__all__ = ["Model", "get_family", "check_task_and_names", "FAMILIES"]

#: family name -> module holding its ``FAMILY``.
FAMILIES = {"synthetic": "study.synthetic", "tagger": "study.tagger", "transformer": "study.transformer"}


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


def check_task_and_names(space, family: str, task_keys, datasets, hyperparameters, hint: str = "") -> None:
    """The schema checks every torch family shares: known ``task`` keys, a
    known ``task.dataset``, and only the family's hyperparameter names in
    ``compare``, ``space`` and ``fixed``."""
    for key in space.task:
        if key not in task_keys:
            raise UserError(f"{space.path}: task.{key}", f"unknown key '{key}' for the {family} family.",
                            f"Allowed: {', '.join(sorted(task_keys))}.")
    dataset = space.task.get("dataset")
    if dataset not in datasets:
        raise UserError(f"{space.path}: task.dataset", f"unknown or missing dataset {dataset!r}.",
                        f"Use one of: {', '.join(sorted(datasets))}.")
    names = {p.name for p in space.params} | set(space.choices) | {k for k, _ in space.fixed}
    unknown = sorted(names - set(hyperparameters))
    if unknown:
        raise UserError(f"{space.path}: {unknown[0]}", f"'{unknown[0]}' is not a hyperparameter of the {family} family.",
                        f"Its hyperparameters: {', '.join(sorted(hyperparameters))}.{hint}")
