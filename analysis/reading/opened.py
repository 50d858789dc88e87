"""A run directory opened once for one reading (a report, a dashboard
refresh): :class:`RunSnapshot` reads the manifest on first use and keeps it,
and keeps the study definition it holds, so the sections of one report, each
asking for the comparisons, the study's τ, its ``until:``, its tuning or its
seal, read ``manifest.json`` once between them. Every reader of a run
directory in :mod:`analysis` takes a path (a fresh reading, as a notebook
calls it) or an opened run: a :class:`RunSnapshot`, or a view that holds one
(``.rd``, :class:`analysis.reading.view.RunView`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Union

from seedsweep.study.spec.space import Space
from seedsweep.study.store.rundir import RunDir
from seedsweep.study.store.studies import load_study, study_from_manifest

__all__ = ["RunSnapshot", "Run", "opened", "run_path", "snapshot", "study_of"]


class RunSnapshot(RunDir):
    """A run directory read as of one moment: its manifest read on first use and kept."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        self.given = str(path)               # as the user wrote it (messages quote it so)
        self._manifest: dict[str, Any] | None = None
        self._study: Space | None = None

    def manifest(self) -> dict[str, Any]:
        """The manifest, read once."""
        if self._manifest is None:
            self._manifest = super().manifest()
        return self._manifest

    def study(self) -> Space:
        """The study that ran here, from the manifest read once."""
        if self._study is None:
            self.require()
            self._study = study_from_manifest(self.manifest(), str(self.manifest_path))
        return self._study


#: what a reader of a run directory accepts: its path, or an opened run (a snapshot, or a view holding one as ``rd``)
Run = Union[str, Path, RunDir, Any]


def opened(run: Run) -> RunDir:
    """The run directory of ``run``: the opened one it holds, or a fresh :class:`RunDir` of a path."""
    if isinstance(run, RunDir):
        return run
    rd = getattr(run, "rd", None)
    return rd if isinstance(rd, RunDir) else RunDir(run)


def run_path(run: Run) -> str:
    """The path (or URI) of ``run`` as the user gave it (a view keeps it as ``path``)."""
    if isinstance(run, (str, Path)):
        return str(run)
    given = getattr(run, "given", None) or getattr(run, "path", None)
    return given if isinstance(given, str) else str(opened(run).path)


def snapshot(run: Run) -> Run:
    """``run`` opened for one reading: a path becomes a :class:`RunSnapshot`; an opened run stays as it is."""
    return RunSnapshot(run) if isinstance(run, (str, Path)) else run


def study_of(run: Run) -> Space:
    """The study that ran in ``run`` (from its manifest; a snapshot's is read once)."""
    rd = opened(run)
    return rd.study() if isinstance(rd, RunSnapshot) else load_study(run_path(run))
