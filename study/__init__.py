"""seedsweep's study side: search spaces -> trials on Ray Tune -> Parquet.

The engine lives in rooms, read top-down: :mod:`study.execution` (how a
study runs: the runner, Ray, the trial in a worker, waves and tuned
searches), :mod:`study.store` (where results live: the run directory on
local disk or an object store), :mod:`study.spec` (what a study is: the
study file, its space, ``until:`` and ``tune:``, the trial grid) and
:mod:`study.families` (the model families, reached only through its
registry); under them the ground floor (``errors``, ``files``, ``schema``,
``processes``, ``testbeds``). A room imports only the rooms below it.
Importing this package starts nothing and changes nothing in
``os.environ``.

The Python API mirrors the command line for a study's plain grid (a study
with ``until:`` or ``tune:`` is refused by :func:`run`: its decisions need
the statistics, above this package; ``seedsweep run FILE --out DIR`` or
``seedsweep.define(...).run(out)`` runs it)::

    from seedsweep import study
    space = study.check("search_spaces/quickstart.yaml")     # validate, no side effects
    summary = study.run("search_spaces/quickstart.yaml", out="runs/quickstart")
    print(study.status("runs/quickstart").render())
    study.compact("runs/quickstart")
"""

from __future__ import annotations

from pathlib import Path

from .errors import UserError
from .execution.runner import RunSummary, load_study, plan_study, run as run_grid
from .families import get_family
from .spec.space import Space
from .spec.spacefile import load_space
from .store.rundir import RunDir
from .store.status import StudyStatus, study_status as status

__all__ = ["UserError", "Space", "RunSummary", "StudyStatus", "check", "run", "status", "compact",
           "load_space", "load_study", "plan_study"]


def run(space_path: str | Path, out: str | Path, **kwargs) -> RunSummary:
    """Run (or resume) the plain grid of the study file ``space_path`` into
    ``out``; keywords as :func:`study.execution.runner.run` (``num_cpus``,
    ``address``, ``retry_failed``, ``claims``…). A study with ``until:`` or
    ``tune:`` is refused with nothing written (run as a plain grid it would
    neither stop when decided nor search): run it with ``seedsweep run``."""
    space = load_study(space_path)
    for key, value in (("until", space.until), ("tune", space.tune)):
        if value is not None:
            raise UserError(f"{space_path}: {key}", f"study.run runs a study's plain grid, and this study has "
                            f"{key}: (an {'adaptive' if key == 'until' else 'tuned'} study, whose waves are "
                            "decided by the statistics)",
                            f"Run it with 'seedsweep run {space_path} --out {out}', or from Python with "
                            "seedsweep.define(...).run(out).")
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
