"""The ``seedsweep`` command line (:mod:`seedsweep.cli`), on top of both
packages: :mod:`study` (the engine) and :mod:`analysis` (the statistics),
and the Python API of a study defined without a file
(:func:`seedsweep.define`, :mod:`seedsweep.api`) and of a study file
(:func:`seedsweep.run`, which runs it as ``seedsweep run`` does). Nothing in the project
imports it; ``python -m seedsweep`` and the ``seedsweep`` console script run
it, and a user's notebook imports ``define``."""

from __future__ import annotations

__all__ = ["define", "run"]


def __getattr__(name: str):
    if name in ("define", "run"):
        from . import api     # the engine and Ray's start-up code: the console script's start stays light

        return getattr(api, name)
    raise AttributeError(f"module 'seedsweep' has no attribute {name!r}")
