"""The object the user's function receives: one trial, and where it reports.

::

    def fit(trial):
        model = build(trial.params)                       # the study's hyperparameters
        for epoch in range(trial.max_epochs):
            loss = train_one_epoch(model)
            trial.report(dev=score(model, dev), test=score(model, test), loss=loss)
            if trial.should_stop:                         # patience, max_epochs, a NaN loss
                break

seedsweep has already seeded Python, NumPy and torch with ``trial.seed``.
``report`` is one epoch: ``dev`` and ``test`` are required, ``loss`` (the
mean training loss; NaN or inf marks the trial ``diverged``), ``dev_loss``
and ``test_loss`` are optional, and any other keyword must be a name listed
in ``task.extras``: its value at the best dev epoch becomes a column of the
trials table. Reports after ``should_stop`` turned true are not counted.
"""

from __future__ import annotations

import math
from typing import Any, Callable

__all__ = ["Trial", "EPOCH_KEYS"]

#: keywords of ``report`` stored in the epochs table's own columns
EPOCH_KEYS = ("dev_loss", "test_loss")


class Trial:
    """One trial as the user's function sees it: ``params`` (name -> value),
    ``seed``, ``dir`` (a folder of its own), ``max_epochs``, ``key``,
    ``choice``/``option`` (what this trial compares), ``report(...)`` and
    ``should_stop``."""

    def __init__(self, *, key: str, choice: str, option: Any, params: dict[str, Any], seed: int, folder: str,
                 max_epochs: int, extras: tuple[str, ...], on_epoch: Callable[..., bool]) -> None:
        self.key, self.choice, self.option = key, choice, option
        self.params = dict(params)
        self.seed = seed
        self.dir = folder
        self.max_epochs = max_epochs
        self.extras = extras
        self._on_epoch = on_epoch
        self._stop = False
        self.epochs = 0                              # epochs reported

    @property
    def should_stop(self) -> bool:
        """True once seedsweep needs no more epochs (patience ran out,
        ``max_epochs`` reached, a NaN/inf loss, the timeout): return soon."""
        return self._stop

    def report(self, *, dev: float, test: float, loss: float | None = None, **extras: float) -> bool:
        """Report one finished epoch; returns :attr:`should_stop`.

        ``dev``/``test``: the scores on the dev and test sets (the metric
        ``train.metric`` names, direction ``train.mode``). ``loss``: the mean
        training loss. ``dev_loss``/``test_loss`` and the names of
        ``task.extras``: other numbers of this epoch."""
        if self._stop:
            return True
        unknown = sorted(set(extras) - set(EPOCH_KEYS) - set(self.extras))
        if unknown:
            raise TypeError(f"trial.report() got {unknown[0]!r}, which is not declared: list it under "
                            f"task.extras in the study file (declared: {list(self.extras) or 'none'}), "
                            f"or pass only dev, test, loss, dev_loss, test_loss")
        values = {"dev": dev, "test": test, **extras}
        for name, value in values.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
                raise TypeError(f"trial.report({name}=...) must be a number, got {type(value).__name__}")
        row_extras = {k: finite_or_nan(float(v)) for k, v in extras.items()}     # inf never reaches a column
        self.epochs += 1
        self._stop = bool(self._on_epoch(None if loss is None else float(loss), (float(dev), float(test)),
                                         row_extras))
        return self._stop

    def __repr__(self) -> str:
        return f"Trial({self.key!r}, seed={self.seed}, params={self.params!r})"


def finite_or_nan(value: float) -> float:
    """``value`` when finite, else NaN (a result column never holds inf).

    >>> finite_or_nan(float("inf")) != finite_or_nan(float("inf")), finite_or_nan(0.5)
    (True, 0.5)
    """
    return value if math.isfinite(value) else math.nan
