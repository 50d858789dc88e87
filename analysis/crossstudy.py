"""Two studies side by side: does one study rank the options of a choice as
the other does? (``seedsweep report DIR OTHER``.)

For every compared choice the two run directories share, and every task they
share (or their only tasks, when each has one), the options' scores on each
side are the per-configuration scores of the paired configurations (mean
over seeds, as in the comparison tables); :func:`~analysis.agreement.rank_agreement`
compares their medians, each side in its own direction (the manifest's
``train.mode``), with a bootstrap over configurations.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .agreement import RankAgreement, rank_agreement
from .report import comparisons_of, sections
from .tables import Table

__all__ = ["StudyAgreement", "study_agreement", "agreement_table"]


@dataclass
class StudyAgreement:
    choice: str
    task_a: str
    task_b: str
    result: RankAgreement


def _scores(section) -> dict[str, dict[str, list[float]]]:
    """task -> option -> per-configuration scores of the paired configurations."""
    out = {}
    for task, cmp in section.by_task.items():
        if cmp.n and cmp.table is not None:
            out[task] = {o: cmp.table[o].tolist() for o in cmp.options}
    return out


def study_agreement(run_a: str | Path, run_b: str | Path, *, n_bootstrap: int = 1000,
                    seed: int = 0) -> list[StudyAgreement]:
    """Rank agreement of every choice and task the two run directories share."""
    secs_a, _ = sections(run_a, n_bootstrap=200, seed=seed)
    secs_b, _ = sections(run_b, n_bootstrap=200, seed=seed)
    by_choice_b = {s.spec.choice: s for s in secs_b}
    out = []
    for sa in secs_a:
        sb = by_choice_b.get(sa.spec.choice)
        if sb is None:
            continue
        ta, tb = _scores(sa), _scores(sb)
        pairs = [(t, t) for t in sorted(set(ta) & set(tb))]
        if not pairs and len(ta) == 1 and len(tb) == 1:
            pairs = [(next(iter(ta)), next(iter(tb)))]
        for task_a, task_b in pairs:
            options = set(ta[task_a]) & set(tb[task_b])
            if len(options) < 2:
                continue
            result = rank_agreement(ta[task_a], tb[task_b],
                                    higher_is_better=(sa.spec.mode == "max", sb.spec.mode == "max"),
                                    n_bootstrap=n_bootstrap, seed=seed)
            out.append(StudyAgreement(sa.spec.choice, task_a, task_b, result))
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
             "scores, best first in its own direction (mode); τ = 1: the same order. CI: percentile bootstrap "
             "over configurations."]
    if not rows:
        specs_a, specs_b = comparisons_of(run_a)[0], comparisons_of(run_b)[0]
        notes.append(f"No choice with two or more options is compared in both "
                     f"({[s.choice for s in specs_a]} vs {[s.choice for s in specs_b]}).")
    return Table(header=["choice", "task", "options", "Kendall τ", "95% CI", "p", "Spearman ρ"], rows=rows,
                 notes=notes, numeric_from=2)
