"""The ``synthetic`` family: a model with a known answer, for tests and benchmarks.

It accepts any hyperparameters and computes, for a trial of configuration
``c`` with options ``o`` (one per compared choice) and seed ``s``::

    q        = base + sum_choice effects[choice][o_choice] + d(c) + noise * z(s, c, o)
    dev_t    = q * (1 - exp(-t / tau)) + epoch_noise * e_dev(t)
    test_t   = q * (1 - exp(-t / tau)) + epoch_noise * e_test(t) + test_shift
    loss_t   = exp(-t / tau)

where ``d(c)`` in [-spread/2, spread/2) is a pseudo-random "difficulty" of the
configuration's other hyperparameters (shared by all its options and seeds),
``z`` is a standard normal drawn from the trial's seed and identity, and
``e_dev``, ``e_test`` are standard normals per epoch. The option with the
largest effect therefore wins most configurations when ``noise`` is small
against the effect differences.

``task:`` keys (all optional): ``base`` (0.8), ``effects`` (``{choice:
{option: effect}}``, missing options 0), ``noise`` (0.01), ``epoch_noise``
(0.002), ``tau`` (2.0), ``spread`` (0.1), ``test_shift`` (-0.01),
``diverge`` (options whose loss becomes NaN at epoch 2, status ``diverged``),
``fail`` (options whose trial raises at epoch 1, status ``failed`` after the
retries). ``fixed: {epoch_seconds: S}`` sleeps ``S`` seconds per epoch.

A smooth objective a searcher can learn (tuned studies, ``tune:``):
``optimum`` (``{parameter: value}``, names of ``space`` parameters) replaces
``d(c)`` by ``-curvature * sum_p u_p**2``, where ``u_p`` is the distance of
the trial's value from the optimum's as a share of the parameter's range (on
a log scale for ``loguniform``; for a ``choice``, 0 at the optimum's value
and 1 elsewhere, also where the parameter is off). ``curvature`` defaults to 0.1.

Two keys simulate failures of the environment rather than of the model, for
testing retries: ``fail_once_dir`` (a folder: a trial's first attempt leaves a
marker file there and raises; its retry finds the marker and trains),
``die_once_dir`` (the same, but the first attempt kills its own worker process
with SIGKILL, as the kernel's OOM killer or a lost node would) and
``fail_while_exists`` (a path: every trial raises while that file exists),
``die`` (options whose worker kills itself on every attempt) and ``allocate``
(``{option: MiB}``: at epoch 1 the trial fills that much memory, 64 MiB at a
time, and holds it, as a model too big for its worker would; under a memory
limit the kernel's OOM killer or Ray's memory monitor ends it).
"""

from __future__ import annotations

import math
import os
import signal
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from ..errors import UserError
from ..files import stable_hash
from ..schema import Train, TrialSpec, escape_key
from .base import FamilyBase, Limit, ModelBase
from .evalsets import check_evaluate

if TYPE_CHECKING:
    from .view import StudyView

__all__ = ["FAMILY", "SyntheticModel"]

TASK_KEYS = {"name", "dataset", "base", "effects", "noise", "epoch_noise", "tau", "spread",
             "test_shift", "diverge", "fail", "fail_once_dir", "die_once_dir", "fail_while_exists", "die",
             "allocate", "optimum", "curvature"}
CHUNK_MIB = 64


