"""One reading of a run directory: :class:`RunView` holds what the report,
the figures and the dashboard read (the opened run directory with its
manifest, the study's name, the comparisons and result columns, the trials,
and for seedsweep runs the epochs, confusion counts and the driver's
progress), and :func:`load_view` reads it once. Every reader of a run
directory accepts the view in place of the path
(:mod:`analysis.reading.opened`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from seedsweep.study.schema import IDENTITY, OUTCOME, TUNED

from ..specs import ComparisonSpec, as_categories
from ..stats.pairing import as_text
from .load import comparisons_of, epochs_frame, trials_frame
from .opened import RunSnapshot

__all__ = ["RunView", "load_view"]


@dataclass
class RunView:
    """What the figures are drawn from: one reading of a run directory."""

    path: str
    rd: RunSnapshot                      # the run directory, its manifest read once for every reader of this view
    study: str
    df: pd.DataFrame
    specs: list[ComparisonSpec]
    results: list[str]
    planned: int
    imported: bool
    epochs: pd.DataFrame | None = None
    confusion: pd.DataFrame | None = None
    progress: dict = field(default_factory=dict)

    def spec(self, name: str | None) -> ComparisonSpec | None:
        """The comparison named ``name``, else the first (None when there is none)."""
        for s in self.specs:
            if s.name == name:
                return s
        return self.specs[0] if self.specs else None

    @property
    def tasks(self) -> list[str]:
        """The tasks of the stored rows, sorted."""
        return sorted(as_text(self.df["task"].dropna()).unique()) if "task" in self.df else []

    def filter_columns(self) -> list[str]:
        """Hyperparameter columns with more than one value (what a filter can narrow)."""
        skip = {f.name for f in [*IDENTITY, *TUNED, *OUTCOME]} | set(self.results) | {"dev_score"}
        skip |= {s.choice for s in self.specs}      # filtering a compared choice would break its pairs
        return [c for c in self.df.columns if c not in skip and 1 < self.df[c].nunique(dropna=True) <= 50]


def load_view(run_dir: str | Path, *, epochs: bool = True, cached=None) -> RunView:
    """Read ``run_dir`` (trials, and for seedsweep runs epochs, confusion
    counts and the driver's progress file). ``cached``, a
    :class:`study.store.shards.Cached` of the directory, reads only what changed
    since its last read (the live dashboard)."""

    rd = RunSnapshot(run_dir if cached is None else cached.rd.path)
    rd.require()
    readers = {"trials": rd.read_trials, "epochs": rd.read_epochs, "confusion": rd.read_confusion}

    def read(table: str):
        return readers[table]() if cached is None else cached.table(table)

    manifest = rd.manifest()
    specs, results = comparisons_of(rd)
    df = as_categories(trials_frame(read("trials")))
    imported = manifest.get("imported") is not None
    view = RunView(str(run_dir), rd, str(manifest.get("study", "?")), df, specs, results,
                   int(len(df) if imported else manifest.get("n_trials", len(df))), imported)
    if epochs and not imported:
        view.epochs = epochs_frame(read("epochs"))
        conf = read("confusion")
        view.confusion = conf.to_pandas() if conf is not None else None
    view.progress = rd.read_progress() or {}
    return view
