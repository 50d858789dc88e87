"""What an analysis reads from a run directory beyond its trials: an
adaptive study's decisions (:class:`WavePolicy`, the engine's question after
each wave, :mod:`study.execution.waves`; :func:`study_decided`, a report's Decisions
section) and a tuned study's comparison (:func:`study_tuned`). The
statistics themselves are pure functions of tables
(:mod:`analysis.stats.decisions`, :mod:`analysis.stats.tuned`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from seedsweep.study.errors import UserError
from seedsweep.study.spec.until import Look
from seedsweep.study.store.studies import hours_spent, span_hours
from seedsweep.study.spec.until import Until
from seedsweep.study.store.rundir import RunDir
from seedsweep.study.store.sealing import sealed_claims

from ..stats.claims import ClaimResult, gated
from ..stats.decisions import Tracked, decisions_table, track
from ..stats.units import upto_configurations
from ..stats.tuned import TPE_STARTUP, TunedComparison, tuned_comparison
from ..stats.verdict import INCONCLUSIVE
from ..tables import Table
from .imported import read_import_spec
from .claimverdicts import judge_claims
from .load import comparisons_of, load
from .opened import Run, opened, run_path, study_of

__all__ = ["WavePolicy", "StudyDecisions", "study_decided", "study_tuned", "spending_looks", "claims_at", "look_record"]


class WavePolicy:
    """The engine's question after a wave (:class:`study.execution.waves.Policy`):
    stop when every tracked sequence is decided and, with ``until.claims``,
    every sealed claim with a gate has left "inconclusive"."""

    def __init__(self, until: Until, seeds: int, *, first: int | None = None, trials_per_config: int = 1) -> None:
        self.until, self.seeds = until, seeds
        self.first, self.trials_per_config = first, trials_per_config
        self.last: list[Tracked] = []
        self.claims: list[ClaimResult] = []

    def __call__(self, out: str, samples: int, *, final: bool = False) -> Look:
        df = load(out)
        specs, results = comparisons_of(out)
        extension = RunDir(out).read_extension()
        looks, cap = spending_looks(self.until, self.first or samples, self.trials_per_config, samples)
        self.last = track(df, self.until, specs, results, seeds=self.seeds, upto=samples, where=str(out),
                          looks=looks, cap=cap, extension=extension, final=final)
        open_ = [t for t in self.last if t.decision == "undecided"]
        why = (f"every comparison decided ({len(self.last)})" if not open_ else
               f"{len(self.last) - len(open_)} of {len(self.last)} decided")
        waiting: list[str] = []
        if self.until.claims:
            self.claims = claims_at(out, df, specs, results, self.until, samples)
            gates = [r for r in self.claims if gated(r.claim)]
            waiting = [r.claim.id for r in gates if r.verdict.verdict == INCONCLUSIVE]
            why += (f"; every claim's gate reached ({len(gates)})" if not waiting else
                    f"; {len(gates) - len(waiting)} of {len(gates)} claims' gates reached (waiting for "
                    f"{', '.join(waiting)})")
        return Look(stop=not open_ and not waiting, why=why, record=look_record(self.last, self.until))


def look_record(tracked: list[Tracked], until: Until) -> dict:
    """What a look decided, per tracked sequence, with the units counted and
    (``method: spending``) the information fraction, the normal score and the
    boundary it was tested against: the run directory keeps it (``looks.json``)."""
    sequences = []
    for t in tracked:
        lo, hi = t.interval()
        entry = {"choice": t.choice, "a": t.a, "b": t.b, "task": t.task, "units": t.n, "decision": t.decision,
                 "interval": [float(lo), float(hi)]}
        if t.path is not None and t.path.counts:
            entry.update(fraction=t.path.fractions[-1], z=t.path.z[-1], boundary=t.path.bounds[-1])
        sequences.append(entry)
    return {"until": until.as_dict(), "decisions": [s["decision"] for s in sequences], "sequences": sequences}


def claims_at(run_dir: Run, df: pd.DataFrame, specs, results, until: Until, samples: int) -> list[ClaimResult]:
    """The sealed claims of ``run_dir`` judged, with anytime-valid intervals,
    on its first ``samples`` configurations (none when no claims are sealed)."""
    claims = sealed_claims(opened(run_dir))
    if claims is None:
        return []
    return judge_claims(claims, upto_configurations(df, samples), specs, results, until=until)


def spending_looks(until: Until, first: int, trials_per_config: int, samples: int
                   ) -> tuple[list[int] | None, int | None]:
    """A ``method: spending`` study's looks up to ``samples`` configurations run, and its budget's configurations."""
    if until.method != "spending":
        return None, None
    looks = [n for n in until.looks(first, trials_per_config) if n <= samples]
    return looks, until.sample_cap(trials_per_config)


@dataclass(frozen=True)
class StudyDecisions:
    """An adaptive run directory's tracked sequences over the configurations
    it has run, its ``until:`` settings and whether its budget is spent."""

    tracked: list[Tracked]
    until: Until
    budget_spent: bool
    claims: list[ClaimResult] | None = None     # until.claims: the sealed claims judged on the same configurations
    extension: dict | None = None               # seedsweep extend's record

    def table(self) -> Table:
        """The Decisions table (:func:`decisions_table`)."""
        return decisions_table(self.tracked, self.until, budget_spent=self.budget_spent, claims=self.claims,
                               extension=self.extension)


def study_decided(run_dir: Run, df: pd.DataFrame) -> StudyDecisions | None:
    """The decisions of an adaptive run directory (its study file has
    ``until:``); None for other directories."""
    if read_import_spec(run_dir) is not None:
        return None
    try:
        space = study_of(run_dir)
    except UserError:
        return None
    if space.until is None:
        return None
    specs, results = comparisons_of(run_dir)
    rd = opened(run_dir)
    configs = rd.configs()
    samples = configs.num_rows if configs is not None else space.samples      # the configurations run so far
    looks, cap = spending_looks(space.until, space.samples, space.trials_per_config, samples)
    extension = rd.read_extension()
    until = space.until
    budget = until.sample_cap(space.trials_per_config) if extension is None else int(extension["budget"])
    final = (budget is not None and samples >= budget) or \
        (bool(until.budget_hours) and hours_of(run_dir, df) >= until.budget_hours)
    tracked = track(df, space.until, specs, results, seeds=len(space.seeds), upto=samples, where=run_path(run_dir),
                    looks=looks, cap=cap, extension=extension, final=final)
    cap = budget
    claims = claims_at(run_dir, df, specs, results, until, samples) if until.claims else None
    return StudyDecisions(tracked, until, cap is not None and samples >= cap, claims, extension)


def hours_of(run_dir: Run, df: pd.DataFrame) -> float:
    """Hours the study has run (:func:`study.store.studies.hours_spent`), from ``df``'s times when it has them."""
    if {"started_at", "finished_at"} <= set(df.columns):
        return span_hours([*df["started_at"].dropna().tolist(), *df["finished_at"].dropna().tolist()])
    return hours_spent(run_path(run_dir))


def study_tuned(run_dir: Run, df: pd.DataFrame, *, n_bootstrap: int = 1000,
                seed: int = 0) -> TunedComparison | None:
    """The tuned comparison of a tuned study's run directory (None for any other)."""
    rd = opened(run_dir)
    try:
        manifest = rd.manifest()
    except UserError:                   # no readable manifest: not a tuned study
        return None
    tune = (manifest or {}).get("tune")
    if not tune or df.empty or "position" not in df.columns:
        return None
    (entry,) = manifest["compare"]
    return tuned_comparison(df, choice=entry["choice"], options=[str(o) for o in entry["options"]],
                            budget=int(tune["budget"]), sampler=str(tune["sampler"]), wave=int(tune["wave"]),
                            mode=(manifest.get("train") or {}).get("mode") or "max", n_bootstrap=n_bootstrap,
                            seed=seed, startup=int(tune.get("startup", TPE_STARTUP)))
