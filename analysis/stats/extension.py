"""Extending a finished group-sequential study without spending its level twice
(``seedsweep extend DIR --budget N``; the statistics page, "Extending a study").

A ``method: spending`` study has spent its level over the looks of its
budget. Rerunning it with a larger budget would recompute every past look
with new boundaries and spend the level again (a "double the budget when
undecided" habit declared false winners in 5.9-6.9 % of null studies at a
nominal 5 %). The valid rule is the **conditional-error principle**
(Proschan & Hunsberger 1995; Müller & Schäfer 2001): at the stop, the
original design still had a chance ``A`` of declaring a winner at its
remaining looks under the null, given the data so far; a new stage may
spend exactly that, no more. Here the new stage is one test at the new
budget on the **new configurations only** (independent of the old ones):
the exact two-sided sign test of their win units (ties left out) or the
two-sided one-sample t-test of their mean differences, rejecting at level
``A``. Under the null the whole procedure then declares a winner with
probability at most the study's alpha.

``A`` comes from the recursion of :mod:`analysis.stats.groupseq` started at
the stop's normal score (for the win share, the normal score of the wins
among the configurations that are not ties: a normal approximation of the
exact design), over the remaining planned looks with the boundaries the
original design would have used. A study that stopped at its last planned
look (``undecided at budget``) has nothing left: ``A`` is 0, and ``extend``
refuses. A futility stop is non-binding, so a study that stopped as futile
before its budget keeps the ``A`` of the looks it did not take.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from .groupseq import boundaries, crossing_probabilities
from .sequential import split_alpha

__all__ = ["conditional_error", "stage_two", "extended_decision", "extension_record"]


def conditional_error(fractions, alpha: float, kind: str, stop: int, z: float) -> float:
    """Under the null, the chance that the design of looks at ``fractions``
    (the looks taken, then the planned ones, the last 1) declares a winner at
    a look after index ``stop``, given the normal score ``z`` there and no
    crossing before (boundaries spent by ``kind`` at ``alpha``).

    >>> round(conditional_error([0.5, 1.0], 0.05, "pocock", 0, 0.0), 4)   # 2 (1 - Phi(2.2010 / sqrt(0.5)))
    0.0019
    >>> conditional_error([0.5, 1.0], 0.05, "obf", 1, 1.0)      # the last look taken: nothing is left
    0.0
    """
    fractions = tuple(float(f) for f in fractions)
    bounds = boundaries(fractions, alpha, kind).z
    if stop >= len(fractions) - 1 or not math.isfinite(z):
        return 0.0
    later = [(t, c) for t, c in zip(fractions[stop + 1:], bounds[stop + 1:]) if t > fractions[stop] + 1e-12]
    if not later:
        return 0.0
    total = float(crossing_probabilities([t for t, _ in later], [c for _, c in later],
                                         start=(fractions[stop], z)).sum())
    return float(min(max(total, 0.0), 1.0))


def stage_two(values, statistic: str, level: float) -> tuple[str, float]:
    """The new stage's decision on its own units (> 0: A better) at ``level``
    and its two-sided p-value: the exact sign test (share; ties left out) or
    the one-sample t-test (mean).

    >>> stage_two([1.0] * 12, "share", 0.01)
    ('A better', 0.00048828125)
    >>> stage_two([1.0, 0.0] * 6, "share", 0.01)[0]
    'undecided'
    """
    x = np.asarray(values, dtype=float)
    if statistic == "share":
        wins, losses = int((x == 1.0).sum()), int((x == 0.0).sum())
        if not wins + losses:
            return "undecided", 1.0
        p = float(stats.binomtest(wins, wins + losses, 0.5).pvalue)
        side = wins - losses
    else:
        if len(x) < 2 or float(np.std(x, ddof=1)) == 0.0:
            return "undecided", 1.0
        p = float(stats.ttest_1samp(x, 0.0).pvalue)
        side = float(x.mean())
    if level > 0 and p <= level and side != 0:
        return ("A better" if side > 0 else "B better"), p
    return "undecided", p


def _key(entry: dict) -> tuple[str, str, str, str]:
    return (str(entry["choice"]), str(entry["a"]), str(entry["b"]), str(entry["task"]))


def extended_decision(values, statistic: str, extension: dict, key: tuple, upto: int | None, before: str,
                      first: int | None) -> tuple[str, int | None]:
    """A spending sequence's decision under ``extension`` (the run directory's
    record, :func:`extension_record`): before the new budget is reached it
    waits ('undecided'); at it, the new stage's units (those after the
    ``units`` counted at the stop) are tested at the level left. A sequence
    the record does not extend keeps ``before``."""
    entry = next((e for e in extension.get("sequences", []) if _key(e) == tuple(map(str, key))), None)
    if entry is None:
        return before, first
    level = float(entry["conditional_error"])
    if level <= 0.0 or upto is None or upto <= int(extension.get("samples", 0)):
        return before, first                    # not extended, or a look the original design took
    if upto < int(extension["budget"]):
        return "undecided", None
    x = np.asarray(values, dtype=float)
    decision, _ = stage_two(x[int(entry["units"]):], statistic, level)
    return decision, (len(x) if decision != "undecided" else None)


def extension_record(tracked, until, budget: int, planned: list[int], cap: int, samples: int) -> dict:
    """What ``seedsweep extend`` records before the new stage runs: the new
    ``budget`` and, per spending sequence, the units and normal score at its
    last look, its decision then and the conditional error ``A`` of the
    original design's ``planned`` looks (configurations, budget ``cap``)
    after the ``samples`` configurations run, the level its new stage may
    spend (0 for a sequence already declared better, or with no look left)."""
    alpha = split_alpha(until.alpha, max(len(tracked), 1))
    out = []
    for t in tracked:
        path = t.path
        entry = {"choice": t.choice, "a": t.a, "b": t.b, "task": t.task, "decision_before": t.decision,
                 "units": int(path.counts[-1]) if path is not None and path.counts else 0,
                 "z": float(path.z[-1]) if path is not None and path.z else float("nan"), "conditional_error": 0.0}
        if path is not None and path.counts and t.decision not in ("A better", "B better"):
            taken = list(path.fractions)
            later = [min(1.0, n / cap) for n in planned if n > samples and n / cap > taken[-1] + 1e-12]
            entry["conditional_error"] = conditional_error(taken + later, alpha, until.spending, len(taken) - 1,
                                                           entry["z"])
        out.append(entry)
    return {"budget": int(budget), "from_budget": int(cap), "samples": int(samples), "method": until.method,
            "alpha_per_sequence": alpha, "sequences": out}
