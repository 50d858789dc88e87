"""Every ``until:`` method on simulated or resampled units: where a study
would stop and what it would decide (``seedsweep plan``, the efficiency
benchmark and the skewed-null tests share it).

A study is simulated as the engine runs it: units (configurations' win
units or mean differences, > 0: A better) enter in order, and the study
decides only at the end of a wave: the first wave ``first``, then ``wave``
configurations at a time (the confidence sequences), or ``method:
spending``'s own waves, up to the budget ``cap``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from seedsweep.study.spec.until import Until, look_schedule

from .decisions import sequence_for
from .units import units, worst_score
from .sequential import decide
from .spending import spending_looks, spending_path

__all__ = ["Outcomes", "simulate", "collapse_null", "lognormal_null", "collapse_trials", "stored_units", "METHODS"]

#: the methods of ``until.method``, in the order plan prints them
METHODS = ("exact", "asymptotic", "spending")


@dataclass(frozen=True)
class Outcomes:
    """Simulated studies of one method: the configurations at each study's
    stop (``cap`` where it never decided) and its decision."""

    method: str
    cap: int
    sizes: np.ndarray
    decisions: tuple[str, ...]

    def share(self, *decisions: str) -> float:
        """The share of studies that ended with one of ``decisions``."""
        return float(np.mean([d in decisions for d in self.decisions])) if self.decisions else float("nan")

    def quantile(self, q: float) -> float:
        """The ``q`` quantile of the configurations spent."""
        return float(np.quantile(self.sizes, q)) if len(self.sizes) else float("nan")

    @property
    def early(self) -> float:
        """The share of studies that stopped before the budget."""
        return float(np.mean(self.sizes < self.cap)) if len(self.sizes) else float("nan")


def simulate(rows: np.ndarray, until: Until, *, first: int, wave: int, cap: int, alpha: float) -> Outcomes:
    """Run ``until`` (its method, statistic, margin, range) over each row of
    ``rows`` (studies × units, at least ``cap`` units each) as a study of
    budget ``cap`` configurations; ``alpha`` is one sequence's share."""
    sizes, decisions = [], []
    if until.method == "spending":
        looks = spending_looks(first, cap) if not until.wave else look_schedule(first, until.wave, cap)
        for row in rows:
            path = spending_path(row[:cap], looks, cap, statistic=until.statistic, alpha=alpha, delta=until.delta,
                                 power=until.power, kind=until.spending)
            at = None if path.decided_look is None else path.counts[path.decided_look]
            sizes.append(cap if at is None else at)
            decisions.append(path.decision)
    else:
        looks = look_schedule(first, wave, cap)
        centre = 0.5 if until.statistic == "share" else 0.0
        for row in rows:
            cs = sequence_for(row[:cap], until, alpha)
            stop, decision = cap, "undecided"
            for n in looks:
                d = decide(float(cs.lower[n - 1]), float(cs.upper[n - 1]), centre=centre, delta=until.delta)
                if d != "undecided":
                    stop, decision = n, d
                    break
            sizes.append(stop)
            decisions.append(decision)
    return Outcomes(until.method, cap, np.array(sizes, dtype=float), tuple(decisions))


def collapse_null(rng: np.random.Generator, reps: int, n: int, *, rate: float = 0.05, drop: float = 0.6,
                  noise: float = 0.005) -> np.ndarray:
    """A null with collapses: option A is ahead by a little in most
    configurations and far behind in a share ``rate`` of them (it diverged),
    the mean difference exactly 0 (the R&G situation).

    >>> x = collapse_null(np.random.default_rng(0), 200, 500)
    >>> round(float(x.mean()), 3), bool((x < -0.5).mean() > 0.04)
    (0.0, True)
    """
    gain = rate * drop / (1 - rate)
    collapsed = rng.random((reps, n)) < rate
    return np.where(collapsed, -drop, gain) + noise * rng.standard_normal((reps, n))


def lognormal_null(rng: np.random.Generator, reps: int, n: int, *, sigma: float = 1.0,
                   scale: float = 0.01) -> np.ndarray:
    """A skewed null without collapses: ``scale`` times a centred lognormal
    (its mean exactly 0, a long right tail).

    >>> round(float(lognormal_null(np.random.default_rng(0), 400, 1000).mean()), 4)
    0.0
    """
    return scale * (np.exp(sigma * rng.standard_normal((reps, n))) - np.exp(sigma * sigma / 2))


def collapse_trials(rng: np.random.Generator, reps: int, n: int, *, rate: float = 0.05, statistic: str = "mean",
                    scored: bool = True, base: float = 0.8, spread: float = 0.05, noise: float = 0.005
                    ) -> pd.DataFrame:
    """Null studies with collapses, stored as the engine stores them: a trials
    table of ``reps`` studies (the ``task`` column, ``s0000`` …), each of ``n``
    configurations with one run of option A and one of B (choice ``c``). B
    scores the configuration's level (about ``base``); A collapses in a share
    ``rate`` of configurations, stored ``diverged`` with the reason
    "collapsed: …" and, with ``scored``, its score (the sentence family's
    way: the majority rate, here 0), else with none (a run that produced no
    score; it counts as the worst score 0).

    The null holds with every run counted: for ``statistic: mean`` A is ahead
    by the same amount elsewhere, so that the mean difference is exactly 0;
    for ``share`` A wins elsewhere with probability ½ / (1 − ``rate``), so
    that A's win share is exactly ½. Dropping the collapsed runs (what the
    decisions did before every run counted) leaves A ahead on both.

    >>> df = collapse_trials(np.random.default_rng(0), 2, 100)
    >>> sorted(df.status.unique()), len(df)
    (['diverged', 'ok'], 400)
    """
    level = base + spread * rng.standard_normal((reps, n))
    collapsed = rng.random((reps, n)) < rate
    if statistic == "mean":
        gain = rate * base / (1 - rate)                      # E[level] = base: A's loss where it collapses
        a = level + gain + noise * rng.standard_normal((reps, n))
        b = level + noise * rng.standard_normal((reps, n))
    else:
        wins = rng.random((reps, n)) < 0.5 / (1 - rate)
        gap = np.abs(noise * rng.standard_normal((reps, n))) + 1e-6
        a, b = level + np.where(wins, gap, -gap), level
    a = np.where(collapsed, 0.0 if scored else np.nan, a)
    config = np.array([f"c{i:05d}" for i in range(n)])
    task = np.array([f"s{r:04d}" for r in range(reps)])
    frames = []
    for option, score, status in (("A", a, np.where(collapsed, "diverged", "ok")), ("B", b, np.full((reps, n), "ok"))):
        frames.append(pd.DataFrame({
            "task": np.repeat(task, n), "config_id": np.tile(config, reps), "choice": "c", "option": option,
            "seed": 0, "test_score": score.reshape(-1), "status": status.reshape(-1),
            "reason": np.where(status == "diverged", "collapsed: best dev accuracy at the majority rate",
                               None).reshape(-1)}))
    return pd.concat(frames, ignore_index=True)


def stored_units(df: pd.DataFrame, until: Until) -> tuple[np.ndarray, np.ndarray]:
    """The units the engine's decisions take from :func:`collapse_trials`' rows
    (:func:`analysis.stats.decisions.units`, every run counted): studies ×
    configurations, and how many units per study carry a worst value."""
    per = units(df, "c", "A", "B", statistic=until.statistic, worst=worst_score(until, "max"))
    rows = np.vstack([u.values for _, u in sorted(per.items())])
    return rows, np.array([len(u.imputed) for _, u in sorted(per.items())])
