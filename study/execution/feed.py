"""Feeding Ray Tune in batches, so that a study of any size costs the driver the same per trial.

Handing Tune the whole study as one grid makes it hold every trial at once:
its controller keeps a ``Trial`` object per trial for the whole experiment
and loops over them. A study of 50,000 trials then grows the driver's memory
and slows its loop as it goes. Here Tune sees the study in **batches** (one
``Tuner.fit`` per batch, of :func:`batch_size` trials), and within a batch a
:class:`Feed` searcher hands out trials only as slots free up: at most
:func:`pending_cap` trials are live (pending or running) at any moment.

A batch is not an adaptive study's wave (:mod:`study.execution.waves`: the
configurations run between two looks); an adaptive wave runs as one or more
batches. Imported only when a study runs (it subclasses Tune's ``Searcher``).
"""

from __future__ import annotations

import os
from typing import Iterator

from ray.tune.search import Searcher

__all__ = ["Feed", "Unsaved", "batches", "batch_size", "pending_cap", "parallel_slots"]


def parallel_slots(resources: dict[str, float]) -> int:
    """How many trials asking for ``resources`` fit the Ray cluster now (at least 1)."""
    import ray

    have = ray.cluster_resources()
    fits = [have.get(name.upper() if name in ("cpu", "gpu") else name, 0.0) / amount
            for name, amount in resources.items() if amount]
    return max(1, int(min(fits))) if fits else 1


def pending_cap(slots: int) -> int:
    """Live trials Tune may hold: a few per slot, so a freed slot never waits
    on the searcher (``SEEDSWEEP_PENDING`` overrides)."""
    raw = os.environ.get("SEEDSWEEP_PENDING", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else max(8, 4 * slots)


def batch_size(slots: int) -> int:
    """Trials per ``Tuner.fit``: large against the slots, so that the wait for
    a batch's last trials is a small part of it (``SEEDSWEEP_FIT_BATCH`` overrides;
    ``SEEDSWEEP_WAVE``, its earlier name, still does)."""
    raw = os.environ.get("SEEDSWEEP_FIT_BATCH", "") or os.environ.get("SEEDSWEEP_WAVE", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else max(2000, 100 * slots)


def batches(items: list, size: int) -> Iterator[list]:
    """``items`` in consecutive chunks of ``size``.

    >>> [len(w) for w in batches(list(range(5)), 2)]
    [2, 2, 1]
    """
    for start in range(0, len(items), size):
        yield items[start:start + size]


class Unsaved(Searcher):
    """A searcher nothing restores from: a resumed study plans from the store,
    so what Tune saves or pickles of it in its experiment state is empty."""

    def save(self, checkpoint_path: str) -> None:
        pass

    def restore(self, checkpoint_path: str) -> None:
        pass

    def __getstate__(self):
        return {}       # a subclass may hold what does not pickle (a lock)


class Feed(Unsaved):
    """Hands Tune one batch's trials in order, one per ``suggest``; Tune asks
    only while fewer than its ``max_concurrent_trials`` are live."""

    def __init__(self, key: str, configs: list[str]) -> None:
        super().__init__()
        self.key, self.configs, self.next = key, configs, 0

    def suggest(self, trial_id: str):
        if self.next >= len(self.configs):
            return Searcher.FINISHED
        config = {self.key: self.configs[self.next]}
        self.next += 1
        return config

    def on_trial_complete(self, trial_id: str, result=None, error: bool = False) -> None:
        pass            # the order is fixed; the store is the record
