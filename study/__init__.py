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

from .rooms import face

# each name imported from its module on first use: importing one module of the package (the store, to read a
# run) loads neither the runner nor Ray's start-up code
__all__, __getattr__, __dir__ = face(__name__, globals(), {
    "errors": ("UserError",),
    "spec.space": ("Space",),
    "spec.spacefile": ("load_space",),
    "store.status": ("StudyStatus",),
    "store.studies": ("load_study",),
    "execution.runner": ("RunSummary", "plan_study"),
    "execution.pyapi": ("check", "run", "status", "compact"),
})
