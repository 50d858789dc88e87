"""Reading a run directory into a DataFrame (finished or still being written)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from study.store import RunDir  # the store's reader: parts and compacted files alike

__all__ = ["load", "load_epochs"]


def load(run_dir: str | Path) -> pd.DataFrame:
    """One row per stored trial of ``run_dir``: identity, hyperparameters
    (named as their YAML keys), status and scores. Diverged and failed trials
    are included; filter on ``status`` to drop them (and say how many).

    >>> df = load(run_dir)
    >>> df.groupby("option").test_score.median().round(3).to_dict()
    {'crf': 0.875, 'softmax': 0.82}
    """
    rd = RunDir(run_dir)
    rd.require()
    table = rd.read_trials()
    if table is None:
        return pd.DataFrame(columns=["trial_key", "config_id", "choice", "option", "seed", "status", "test_score"])
    return table.to_pandas().sort_values("trial_key", kind="stable").reset_index(drop=True)


def load_epochs(run_dir: str | Path) -> pd.DataFrame:
    """One row per trained epoch: trial_key, epoch, train_loss, dev_score, test_score, seconds."""
    rd = RunDir(run_dir)
    rd.require()
    table = rd.read_epochs()
    if table is None:
        return pd.DataFrame(columns=["trial_key", "epoch", "train_loss", "dev_score", "test_score", "seconds"])
    return table.to_pandas().sort_values(["trial_key", "epoch"], kind="stable").reset_index(drop=True)
