"""What a family reads of a study: :class:`StudyView`, the narrow typed
context the engine hands every family hook (``validate``, ``resolve``,
``build``, ``result_columns``). The engine's study definition
(:class:`study.spec.space.Space`) provides it; families name only this, so
they never import a floor above their own, not even for annotations."""

from __future__ import annotations

from typing import Any, Callable, Protocol

from ..schema import Train

__all__ = ["StudyView", "once"]


class StudyView(Protocol):
    """A study as a family sees it: where its file lives, its task, its
    hyperparameters (sampled, fixed and compared), training settings,
    resources and evaluation sets."""

    @property
    def path(self) -> str:
        """The study file's path (or the manifest's, for a study re-run from a run directory)."""

    @property
    def base(self) -> str:
        """The folder the study's relative paths mean (the study file's own)."""

    @property
    def name(self) -> str:
        """The study's name."""

    @property
    def family(self) -> str:
        """The family's registry name."""

    @property
    def task(self) -> dict[str, Any]:
        """The ``task:`` mapping, as written."""

    @property
    def params(self) -> tuple[Any, ...]:
        """The sampled hyperparameters (each with ``name``, ``kind``, ``values``, ``low``, ``high``)."""

    @property
    def fixed(self) -> tuple[tuple[str, Any], ...]:
        """The ``fixed:`` hyperparameters as (name, value) pairs."""

    @property
    def compare(self) -> tuple[tuple[str, tuple[Any, ...]], ...]:
        """The compared choices and their options."""

    @property
    def choices(self) -> dict[str, tuple[Any, ...]]:
        """Compared choice -> its options, in file order."""

    @property
    def train(self) -> Train:
        """Training settings (epochs, patience, metric, mode)."""

    @property
    def resources(self) -> Any:
        """Per-trial resources (``cpu``, ``gpu``, ``per_group``)."""

    @property
    def evaluate(self) -> tuple[str, ...]:
        """Test beds and (text, label) files every trial also scores."""

    @property
    def derived(self) -> dict[Any, Any]:
        """What the families worked out of this study once (:func:`once`);
        it travels with the study to the workers."""


def once(space: StudyView, key: str, make: Callable[[], Any]) -> Any:
    """``make()`` the first time a family asks for ``key`` of this study, the
    stored answer after that: a family parses its task, or lists its result
    columns, once per study, and a worker gets the answer with the study
    (keep it picklable: a parsed reference, not an imported function). The
    answer is keyed on the task and evaluation sets too, so a study edited
    into another never reads a stale one.

    >>> from types import SimpleNamespace
    >>> space, calls = SimpleNamespace(task={"function": "a.py:f"}, evaluate=(), base="/s", path="/s/s.yaml",
    ...                                derived={}), []
    >>> [once(space, "ref", lambda: calls.append(1) or "parsed") for _ in range(3)], len(calls)
    (['parsed', 'parsed', 'parsed'], 1)
    """
    stamp = (key, repr(sorted(space.task.items())), tuple(space.evaluate), space.base, space.path)
    if stamp not in space.derived:
        space.derived[stamp] = make()
    return space.derived[stamp]
