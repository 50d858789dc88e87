"""The trial grid: configuration x (compared choice, option) x seed.

Trial keys and :class:`~study.schema.TrialSpec` are defined on the ground
floor (:mod:`study.schema`). Every option and seed of a
configuration shares its hyperparameters exactly; only the compared choice
takes the option's value.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ..families import result_columns
from ..schema import Scalar, TrialSpec, trial_key, trials_schema
from .sampling import arrow_type
from .space import Space, common_type

__all__ = ["trial_grid", "effective_params", "hyperparameter_types", "trials_schema_of"]


def hyperparameter_types(space: Space) -> dict[str, str]:
    """Column name -> value type for every hyperparameter column, in table order:
    compared choices, then ``space`` parameters, then ``fixed`` values."""
    out: dict[str, str] = {}
    for name, options in space.compare:
        out[name] = common_type(options)
    for p in space.params:
        out[p.name] = p.value_type
    for name, value in space.fixed:
        out[name] = common_type((value,))
    return out


def trials_schema_of(space: Space) -> pa.Schema:
    """The trials table's schema for ``space``: identity, typed hyperparameters,
    outcome, then the family's result columns."""
    schema = trials_schema({n: arrow_type(t) for n, t in hyperparameter_types(space).items()},
                           tuned=space.tune is not None)
    for name, kind in result_columns(space).items():
        schema = schema.append(pa.field(name, arrow_type(kind)))
    return schema


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
