"""Two studies side by side: does one study rank the options of a choice as
the other does? (``seedsweep report DIR OTHER``.)

For every compared choice the two run directories share, and every task they
share (or their only tasks, when each has one), an option's scores on each
side are its per-configuration scores (mean over seeds) over every run with
a finite test score -- collapsed runs included, since a collapse is that
option's outcome (a random encoder that never learns is the floor, not a
missing value); failed runs have no score.
:func:`~analysis.stats.agreement.rank_agreement` compares the options' medians,
each side in its own direction (the manifest's ``train.mode``), with a
bootstrap over configurations.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..specs import rows_where
from ..stats.agreement import RankAgreement, rank_agreement
from ..tables import Table
from .load import comparisons_of, load

__all__ = ["StudyAgreement", "study_agreement", "agreement_table"]


@dataclass
class StudyAgreement:
    choice: str
    task_a: str
    task_b: str
    result: RankAgreement


def _scores(df: pd.DataFrame, spec) -> dict[str, dict[str, list[float]]]:
    """task -> option -> per-configuration mean scores of the runs with a finite score."""
    rows = rows_where(df, spec.where)
    rows = rows[(rows["choice"] == spec.choice) & np.isfinite(rows["test_score"].to_numpy(dtype=float))]
    out: dict[str, dict[str, list[float]]] = {}
    means = rows.groupby(["task", "option", "config_id"], observed=True)["test_score"].mean()
    for (task, option, _), value in means.items():
        out.setdefault(str(task), {}).setdefault(str(option), []).append(float(value))
    return out


def study_agreement(run_a: str | Path, run_b: str | Path, *, n_bootstrap: int = 1000,
                    seed: int = 0) -> list[StudyAgreement]:
    """Rank agreement of every choice and task the two run directories share
    (seedsweep runs: their rows name the choice and configuration)."""
    specs_b = {s.choice: s for s in comparisons_of(run_b)[0]}
    df_a, df_b = load(run_a), load(run_b)
    out = []
    for sa in comparisons_of(run_a)[0]:
        sb = specs_b.get(sa.choice)
        if sb is None or "config_id" not in df_a.columns or "config_id" not in df_b.columns:
            continue
        ta, tb = _scores(df_a, sa), _scores(df_b, sb)
        pairs = [(t, t) for t in sorted(set(ta) & set(tb))]
        if not pairs and len(ta) == 1 and len(tb) == 1:
            pairs = [(next(iter(ta)), next(iter(tb)))]
        for task_a, task_b in pairs:
            if len(set(ta[task_a]) & set(tb[task_b])) < 2:
                continue
            result = rank_agreement(ta[task_a], tb[task_b], higher_is_better=(sa.mode == "max", sb.mode == "max"),
                                    n_bootstrap=n_bootstrap, seed=seed)
            out.append(StudyAgreement(sa.choice, task_a, task_b, result))
    return out


def agreement_table(run_a: str | Path, run_b: str | Path, *, n_bootstrap: int = 1000, seed: int = 0) -> Table:
    """The rank agreements of :func:`study_agreement` as a table."""
    rows = []
    for a in study_agreement(run_a, run_b, n_bootstrap=n_bootstrap, seed=seed):
        r = a.result
        task = a.task_a if a.task_a == a.task_b else f"{a.task_a} / {a.task_b}"
        rows.append([a.choice, task, str(len(r.options)), f"{r.tau:.3f}",
                     f"[{r.tau_ci[0]:.2f}, {r.tau_ci[1]:.2f}]", f"{r.tau_p:.3g}" + (" (exact)" if r.tau_exact else ""),
                     f"{r.rho:.3f}"])
    notes = [f"A: {run_a}; B: {run_b}. Each side ranks the options by the median of their per-configuration "
             "scores (every run with a score, collapsed runs included), best first in its own direction (mode); "
             "τ = 1: the same order. CI: percentile bootstrap over configurations."]
    if not rows:
        specs_a, specs_b = comparisons_of(run_a)[0], comparisons_of(run_b)[0]
        notes.append(f"No choice with two or more options is compared in both "
                     f"({[s.choice for s in specs_a]} vs {[s.choice for s in specs_b]}).")
    return Table(header=["choice", "task", "options", "Kendall τ", "95% CI", "p", "Spearman ρ"], rows=rows,
                 notes=notes, numeric_from=2)
