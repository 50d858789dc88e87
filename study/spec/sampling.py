"""Configurations: the hyperparameters every option and seed of a row share.

Configuration ``i`` is drawn by our own sampler, never by Ray Tune per trial
(Tune would draw new values for every grid point and break the pairing).

* ``sampler: random`` (default): parameter ``p`` of configuration ``i`` comes
  from NumPy's PCG64 seeded with ``(sampler_seed, i, h(p))``, ``h`` a stable
  hash of the name. Growing ``samples`` keeps configurations ``0..n-1``, and
  adding a parameter does not move the draws of the others.
* ``sampler: qmc``: a scrambled Sobol sequence (SciPy's, the generator that
  Optuna's ``QMCSampler`` wraps) seeded with ``sampler_seed``; configuration
  ``i`` is point ``i``, one dimension per parameter in file order. We use the
  sequence directly rather than Optuna's ask/tell loop so that configuration
  ``i`` depends on ``i`` alone, not on the order trials were asked for.

Every parameter is drawn for every configuration, also one whose ``when``
condition does not hold there; the trials table shows it as null where it does
not apply (see :func:`study.spec.grid.effective_params`).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pyarrow as pa

from ..families import optional
from ..files import stable_hash
from .space import Param, Space

__all__ = ["repeated_configurations", "sample_configs", "config_id", "arrow_type", "value_at", "cast_value"]

_ARROW = {"str": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}


def arrow_type(value_type: str) -> pa.DataType:
    """The Arrow column type of a parameter's value type (``str``/``int``/``float``/``bool``)."""
    return _ARROW[value_type]


def config_id(i: int) -> str:
    """The id of configuration ``i``: ``c00000``, ``c00001``, …"""
    return f"c{i:05d}"


def _drawn(space: Space) -> list[Param]:
    """The parameters drawn per configuration: sampled compared choices, then ``space``."""
    choices = space.choices
    return [Param(n, "choice", values=choices[n]) for n in space.sampled_choices] + list(space.params)


def value_at(p: Param, u: float):
    """Map a point ``u`` in [0, 1) to a value of ``p``."""
    if p.kind == "choice":
        return p.values[min(int(u * len(p.values)), len(p.values) - 1)]
    if p.kind == "uniform":
        return p.low + u * (p.high - p.low)
    if p.kind == "loguniform":
        return math.exp(math.log(p.low) + u * (math.log(p.high) - math.log(p.low)))
    return min(int(p.low + u * (p.high - p.low + 1)), p.high)  # int, inclusive


def cast_value(p: Param, value):
    """``value`` as ``p``'s column type (None stays None)."""
    if value is None:
        return None
    return {"str": str, "int": int, "float": float, "bool": bool}[p.value_type](value)


def sample_configs(space: Space) -> pa.Table:
    """The configurations table: ``config_id`` plus one typed column per drawn parameter.

    Deterministic: the same file gives the same table (and the same Parquet
    bytes when written with :func:`study.files.write_table`).
    """
    params = _drawn(space)
    n = space.samples
    if space.sampler == "qmc" and params:
        from scipy.stats import qmc

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "balance properties" warning for n != 2**m
            points = qmc.Sobol(d=len(params), scramble=True, seed=space.sampler_seed).random(n)
        units = [[float(points[i, j]) for j in range(len(params))] for i in range(n)]
    else:
        units = [
            [float(np.random.default_rng([space.sampler_seed, i, stable_hash(p.name)]).random())
             for p in params]
            for i in range(n)
        ]
    columns = {"config_id": pa.array([config_id(i) for i in range(n)], pa.string())}
    for j, p in enumerate(params):
        values = [cast_value(p, value_at(p, units[i][j])) for i in range(n)]
        columns[p.name] = pa.array(values, arrow_type(p.value_type))
    return pa.table(columns)


def repeated_configurations(space: Space, family=None) -> str | None:
    """A warning when the study's configurations repeat one another (None
    when each is distinct, or when ``family`` -- the study's family object --
    draws something per configuration besides its hyperparameters). A repeated configuration trains with the same
    hyperparameters and the same seeds, so it repeats the same trials (the
    synthetic family even draws its noise from the hyperparameters): the
    paired statistics would count one configuration as several."""
    if space.tune is not None or space.samples < 2 or optional(family, "draws_per_configuration"):
        return None
    table = sample_configs(space)
    rows = [tuple(row[c] for c in table.column_names if c != "config_id") for row in table.to_pylist()]
    distinct = len(set(rows))
    if distinct == len(rows):
        return None
    if not _drawn(space):
        return (f"samples: {space.samples} with nothing drawn per configuration (no space: block): all "
                f"{space.samples} configurations are the same one, and with the same seeds they repeat the same "
                "trials. Add a space: block to sample configurations, or use samples: 1 with more seeds.")
    return (f"samples: {space.samples} draws only {distinct} distinct configurations from its space: block; a "
            "repeated configuration with the same seeds repeats the same trials, and the paired statistics would "
            "count it more than once. Widen the space (or use sampler: qmc), or lower samples.")
