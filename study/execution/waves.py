"""An adaptive study's waves (docs/reference/statistics.md, "Adaptive studies").

:func:`run_until` runs the study file's ``samples`` configurations (the
first wave), asks a :class:`Policy` after each wave whether to stop, and
otherwise runs the next ``until.wave`` configurations from the same sampler
stream (configuration c00042 is the same whether a study stops at 50 or
400). Nothing is kept only in memory: a resume starts again at the first
wave, finds its trials stored, asks the policy the same question about the
same rows and so goes on exactly where the killed run stopped. The engine
never imports the statistics: the command line hands it a policy.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, field, replace
from typing import TextIO

from ..errors import UserError
from ..spec.claimsfile import read_claims
from ..store.rundir import RunDir
from ..store.sealing import sealed_claims
from ..spec.until import Look, Policy
from ..store.studies import hours_spent, load_study
from .resume import check_same_study
from .runner import RunSummary, run

__all__ = ["WavesSummary", "run_until", "record_look", "check_claims_to_wait_for", "wave_size"]


@dataclass
class WavesSummary:
    """What :func:`run_until` did: the last wave's run, the configurations
    run, the looks in order, why it stopped (``None``: interrupted), and every
    wave's run in order."""

    last: RunSummary
    samples: int
    looks: list[tuple[int, Look]] = field(default_factory=list)
    stopped: str | None = None
    waves: list[RunSummary] = field(default_factory=list)

    def summary(self) -> RunSummary:
        """The whole command as one run: the trials of its last wave's study,
        every wave's trials run, and skipped only what was stored before the
        command began (a later wave skips what an earlier one stored)."""
        ran = sum(w.scheduled for w in self.waves)
        earlier = ran - self.last.scheduled                 # stored by this command's earlier waves
        return replace(self.last, scheduled=ran, skipped=max(0, self.last.skipped - earlier))

    def line(self) -> str:
        """The command in one line (:meth:`RunSummary.line` of :meth:`summary`)."""
        return self.summary().line()


def wave_size(space, num_cpus: int | None) -> int:
    """Configurations per wave: ``until.wave``, or (auto) enough to give
    every CPU slot two trials (``method: spending``: its looks, the same on
    every machine, :meth:`study.spec.until.Until.spending_wave`)."""
    if space.until.method == "spending":
        return space.until.spending_wave(space.samples, space.trials_per_config)
    if space.until.wave:
        return space.until.wave
    per_config = space.trials_per_config
    slots = max(1, int((num_cpus or os.cpu_count() or 1) // max(space.resources.cpu, 1e-9)))
    return max(1, math.ceil(2 * slots / per_config))


def check_claims_to_wait_for(space, out, claims_file) -> None:
    """``until.claims: true`` needs sealed claims it can judge along the way:
    a claims file given now (``claims``) or sealed into ``out`` before, and a
    mean value claim needs the scores' bounds. Checked before anything is written."""
    where = f"{space.path}: until.claims"
    rd = RunDir(str(out))
    claims = read_claims(claims_file) if claims_file else (sealed_claims(rd) if rd.exists() else None)
    if claims is None:
        raise UserError(where, f"the study waits for sealed claims' gates, and no claims are sealed in {out}.",
                        "Give the claims file: seedsweep run ... --claims FILE (or remove until.claims).")
    for c in claims.claims:
        if c.kind == "value" and c.statistic == "mean" and space.until.claim_bounds is None:
            raise UserError(where.replace("until.claims", "until.range"), f"claim {c.id} judges a mean, and an "
                            "anytime-valid interval of a mean needs the scores' bounds, which the "
                            f"{space.family} family does not know.", "Give until.range: [lo, hi] (the bounds of "
                            "the score), or judge the median (statistic: median).")


def record_look(rd: RunDir, samples: int, record: dict, stream: TextIO) -> None:
    """Keep the look at ``samples`` configurations in the run directory's
    record of looks (``looks.json``), as first taken. A resume asks the same
    question again and should get the same answer; where it does not (rows
    rerun with ``--retry-failed``, or another seedsweep version), the record
    keeps the first answer and a warning says so."""
    taken = rd.read_looks()
    before = next((r for r in taken if r.get("configurations") == samples), None)
    if before is None:
        rd.write_looks(taken + [{"configurations": samples, **record}])
    elif before.get("decisions") != record.get("decisions"):
        print(f"[seedsweep] warning: {rd.looks_path}: the look at {samples} configurations decided "
              f"{before.get('decisions')} when it was taken and decides {record.get('decisions')} now (rows "
              "rerun, or another seedsweep version); the record keeps the first.", file=stream, flush=True)


def run_until(space_path, out, policy: Policy, *, stream: TextIO | None = None, num_cpus: int | None = None,
              **kwargs) -> WavesSummary:
    """Run the adaptive study of ``space_path`` (it has ``until:``) into ``out``
    wave by wave until ``policy`` says stop or the budget is spent; ``kwargs``
    go to :func:`study.execution.runner.run`."""
    stream = stream or sys.stderr
    space = load_study(space_path)
    until = space.until
    if until.claims:
        check_claims_to_wait_for(space, out, kwargs.get("claims"))
    per_config = space.trials_per_config
    cap = until.sample_cap(per_config) or math.inf
    rd = RunDir(str(out))
    if rd.exists():                           # a changed file is refused before Ray starts, not in the first wave
        check_same_study(rd, space)
    extension = rd.read_extension()           # None before the run directory exists
    if extension is not None:                 # seedsweep extend: the budget raised, the level left recorded
        cap = int(extension["budget"])
    step = wave_size(space, num_cpus)
    # one Ray for every wave (each run() joins it instead of starting its own)
    # and one Tune fit for every wave (each run() hands its trials to it: study.execution.fitsession)
    from .fitsession import study_fit     # Ray Tune at import: only once a study runs
    with study_fit(space, out, num_cpus, kwargs):
        return _waves(space, out, policy, stream, num_cpus, cap, step, kwargs)


def _waves(space, out, policy: Policy, stream: TextIO, num_cpus: int | None, cap: float, step: int,
           kwargs: dict) -> WavesSummary:
    """The waves of :func:`run_until`, each a :func:`study.execution.runner.run`, until the
    policy or the budget stops them."""
    until, per_config = space.until, space.trials_per_config
    n, looks, waves = space.samples, [], []
    while True:
        summary = run(space, out, samples=n, stream=stream, num_cpus=num_cpus, **kwargs)
        waves.append(summary)
        result = WavesSummary(summary, n, looks, waves=waves)
        if summary.interrupted:
            return result
        nxt = int(min(n + step, cap))
        spent_hours = bool(until.budget_hours) and hours_spent(str(out)) >= until.budget_hours
        look = policy(str(out), n, final=nxt <= n or spent_hours)
        looks.append((n, look))
        if look.record is not None:
            record_look(RunDir(str(out)), n, look.record, stream)
        print(f"[seedsweep] wave at {n} configurations: {look.why}", file=stream, flush=True)
        if look.stop:
            result.stopped = look.why
            return result
        if spent_hours:
            result.stopped = f"budget spent: {until.budget_hours:g} hours"
            return result
        if nxt <= n:
            result.stopped = f"budget spent: {n} configurations ({n * per_config} trials)"
            return result
        n = nxt
