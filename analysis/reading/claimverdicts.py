"""The claims section of a report: the sealed claims of a run directory
judged on its trials (:func:`analysis.stats.claims.judge`), the paper-level
outcome, the declared deviations, the superseded attempts and when the
claims were sealed relative to the results. In an adaptive study
(``until:``) the claims are judged with anytime-valid intervals
(:mod:`analysis.stats.anytime`), and the table says so."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from seedsweep.study.errors import UserError
from seedsweep.study.spec.claimsfile import Claims
from seedsweep.study.spec.until import Until
from seedsweep.study.store.sealing import sealed_claims, verify

from ..stats.claims import ClaimResult, judge
from ..stats.unpaired import needs_pairs, unpaired_choices
from ..stats.verdict import INCONCLUSIVE, Verdict, outcome
from ..tables import Table
from .opened import Run, opened, run_path, study_of

__all__ = ["ClaimVerdicts", "claim_verdicts", "claim_verdict_tables", "until_of", "judge_claims"]


UNSEALED = "UNSEALED"


@dataclass
class ClaimVerdicts:
    claims: Claims | None                # None: the manifest lists none and no claims.yaml is left
    results: list[ClaimResult]
    outcome: str
    record: dict                         # the manifest's claims entry ({} when it lists none)
    problems: list[str] = field(default_factory=list)   # how the seal is broken (study.store.sealing.verify)
    fix: str = ""                                       # what to do about it (SealCheck.fix)

    @property
    def sealed(self) -> bool:
        """Whether the seal holds (the verdicts are sealed verdicts)."""
        return not self.problems


def until_of(run_dir: Run) -> Until | None:
    """The ``until:`` settings of the study that ran in ``run_dir`` (None: not an adaptive study)."""
    try:
        return study_of(run_dir).until
    except UserError:                   # no study file (imported results, a bare directory)
        return None


def judge_claims(claims: Claims, df: pd.DataFrame, specs=(), results=(), *, until: Until | None = None,
                 seed: int = 0, unpaired: dict[str, str] | None = None) -> list[ClaimResult]:
    """Every claim judged on ``df``; with ``until`` (an adaptive study) by anytime-valid intervals.
    ``unpaired``: the choices an import judged unpaired (:func:`analysis.stats.unpaired.unpaired_choices`);
    a claim on one that needs pairs is inconclusive, saying why, and is not estimated."""
    unpaired = unpaired or {}
    return [_no_pairs(c, unpaired[c.choice]) if needs_pairs(c) and c.choice in unpaired else
            judge(c, df, results=results, specs=specs, seed=seed, anytime=until is not None,
                  bounds=None if until is None else until.claim_bounds) for c in claims.claims]


def _no_pairs(claim, cover: str) -> ClaimResult:
    nan = float("nan")
    why = (f"a {claim.kind} claim is taken over paired configurations, and {claim.choice} is judged unpaired "
           f"({cover}); write it as a value or rank claim, which need no pairs.")
    return ClaimResult(claim, Verdict(INCONCLUSIVE, why, nan, (nan, nan), claim.target if claim.target is not None
                                      else nan, claim.rule), 0)


def claim_verdicts(run_dir: Run, df: pd.DataFrame, specs=(), results=(), *, seed: int = 0) -> ClaimVerdicts | None:
    """The run directory's sealed claims judged on ``df`` (None when none are
    sealed and nothing says they were). The seal is checked first
    (:func:`study.store.sealing.verify`): when it is broken, the claims found are
    still judged, but the outcome and every verdict are marked unsealed."""
    rd = opened(run_dir)
    check = verify(rd)
    record = check.record or {}
    if not record and check.intact:
        return None
    claims = sealed_claims(rd)
    judged = judge_claims(claims, df, specs, results, until=until_of(run_dir), seed=seed,
                          unpaired=unpaired_choices(df, specs, results) if rd.read_import_spec() else {}) \
        if claims else []
    result = outcome([r.verdict.verdict for r in judged]) if judged else "no claims to judge"
    if not check.intact:
        result = f"{UNSEALED} ({result}): the seal is broken"
    return ClaimVerdicts(claims, judged, result, record, list(check.problems), check.fix(run_path(run_dir)))


def _num(x: float) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:.4g}"


def claim_verdict_tables(led: ClaimVerdicts) -> list[tuple[str, Table]]:
    """(title, table) of the claims section; when the seal is broken, the
    problems come first and every verdict reads "(unsealed)"."""
    broken = []
    if not led.sealed:
        broken = [("THE SEAL IS BROKEN: the verdicts below are unsealed", Table(
            header=["Problem"], rows=[[p] for p in led.problems],
            notes=[led.fix],
            numeric_from=1))]
    if led.claims is None:
        return broken
    mark = "" if led.sealed else " (unsealed)"
    rows = []
    for r in led.results:
        v, c = r.verdict, r.claim
        estimate = str(r.rank) if r.rank is not None else _num(v.estimate)
        lo, hi = v.interval
        target = _num(c.target) if c.kind != "rank" else "strictly lowest mean rank" + (
            f" (by {c.statistic}, largest first)" if c.statistic != "mean" else "")
        why = v.why + (f" Note: {v.warning}." if v.warning else "")
        if c.kind == "value" and r.collapsed:
            keys = f" ({', '.join(r.collapsed_keys)})" if r.collapsed_keys else ""
            why += (f" {r.collapsed} of the {r.n} runs collapsed or diverged and are counted{keys}; the {c.statistic} "
                    f"is {_num(v.estimate)} with them and {_num(r.without)} without them.")
        rows.append([c.id, c.kind, estimate, f"[{_num(lo)}, {_num(hi)}]", target, v.rule.describe(),
                     v.verdict + mark, str(r.n), why])
    sealed = led.record
    order = ("after the results existed (the record shows the order; nothing was hidden)"
             if sealed.get("results_existed") else "before any result existed")
    anytime = sorted({r.anytime for r in led.results if r.anytime})
    notes = [f"Source: {led.claims.source}. Outcome: {led.outcome}.",
             *([f"This study stopped adaptively (until:), so every interval is anytime-valid (valid at a "
                f"data-dependent stop; wider than a fixed-sample interval): {'; '.join(anytime)}."] if anytime else []),
             f"Claims sealed {sealed.get('sealed_at')} {order}; sha256 {sealed.get('sha256')}." if sealed else
             "The manifest records no sealed claims."]
    out = broken + [("claims and verdicts", Table(
        header=["Claim", "Kind", "Estimate", f"{100 * led.claims.confidence:g}% interval" + (
            " (anytime-valid)" if anytime else ""), "Target", "Rule",
                "Verdict", "n", "Why"], rows=rows, notes=notes, numeric_from=2))]
    if led.claims.deviations:
        out.append(("declared deviations", Table(header=["What", "Why", "Impact"],
                                                 rows=[[d.what, d.why, d.impact] for d in led.claims.deviations],
                                                 numeric_from=3)))
    superseded = sealed.get("superseded") or []
    if superseded:
        out.append(("superseded claims (kept, never counted)", Table(
            header=["File", "Sealed", "Superseded", "Reason", "sha256"],
            rows=[[s["file"], str(s["sealed_at"]), str(s["superseded_at"]), str(s["reason"]), s["sha256"][:16]]
                  for s in superseded], numeric_from=5)))
    return out
