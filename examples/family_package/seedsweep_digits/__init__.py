"""An installed model family for seedsweep: an MLP on scikit-learn's digits.

A package becomes a family by exporting an object with the interface of
:mod:`study.families.base` and naming it in the entry-point group
``seedsweep.families`` (see ``pyproject.toml``). Unlike the ``function``
family it states its hyperparameters, their defaults and their limits, so
``seedsweep check`` refuses a study that names anything else; and it hands
the engine one epoch at a time (``train_epoch``/``evaluate``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from seedsweep.study.errors import UserError
from seedsweep.study.families.base import FamilyBase, Limit, ModelBase, choice, integer, merge_settings, number
from seedsweep.study.schema import Train

__all__ = ["FAMILY", "DigitsFamily"]


class DigitsModel(ModelBase):
    """One trial: the MLP, its optimizer and the fixed 60/20/20 split."""

    def __init__(self, settings: dict[str, Any]) -> None:
        import torch
        from sklearn.datasets import load_digits
        from torch import nn

        x, y = load_digits(return_X_y=True)
        order = np.random.default_rng(0).permutation(len(y))      # the same split for every trial
        x = torch.tensor(x[order] / 16.0, dtype=torch.float32)
        y = torch.tensor(y[order], dtype=torch.long)
        a, b = int(0.6 * len(y)), int(0.8 * len(y))
        self.train_set, self.dev, self.test = (x[:a], y[:a]), (x[a:b], y[a:b]), (x[b:], y[b:])
        self.model = nn.Sequential(nn.Linear(64, settings["hidden"]), nn.ReLU(), nn.Linear(settings["hidden"], 10))
        optimizer = {"adam": torch.optim.Adam, "sgd": torch.optim.SGD}[settings["optimizer"]]
        self.opt = optimizer(self.model.parameters(), lr=settings["lr"])
        self.loss = nn.CrossEntropyLoss()
        self.torch = torch

    def train_epoch(self, epoch: int) -> float:
        x, y = self.train_set
        total = 0.0
        for batch in self.torch.randperm(len(y)).split(32):      # seeded by seedsweep before build
            self.opt.zero_grad()
            loss = self.loss(self.model(x[batch]), y[batch])
            loss.backward()
            self.opt.step()
            total += float(loss.detach()) * len(batch)
        return total / len(y)

    def evaluate(self, epoch: int) -> tuple[float, float]:
        with self.torch.no_grad():
            return tuple(float((self.model(x).argmax(1) == y).float().mean()) for x, y in (self.dev, self.test))


@dataclass(frozen=True)
class DigitsFamily(FamilyBase):
    """The ``digits`` family: ``optimizer``, ``lr`` and ``hidden``."""

    name: str = "digits"
    uses_torch: bool = True
    train_defaults: Train = Train(max_epochs=15, patience=3, metric="accuracy", mode="max", timeout_s=None,
                                  retries=0)
    defaults: Mapping[str, Any] = field(default_factory=lambda: {"optimizer": "adam", "lr": 0.01, "hidden": 32})
    limits: Mapping[str, Limit] = field(default_factory=lambda: {
        "optimizer": choice("adam", "sgd"), "lr": number(1e-5, 1.0), "hidden": integer(2, 1024)})
    task_keys: frozenset[str] = frozenset({"dataset", "name"})
    datasets: tuple[str, ...] = ("digits",)

    def resolve(self, space) -> list[str]:
        try:
            from sklearn.datasets import load_digits

            n = len(load_digits().target)
        except Exception as exc:  # noqa: BLE001 - anything that keeps the data from loading
            raise UserError(f"{space.path}: task.dataset", f"scikit-learn's digits could not be loaded ({exc}).",
                            "pip install scikit-learn") from None
        return [f"digits: {n} images from scikit-learn"]

    def build(self, space, trial, *, cache_dir=None) -> DigitsModel:
        return DigitsModel(merge_settings(self.defaults, space, trial.hparams))


FAMILY = DigitsFamily()
