"""The typed interface every model family provides, and the checks families share.

A family turns one trial (its hyperparameters, seed and the study's
``task``) into a :class:`Model` that the shared training loop
(:mod:`study.execution.trial`) drives epoch by epoch. What a family module exports as
``FAMILY`` is a :class:`Family`:

* ``name``, ``uses_torch``, ``train_defaults`` (a :class:`~study.schema.Train`);
* ``defaults``: every hyperparameter the family knows, with its default
  value (a study may name only these in ``compare``, ``space`` and ``fixed``);
* ``limits``: name -> :class:`Limit`, the values a hyperparameter may take;
  ``validate`` checks fixed, sampled (both ends of every range, every choice)
  and compared values against them at ``check`` time (:func:`check_limits`);
* ``validate(space)``: schema checks without I/O;
* ``resolve(space)``: finds every file or model that any option, sampled
  value or fixed value names; returns one line per resource found;
* ``build(space, trial, cache_dir=None)``: the :class:`Model` of one trial
  (after seeding); ``cache_dir`` is the run directory's cache folder;
* ``result_columns(space)`` (optional): columns the family adds to the
  trials table, filled by the model's ``results(best_epoch)``; a family that
  ``classifies`` sentences gets the ``eval_<name>`` columns of the study's
  ``evaluate:`` sets (:mod:`study.families.evalsets`) by default.

Optional parts for the user's own code (the ``function`` and ``command``
families): ``wants_work_dir = True`` gives ``build`` a ``work_dir`` keyword
(the run directory's ``work/`` folder: the trials' own folders and logs);
``code_files(space)`` lists the user's files, whose SHA-256 the manifest
records under ``code`` and a resume compares (a changed file is refused).
A model that runs its own loop defines ``drive(on_epoch)`` instead of
``train_epoch``/``evaluate`` (:func:`study.execution.trial.drive_trial`).

A family that can train a population (the seeds of one configuration and
option) as one batched model sets ``vectorizes = True`` and provides
``build_group(space, trials, cache_dir=None)``: a group model whose
``train_epoch(epoch)`` and ``evaluate(epoch)`` return one value per member,
with ``stop(member)``, ``collapse_reason(member, best_epoch)`` and
``results(member, best_epoch)`` (:func:`study.execution.trial.run_group` drives it);
``seed_scope(space)`` says what a seed varies (the manifest records it).
``train.vectorize_seeds`` is refused for every other family.

A :class:`Model` trains one epoch (``train_epoch``) and evaluates
(``evaluate`` -> dev score, test score, and optionally the dev loss). The
optional hooks have defaults in :class:`ModelBase`: ``details`` (extra
per-epoch data such as confusion counts), ``collapse_reason`` (a finished run
that learned nothing is stored as ``diverged`` with this reason), ``results``
(the values of the family's result columns).

Families import only the engine's ground floor (:mod:`study.schema`,
:mod:`study.errors`, :mod:`study.files`), this module, and their own modules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Protocol, runtime_checkable

from ..errors import UserError
from ..schema import Train, TrialSpec
from .evalsets import check_evaluate, eval_columns

if TYPE_CHECKING:  # annotations only: families never import the engine's upper floors
    from .view import StudyView

__all__ = ["Family", "FamilyBase", "Model", "ModelBase", "Limit", "choice", "integer", "number", "check_value",
           "check_settings", "check_limits", "check_task_and_names", "named_values", "merge_settings", "Train"]


@runtime_checkable
class Model(Protocol):
    """One trial's model as the training loop sees it."""

    def train_epoch(self, epoch: int) -> float:
        """Train one epoch; return the mean training loss (NaN/inf means diverged)."""

    def evaluate(self, epoch: int) -> tuple[float, ...]:
        """Return ``(dev_score, test_score)`` (or with the dev loss third) after ``epoch``."""

    def details(self, epoch: int) -> dict[str, Any]:
        """Extra per-epoch data stored with the epoch (e.g. ``confusion``)."""

    def collapse_reason(self, best_epoch: int) -> str | None:
        """Why a finished run counts as collapsed, or None."""

    def results(self, best_epoch: int) -> dict[str, Any]:
        """The trial's values of the family's result columns (read once, after
        its last epoch; scores of evaluation sets are the best dev epoch's)."""


