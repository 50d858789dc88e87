"""Decisions of an adaptive study (docs/reference/statistics.md, "Adaptive studies").

For every pair of options of a decided choice and every task, the units
(a configuration's win, or its seed-mean paired difference) in
configuration order, a confidence sequence over them with alpha split over
the tracked sequences (:mod:`analysis.stats.sequential`), and the decision it
allows. :func:`track` works on any stored rows (a running study, a finished
one, imported results: the replay); what reads a run directory (the
engine's question after each wave, a report's Decisions section) is
:mod:`analysis.reading.rundirs`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import pandas as pd

from seedsweep.study.errors import UserError
from seedsweep.study.spec.until import SPENDING_LOOKS, Until, look_schedule

from ..specs import ComparisonSpec, rows_where
from ..tables import Table
from .claims import gated
from .sequential import Sequence, asymptotic_cs, betting_cs, bounded_cs, decide, split_alpha
from .extension import extended_decision
from .spending import SpendingPath, look_counts, spending_path
from .units import units, worst_score
from .verdict import INCONCLUSIVE

__all__ = ["Tracked", "track", "sequence_for", "decisions_table", "replay_markdown"]


@dataclass(frozen=True)
class Tracked:
    """One tracked sequence: options ``a`` and ``b`` of ``choice`` on ``task``;
    its units' labels (configurations, in order) and the sequence over them;
    the decision after the last unit and the unit count where it was first reached."""

    choice: str
    a: str
    b: str
    task: str
    labels: tuple[str, ...]
    sequence: Sequence
    centre: float
    delta: float
    decision: str
    decided_at: int | None
    values: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    path: SpendingPath | None = field(repr=False, default=None)     # method: spending's looks
    imputed: tuple[str, ...] = ()           # units in which a run without a score was given the worst value
    left_out: tuple[str, ...] = ()          # configurations a mean could not value (no declared worst score)
    flagged: tuple[str, ...] = ()           # units with a run that is not ok (collapsed, diverged or failed)

    @property
    def n(self) -> int:
        """Units (configurations) in the sequence."""
        return self.sequence.n

    def interval(self) -> tuple[float, float]:
        """The last interval, on the statistic's scale (a share, or a score difference)."""
        return self.sequence.last() if self.n else (-np.inf, np.inf)


def sequence_for(values: np.ndarray, until: Until, alpha: float) -> Sequence:
    """The confidence sequence ``until`` asks for over ``values`` (units) at ``alpha``."""
    if until.method == "asymptotic" and until.statistic == "share":   # win units lie in [0, 1]: one pseudo-unit
        cs = asymptotic_cs(values, alpha, prior_variance=0.25)        # of variance 1/4, the interval within [0, 1]
        return Sequence(np.clip(cs.lower, 0.0, 1.0), np.clip(cs.upper, 0.0, 1.0), alpha)
    if until.method == "asymptotic":
        return asymptotic_cs(values, alpha)
    if until.statistic == "share":
        return betting_cs(values, alpha)
    lo, hi = until.range
    return bounded_cs(values, alpha, -(hi - lo), hi - lo)     # a difference of scores in [lo, hi]


