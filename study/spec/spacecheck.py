"""Checks of a search-space file's values, one method per kind of entry.

:class:`SpaceValidator` is what :func:`study.spec.space.parse_space` runs on the
parsed YAML; every failure raises a :class:`~study.errors.UserError` naming
the file, the key path, the bad value and what is allowed. The family's own
limits are checked afterwards by the family (:mod:`study.families.base`).
"""

from __future__ import annotations

import difflib
import math
import os
import re
from typing import Any

from ..errors import UserError
from ..schema import RESERVED_NAMES, Scalar, Train
from .space import DISTRIBUTIONS, RESOURCE_KEYS, TRAIN_KEYS, Param, Resources, type_name

__all__ = ["SpaceValidator", "max_trials", "MAX_TRIALS", "LIMIT_ENV"]

#: Trials per study at most. The driver plans the whole grid in memory (637
#: bytes per trial measured by benchmarks/scale.py, scale-2026-12-01.json), so
#: a million trials is about 0.6 GB before the first one runs.
MAX_TRIALS = 1_000_000
LIMIT_ENV = "SEEDSWEEP_MAX_TRIALS"


def max_trials() -> int:
    """The trial limit: ``$SEEDSWEEP_MAX_TRIALS`` when set, else :data:`MAX_TRIALS`."""
    text = os.environ.get(LIMIT_ENV, "").strip()
    if not text:
        return MAX_TRIALS
    if not text.isdigit() or int(text) < 1:
        raise UserError(f"${LIMIT_ENV}={text}", "not a positive whole number.", "Give a number of trials, e.g. 50000000.")
    return int(text)

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class SpaceValidator:
    """Checks of one file; every failure raises a UserError naming the key path."""

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, key: str, problem: str, fix: str) -> None:
        """Raise the :class:`UserError` of ``key`` in this file."""
        where = f"{self.path}: {key}" if key else self.path
        raise UserError(where, problem, fix)

    def mapping(self, value: Any, key: str) -> dict:
        """``value`` as a mapping with string keys."""
        if not isinstance(value, dict):
            self.fail(key, f"expected a mapping (key: value lines), got {type_name(value)} {value!r}.",
                      "Write it as indented 'key: value' lines or {key: value}.")
        for k in value:
            if not isinstance(k, str):
                self.fail(key, f"the key {k!r} is a {type_name(k)}, not a name.",
                          "Keys are names; quote it if it must look like a number.")
        return value

    def known_keys(self, mapping: dict, key: str, allowed: tuple[str, ...]) -> None:
        """Fail on a key not in ``allowed``, suggesting the closest."""
        for k in mapping:
            if k not in allowed:
                close = difflib.get_close_matches(k, allowed, n=1)
                hint = f" Did you mean '{close[0]}'?" if close else ""
                at = f"{key}.{k}" if key else k
                self.fail(at, f"unknown key '{k}'.",
                          f"Allowed here: {', '.join(allowed)}.{hint}")

    def string(self, value: Any, key: str) -> str:
        """``value`` as a non-empty string."""
        if not isinstance(value, str) or not value:
            self.fail(key, f"expected a non-empty string, got {type_name(value)} {value!r}.",
                      "Write a plain word, quoted if it contains ':' or '#'.")
        return value

    def integer(self, value: Any, key: str, *, minimum: int | None = None) -> int:
        """``value`` as a whole number (≥ ``minimum`` when given)."""
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(key, f"expected a whole number, got {type_name(value)} {value!r}.",
                      f"Write an integer{'' if minimum is None else f' >= {minimum}'}.")
        if minimum is not None and value < minimum:
            self.fail(key, f"{value} is too small.", f"It must be >= {minimum}.")
        return value

    def number(self, value: Any, key: str) -> float:
        """``value`` as a finite number."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            self.fail(key, f"expected a finite number, got {type_name(value)} {value!r}.",
                      "Write a number such as 0.5 or 1.0e-3 (YAML needs the '.0' before 'e').")
        return value

    def one_of(self, value: Any, key: str, allowed: tuple[str, ...]) -> str:
        """``value`` when it is one of ``allowed``."""
        if value not in allowed:
            self.fail(key, f"unknown value {value!r}.", f"Allowed: {', '.join(allowed)}.")
        return value

    def scalar(self, value: Any, key: str) -> Scalar:
        """``value`` as one string, number, boolean or null."""
        if value is not None and not isinstance(value, (str, int, float, bool)):
            self.fail(key, f"expected a single value, got {type_name(value)} {value!r}.",
                      "Use a string, number, boolean or null here.")
        if isinstance(value, float) and not math.isfinite(value):
            self.fail(key, f"{value!r} is not a finite number.", "Use a finite number.")
        return value

    def options(self, value: Any, key: str, *, allow_null: bool) -> tuple[Scalar, ...]:
        """A non-empty list of distinct options of one type."""
        if not isinstance(value, list):
            self.fail(key, f"expected a list of options, got {type_name(value)} {value!r}.",
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
            self.fail(key, f"the options mix types ({', '.join(sorted(type_name(x) for x in set(out)))}).",
                      "Use one type for all options; write null (not 'none') for 'no value' "
                      "next to numbers, or quote every option to make them strings.")
        return out

    def seeds(self, value: Any) -> tuple[int, ...]:
        """``seeds``: a count n (seeds 1..n) or a list of distinct seeds ≥ 0."""
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
        """``compare``: every compared choice with its options."""
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
                # '/' is allowed (hub ids, model folders): keys are %-escaped into file names
                if "=" in text or not text.strip() or text.strip() != text:
                    self.fail(key, f"the option {opt!r} cannot be part of a trial key.",
                              "Use options without '=' and without surrounding spaces.")
            out.append((name, opts))
        return tuple(out)

    def grid_size(self, samples: int, seeds: tuple[int, ...], compare) -> None:
        """Refuse a trial grid over the limit before anything samples it."""
        limit = max_trials()
        options = sum(len(o) for _, o in compare)
        trials = samples * options * len(seeds)
        if trials > limit:
            self.fail("samples", f"{samples:,} configurations x {options} options x "
                      f"{len(seeds)} seeds = {trials:,} trials, over the limit of {limit:,} trials per study.",
                      f"Lower samples or seeds, or raise the limit with the environment variable {LIMIT_ENV}.")

    def param_name(self, name: str, key: str) -> None:
        """Fail unless ``name`` is a usable hyperparameter name (not a column of the table)."""
        if not _NAME.match(name):
            self.fail(key, f"'{name}' is not a usable parameter name.",
                      "Use letters, digits and '_', starting with a letter or '_'.")
        if name in RESERVED_NAMES:
            self.fail(key, f"'{name}' is a column of the trials table and cannot be a hyperparameter.",
                      f"Rename it; reserved names: {', '.join(sorted(RESERVED_NAMES))}.")

    def params(self, value: Any) -> tuple[Param, ...]:
        """``space``: every sampled hyperparameter with its distribution and condition."""
        mapping = self.mapping(value, "space")
        out = []
        for name, entry in mapping.items():
            key = f"space.{name}"
            self.param_name(name, key)
            entry = self.mapping(entry, key)
            self.known_keys(entry, key, DISTRIBUTIONS + ("when",))
            kinds = [k for k in DISTRIBUTIONS if k in entry]
            if len(kinds) != 1:
                self.fail(key, f"needs exactly one distribution, found {len(kinds)} ({', '.join(kinds) or 'none'}).",
                          f"Use one of {', '.join(DISTRIBUTIONS)}, e.g. {{choice: [a, b]}} or {{uniform: [0.0, 0.5]}}.")
            kind = kinds[0]
            when = self.when(entry.get("when"), f"{key}.when") if "when" in entry else ()
            if kind == "choice":
                values = self.options(entry["choice"], f"{key}.choice", allow_null=True)
                out.append(Param(name, kind, values=values, when=when))
                continue
            bounds = entry[kind]
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
        """A ``when:`` condition: parameter -> the values it applies under."""
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
        """``fixed``: name -> one value."""
        mapping = self.mapping(value, "fixed")
        out = []
        for name, val in mapping.items():
            self.param_name(name, f"fixed.{name}")
            out.append((name, self.scalar(val, f"fixed.{name}")))
        return tuple(out)

    def disjoint_names(self, compare, params, fixed) -> None:
        """Fail when a name is in more than one of compare, space and fixed."""
        origin: dict[str, str] = {}
        for block, names in (("compare", [n for n, _ in compare]), ("space", [p.name for p in params]),
                             ("fixed", [n for n, _ in fixed])):
            for n in names:
                if n in origin:
                    self.fail(f"{block}.{n}", f"'{n}' is also given under '{origin[n]}'.",
                              "A name may appear in only one of compare, space and fixed.")
                origin[n] = block

    def conditions(self, params: tuple[Param, ...], compare) -> None:
        """Fail unless every condition names a choice parameter (or compared choice) and values it takes."""
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
        """``train``: the family's defaults with the file's values."""
        mapping = self.mapping(value, "train")
        self.known_keys(mapping, "train", TRAIN_KEYS)
        max_epochs = self.integer(mapping.get("max_epochs", defaults.max_epochs), "train.max_epochs", minimum=1)
        patience = mapping.get("patience", defaults.patience)
        if patience is not None:            # null: early stopping off, every epoch up to max_epochs runs
            patience = self.integer(patience, "train.patience", minimum=1)
        metric = self.string(mapping.get("metric", defaults.metric), "train.metric")
        mode = self.one_of(mapping.get("mode", defaults.mode), "train.mode", ("max", "min"))
        timeout = mapping.get("timeout_s", defaults.timeout_s)
        if timeout is not None:
            timeout = float(self.number(timeout, "train.timeout_s"))
            if timeout <= 0:
                self.fail("train.timeout_s", f"{timeout} is not a positive time.",
                          "Give seconds > 0, or null for no limit.")
        retries = self.integer(mapping.get("retries", defaults.retries), "train.retries", minimum=0)
        vectorize = mapping.get("vectorize_seeds", False)
        if not isinstance(vectorize, bool):
            self.fail("train.vectorize_seeds", f"expected true or false, got {vectorize!r}.",
                      "Write vectorize_seeds: true to train each population's seeds as one batched model.")
        return Train(max_epochs, patience, metric, mode, timeout, retries, vectorize)

    def resources(self, value: Any) -> Resources:
        """``resources``: CPUs and GPUs per trial (and per population)."""
        mapping = self.mapping(value, "resources")
        self.known_keys(mapping, "resources", RESOURCE_KEYS)
        cpu = float(self.number(mapping.get("cpu", 1), "resources.cpu"))
        gpu = float(self.number(mapping.get("gpu", 0), "resources.gpu"))
        if cpu <= 0:
            self.fail("resources.cpu", f"{cpu} CPUs per trial.", "Give a number > 0 (fractions allowed).")
        if gpu < 0 or (gpu > 1 and not gpu.is_integer()):
            self.fail("resources.gpu", f"{gpu} GPUs per trial.",
                      "Give 0, a fraction up to 1 (0.25 packs four trials per GPU) or a whole number.")
        per_group = float(self.number(mapping.get("per_group", 1), "resources.per_group"))
        if per_group <= 0:
            self.fail("resources.per_group", f"{per_group} is not a positive scale.",
                      "Give the factor a vectorised population's resources are one trial's times (default 1).")
        return Resources(cpu=cpu, gpu=gpu, per_group=per_group)

    def evaluate(self, value: Any) -> tuple[str, ...]:
        """``evaluate:``: paths of test beds (``.yaml``) and (text, label) files (``.tsv``, ``.csv``)."""
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(x, str) and x.strip() for x in items):
            self.fail("evaluate", f"expected a list of file paths, got {value!r}.",
                      "List test beds (.yaml) and (text, label) files (.tsv, .csv), e.g. "
                      "evaluate: [testbeds/sst_phenomena.yaml].")
        for i, item in enumerate(items):
            if not item.lower().endswith((".yaml", ".yml", ".tsv", ".txt", ".csv")):
                self.fail(f"evaluate[{i}]", f"{item!r} is neither a test bed (.yaml) nor a table (.tsv, .csv).",
                          "Name a test-bed YAML file or a TSV/CSV file with the columns text and label.")
            if items.index(item) != i:
                self.fail(f"evaluate[{i}]", f"{item!r} is listed twice.", "List every evaluation set once.")
        return tuple(items)

    def tau(self, value: Any) -> float:
        """``tau``: a difference of accuracies in [0, 1]."""
        tau = float(self.number(value, "tau"))
        if not 0 <= tau <= 1:
            self.fail("tau", f"{tau} is outside [0, 1].", "τ is a difference of accuracies; the default is 0.1.")
        return tau
