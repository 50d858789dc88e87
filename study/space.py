"""Search-space files: parse, validate, and hand out typed objects.

A search-space file declares one design-choice study (see README, "Search-space
reference"). :func:`load_space` reads it, checks every key and value, and
returns a :class:`Space`. Any problem raises :class:`~study.errors.UserError`
naming the file, the key path, the bad value and what is allowed -- before
anything is created on disk.

Example::

    >>> space = load_space("search_spaces/quickstart.yaml")   # doctest: +SKIP
    >>> space.n_trials                                          # doctest: +SKIP
    48
"""

from __future__ import annotations

import difflib
import hashlib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import UserError

__all__ = [
    "Param",
    "Train",
    "Resources",
    "Space",
    "load_space",
    "parse_space",
    "RESERVED_NAMES",
]

#: Columns of the trials table; hyperparameters may not use these names.
RESERVED_NAMES = frozenset(
    {
        "study", "task", "trial_key", "config_id", "choice", "option", "seed",
        "status", "reason", "error", "epochs_run", "best_epoch", "dev_score",
        "test_score", "test_score_max", "metric", "train_seconds", "node",
        "attempt", "started_at", "finished_at", "epoch", "train_loss", "seconds",
    }
)

REQUIRED_KEYS = ("name", "family", "samples", "seeds", "compare")
OPTIONAL_KEYS = ("task", "sampler_seed", "sampler", "space", "fixed", "train", "resources")
TRAIN_KEYS = ("max_epochs", "patience", "metric", "mode", "timeout_s", "retries")
RESOURCE_KEYS = ("cpu", "gpu")
DISTRIBUTIONS = ("choice", "uniform", "loguniform", "int")
SAMPLERS = ("random", "qmc")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

Scalar = str | int | float | bool | None


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
        return _common_type(self.values)


@dataclass(frozen=True)
class Train:
    """The training protocol: early stopping on the dev score, retries, timeout."""

    max_epochs: int
    patience: int
    metric: str
    mode: str
    timeout_s: float | None
    retries: int


@dataclass(frozen=True)
class Resources:
    """What one trial reserves from Ray: CPUs and a (possibly fractional) GPU."""

    cpu: float = 1.0
    gpu: float = 0.0


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
    v = _Validator(path)
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
    task = v.mapping(mapping.get("task", {}) or {}, "task")
    sampler_seed = v.integer(mapping.get("sampler_seed", 0), "sampler_seed", minimum=0)
    sampler = v.one_of(mapping.get("sampler", "random"), "sampler", SAMPLERS)
    params = v.params(mapping.get("space", {}) or {})
    fixed = v.fixed(mapping.get("fixed", {}) or {})
    v.disjoint_names(compare, params, fixed)
    v.conditions(params, compare)

    from .families import get_family  # late: families import space

    fam = get_family(family, where=f"{path}: family")
    train = v.train(mapping.get("train", {}) or {}, fam.train_defaults)
    resources = v.resources(mapping.get("resources", {}) or {})
    space = Space(
        path=path, text=text, name=name, family=family, samples=samples, seeds=seeds,
        compare=compare, task=dict(task), sampler_seed=sampler_seed, sampler=sampler,
        params=params, fixed=fixed, train=train, resources=resources, raw=mapping,
    )
    fam.validate(space)
    return space


# ------------------------------------------------------------------ validation


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string",
            list: "list", dict: "mapping"}.get(type(value), type(value).__name__)


def _common_type(values: tuple[Scalar, ...]) -> str:
    kinds = {type(x) for x in values if x is not None}
    if not kinds:
        return "str"
    if kinds <= {int, float} and float in kinds:
        return "float"
    (only,) = kinds
    return {str: "str", int: "int", float: "float", bool: "bool"}[only]


