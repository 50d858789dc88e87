"""The Python API behind ``from seedsweep import study``: :func:`run`,
:func:`check`, :func:`status` and :func:`compact`, as the command line's
``seedsweep run``, ``check``, ``status`` and ``compact`` do them. The
package's face (``study/__init__.py``) imports this module on first use, so
reading a run directory (:mod:`analysis`) never loads the runner."""

from __future__ import annotations

from pathlib import Path

from ..errors import UserError
from .runner import RunSummary, run as run_grid
from ..families import get_family
from ..spec.space import Space
from ..store.rundir import RunDir
from ..store.status import study_status as status
from ..store.studies import load_study

__all__ = ["run", "check", "status", "compact"]


def run(space_path: str | Path, out: str | Path, **kwargs) -> RunSummary:
    """Run (or resume) the plain grid of the study file ``space_path`` into
    ``out``; keywords as :func:`study.execution.runner.run` (``num_cpus``,
    ``address``, ``retry_failed``, ``claims``…). A study with ``until:`` or
    ``tune:`` is refused with nothing written (run as a plain grid it would
    neither stop when decided nor search): :func:`seedsweep.run` runs every
    study as ``seedsweep run`` does (its waves ask the statistics, a floor
    above this one)."""
    space = load_study(space_path)
    for key, value in (("until", space.until), ("tune", space.tune)):
        if value is not None:
            raise UserError(f"{space_path}: {key}", f"study.run runs a study's plain grid, and this study has "
                            f"{key}: (an {'adaptive' if key == 'until' else 'tuned'} study, whose waves are "
                            "decided by the statistics)",
                            f"Run it with 'seedsweep run {space_path} --out {out}', or from Python with "
                            f"seedsweep.run({str(space_path)!r}, {str(out)!r}).")
    return run_grid(space_path, out, **kwargs)


def check(space_path: str | Path, *, resolve: bool = False) -> Space:
    """Validate a search space (schema only; with ``resolve``, also that its data
    and models can be found). Returns the :class:`Space`; raises :class:`UserError`."""
    space = load_study(space_path)
    if resolve:
        get_family(space.family).resolve(space)
    return space


def compact(run_dir: str | Path) -> tuple[int, int]:
    """Merge a run directory's parts into ``trials.parquet`` and ``epochs.parquet``.
    Returns (trial rows, epoch rows)."""
    rd = RunDir(run_dir)
    rd.require()
    with rd.locked():
        return rd.compact()
