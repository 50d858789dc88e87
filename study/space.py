"""Search-space files: parse, validate, and hand out typed objects.

A search-space file declares one design-choice study (see README, "Search-space
reference"). :func:`load_space` reads it, checks every key and value, and
returns a :class:`Space`. Any problem raises :class:`~study.errors.UserError`
naming the file, the key path, the bad value and what is allowed -- before
anything is created on disk.

Example::

    >>> space = load_space("search_spaces/quickstart.yaml")
    >>> space.n_trials
    12
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import UserError
from .schema import RESERVED_NAMES, Scalar, Train

__all__ = [
    "Param",
    "Train",
    "type_name",
    "common_type",
    "Resources",
    "Space",
    "load_space",
    "parse_space",
    "RESERVED_NAMES",
]

REQUIRED_KEYS = ("name", "family", "samples", "seeds", "compare")
OPTIONAL_KEYS = ("task", "sampler_seed", "sampler", "space", "fixed", "train", "resources", "evaluate", "tau")
TRAIN_KEYS = ("max_epochs", "patience", "metric", "mode", "timeout_s", "retries", "vectorize_seeds")
RESOURCE_KEYS = ("cpu", "gpu", "per_group")
DISTRIBUTIONS = ("choice", "uniform", "loguniform", "int")
SAMPLERS = ("random", "qmc")


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string",
            list: "list", dict: "mapping"}.get(type(value), type(value).__name__)


def common_type(values: tuple[Scalar, ...]) -> str:
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
    tau: float = 0.1                    # the robustness table's τ (DESIGN.md, "Test beds and robustness")

    @property
    def sha256(self) -> str:
        """sha256 of the file's text, as recorded in the manifest."""
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def choices(self) -> dict[str, tuple[Scalar, ...]]:
        """Compared choice -> its options, in file order."""
        return dict(self.compare)

    @property
    def n_trials(self) -> int:
        """samples x (options summed over compared choices) x seeds."""
        options = sum(len(opts) for _, opts in self.compare)
        return self.samples * options * len(self.seeds)

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


# --------------------------------------------------------------------- loading


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe YAML loader that refuses a mapping key given twice and, as YAML
    1.2 does, reads only ``true``/``false`` as booleans (``on``, ``off``,
    ``yes``, ``no`` stay strings: options such as ``[yes, no]`` keep their names)."""


_UniqueKeyLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_UniqueKeyLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def _construct_unique_mapping(loader, node, deep=False):
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first given on line {seen[key] + 1})",
                key_node.start_mark,
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping
)


def load_space(path: str | Path) -> Space:
    """Read and validate the search-space file at ``path``.

    Raises :class:`UserError` (exit code 2 on the command line) for a missing
    or unreadable file, YAML that does not parse, and every schema problem.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(str(path), "no such search-space file.",
                        "Check the path; the shipped examples are in search_spaces/.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(str(path), f"cannot read the file ({exc}).",
                        "Give a readable UTF-8 YAML file.") from None
    return parse_space(text, str(path))


def parse_space(text: str, path: str = "<string>") -> Space:
    """Validate the YAML ``text`` of a search space; ``path`` is used in messages."""
    try:
        raw = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}, line {mark.line + 1}, column {mark.column + 1}" if mark else path
        problem = getattr(exc, "problem", None) or str(exc)
        fix = ("Keep one of the two." if "duplicate key" in str(problem)
               else "Fix the syntax (indentation, colons, brackets) at that place.")
        raise UserError(where, f"this is not valid YAML: {problem}.", fix) from None
    if raw is None:
        raise UserError(path, "the file is empty.",
                        f"A search space needs at least the keys {', '.join(REQUIRED_KEYS)}.")
    from .spacecheck import SpaceValidator  # late: it imports this module's types

    v = SpaceValidator(path)
    mapping = v.mapping(raw, "")
    v.known_keys(mapping, "", REQUIRED_KEYS + OPTIONAL_KEYS)
    for key in REQUIRED_KEYS:
        if key not in mapping:
            raise UserError(path, f"the required key '{key}' is missing.",
                            f"Add it at the top level; required keys are {', '.join(REQUIRED_KEYS)}.")

    name = v.string(mapping["name"], "name")
    if "/" in name or name.strip() != name:
        raise UserError(f"{path}: name", f"bad study name {name!r}.",
                        "Use a name without '/' and without leading or trailing spaces.")
    family = v.string(mapping["family"], "family")
    samples = v.integer(mapping["samples"], "samples", minimum=1)
    seeds = v.seeds(mapping["seeds"])
    compare = v.compare(mapping["compare"])
    v.grid_size(samples, seeds, compare)
    task = v.mapping(mapping.get("task", {}) or {}, "task")
    sampler_seed = v.integer(mapping.get("sampler_seed", 0), "sampler_seed", minimum=0)
    sampler = v.one_of(mapping.get("sampler", "random"), "sampler", SAMPLERS)
    params = v.params(mapping.get("space", {}) or {})
    fixed = v.fixed(mapping.get("fixed", {}) or {})
    v.disjoint_names(compare, params, fixed)
    v.conditions(params, compare)

    from .families import get_family  # late: the registry is not needed to read types

    fam = get_family(family, where=f"{path}: family")
    train = v.train(mapping.get("train", {}) or {}, fam.train_defaults)
    resources = v.resources(mapping.get("resources", {}) or {})
    evaluate = v.evaluate(mapping.get("evaluate", []) or [])
    tau = v.tau(mapping.get("tau", 0.1))
    space = Space(
        path=path, text=text, name=name, family=family, samples=samples, seeds=seeds,
        compare=compare, task=dict(task), sampler_seed=sampler_seed, sampler=sampler,
        params=params, fixed=fixed, train=train, resources=resources, raw=mapping, evaluate=evaluate, tau=tau,
    )
    fam.validate(space)
    if train.vectorize_seeds and not getattr(fam, "vectorizes", False):
        raise UserError(f"{path}: train.vectorize_seeds", f"the {family} family cannot train its seeds as one "
                        "vectorised population.", "Remove train.vectorize_seeds (families that can: sentence).")
    return space
