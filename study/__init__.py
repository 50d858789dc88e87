"""seedsweep's study side: search spaces -> trials on Ray Tune -> Parquet.

The engine lives here, one module per idea (ground floor: ``schema``,
``files``, ``errors``; then ``space``, ``sampling``, ``grid``, ``runner`` with
``resume``, ``session``, ``callback``, ``rows``, ``failures``; ``trial`` in
the workers; ``store``, ``remote``, ``manifest`` for the run directory). The
model families are subpackages of :mod:`study.families`, reached only
through its registry. Importing this package starts nothing and changes
nothing in ``os.environ``.

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
from .families import get_family
from .runner import RunSummary, load_study, plan_study, run
from .space import Space
from .spacefile import load_space
from .status import StudyStatus, study_status as status
from .store import RunDir

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
