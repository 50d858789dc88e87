"""The trial grid: configuration x (compared choice, option) x seed.

A trial key is ``"{config_id}/{choice}={option}/seed={seed}"``; it names the
trial everywhere (Tune, the store, the tables). Every option and seed of a
configuration shares its hyperparameters exactly; only the compared choice
takes the option's value.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

import pyarrow as pa

from .space import Scalar, Space

__all__ = ["TrialSpec", "trial_key", "trial_grid", "effective_params", "escape_key",
           "unescape_key", "hyperparameter_types"]


@dataclass(frozen=True)
class TrialSpec:
    """Everything one trial needs: its identity and its effective hyperparameters."""

    key: str
    config_id: str
    choice: str
    option: Scalar
    seed: int
    params: tuple[tuple[str, Any], ...]

    @property
    def hparams(self) -> dict[str, Any]:
        """Hyperparameter name -> value (null where a ``when`` condition does not hold)."""
        return dict(self.params)

    def to_json(self) -> str:
        """A compact JSON text of this trial: how it travels to its Ray worker
        inside Tune's trial config (each trial carries only its own spec)."""
        return json.dumps([self.key, self.config_id, self.choice, self.option, self.seed,
                           [list(p) for p in self.params]], separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> "TrialSpec":
        key, config_id, choice, option, seed, params = json.loads(text)
        return cls(key=key, config_id=config_id, choice=choice, option=option, seed=seed,
                   params=tuple((n, v) for n, v in params))


def trial_key(config_id: str, choice: str, option: Scalar, seed: int) -> str:
    """``"c00003/classifier=crf/seed=2"``."""
    return f"{config_id}/{choice}={option}/seed={seed}"


def escape_key(key: str) -> str:
    """A file name for a trial key (``/`` and other unsafe characters %-escaped)."""
    return quote(key, safe="=-_.+")


def unescape_key(name: str) -> str:
    """Inverse of :func:`escape_key`."""
    return unquote(name)


def hyperparameter_types(space: Space) -> dict[str, str]:
    """Column name -> value type for every hyperparameter column, in table order:
    compared choices, then ``space`` parameters, then ``fixed`` values."""
    out: dict[str, str] = {}
    from .space import _common_type  # one definition of a list's common type

    for name, options in space.compare:
        out[name] = _common_type(options)
    for p in space.params:
        out[p.name] = p.value_type
    for name, value in space.fixed:
        out[name] = _common_type((value,))
    return out


def effective_params(space: Space, config: dict[str, Any], choice: str, option: Scalar) -> dict[str, Any]:
    """The hyperparameters of one trial: the configuration's draws, the compared
    ``choice`` set to ``option``, the ``fixed`` values, and null for every
    parameter whose ``when`` condition does not hold (conditions may chain)."""
    values: dict[str, Any] = {}
    for name, options in space.compare:
        values[name] = option if name == choice else config.get(name, None)
    for p in space.params:
        values[p.name] = config[p.name]
    active = {p.name: True for p in space.params}
    for _ in range(len(space.params) + 1):  # fixpoint over chained conditions
        changed = False
        for p in space.params:
            ok = all(active.get(other, True) and values.get(other) in allowed for other, allowed in p.when)
            if ok != active[p.name]:
                active[p.name] = ok
                changed = True
        if not changed:
            break
    for p in space.params:
        if not active[p.name]:
            values[p.name] = None
    for name, value in space.fixed:
        values[name] = value
    return values


def trial_grid(space: Space, configs: pa.Table) -> list[TrialSpec]:
    """Every trial of the study, ordered so that a study stopped early holds
    complete pairs: by seed, then configuration, then choice and option."""
    rows = configs.to_pylist()
    trials = []
    for seed in space.seeds:
        for config in rows:
            for choice, options in space.compare:
                for option in options:
                    params = effective_params(space, config, choice, option)
                    trials.append(TrialSpec(
                        key=trial_key(config["config_id"], choice, option, seed),
                        config_id=config["config_id"], choice=choice, option=option, seed=seed,
                        params=tuple(params.items()),
                    ))
    return trials