class _Validator:
    """Checks of one file; every failure raises a UserError naming the key path."""

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, key: str, problem: str, fix: str) -> None:
        where = f"{self.path}: {key}" if key else self.path
        raise UserError(where, problem, fix)

    def mapping(self, value: Any, key: str) -> dict:
        if not isinstance(value, dict):
            self.fail(key, f"expected a mapping (key: value lines), got {_type_name(value)} {value!r}.",
                      "Write it as indented 'key: value' lines or {key: value}.")
        for k in value:
            if not isinstance(k, str):
                self.fail(key, f"the key {k!r} is a {_type_name(k)}, not a name.",
                          "Keys are names; quote it if it must look like a number.")
        return value

    def known_keys(self, mapping: dict, key: str, allowed: tuple[str, ...]) -> None:
        for k in mapping:
            if k not in allowed:
                close = difflib.get_close_matches(k, allowed, n=1)
                hint = f" Did you mean '{close[0]}'?" if close else ""
                at = f"{key}.{k}" if key else k
                self.fail(at, f"unknown key '{k}'.",
                          f"Allowed here: {', '.join(allowed)}.{hint}")

    def string(self, value: Any, key: str) -> str:
        if not isinstance(value, str) or not value:
            self.fail(key, f"expected a non-empty string, got {_type_name(value)} {value!r}.",
                      "Write a plain word, quoted if it contains ':' or '#'.")
        return value

    def integer(self, value: Any, key: str, *, minimum: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(key, f"expected a whole number, got {_type_name(value)} {value!r}.",
                      f"Write an integer{'' if minimum is None else f' >= {minimum}'}.")
        if minimum is not None and value < minimum:
            self.fail(key, f"{value} is too small.", f"It must be >= {minimum}.")
        return value

    def number(self, value: Any, key: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            self.fail(key, f"expected a finite number, got {_type_name(value)} {value!r}.",
                      "Write a number such as 0.5 or 1.0e-3 (YAML needs the '.0' before 'e').")
        return value

    def one_of(self, value: Any, key: str, allowed: tuple[str, ...]) -> str:
        if value not in allowed:
            self.fail(key, f"unknown value {value!r}.", f"Allowed: {', '.join(allowed)}.")
        return value

    def scalar(self, value: Any, key: str) -> Scalar:
        if value is not None and not isinstance(value, (str, int, float, bool)):
            self.fail(key, f"expected a single value, got {_type_name(value)} {value!r}.",
                      "Use a string, number, boolean or null here.")
        if isinstance(value, float) and not math.isfinite(value):
            self.fail(key, f"{value!r} is not a finite number.", "Use a finite number.")
        return value

    def options(self, value: Any, key: str, *, allow_null: bool) -> tuple[Scalar, ...]:
        if not isinstance(value, list):
            self.fail(key, f"expected a list of options, got {_type_name(value)} {value!r}.",
                      "Write the options as [a, b, c].")
        if not value:
            self.fail(key, "the list of options is empty.", "Give at least one option.")
        out = tuple(self.scalar(x, f"{key}[{i}]") for i, x in enumerate(value))
        seen: set = set()
        for x in out:
            marker = (type(x) is bool, x)
            if marker in seen:
                self.fail(key, f"the option {x!r} is given twice.", "List every option once.")
            seen.add(marker)
        if not allow_null and None in out:
            self.fail(key, "null is not an option of a compared choice.",
                      "Name the option, e.g. 'none'.")
        kinds = {type(x) for x in out if x is not None}
        if len(kinds) > 1 and not kinds <= {int, float}:
            self.fail(key, f"the options mix types ({', '.join(sorted(_type_name(x) for x in set(out)))}).",
                      "Use one type for all options; write null (not 'none') for 'no value' "
                      "next to numbers, or quote every option to make them strings.")
        return out

    def seeds(self, value: Any) -> tuple[int, ...]:
        if isinstance(value, list):
            if not value:
                self.fail("seeds", "the list of seeds is empty.", "Give a count (3) or a list [1, 2, 3].")
            seeds = tuple(self.integer(s, f"seeds[{i}]", minimum=0) for i, s in enumerate(value))
            if len(set(seeds)) != len(seeds):
                dup = next(s for s in seeds if seeds.count(s) > 1)
                self.fail("seeds", f"the seed {dup} is given twice.", "List every seed once.")
            return seeds
        count = self.integer(value, "seeds", minimum=1)
        return tuple(range(1, count + 1))

    def compare(self, value: Any) -> tuple[tuple[str, tuple[Scalar, ...]], ...]:
        mapping = self.mapping(value, "compare")
        if not mapping:
            self.fail("compare", "no design choice is compared.",
                      "Name at least one choice and its options, e.g. classifier: [softmax, crf].")
        out = []
        for name, options in mapping.items():
            key = f"compare.{name}"
            self.param_name(name, key)
            opts = self.options(options, key, allow_null=False)
            if len(opts) < 2:
                self.fail(key, f"only one option ({opts[0]!r}); a comparison needs two or more.",
                          "Add the alternative(s), or move the value to 'fixed'.")
            for opt in opts:
                text = str(opt)
                if "/" in text or "=" in text or not text.strip() or text.strip() != text:
                    self.fail(key, f"the option {opt!r} cannot be part of a trial key.",
                              "Use options without '/', '=' and surrounding spaces.")
            out.append((name, opts))
        return tuple(out)

    def param_name(self, name: str, key: str) -> None:
        if not _NAME.match(name):
            self.fail(key, f"'{name}' is not a usable parameter name.",
                      "Use letters, digits and '_', starting with a letter or '_'.")
        if name in RESERVED_NAMES:
            self.fail(key, f"'{name}' is a column of the trials table and cannot be a hyperparameter.",
                      f"Rename it; reserved names: {', '.join(sorted(RESERVED_NAMES))}.")

    def params(self, value: Any) -> tuple[Param, ...]:
        mapping = self.mapping(value, "space")
        out = []
        for name, spec in mapping.items():
            key = f"space.{name}"
            self.param_name(name, key)
            spec = self.mapping(spec, key)
            self.known_keys(spec, key, DISTRIBUTIONS + ("when",))
            kinds = [k for k in DISTRIBUTIONS if k in spec]
            if len(kinds) != 1:
                self.fail(key, f"needs exactly one distribution, found {len(kinds)} ({', '.join(kinds) or 'none'}).",
                          f"Use one of {', '.join(DISTRIBUTIONS)}, e.g. {{choice: [a, b]}} or {{uniform: [0.0, 0.5]}}.")
            kind = kinds[0]
            when = self.when(spec.get("when"), f"{key}.when") if "when" in spec else ()
            if kind == "choice":
                values = self.options(spec["choice"], f"{key}.choice", allow_null=True)
                out.append(Param(name, kind, values=values, when=when))
                continue
            bounds = spec[kind]
            bkey = f"{key}.{kind}"
            if not isinstance(bounds, list) or len(bounds) != 2:
                self.fail(bkey, f"expected [low, high], got {bounds!r}.", "Write two bounds, e.g. [1.0e-4, 1.0e-2].")
            if kind == "int":
                low = self.integer(bounds[0], f"{bkey}[0]")
                high = self.integer(bounds[1], f"{bkey}[1]")
            else:
                low = float(self.number(bounds[0], f"{bkey}[0]"))
                high = float(self.number(bounds[1], f"{bkey}[1]"))
            if not low < high:
                self.fail(bkey, f"the range [{low}, {high}] is empty.", "The low bound must be below the high bound.")
            if kind == "loguniform" and low <= 0:
                self.fail(bkey, f"a log-uniform range must be positive, got low = {low}.", "Use bounds > 0.")
            out.append(Param(name, kind, low=low, high=high, when=when))
        return tuple(out)

    def when(self, value: Any, key: str) -> tuple[tuple[str, tuple[Scalar, ...]], ...]:
        mapping = self.mapping(value, key)
        if not mapping:
            self.fail(key, "the condition is empty.", "Name a parameter and its values, e.g. when: {dropout: [naive]}.")
        out = []
        for other, vals in mapping.items():
            if not isinstance(vals, list):
                vals = [vals]
            out.append((other, self.options(vals, f"{key}.{other}", allow_null=True)))
        return tuple(out)

    def fixed(self, value: Any) -> tuple[tuple[str, Scalar], ...]:
        mapping = self.mapping(value, "fixed")
        out = []
        for name, val in mapping.items():
            self.param_name(name, f"fixed.{name}")
            out.append((name, self.scalar(val, f"fixed.{name}")))
        return tuple(out)

    def disjoint_names(self, compare, params, fixed) -> None:
        origin: dict[str, str] = {}
        for block, names in (("compare", [n for n, _ in compare]), ("space", [p.name for p in params]),
                             ("fixed", [n for n, _ in fixed])):
            for n in names:
                if n in origin:
                    self.fail(f"{block}.{n}", f"'{n}' is also given under '{origin[n]}'.",
                              "A name may appear in only one of compare, space and fixed.")
                origin[n] = block

    def conditions(self, params: tuple[Param, ...], compare) -> None:
        domain: dict[str, tuple] = {n: opts for n, opts in compare}
        for p in params:
            if p.kind == "choice":
                domain[p.name] = p.values
        numeric = {p.name for p in params if p.kind != "choice"}
        for p in params:
            for other, vals in p.when:
                key = f"space.{p.name}.when.{other}"
                if other == p.name:
                    self.fail(key, "a parameter cannot depend on itself.", "Name another parameter.")
                if other in numeric:
                    self.fail(key, f"'{other}' is a numeric range; conditions must name a choice.",
                              "Condition on a 'choice' parameter or a compared choice.")
                if other not in domain:
                    known = sorted(domain)
                    close = difflib.get_close_matches(other, known, n=1)
                    hint = f" Did you mean '{close[0]}'?" if close else ""
                    self.fail(key, f"'{other}' is not a choice of this space.",
                              f"Conditions may name: {', '.join(known) or '(no choices defined)'}.{hint}")
                bad = [x for x in vals if x not in domain[other]]
                if bad:
                    self.fail(key, f"{bad[0]!r} is not an option of '{other}'.",
                              f"Its options are {list(domain[other])}.")

    def train(self, value: Any, defaults: Train) -> Train:
        mapping = self.mapping(value, "train")
        self.known_keys(mapping, "train", TRAIN_KEYS)
        max_epochs = self.integer(mapping.get("max_epochs", defaults.max_epochs), "train.max_epochs", minimum=1)
        patience = self.integer(mapping.get("patience", defaults.patience), "train.patience", minimum=1)
        metric = self.string(mapping.get("metric", defaults.metric), "train.metric")
        mode = self.one_of(mapping.get("mode", defaults.mode), "train.mode", ("max", "min"))
        timeout = mapping.get("timeout_s", defaults.timeout_s)
        if timeout is not None:
            timeout = float(self.number(timeout, "train.timeout_s"))
            if timeout <= 0:
                self.fail("train.timeout_s", f"{timeout} is not a positive time.",
                          "Give seconds > 0, or null for no limit.")
        retries = self.integer(mapping.get("retries", defaults.retries), "train.retries", minimum=0)
        return Train(max_epochs, patience, metric, mode, timeout, retries)

    def resources(self, value: Any) -> Resources:
        mapping = self.mapping(value, "resources")
        self.known_keys(mapping, "resources", RESOURCE_KEYS)
        cpu = float(self.number(mapping.get("cpu", 1), "resources.cpu"))
        gpu = float(self.number(mapping.get("gpu", 0), "resources.gpu"))
        if cpu <= 0:
            self.fail("resources.cpu", f"{cpu} CPUs per trial.", "Give a number > 0 (fractions allowed).")
        if gpu < 0 or (gpu > 1 and not gpu.is_integer()):
            self.fail("resources.gpu", f"{gpu} GPUs per trial.",
                      "Give 0, a fraction up to 1 (0.25 packs four trials per GPU) or a whole number.")
        return Resources(cpu=cpu, gpu=gpu)