def spending_tracked(values: np.ndarray, labels, until: Until, alpha: float, *, looks: list[int] | None,
                     cap: int | None, final: bool = False) -> tuple[Sequence, SpendingPath]:
    """``method: spending`` over one sequence's units: at ``looks`` (the
    configurations run at each look of a study, ``cap`` its budget's), or
    for a replay of stored rows (``looks`` None) at equal waves of
    ``until.wave`` (auto: a tenth) over the units in stored order, the budget
    ``until.budget.samples`` or else the units stored."""
    n = len(values)
    if looks is None:
        cap = until.budget_samples or n
        step = until.wave or max(1, -(-cap // SPENDING_LOOKS))
        counts = [min(c, n) for c in look_schedule(step, step, max(cap, 1))] if n else []
    else:
        counts = look_counts(labels, looks)
    path = spending_path(values, counts, int(cap or n or 1), statistic=until.statistic, alpha=alpha, final=final,
                         delta=until.delta, power=until.power, kind=until.spending)
    before = (0.0, 1.0) if until.statistic == "share" else (-np.inf, np.inf)
    lower, upper = path.per_unit(n, before)
    return Sequence(lower, upper, alpha), path


def track(df: pd.DataFrame, until: Until, specs: list[ComparisonSpec], results=(), *, seeds: int | None = None,
          upto: int | None = None, score: str = "test_score", where: str = "the stored rows",
          looks: list[int] | None = None, cap: int | None = None, extension: dict | None = None,
          final: bool = False) -> list[Tracked]:
    """Every tracked sequence of ``until.decide`` (``specs``: the study's
    comparisons, :func:`analysis.comparisons_of`), alpha split over all of
    them (a union bound). ``looks`` and ``cap``: a running ``method:
    spending`` study's looks so far and budget (:meth:`Until.looks`).
    ``extension``: the run directory's record of ``seedsweep extend``
    (:mod:`analysis.stats.extension`): a spending sequence it extends is
    decided by the new stage's test at the level the study had left, once
    ``upto`` reaches the new budget. ``final``: the last look is the study's
    last, and a spending sequence spends all the level it has left there."""
    by_choice = {s.choice: s for s in specs}
    per_pair = {}
    for c in until.decide:
        spec = by_choice[c]
        rows = rows_where(df, spec.where)
        for a, b in combinations([str(o) for o in spec.options or []], 2):
            per_pair[(c, a, b)] = units(rows, c, a, b, score=score, mode=spec.mode, statistic=until.statistic,
                                        seeds=seeds, upto=upto, ignore=spec.ignore, results=results,
                                        worst=worst_score(until, spec.mode))
    if until.range is not None and until.statistic == "mean":
        lo, hi = until.range
        finite = df[score].to_numpy(dtype=float)
        finite = finite[np.isfinite(finite)]
        if finite.size and (finite.min() < lo or finite.max() > hi):
            bad = finite.min() if finite.min() < lo else finite.max()
            raise UserError(where, f"a stored {score} of {bad:.4g} lies outside until.range [{lo}, {hi}].",
                            "Widen until.range to the scores' true bounds, or use statistic: share; the "
                            "stored rows are kept.")
    if extension is not None and looks is not None:       # after an extension only its own test decides: the
        looks = [n for n in looks if n <= int(extension.get("samples", 0))]   # original looks left are replaced
    m = sum(len(tasks) for tasks in per_pair.values()) or 1
    alpha = split_alpha(until.alpha, m)
    centre = 0.5 if until.statistic == "share" else 0.0
    out = []
    for (c, a, b), tasks in per_pair.items():
        for task, u in tasks.items():
            labels, values, counted = u.labels, u.values, dict(imputed=u.imputed, left_out=u.left_out,
                                                                flagged=u.flagged)
            if until.method == "spending":
                cs, path = spending_tracked(values, labels, until, alpha, looks=looks, cap=cap,
                                            final=final and extension is None)
                first = None if path.decided_look is None else path.counts[path.decided_look]
                decision = path.decision
                if extension is not None and decision not in ("A better", "B better"):
                    decision, first = extended_decision(values, until.statistic, extension, (c, a, b, task),
                                                        upto, decision, first)
                out.append(Tracked(c, a, b, task, tuple(labels), cs, centre, until.delta, decision, first,
                                   values, path, **counted))
                continue
            cs = sequence_for(values, until, alpha)
            steps = [decide(lo_, hi_, centre=centre, delta=until.delta) for lo_, hi_ in zip(cs.lower, cs.upper)]
            first = next((i + 1 for i, s in enumerate(steps) if s != "undecided"), None)
            out.append(Tracked(c, a, b, task, tuple(labels), cs, centre, until.delta,
                               steps[-1] if steps else "undecided", first, values, **counted))
    return out


def decisions_table(tracked: list[Tracked], until: Until, *, budget_spent: bool = False, claims=None,
                    extension: dict | None = None) -> Table:
    """The Decisions table: per pair and task the final interval, the
    decision and the configuration count at which it was reached; with
    ``claims`` (``until.claims``: :class:`analysis.stats.claims.ClaimResult`
    judged with anytime-valid intervals) a row per sealed claim: its state,
    and the configuration count from which its verdict holds."""
    scale = "win share of A" if until.statistic == "share" else "mean difference A − B (better direction)"
    rows = []
    for t in tracked:
        lo, hi = t.interval()
        decision = t.decision if t.decision != "undecided" or not budget_spent else "undecided at budget"
        interval = "empty: the data disagree with every value" if t.sequence.is_empty() else f"[{lo:.4f}, {hi:.4f}]"
        rows.append([t.choice, t.a, t.b, t.task, str(t.n), interval, decision,
                     str(t.decided_at) if t.decided_at is not None else "–",
                     f"{len(t.flagged)} ({len(t.imputed)})"])
    notes = [_interval_note(until, scale, len(tracked)), _imputed_note(tracked, until)]
    if until.method == "spending":
        notes.append(_after_stop_note(tracked, until))
    if extension is not None:
        notes.append(_extension_note(extension))
    if claims is not None:
        rows += [_claim_row(r, budget_spent) for r in claims]
        notes.append("Claims (until.claims: true): the study runs until every claim with a gate (rules interval, "
                     "above, below) has left 'inconclusive', or the budget is spent; band and best rules have no "
                     "gate and hold nothing. A claim's interval is anytime-valid (its sequence holds at a "
                     "data-dependent stop); 'decided at': the configurations from which its verdict has held."
                     + ("" if claims else " No claims are sealed in this run directory."))
    return Table(["choice", "A", "B", "task", "configurations", "interval", "decision", "decided at",
                  "not ok (no score)"], rows, notes, numeric_from=4)


def _extension_note(extension: dict) -> str:
    """What ``seedsweep extend`` changed, and the level each extended comparison may spend."""
    head = f"Extended (seedsweep extend) from {extension['from_budget']} to {extension['budget']} configurations"
    if extension.get("method") != "spending":
        return head + ": a confidence sequence holds at any stop, so a larger budget spends nothing more."
    levels = "; ".join(f"{e['choice']} {e['a']}–{e['b']} ({e['task']}): {e['conditional_error']:.4g}"
                       for e in extension.get("sequences", []) if e["decision_before"] not in ("A better", "B better"))
    return (head + ". Each comparison the original design left open is tested once, at the new budget, on the new "
            "configurations only, at the level the design had left (its conditional error at the stop; Proschan & "
            f"Hunsberger 1995, Müller & Schäfer 2001): {levels}. A level of 0 (the last planned look taken) "
            "leaves that comparison as it ended.")


def _after_stop_note(tracked: list[Tracked], until: Until) -> str:
    """The stagewise-ordered inference at each spending sequence's stop, beside the naive estimate."""
    parts = []
    for t in tracked:
        adjusted = t.path.after_stop() if t.path is not None else None
        if adjusted is None or not np.isfinite(adjusted.estimate):
            continue
        k = t.path.decided_look if t.path.decided_look is not None else len(t.path.counts) - 1
        whitehead = t.path.bias_adjusted()
        mean_bias = f", bias-adjusted {whitehead:.4f}" if np.isfinite(whitehead) else ""
        parts.append(f"{t.choice} {t.a}–{t.b} ({t.task}): {adjusted.estimate:.4f} "
                     f"[{adjusted.lower:.4f}, {adjusted.upper:.4f}], p = {adjusted.p:.3g} (naive estimate "
                     f"{t.path.estimate[k]:.4f}{mean_bias})")
    return ("After the stop (stagewise ordering; Jennison & Turnbull 2000, ch. 8): a study stops when its estimate "
            "is high, so the estimate at the stop is biased; the median-unbiased estimate, its "
            f"{until.confidence:.0%} interval and the stagewise p-value" + (
                " (a mean's bias-adjusted estimate: Whitehead 1986, the design simulated)" if until.statistic == "mean"
                else "") + ": " + ("; ".join(parts) or "none yet") +
            ". The fixed-sample tables below are not valid at this data-dependent stop.")


def _imputed_note(tracked: list[Tracked], until: Until) -> str:
    """What the 'without a score' column counts, and the configurations a mean left out."""
    worst = ("the declared worst score (until.range's bound)" if until.statistic == "mean" else
             "that side's loss (both sides: a tie)")
    note = ("Every run counts: collapsed and diverged runs keep their score. 'not ok (no score)': the configurations "
            "counted with a run that is not ok (collapsed, diverged or failed) and, in brackets, those in which a run "
            f"had no score (failed, or diverged with none) and counted as {worst}.")
    out = [f"{t.choice} {t.a}–{t.b} ({t.task}): {len(t.left_out)}" for t in tracked if t.left_out]
    if out:
        note += (" Left out, because statistic: mean has no declared worst score here (give until.range to count "
                 "them): " + "; ".join(out) + " configurations.")
    return note


def _claim_row(r, budget_spent: bool) -> list[str]:
    """A claim's row of the Decisions table."""
    c, v = r.claim, r.verdict
    lo, hi = v.interval
    interval = "–" if not (np.isfinite(lo) or np.isfinite(hi)) else f"[{lo:.4f}, {hi:.4f}]"
    reached = "–"
    if not gated(c):
        state = f"{v.verdict} (no gate)"
    elif v.verdict == INCONCLUSIVE:
        state = "gate not reached at budget" if budget_spent else "waiting: gate not reached"
    else:
        state, reached = f"gate reached: {v.verdict}", str(r.reached_at) if r.reached_at is not None else "–"
    where = ", ".join(f"{k}={'|'.join(map(str, x))}" for k, x in c.where.items()) or "all"
    target = f", target {c.target:g}" if c.target is not None else ""
    return [f"claim {c.id} ({c.kind}{target}, {c.rule.describe()})", c.option or "–", c.other or "–", where,
            str(r.n), interval, state, reached, "–"]


def _interval_note(until: Until, scale: str, count: int) -> str:
    """What the Decisions table's interval and decisions are, for ``until``'s method."""
    if until.method != "spending":
        return (f"Interval: the {until.method} confidence sequence of the {scale}, at {until.confidence:.0%} over all "
                f"{count} sequences and every look together (alpha split evenly); margin ±{until.delta:g}. "
                "It stays valid at a data-dependent stop; the fixed-sample intervals of the tables below do not.")
    share = " among the configurations that are not ties" if until.statistic == "share" else ""
    kind = "O'Brien-Fleming" if until.spending == "obf" else "Pocock"
    return (f"Group-sequential (method: spending, {kind}-type alpha spending): at each wave's end the "
            f"{scale}{share} is tested against boundaries that spend "
            f"{1 - until.confidence:.0%} over the budget's configurations, split evenly over {count} sequences; "
            "'A better'/'B better' keep that error rate at every look together. 'futile': an effect of "
            f"±{until.delta:g} would rarely look like this (the chance of this stop when the effect is "
            f"±{until.delta:g} is at most {1 - until.power:.0%}); it is not equivalence at the study's confidence. "
            "Interval: the repeated confidence interval of the last look.")


def replay_markdown(tracked: list[Tracked], until: Until) -> str:
    """Where each comparison of a replayed study would have stopped: the
    configurations that decided it (and the decision then) against those stored."""
    how = (f"group-sequential, {until.spending}-type spending over the stored configurations"
           if until.method == "spending" else f"{until.method} confidence sequence")
    lines = [f"**Replay** ({until.statistic}, {how} at {until.confidence:.0%} over "
             f"{len(tracked)} sequences; margin ±{until.delta:g})", "",
             "| choice | A | B | task | decided after | decision then | interval then | configurations stored |",
             "|---|---|---|---|---|---|---|---|"]
    for t in tracked:
        if t.decided_at is None:
            lo, hi = t.interval()
            lines.append(f"| {t.choice} | {t.a} | {t.b} | {t.task} | – | undecided | [{lo:.4f}, {hi:.4f}] | {t.n} |")
            continue
        lo, hi = float(t.sequence.lower[t.decided_at - 1]), float(t.sequence.upper[t.decided_at - 1])
        then = t.decision if t.path is not None else decide(lo, hi, centre=t.centre, delta=t.delta)
        lines.append(f"| {t.choice} | {t.a} | {t.b} | {t.task} | {t.decided_at} | {then} | [{lo:.4f}, {hi:.4f}] "
                     f"| {t.n} |")
    decided = [t.decided_at for t in tracked if t.decided_at is not None]
    stop = ("no comparison had a paired configuration to decide on" if not tracked else
            f"every comparison decided after {max(decided)} configurations" if len(decided) == len(tracked)
            else f"{len(tracked) - len(decided)} of {len(tracked)} comparisons never decided")
    return "\n".join(lines + ["", f"- A study with this until: block would have stopped: {stop}."])