class ModelBase:
    """What every :class:`Model` has to define (``train_epoch``, ``evaluate``)
    and the defaults of its optional hooks."""

    def train_epoch(self, epoch: int) -> float:
        """Train one epoch; return the mean training loss (NaN/inf means diverged)."""
        raise NotImplementedError(f"{type(self).__name__} trains nothing")

    def evaluate(self, epoch: int) -> tuple[float, ...]:
        """Return ``(dev_score, test_score)`` (or with the dev loss third) after ``epoch``."""
        raise NotImplementedError(f"{type(self).__name__} evaluates nothing")

    def details(self, epoch: int) -> dict[str, Any]:
        """Extra per-epoch data stored with the epoch (none by default)."""
        return {}

    def collapse_reason(self, best_epoch: int) -> str | None:
        """Why a finished run counts as collapsed (never, by default)."""
        return None

    def results(self, best_epoch: int) -> dict[str, Any]:
        """The trial's values of the family's result columns (none by default)."""
        return {}

    # a model that runs its own loop (the user's code) defines drive(on_epoch) and says how it ended
    drive = None                                 # drive(on_epoch): the model's own loop; None: seedsweep's
    test_at_end: bool = False                    # its test score comes once, after the last epoch
    final_test: float | None = None              # that score (None: it gave none)
    ended_reason: str | None = None              # why its loop returned before seedsweep stopped it
    silent_reason: str = "reported no metrics"   # why it reported no epoch at all
    no_test_reason: str = "no test score reported"   # why test_at_end gave no score


@runtime_checkable
class Family(Protocol):
    """What a family module exports as ``FAMILY``."""

    name: str
    uses_torch: bool
    train_defaults: Train
    defaults: Mapping[str, Any]
    limits: Mapping[str, "Limit"]

    def validate(self, space: "StudyView") -> None:
        """Check the space against the family's schema and limits (no I/O); a :class:`UserError` names the key."""

    def resolve(self, space: "StudyView") -> list[str]:
        """Find every file or model the space names; one line per thing found (``check --resolve``)."""

    def build(self, space: "StudyView", trial: TrialSpec, *, cache_dir: str | None = None) -> Model:
        """The model of one trial (``cache_dir``: where trials of the study share work, if anywhere)."""

    def result_columns(self, space: "StudyView") -> dict[str, str]:
        """Columns the family adds to the trials table: name -> ``float`` | ``int`` | ``str`` | ``bool``."""


class FamilyBase:
    """What families share: ``validate`` checks the ``task`` keys, the dataset
    and the hyperparameter names (:func:`check_task_and_names`), then every
    value against ``limits`` (:func:`check_limits`), then the family's own
    :meth:`check`; and the defaults of the optional parts."""

    name: str
    uses_torch: bool = True
    classifies: bool = False                     # scores the study's evaluate: sets
    draws_per_configuration: bool = False        # a configuration's own draw (of data) beside its hyperparameters
    vectorizes: bool = False                     # trains a population as one batched model (build_group)
    wants_work_dir: bool = False                 # build takes work_dir= (the user's code's trial folders)
    train_defaults: Train
    defaults: Mapping[str, Any] = {}
    limits: Mapping[str, Limit] = {}
    task_keys: frozenset[str] = frozenset()
    datasets: tuple[str, ...] = ()
    names_hint: str = ""                         # appended to the unknown-hyperparameter message

    def validate(self, space: "StudyView") -> None:
        """The shared checks (task keys, dataset, names, limits, evaluation sets), then :meth:`check`."""
        check_task_and_names(space, self.name, self.task_keys, self.datasets, self.defaults, self.names_hint)
        check_limits(space, self.limits, self.name)
        check_evaluate(space, self.classifies, self.name)
        self.check(space)

    def check(self, space: "StudyView") -> None:
        """The family's own schema checks (no I/O), after the shared ones."""

    def resolve(self, space: "StudyView") -> list[str]:
        """Find every file or model the space names; one line per thing found (``check --resolve``)."""
        raise NotImplementedError(f"the {self.name} family resolves nothing")

    def build(self, space: "StudyView", trial: TrialSpec, *, cache_dir: str | None = None) -> Model:
        """The model of one trial (``cache_dir``: where trials of the study share work, if anywhere)."""
        raise NotImplementedError(f"the {self.name} family builds no model")

    def result_columns(self, space: "StudyView") -> dict[str, str]:
        """Columns the family adds to the trials table: name -> ``float`` |
        ``int`` | ``str`` | ``bool``. Never pairing keys; any can be a
        comparison's score."""
        return eval_columns(space) if self.classifies else {}

    def code_files(self, space: "StudyView") -> list[str]:
        """The user's files the study runs (their SHA-256 go into the manifest); none for a built-in model."""
        return []

    def seed_scope(self, space: "StudyView") -> dict[str, str] | None:
        """What a seed varies in this study (None: everything the seed seeds)."""
        return None


# ------------------------------------------------------------------ limits


