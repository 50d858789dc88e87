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

The Python API mirrors the command line::

    import study
    space = study.check("search_spaces/quickstart.yaml")     # validate, no side effects
    summary = study.run("search_spaces/quickstart.yaml", out="runs/quickstart")
    print(study.status("runs/quickstart").render())
    study.compact("runs/quickstart")
"""

from __future__ import annotations

from pathlib import Path

from .errors import UserError
from .execution.runner import RunSummary, load_study, plan_study, run
from .families import get_family
from .spec.space import Space
from .spec.spacefile import load_space
from .store.rundir import RunDir
from .store.status import StudyStatus, study_status as status

__all__ = ["UserError", "Space", "RunSummary", "StudyStatus", "check", "run", "status", "compact",
           "load_space", "load_study", "plan_study"]


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
