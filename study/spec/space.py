"""The types of a study file: a :class:`Space` (the study), each sampled
:class:`Param` with its distribution and condition, and :class:`Resources`.

:mod:`study.spec.spacefile` reads a file into a :class:`Space`
(:func:`~study.spec.spacefile.load_space`), :mod:`study.spec.spacecheck` checks each
entry; the types here know nothing of YAML.

Example::

    >>> from seedsweep.study.spec.spacefile import load_space
    >>> space = load_space("search_spaces/quickstart.yaml")
    >>> space.n_trials, space.compare
    (12, (('classifier', ('softmax', 'crf')),))
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from ..schema import RESERVED_NAMES, Scalar, Train
from .tuning import Tune
from .until import Until

__all__ = [
    "Param",
    "Train",
    "type_name",
    "common_type",
    "Resources",
    "Space",
    "RESERVED_NAMES",
]

REQUIRED_KEYS = ("name", "family", "samples", "seeds", "compare")
OPTIONAL_KEYS = ("task", "sampler_seed", "sampler", "space", "fixed", "train", "resources", "evaluate", "tau",
                 "until", "tune", "tracking")
#: required keys a tuned study (``tune:``) leaves out: its searches set both
NOT_WITH_TUNE = ("samples", "seeds")
TRACKING_KEYS = ("mlflow", "experiment", "queue")
TRAIN_KEYS = ("max_epochs", "patience", "metric", "mode", "timeout_s", "retries", "vectorize_seeds")
RESOURCE_KEYS = ("cpu", "gpu", "per_group")
DISTRIBUTIONS = ("choice", "uniform", "loguniform", "int")
SAMPLERS = ("random", "qmc")


def type_name(value: Any) -> str:
    """The YAML name of ``value``'s type, for messages."""
    if value is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string",
            list: "list", dict: "mapping"}.get(type(value), type(value).__name__)


def common_type(values: tuple[Scalar, ...]) -> str:
    """The column type of a parameter's values: ``int``, ``float``, ``bool`` or ``str``."""
    kinds = {type(x) for x in values if x is not None}
    if not kinds:
        return "str"
    if kinds <= {int, float} and float in kinds:
        return "float"
    (only,) = kinds
    return {str: "str", int: "int", float: "float", bool: "bool"}[only]


@dataclass(frozen=True)
class Param:
    """One sampled hyperparameter of the ``space:`` block.

    ``kind`` is ``choice`` (``values`` holds the options), ``uniform``,
    ``loguniform`` (``low``..``high`` floats) or ``int`` (``low``..``high``
    inclusive). ``when`` maps other parameter names to the values for which
    this one applies; elsewhere its value is null in the trials table.
    """

    name: str
    kind: str
    values: tuple[Scalar, ...] = ()
    low: float | int | None = None
    high: float | int | None = None
    when: tuple[tuple[str, tuple[Scalar, ...]], ...] = ()

    @property
    def value_type(self) -> str:
        """``str``, ``int``, ``float`` or ``bool``: the column type of this parameter."""
        if self.kind in ("uniform", "loguniform"):
            return "float"
        if self.kind == "int":
            return "int"
        return common_type(self.values)


@dataclass(frozen=True)
class Resources:
    """What one trial reserves from Ray: CPUs and a (possibly fractional) GPU.
    A vectorised population (``train.vectorize_seeds``) reserves one trial's
    resources times ``per_group``."""

    cpu: float = 1.0
    gpu: float = 0.0
    per_group: float = 1.0

    def of_trial(self, vectorized: bool = False) -> dict[str, float]:
        """What one Ray trial asks for: a lone trial, or a vectorised population."""
        scale = self.per_group if vectorized else 1.0
        return {"cpu": self.cpu * scale, "gpu": self.gpu * scale}


@dataclass(frozen=True)
class Space:
    """A validated search space. Build it with :func:`load_space`."""

    path: str
    text: str
    name: str
    family: str
    samples: int
    seeds: tuple[int, ...]
    compare: tuple[tuple[str, tuple[Scalar, ...]], ...]
    task: dict[str, Any]
    sampler_seed: int
    sampler: str
    params: tuple[Param, ...]
    fixed: tuple[tuple[str, Scalar], ...]
    train: Train
    resources: Resources
    raw: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)
    evaluate: tuple[str, ...] = ()      # test beds and (text, label) files every trial scores (eval_<name>)
    tau: float = 0.1                    # the robustness table's τ (docs/reference/statistics.md, "Test beds and robustness")
    until: Until | None = None          # an adaptive study's stopping settings (study.spec.until), None: a fixed size
    tune: Tune | None = None  # a tuned comparison's settings (study.spec.tuning): samples = replicates x budget, seeds (1,)
    base: str = field(default="", compare=False)   # the folder relative paths of the file mean (its own folder)
    derived: dict = field(default_factory=dict, repr=False, compare=False)   # the families' answers (families.view.once)

    @property
    def sha256(self) -> str:
        """sha256 of the file's text, as recorded in the manifest."""
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def choices(self) -> dict[str, tuple[Scalar, ...]]:
        """Compared choice -> its options, in file order."""
        return dict(self.compare)

    @property
    def trials_per_config(self) -> int:
        """(options summed over compared choices) x seeds: the trials of one configuration."""
        return sum(len(opts) for _, opts in self.compare) * len(self.seeds)

    @property
    def n_trials(self) -> int:
        """samples x (options summed over compared choices) x seeds."""
        return self.samples * self.trials_per_config

    def describe(self) -> str:
        """The study's size in words, as ``seedsweep check`` prints it."""
        opts = ", ".join(f"{c}: {list(o)}" for c, o in self.compare)
        if self.tune:
            t = self.tune
            return (f"tuned: [{opts}] x {t.replicates} searches of {t.budget} trials ({t.sampler}, {t.waves} "
                    f"waves of {t.wave}) = {self.n_trials} trials")
        return f"{self.samples} configurations x [{opts}] x {len(self.seeds)} seeds = {self.n_trials} trials"

    @property
    def task_name(self) -> str:
        """The task's name: ``task.name``, else ``task.dataset``, else the family."""
        return str(self.task.get("name") or self.task.get("dataset") or self.family)

    @property
    def sampled_choices(self) -> tuple[str, ...]:
        """Compared choices that are also drawn per configuration.

        With several compared choices, each is part of every configuration
        (drawn uniformly), and the trials of one choice keep the configuration's
        draw of the others. With one compared choice nothing needs drawing.
        """
        if len(self.compare) < 2:
            return ()
        return tuple(name for name, _ in self.compare)
