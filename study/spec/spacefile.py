"""Reading a study file: YAML (duplicate keys refused, YAML 1.2 booleans)
into a validated :class:`~study.spec.space.Space`.

A search-space file declares one design-choice study (see README, "Search-space
reference"). :func:`load_space` reads it, checks every key and value, and
returns a :class:`~study.spec.space.Space`. Any problem raises
:class:`~study.errors.UserError` naming the file, the key path, the bad value
and what is allowed -- before anything is created on disk.

>>> load_space("search_spaces/quickstart.yaml").n_trials
12

The types live in :mod:`study.spec.space`, the checks of each key in
:mod:`study.spec.spacecheck`; this module puts them together and asks the
family (through the registry) to validate what is its own.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml

from ..errors import UserError
from ..families import get_family, optional
from .space import NOT_WITH_TUNE, OPTIONAL_KEYS, REQUIRED_KEYS, SAMPLERS, TRACKING_KEYS, Space
from .spacecheck import SpaceValidator
from .tuning import parse_tune
from .until import parse_until

__all__ = ["load_space", "parse_space", "read_yaml", "read_text"]



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


def read_yaml(text: str, path: str = "<string>") -> Any:
    """Parse the YAML ``text`` of a study file (or of a part of one, such as
    an ``until:`` file) the study file's way: a duplicate key is an error, only
    true/false are booleans, and a syntax error is a :class:`UserError` naming
    ``path``, line and column."""
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}, line {mark.line + 1}, column {mark.column + 1}" if mark else path
        problem = getattr(exc, "problem", None) or str(exc)
        fix = ("Keep one of the two." if "duplicate key" in str(problem)
               else "Fix the syntax (indentation, colons, brackets) at that place.")
        raise UserError(where, f"this is not valid YAML: {problem}.", fix) from None


def read_text(path: str | Path, what: str, fix: str) -> str:
    """The UTF-8 text of the file ``path`` (a ``what``, e.g. "search-space
    file"); a missing or unreadable file is a :class:`UserError` (``fix``:
    what to do when it is missing)."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(str(path), f"no such {what}.", fix) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(str(path), f"cannot read the file ({exc}).", "Give a readable UTF-8 YAML file.") from None


def load_space(path: str | Path) -> Space:
    """Read and validate the search-space file at ``path``.

    Raises :class:`UserError` (exit code 2 on the command line) for a missing
    or unreadable file, YAML that does not parse, and every schema problem.
    """
    text = read_text(path, "search-space file", "Check the path; the shipped examples are in search_spaces/.")
    return parse_space(text, str(path))


def parse_space(text: str, path: str = "<string>", base: str | None = None) -> Space:
    """Validate the YAML ``text`` of a search space; ``path`` is used in
    messages. ``base``: the folder the file's relative paths mean (default:
    the folder of ``path`` when it is a file, else the working folder)."""
    if base is None:
        base = str(Path(path).resolve().parent) if Path(path).is_file() else os.getcwd()
    raw = read_yaml(text, path)
    if raw is None:
        raise UserError(path, "the file is empty.",
                        f"A search space needs at least the keys {', '.join(REQUIRED_KEYS)}.")
    v = SpaceValidator(path)
    mapping = v.mapping(raw, "")
    v.known_keys(mapping, "", REQUIRED_KEYS + OPTIONAL_KEYS)
    tuned = "tune" in mapping
    for key in REQUIRED_KEYS:
        if key not in mapping and not (tuned and key in NOT_WITH_TUNE):
            raise UserError(path, f"the required key '{key}' is missing.",
                            f"Add it at the top level; required keys are {', '.join(REQUIRED_KEYS)}.")

    name = v.string(mapping["name"], "name")
    if "/" in name or name.strip() != name:
        raise UserError(f"{path}: name", f"bad study name {name!r}.",
                        "Use a name without '/' and without leading or trailing spaces.")
    family = v.string(mapping["family"], "family")
    compare = v.compare(mapping["compare"])
    params = v.params(mapping.get("space", {}) or {})
    tune = parse_tune(v, mapping["tune"], mapping=mapping, compare=compare, params=params) if tuned else None
    if tune is None:
        samples = v.integer(mapping["samples"], "samples", minimum=1)
        seeds = v.seeds(mapping["seeds"])
    else:                       # every (replicate, position) is one "configuration"; seeds come per trial
        samples, seeds = tune.replicates * tune.budget, (1,)
    v.grid_size(samples, seeds, compare)
    task = v.mapping(mapping.get("task", {}) or {}, "task")
    sampler_seed = v.integer(mapping.get("sampler_seed", 0), "sampler_seed", minimum=0)
    sampler = v.one_of(mapping.get("sampler", "random"), "sampler", SAMPLERS)
    fixed = v.fixed(mapping.get("fixed", {}) or {})
    v.disjoint_names(compare, params, fixed)
    v.conditions(params, compare)

    fam = get_family(family, where=f"{path}: family")
    train = v.train(mapping.get("train", {}) or {}, fam.train_defaults)
    resources = v.resources(mapping.get("resources", {}) or {})
    if "tracking" in mapping:
        _tracking(v, mapping["tracking"])
    evaluate = v.evaluate(mapping.get("evaluate", []) or [])
    tau = v.tau(mapping.get("tau", 0.1))
    until = None
    if "until" in mapping:
        per_config = sum(len(opts) for _, opts in compare) * len(seeds)
        until = parse_until(v, mapping["until"], family=family, samples=samples, compare=compare,
                            trials_per_config=per_config)
    space = Space(
        path=path, text=text, name=name, family=family, samples=samples, seeds=seeds,
        compare=compare, task=dict(task), sampler_seed=sampler_seed, sampler=sampler,
        params=params, fixed=fixed, train=train, resources=resources, raw=mapping, evaluate=evaluate, tau=tau,
        until=until, tune=tune, base=os.path.abspath(base),
    )
    fam.validate(space)
    if train.vectorize_seeds and tune is not None:
        raise UserError(f"{path}: train.vectorize_seeds", "a tuned study has no populations of seeds to vectorise "
                        "(each trial has its own seed).", "Remove train.vectorize_seeds, or remove tune:.")
    if train.vectorize_seeds and not optional(fam, "vectorizes"):
        raise UserError(f"{path}: train.vectorize_seeds", f"the {family} family cannot train its seeds as one "
                        "vectorised population.", "Remove train.vectorize_seeds (families that can: sentence).")
    return space


def _tracking(v: SpaceValidator, value: Any) -> None:
    """``tracking``: ``{mlflow: URI, experiment: NAME, queue: N}`` (study.execution.mlflowsink logs every stored
    trial; ``queue``: the trials handed over and not yet logged, at most)."""
    mapping = v.mapping(value, "tracking")
    v.known_keys(mapping, "tracking", TRACKING_KEYS)
    if "mlflow" not in mapping:
        v.fail("tracking", "names no tracking server.", "Write tracking: {mlflow: URI} (a tracking server's "
               "http://HOST:PORT, sqlite:///PATH or a folder), or remove tracking:.")
    for key in ("mlflow", "experiment"):
        if key in mapping:
            v.string(mapping[key], f"tracking.{key}")
    if "queue" in mapping:
        v.integer(mapping["queue"], "tracking.queue", minimum=1)