@dataclass(frozen=True)
class Limit:
    """The values one hyperparameter may take: a set of options, or a numeric
    range (integers or reals; ``open_high`` excludes the high end)."""

    kind: str                                   # "choice" | "int" | "number"
    options: tuple[Any, ...] = ()
    low: float = 0.0
    high: float = 0.0
    open_high: bool = False
    hint: str = "Fix the value."

    def allows(self, value: Any) -> bool:
        """Whether ``value`` is within this limit (booleans are never numbers)."""
        if self.kind == "choice":
            return value in self.options
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.kind == "int" and not isinstance(value, int):
            return False
        return self.low <= value and (value < self.high if self.open_high else value <= self.high)

    def describe(self) -> str:
        """The limit in words, e.g. ``an integer in [1, 3]``."""
        if self.kind == "choice":
            return "one of " + ", ".join(map(str, self.options))
        what = "an integer" if self.kind == "int" else "a number"
        return f"{what} in [{_num(self.low)}, {_num(self.high)}{')' if self.open_high else ']'}"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(x)


def choice(*options: Any) -> Limit:
    """A limit to the named ``options``."""
    return Limit("choice", options=tuple(options), hint=f"Use one of: {', '.join(map(str, options))}.")


def integer(low: int, high: int, hint: str = "Fix the value.") -> Limit:
    """A limit to the integers in [``low``, ``high``]."""
    return Limit("int", low=low, high=high, hint=hint)


def number(low: float, high: float, *, open_high: bool = False, hint: str = "Fix the value.") -> Limit:
    """A limit to the numbers in [``low``, ``high``] (``open_high``: [``low``, ``high``))."""
    return Limit("number", low=low, high=high, open_high=open_high, hint=hint)


def check_value(name: str, value: Any, limit: Limit, where: str, family: str) -> None:
    """A :class:`UserError` at ``where`` unless ``limit`` allows ``value``."""
    if not limit.allows(value):
        raise UserError(where, f"{value!r} is outside the {family} family's limit for {name}: "
                        f"expected {limit.describe()}.", limit.hint)


def check_settings(settings: Mapping[str, Any], limits: Mapping[str, Limit], where: str, family: str) -> None:
    """Every limited setting of ``settings`` (defaults and fixed values merged)."""
    for name, limit in limits.items():
        if name in settings and settings[name] is not None:
            check_value(name, settings[name], limit, f"{where}: {name}", family)


def check_limits(space: "StudyView", limits: Mapping[str, Limit], family: str) -> None:
    """Compared options, sampled values (every choice, both ends of every range)
    and fixed values against the family's limits, each error naming its key."""
    for name, options in space.compare:
        if name in limits:
            for option in options:
                check_value(name, option, limits[name], f"{space.path}: compare.{name}", family)
    for p in space.params:
        if p.name not in limits:
            continue
        limit, where = limits[p.name], f"{space.path}: space.{p.name}"
        if p.kind == "choice":
            for value in p.values:
                if value is not None:
                    check_value(p.name, value, limit, where, family)
        elif limit.kind == "choice":
            raise UserError(where, f"{p.name} takes named options ({limit.describe()}), not a {p.kind} range.",
                            f"Write {{choice: [...]}}. {limit.hint}")
        else:
            for end in (p.low, p.high):
                if not limit.allows(int(end) if limit.kind == "int" and float(end).is_integer() else end):
                    raise UserError(where, f"the range [{_num(p.low)}, {_num(p.high)}] ({p.kind}) leaves the "
                                    f"{family} family's limit for {p.name}: expected {limit.describe()}.",
                                    f"Keep both ends within the limit. {limit.hint}")
    fixed = dict(space.fixed)
    check_settings(fixed, limits, f"{space.path}: fixed", family)


def named_values(space: "StudyView", name: str, default: Any) -> list[tuple[str, Any]]:
    """Every value hyperparameter ``name`` can take in ``space``, each with the
    key that names it: the fixed value, every compared option, every sampled
    choice; the family default when the space names none. What ``resolve``
    must find.

    >>> from seedsweep.study.spec.spacefile import parse_space
    >>> sp = parse_space("name: s\\nfamily: synthetic\\nsamples: 1\\nseeds: 1\\ncompare: {x: [a, b]}")
    >>> named_values(sp, "x", "z"), named_values(sp, "y", "z")
    ([('compare.x', 'a'), ('compare.x', 'b')], [('default y', 'z')])
    """
    out: list[tuple[str, Any]] = [(f"fixed.{n}", v) for n, v in space.fixed if n == name]
    out += [(f"compare.{n}", o) for n, options in space.compare if n == name for o in options]
    out += [(f"space.{p.name}", v) for p in space.params if p.name == name and p.kind == "choice"
            for v in p.values if v is not None]
    return out or [(f"default {name}", default)]


def merge_settings(defaults: Mapping[str, Any], space: "StudyView", hparams: Mapping[str, Any]) -> dict[str, Any]:
    """Defaults, then ``fixed``, then the trial's hyperparameters (null = unset)."""
    out = dict(defaults)
    out.update(dict(space.fixed))
    out.update({k: v for k, v in hparams.items() if v is not None})
    return out


def check_task_and_names(space: "StudyView", family: str, task_keys, datasets, hyperparameters, hint: str = "") -> None:
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