class SyntheticModel(ModelBase):
    """One synthetic trial; see the module docstring for the formula."""

    def __init__(self, space: "StudyView", trial: TrialSpec) -> None:
        task = space.task
        hp = trial.hparams
        self.tau = float(task.get("tau", 2.0))
        self.epoch_noise = float(task.get("epoch_noise", 0.002))
        self.test_shift = float(task.get("test_shift", -0.01))
        self.epoch_seconds = float(hp.get("epoch_seconds") or 0.0)
        choices = space.choices
        effects = task.get("effects", {}) or {}
        options = {c: hp.get(c) for c in choices}
        effect = sum(float((effects.get(c) or {}).get(o, 0.0)) for c, o in options.items())
        others = sorted((k, repr(v)) for k, v in hp.items() if k not in choices and k != "epoch_seconds")
        difficulty = (stable_hash(repr(others)) % 1_000_003) / 1_000_003 - 0.5
        offset = float(task.get("spread", 0.1)) * difficulty
        if task.get("optimum"):         # a smooth bowl instead of the hashed difficulty
            params = {p.name: p for p in space.params}
            bowl = sum(_distance(params[n], hp.get(n), v) ** 2 for n, v in task["optimum"].items())
            offset = -float(task.get("curvature", 0.1)) * bowl
        identity = repr(sorted((k, repr(v)) for k, v in hp.items()))
        self.rng = np.random.default_rng([trial.seed, stable_hash(identity)])
        z = float(self.rng.standard_normal())
        self.quality = (float(task.get("base", 0.8)) + effect + offset
                        + float(task.get("noise", 0.01)) * z)
        self.diverges = any(o in (task.get("diverge") or []) for o in options.values())
        self.fails = any(o in (task.get("fail") or []) for o in options.values())
        self.dies = any(o in (task.get("die") or []) for o in options.values())
        allocate = task.get("allocate") or {}
        self.allocate_mib = sum(int(allocate.get(o, 0)) for o in options.values())
        self.held: list[bytearray] = []
        self.key = trial.key
        self.fail_once_dir = task.get("fail_once_dir")
        self.die_once_dir = task.get("die_once_dir")
        self.fail_while_exists = task.get("fail_while_exists")

    def train_epoch(self, epoch: int) -> float:
        if self.fails:
            raise RuntimeError("synthetic failure requested by task.fail")
        if self.fail_while_exists and os.path.exists(self.fail_while_exists):
            raise RuntimeError(f"synthetic failure: {self.fail_while_exists} exists")
        if self.fail_once_dir and epoch == 1 and self._first_attempt(self.fail_once_dir):
            raise RuntimeError("synthetic failure of a first attempt (task.fail_once_dir)")
        if self.dies or (self.die_once_dir and epoch == 1 and self._first_attempt(self.die_once_dir)):
            os.kill(os.getpid(), signal.SIGKILL)
        if self.allocate_mib and epoch == 1:
            for _ in range(-(-self.allocate_mib // CHUNK_MIB)):
                self.held.append(bytearray(CHUNK_MIB << 20))     # zero-filled: every page is touched
        if self.epoch_seconds:
            time.sleep(self.epoch_seconds)
        if self.diverges and epoch >= 2:
            return float("nan")
        return math.exp(-epoch / self.tau)

    def _first_attempt(self, folder: str) -> bool:
        """True (and leaves a marker) the first time this trial gets here."""
        marker = os.path.join(folder, escape_key(self.key))
        if os.path.exists(marker):
            return False
        open(marker, "w").close()
        return True

    def evaluate(self, epoch: int) -> tuple[float, float]:
        level = self.quality * (1.0 - math.exp(-epoch / self.tau))
        dev = level + self.epoch_noise * float(self.rng.standard_normal())
        test = level + self.epoch_noise * float(self.rng.standard_normal()) + self.test_shift
        return dev, test


def _distance(p, value, target) -> float:
    """|value - target| as a share of ``p``'s range (log scale for loguniform;
    a choice: 0 at the target, 1 elsewhere; an off parameter: 1)."""
    if value is None:
        return 1.0
    if p.kind == "choice":
        return 0.0 if value == target else 1.0
    scale = math.log if p.kind == "loguniform" else float
    return abs(scale(value) - scale(target)) / (scale(p.high) - scale(p.low))


def _check_optimum(space: "StudyView") -> None:
    optimum = space.task.get("optimum")
    if optimum is None:
        return
    params = {p.name: p for p in space.params}
    if not isinstance(optimum, dict) or not optimum:
        raise UserError(f"{space.path}: task.optimum", f"expected {{parameter: value}}, got {optimum!r}.",
                        "Name space parameters and their best values, e.g. optimum: {lr: 0.01}.")
    for name, value in optimum.items():
        where = f"{space.path}: task.optimum.{name}"
        p = params.get(name)
        if p is None:
            raise UserError(where, f"'{name}' is not a parameter under space.",
                            f"Parameters: {', '.join(params) or '(none)'}.")
        if p.kind == "choice" and value not in p.values:
            raise UserError(where, f"{value!r} is not one of {list(p.values)}.", "Give one of the choices.")
        if p.kind != "choice" and (isinstance(value, bool) or not isinstance(value, (int, float))
                                   or not p.low <= value <= p.high):
            raise UserError(where, f"{value!r} is not a number in [{p.low}, {p.high}].", "Give a value in the range.")


@dataclass(frozen=True)
class SyntheticFamily(FamilyBase):
    """The synthetic family: any hyperparameter names are allowed (none has a limit)."""

    name: str = "synthetic"
    uses_torch: bool = False
    train_defaults: Train = Train(max_epochs=10, patience=3, metric="score", mode="max",
                                  timeout_s=None, retries=1)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    limits: Mapping[str, Limit] = field(default_factory=dict)

    def validate(self, space: "StudyView") -> None:
        check_evaluate(space, False, self.name)
        for key in space.task:
            if key not in TASK_KEYS:
                raise UserError(f"{space.path}: task.{key}", f"unknown key '{key}' for the synthetic family.",
                                f"Allowed: {', '.join(sorted(TASK_KEYS))}.")
        effects = space.task.get("effects", {}) or {}
        if not isinstance(effects, dict):
            raise UserError(f"{space.path}: task.effects", f"expected {{choice: {{option: effect}}}}, got {effects!r}.",
                            "Give a number per option, e.g. effects: {classifier: {crf: 0.02}}.")
        for choice, per_option in effects.items():
            where = f"{space.path}: task.effects.{choice}"
            if choice not in space.choices:
                raise UserError(where, f"'{choice}' is not a compared choice.",
                                f"Compared choices: {', '.join(space.choices)}.")
            if not isinstance(per_option, dict):
                raise UserError(where, f"expected {{option: effect}}, got {per_option!r}.",
                                "Give a number per option.")
            for option, value in per_option.items():
                if option not in space.choices[choice]:
                    raise UserError(f"{where}.{option}", f"'{option}' is not an option of '{choice}'.",
                                    f"Options: {list(space.choices[choice])}.")
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise UserError(f"{where}.{option}", f"expected a number, got {value!r}.",
                                    "Give the effect as a number.")
        allocate = space.task.get("allocate", {}) or {}
        if not isinstance(allocate, dict):
            raise UserError(f"{space.path}: task.allocate", f"expected {{option: MiB}}, got {allocate!r}.",
                            "Give the memory per option in MiB, e.g. allocate: {crf: 4096}.")
        options = {o for opts in space.choices.values() for o in opts}
        for option, mib in allocate.items():
            if option not in options:
                raise UserError(f"{space.path}: task.allocate.{option}", f"'{option}' is not a compared option.",
                                f"Options: {sorted(options, key=str)}.")
            if isinstance(mib, bool) or not isinstance(mib, int) or mib < 1:
                raise UserError(f"{space.path}: task.allocate.{option}", f"expected a whole number of MiB >= 1, "
                                f"got {mib!r}.", "Give the memory in MiB, e.g. 4096.")
        _check_optimum(space)
        for key in ("base", "noise", "epoch_noise", "tau", "spread", "test_shift", "curvature"):
            value = space.task.get(key, 0.0)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise UserError(f"{space.path}: task.{key}", f"expected a number, got {value!r}.", "Give a number.")
        if float(space.task.get("tau", 2.0)) <= 0:
            raise UserError(f"{space.path}: task.tau", "tau must be positive.", "Give a number > 0.")
        seconds = dict(space.fixed).get("epoch_seconds", 0.0)
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
            raise UserError(f"{space.path}: fixed.epoch_seconds", f"expected seconds >= 0, got {seconds!r}.",
                            "Give a number of seconds per epoch.")

    def resolve(self, space: "StudyView") -> list[str]:
        return ["synthetic: nothing to load"]

    def build(self, space: "StudyView", trial: TrialSpec, *, cache_dir: str | None = None) -> SyntheticModel:
        return SyntheticModel(space, trial)


FAMILY = SyntheticFamily()
