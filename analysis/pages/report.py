"""The tables of a run directory: every compared choice, per task, plus the
seed-variance table (``seedsweep report``), and the raw scores as CSV
(``seedsweep export``).

Which comparisons a directory has: for a seedsweep run, the manifest's
``compare`` entry (each compared choice with its options written as the
trials table stores them, in file order; the study YAML is never re-parsed
here, so ``[yes, no]`` stays ``yes``/``no``); for a run directory written
before the manifest recorded it, the choices and options of its stored rows;
for an imported directory, the comparisons of its ``import.json``.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from seedsweep.study.files import write_text

from ..reading.imported import read_import_spec
from ..reading.claimverdicts import ClaimVerdicts, claim_verdicts, claim_verdict_tables
from ..reading.load import comparisons_of, load, study_tau
from ..reading.opened import snapshot
from ..reading.rundirs import StudyDecisions, study_decided, study_tuned
from ..specs import ComparisonSpec, as_categories, rows_where
from ..stats.insights import compute
from ..stats.paired import Comparison, compare_spec
from ..stats.robustness import robustness_of, robustness_table
from ..stats.seeds import option_distributions, seed_variance, selection_scores
from ..stats.tuned import TunedComparison, tuned_table
from ..stats.unpaired import banner, unpaired, unpaired_tables
from ..tables import (comparison_table, dominance_table, importance_table, option_distribution_table,
                     seed_variance_table, selection_table)

__all__ = ["protocol_note", "report", "export_csv", "ReportSection", "sections", "RunJudgement", "judge_run"]


@dataclass
class ReportSection:
    spec: ComparisonSpec
    by_task: dict[str, Comparison]


@dataclass
class RunJudgement:
    """What a report reads from a run directory besides its comparisons, found
    once per report: the sealed claims judged (the seal verified once), an
    adaptive study's decisions and a tuned study's comparison (None where the
    directory has none)."""
    led: ClaimVerdicts | None
    decided: StudyDecisions | None
    tuned: TunedComparison | None


def judge_run(run_dir: str | Path, df: pd.DataFrame, specs, results, *, imported: bool = False,
              n_bootstrap: int = 1000, seed: int = 0) -> RunJudgement:
    """:class:`RunJudgement` of ``run_dir`` with trials ``df`` (``imported``:
    results imported from elsewhere, which hold no decisions and no tuning)."""
    return RunJudgement(claim_verdicts(run_dir, df, specs, results, seed=seed),
                        None if imported else study_decided(run_dir, df),
                        None if imported else study_tuned(run_dir, df, n_bootstrap=n_bootstrap, seed=seed))


def sections(run_dir: str | Path, *, df: pd.DataFrame | None = None, n_bootstrap: int = 1000,
             seed: int = 0, specs: tuple[list[ComparisonSpec], list[str]] | None = None
             ) -> tuple[list[ReportSection], pd.DataFrame]:
    """The comparisons of ``run_dir`` computed per task, and the loaded trials
    (``df`` and ``specs``, when given, spare reading them again)."""
    specs, results = specs or comparisons_of(run_dir)
    if df is None:
        df = load(run_dir)
    df = as_categories(df)
    return [ReportSection(s, compare_spec(df, s, results, n_bootstrap=n_bootstrap, seed=seed)) for s in specs], df


def report(run_dir: str | Path, fmt: str = "markdown", *, n_bootstrap: int = 1000, seed: int = 0,
           df: pd.DataFrame | None = None, computed=None, judged: RunJudgement | None = None) -> str:
    """Every comparison table of ``run_dir`` with its dominance table, the
    seed distributions, the importance tables and the seed-variance table, in
    ``fmt`` (markdown, html or latex); ``df``: its trials, if already loaded;
    ``computed``: :func:`analysis.stats.insights.compute`'s result, and ``judged``:
    :func:`judge_run`'s, if found already."""
    run_dir = snapshot(run_dir)          # every section below reads the directory's manifest once between them
    specs, results = comparisons_of(run_dir)
    if computed is None:
        computed = compute(as_categories(load(run_dir) if df is None else df), specs, results,
                           n_bootstrap=n_bootstrap, seed=seed)
    df = computed.df
    if judged is None:
        judged = judge_run(run_dir, df, specs, results, n_bootstrap=n_bootstrap, seed=seed)
    parts = []
    tuned = judged.tuned
    if tuned is not None:       # no two trials share a configuration: the tuned table replaces the paired ones
        parts.append(tuned_table(tuned).render(fmt, title=f"tuned comparison: {tuned.choice} at budget "
                                                          f"{tuned.budget} ({tuned.sampler})"))
    imported = read_import_spec(run_dir) is not None
    for spec in specs if tuned is None else ():
        title = spec.name if spec.name == spec.choice else f"{spec.name} ({spec.choice})"
        # an import of a search whose configurations do not pair is judged as independent samples
        alone = unpaired(df, spec, results, n_bootstrap=n_bootstrap, seed=seed) if imported else {}
        if not alone or any(u.coverage.paired for u in alone.values()) or len(alone) < len(computed.by_task[spec.name]):
            parts.append(comparison_table(computed.by_task[spec.name], options=spec.options)
                         .render(fmt, title=title + (" (paired configurations only)" if alone else "")))
            dom = computed.stats[spec.name].dominance
            if any(d is not None for d in dom.values()):
                parts.append(dominance_table(dom).render(fmt, title=f"dominance: {spec.name}"))
        if alone:
            parts.append(_paragraph(banner(spec.name, alone), fmt))
            parts += [t.render(fmt, title=name) for name, t in unpaired_tables(spec.name, alone)]
    tau = study_tau(run_dir)
    for spec in specs:                                   # studies that scored evaluation sets (evaluate:)
        rob = robustness_of(df, spec, results, tau)
        if rob is not None:
            parts.append(robustness_table(rob).render(fmt, title=f"robustness: {spec.name}"))
    if specs and not imported:                           # seedsweep runs: per-option seed distributions
        for spec in specs:
            if tuned is None:           # a tuned study's trials are searches, not seeds of configurations
                parts.append(option_distribution_table(option_distributions(df, spec.choice), spec.choice)
                             .render(fmt, title=f"seed distribution per option: {spec.name}"))
            chosen = selection_scores(df, spec.choice)
            if len(chosen):
                parts.append(selection_table(chosen, spec.choice)
                             .render(fmt, title=f"test score by epoch selection: {spec.name}"))
    for group in computed.importance:
        covers = ", ".join(group.names)
        for task, imp in group.by_task.items():
            if isinstance(imp, str):
                parts.append(f"(importance of {covers}, {task or 'all'}: {imp})")
                continue
            parts.append(importance_table(imp, task).render(
                fmt, title=f"hyperparameter importance: {task or 'all'} (rows of {covers})"))
    if specs and tuned is None:
        parts.append(seed_variance_table(seed_variance(rows_where(df, specs[0].where), results=results))
                     .render(fmt, title="seed variance"))
    elif not specs:
        parts.append("(this run directory names no comparisons)")
    note = protocol_note(df)
    if note:
        parts.insert(0, note)
    led = judged.led
    if led is not None:                      # the sealed claims and their verdicts come first
        parts = [t.render(fmt, title=title) for title, t in claim_verdict_tables(led)] + parts
    if judged.decided is not None:           # an adaptive study's decisions come before everything
        parts = [judged.decided.table().render(fmt, title="Decisions")] + parts
    return "\n\n".join(parts) + "\n"


