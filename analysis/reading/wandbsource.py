"""Reading a W&B runs export for ``seedsweep import runs.csv``: the CSV the
W&B web app's runs table writes (its download button), one row per run with
the run's ``Name`` and ``State``, W&B's own columns (``Created``,
``Runtime``, ``Sweep``, ``Tags``, ``Notes``, ``User``…) and then every config
value and summary metric under its name. Nothing is fetched: the file is all
there is, so there are no per-step epochs.

A file is read as a W&B export when its header has ``Name`` and ``State`` and
at least one other of W&B's own columns (``--from wandb`` says so outright).
W&B's columns and those starting with ``_`` (``_step``, ``_runtime``…) are
results, never pairing keys; summary metrics other than the scores should be
named with ``--result`` (in the export they look like any config value).
``finished`` runs are ``ok`` (``failed`` without the score); ``crashed`` and
``failed`` runs ``failed``; ``killed`` runs ``stopped`` (ended early by hand
or by a sweep's early termination); ``running`` runs ``failed``, not ended
when exported; the state is the reason.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from seedsweep.study.errors import UserError
from seedsweep.study.files import file_sha256

from .imported import read_delimited
from .sources import SourceTrials, import_source

__all__ = ["is_wandb_export", "read_wandb", "import_wandb", "WANDB_COLUMNS"]

WANDB_COLUMNS = ("Name", "State", "Notes", "User", "Tags", "Created", "Runtime", "Sweep", "ID", "Group",
                 "Job Type", "Hostname", "Heartbeat", "End Time", "Agent", "GPU Count", "GPU Type", "Commit",
                 "GitHub", "Command", "Description", "Updated", "Run ID", "Project", "Entity")
_STATE = {"finished": None, "crashed": "failed", "failed": "failed", "killed": "stopped", "running": "failed",
          "preempted": "failed", "pending": "failed"}


def is_wandb_export(columns) -> bool:
    """A header with ``Name``, ``State`` and at least one other W&B column."""
    names = set(map(str, columns))
    return {"Name", "State"} <= names and len(names & set(WANDB_COLUMNS)) >= 3


def read_wandb(path: str | Path, score: str | None, dev_score: str | None = None, *,
               sep: str | None = None) -> SourceTrials:
    """The runs of the W&B export ``path`` (see the module docstring)."""
    path = Path(path)
    df = read_delimited(path, sep)
    if not {"Name", "State"} <= set(df.columns):
        raise UserError(str(path), "is not a W&B runs export: its header has no 'Name' and 'State' columns.",
                        "Export the runs table from the W&B web app (its CSV download), or import the file as a "
                        "plain CSV without --from wandb.")
    if score is None:
        raise UserError(f"{path}: --score", "a W&B export needs the column that is the test score.",
                        f"Name it with --score (and the dev metric with --dev-score): "
                        f"{', '.join(c for c in map(str, df.columns) if c not in WANDB_COLUMNS)[:600]}.")
    for flag, name in (("--score", score), ("--dev-score", dev_score)):
        if name is not None and name not in df.columns:
            raise UserError(f"{path}: {flag} {name}", "no such column in the export.",
                            f"Use one of: {', '.join(map(str, df.columns))[:600]}.")
    states = df["State"].astype(str).str.strip().str.lower()
    unknown = sorted(set(states) - set(_STATE))
    if unknown:
        line = int(np.flatnonzero(states.isin(unknown).to_numpy())[0]) + 2
        raise UserError(f"{path}: line {line}, column State", f"the state {unknown[0]!r} is not one W&B writes.",
                        f"Use one of {', '.join(_STATE)} (finished runs are scored, the others counted).")
    scored = np.isfinite(pd.to_numeric(df[score], errors="coerce").to_numpy(dtype=float))
    state = states.to_numpy(dtype=object)          # plain objects: iterating pandas' Arrow strings is slow
    finished = state == "finished"
    statuses = [_STATE[s] for s in state]
    reasons = np.where(finished & scored, None, np.where(finished, f"reported no {score}",
                                                         "wandb state " + states.to_numpy(dtype=str))).tolist()
    names = df["Name"].astype(str)
    keys = ("wandb-" + names).tolist() if names.is_unique else [f"row-{i + 2}" for i in range(len(df))]
    numeric = [str(c) for c in df.columns if pd.api.types.is_numeric_dtype(df[c])]
    meta = [str(c) for c in df.columns if c in WANDB_COLUMNS or str(c).startswith("_")]
    return SourceTrials(df, keys, statuses, reasons, pd.DataFrame(), numeric, "wandb export", file_sha256(path),
                        meta, path.name.split(".")[0])


def import_wandb(path: str | Path, out: str | Path, *, score: str | None, dev_score: str | None = None,
                 sep: str | None = None, **flags) -> Path:
    """Import the W&B runs export ``path`` as the run directory ``out`` (flags as
    :func:`analysis.reading.imported.import_csv`); returns its path."""
    read = read_wandb(path, score, dev_score, sep=sep)
    return import_source(Path(path).resolve(), read, out, score=score, dev_score=dev_score, **flags)