def _paragraph(text: str, fmt: str) -> str:
    """A sentence between the tables, in the report's format."""
    return f"<p>{html.escape(text)}</p>" if fmt == "html" else text


def protocol_note(df: pd.DataFrame) -> str | None:
    """Whose selection the test scores are, where the program reports test
    once at its end (the command family's ``test_protocol``); None where
    every test score is at seedsweep's best dev epoch."""
    if "test_protocol" not in df.columns:
        return None
    counts = df["test_protocol"].astype("string").fillna("").value_counts()
    own = int(counts.get("program", 0))
    if not own:
        return None
    ours = int(len(df) - own)
    return (f"Test protocol: {own} trial(s) report test once, at the program's end, for the checkpoint the program "
            "selected itself (test_protocol 'program'); seedsweep cannot check which epoch that was, so their "
            "best_epoch is seedsweep's best dev epoch beside it, not the tested one"
            + (f"; {ours} trial(s) have their test score at seedsweep's best dev epoch." if ours else ".")
            + " Epoch rows of these trials carry dev scores only (no test score to peek at).")


def export_csv(run_dir: str | Path, out: str | Path | None = None) -> str | None:
    """The raw per-trial rows of ``run_dir`` as CSV (every column, failed and
    diverged rows included); written to ``out`` atomically, or returned."""
    text = load(run_dir).to_csv(index=False)
    if out is None:
        return text
    write_text(text, out)
    return None
