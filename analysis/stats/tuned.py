"""A tuned comparison (docs/reference/statistics.md, "Tuned comparisons"): every option tuned
with the same budget, the tuning itself repeated.

A **search** is one (option, replicate); its trials have positions 0 …
budget − 1. The **tuned outcome at budget b** of a search is the test score
of its trial with the best dev score among positions < b: ties go to the
earlier position, and a failed trial (or one without a dev score) spends its
position but cannot be chosen. Options are compared over **paired
replicates** (replicate r of every option shares its sampler seeds) exactly
as configurations are compared in "Statistics": win shares, the median
difference with its bootstrap CI, P(A > B) -- at the full budget and, for
the win shares and the outcome's median and IQR, as curves over b.

Beside each curve, Dodge et al.'s (2019) estimate of the same quantity from
one pooled search: the expected test score of the best-dev trial among b
drawn from the option's trials that were sampled at random (every trial of a
``random`` search; a ``tpe`` search's startup trials, the positions asked
before 10 were told; none for ``qmc``, whose points are not independent draws), with replacement
as in the paper. How far it lies from the replicated median shows how well
one search predicts what another search would find.

All pure functions of a trials table; :func:`analysis.reading.rundirs.study_tuned`
reads a tuned study's run directory.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from seedsweep.study.spec.tuning import LEGACY_STARTUP, Tune

from ..tables import Table, p_text, pct, pts
from .evp import expected_selected
from .improvement import Improvement, p_improvement
from .paired import Comparison, compare
from .significance import win_shares

__all__ = ["best_so_far", "tuned_outcomes", "TunedComparison", "tuned_comparison", "tuned_table",
           "random_positions", "TPE_STARTUP", "best_positions"]

#: positions a ``tpe`` search drew at random before modelling in a study from before ``tune.startup``
TPE_STARTUP = LEGACY_STARTUP


def best_so_far(dev: np.ndarray, test: np.ndarray, usable: np.ndarray, *, mode: str = "max") -> np.ndarray:
    """The tuned outcome at b = 1 … len(dev) of one search whose arrays are in
    position order: the test score of the best usable dev score among the
    first b (ties: the earlier); NaN while none is usable.

    >>> best_so_far(np.array([0.5, 0.7, 0.7, 0.6]), np.array([0.4, 0.6, 0.9, 0.8]),
    ...             np.array([True, True, True, True])).tolist()
    [0.4, 0.6, 0.6, 0.6]
    """
    sign = 1.0 if mode == "max" else -1.0
    out = np.full(len(dev), np.nan)
    best, chosen = -np.inf, np.nan
    for i in range(len(dev)):
        if usable[i] and np.isfinite(dev[i]) and sign * dev[i] > best:
            best, chosen = sign * dev[i], test[i]
        out[i] = chosen
    return out


def tuned_outcomes(df: pd.DataFrame, budget: int, *, mode: str = "max") -> pd.DataFrame:
    """One row per search (index: option, replicate), one column per budget
    b = 1 … ``budget``: its tuned outcome. A b whose positions are not all
    stored yet (a study still running) is NaN."""
    rows = {}
    for (option, replicate), g in df.groupby(["option", "replicate"], sort=True, observed=True):
        g = g.sort_values("position")
        pos = g["position"].to_numpy(dtype=int)
        n = budget
        for i in range(budget):                # stored positions 0 … n-1 without a gap
            if i >= len(pos) or pos[i] != i:
                n = i
                break
        g = g.iloc[:n]
        usable = (g["status"].astype(str) != "failed").to_numpy()
        curve = best_so_far(g["dev_score"].to_numpy(dtype=float), g["test_score"].to_numpy(dtype=float), usable,
                            mode=mode)
        rows[(str(option), int(replicate))] = np.concatenate([curve, np.full(budget - n, np.nan)])
    index = pd.MultiIndex.from_tuples(list(rows), names=["option", "replicate"])
    return pd.DataFrame(list(rows.values()), index=index, columns=range(1, budget + 1))


def random_positions(sampler: str, budget: int, wave: int = 1, startup: int = TPE_STARTUP) -> int:
    """How many first positions of a search were drawn at random (see the module
    docstring): TPE draws at random until ``startup`` trials are told
    (``tune.startup``; :data:`TPE_STARTUP` for a study from before it), and a
    wave's trials are all asked before any of them is told
    (:attr:`study.spec.tuning.Tune.random_positions`, from the manifest's values).

    >>> random_positions("tpe", 32, 4), random_positions("tpe", 12, 4), random_positions("qmc", 32, 4)
    (12, 12, 0)
    >>> random_positions("tpe", 12, 4, startup=3)
    4
    """
    return Tune(sampler, budget, 2, wave, startup=startup).random_positions


@dataclass
class TunedComparison:
    """Everything the tuned table and the budget figure show."""

    choice: str
    options: list[str]
    budget: int
    sampler: str
    mode: str
    outcomes: pd.DataFrame                      # (option, replicate) x b
    full: Comparison                            # over paired replicates at the full budget
    improvement: dict[str, Improvement]         # option -> P(best > option), paired replicates
    shares: pd.DataFrame                        # b x option: win shares over the replicates paired at b
    delta: pd.DataFrame | None = None           # b x option: median(option − best) over the replicates paired at b
    p_better: pd.DataFrame | None = None        # b x option: P(best > option) over the replicates paired at b
    expected: dict[str, np.ndarray] = field(default_factory=dict)   # option -> Dodge's estimate at b = 1 … budget
    pooled: dict[str, int] = field(default_factory=dict)            # option -> random trials pooled for it
    random: int = 0                             # first positions of each search drawn at random
    modelled: tuple[int, int] = (0, 0)          # searches whose best-dev trial TPE asked by its model, of all

    def searches(self, option: str) -> int:
        """Searches of ``option`` with an outcome at the full budget."""
        return int(self.final(option).notna().sum())

    def final(self, option: str) -> pd.Series:
        """The tuned outcome of each of ``option``'s searches at the full budget (index: replicate)."""
        col = self.outcomes[self.budget]
        return col.xs(option, level="option") if option in col.index.get_level_values("option") else col.iloc[:0]


def _paired_frame(outcomes: pd.DataFrame, b: int, choice: str) -> pd.DataFrame:
    col = outcomes[b]
    return pd.DataFrame({"config_id": [f"r{r:02d}" for _, r in col.index], "choice": choice,
                         "option": [o for o, _ in col.index], "seed": 1, "test_score": col.to_numpy(),
                         "status": np.where(col.notna(), "ok", "failed")})


def best_positions(df: pd.DataFrame, budget: int, *, mode: str = "max") -> pd.Series:
    """Per search (index: option, replicate) with all ``budget`` positions
    stored: the position of its best usable dev score (ties: the earlier)."""
    sign = 1.0 if mode == "max" else -1.0
    found = {}
    for (option, replicate), g in df.groupby(["option", "replicate"], sort=True, observed=True):
        g = g.sort_values("position")
        if len(g) < budget:
            continue
        dev = np.where((g["status"].astype(str) != "failed").to_numpy(), sign * g["dev_score"].to_numpy(dtype=float),
                       np.nan)
        if np.isfinite(dev).any():
            found[(str(option), int(replicate))] = int(g["position"].to_numpy()[int(np.nanargmax(dev))])
    return pd.Series(found, dtype=int)


def tuned_comparison(df: pd.DataFrame, *, choice: str, options: list[str], budget: int, sampler: str,
                     mode: str = "max", wave: int = 1, n_bootstrap: int = 1000, seed: int = 0,
                     startup: int = TPE_STARTUP) -> TunedComparison:
    """The tuned comparison of the trials ``df`` of a tuned study (see the module docstring)."""
    df = df[df["choice"].astype(str) == choice]
    outcomes = tuned_outcomes(df, budget, mode=mode)
    full = compare(_paired_frame(outcomes, budget, choice), choice, options=options, n_bootstrap=n_bootstrap,
                   seed=seed, mode=mode)
    improvement = {}
    if full.best is not None and full.n:
        for o in options:
            if o != full.best:
                improvement[o] = p_improvement(full.scores(full.best) * (1 if mode == "max" else -1),
                                               full.scores(o) * (1 if mode == "max" else -1), paired=True,
                                               n_bootstrap=n_bootstrap, seed=seed)
    sign = 1.0 if mode == "max" else -1.0
    shares, delta, p_better = {}, {}, {}
    for b in range(1, budget + 1):         # the curves: the same statistics over the replicates paired at b
        wide = outcomes[b].unstack("option").reindex(columns=options).dropna()
        values = wide.to_numpy()
        shares[b] = win_shares(sign * values) if len(wide) else np.full(len(options), np.nan)
        delta[b] = p_better[b] = np.full(len(options), np.nan)
        if len(wide) and full.best is not None:
            ahead = sign * (wide[full.best].to_numpy()[:, None] - values)     # best − option, better direction
            delta[b] = np.median(values - wide[full.best].to_numpy()[:, None], axis=0)
            p_better[b] = ((ahead > 0) + 0.5 * (ahead == 0)).mean(axis=0)
    expected, pooled = {}, {}
    k = random_positions(sampler, budget, wave, startup)
    for o in options:
        mine = df[(df["option"].astype(str) == o) & (df["position"] < k) & (df["status"].astype(str) != "failed")]
        pooled[o] = int(np.isfinite(mine["dev_score"].to_numpy(dtype=float)).sum())
        if pooled[o]:
            expected[o] = expected_selected(sign * mine["dev_score"].to_numpy(dtype=float),
                                            mine["test_score"].to_numpy(dtype=float), np.arange(1, budget + 1),
                                            replace=True)[0]
    return TunedComparison(choice, list(options), budget, sampler, mode, outcomes, full, improvement,
                           pd.DataFrame(shares, index=options).T, pd.DataFrame(delta, index=options).T,
                           pd.DataFrame(p_better, index=options).T, expected, pooled, k,
                           _modelled(df, budget, mode, k) if sampler == "tpe" else (0, 0))


def _modelled(df: pd.DataFrame, budget: int, mode: str, k: int) -> tuple[int, int]:
    """(searches whose best-dev trial sits at a position TPE asked by its model, searches)."""
    best = best_positions(df, budget, mode=mode)
    return int((best >= k).sum()), int(len(best))


def tuned_table(tc: TunedComparison) -> Table:
    """The tuned-comparison table: per option its searches, the tuned
    outcome's median and IQR at the full budget, its win share over paired
    replicates, Δ to the best with its CI, P(best > option), and Dodge's
    one-search estimate at the same budget."""
    c = tc.full
    rows = []
    for o in tc.options:
        v = tc.final(o).dropna().to_numpy()
        q = np.quantile(v, [0.25, 0.5, 0.75]) if len(v) else [np.nan] * 3
        imp = tc.improvement.get(o)
        rows.append([o, str(tc.searches(o)), f"{pts(q[1], signed=False)} [{pts(q[0], signed=False)}, "
                     f"{pts(q[2], signed=False)}]", pct(c.shares.get(o, np.nan)) if c.n else "–",
                     "best" if o == c.best else (f"{pts(c.delta[o])} [{pts(c.delta_ci[o][0])}, "
                                                 f"{pts(c.delta_ci[o][1])}]" if o in c.delta else "–"),
                     "" if o == c.best else p_text(c.share_p.get(o, np.nan)),
                     f"{imp.p:.2f} [{imp.ci[0]:.2f}, {imp.ci[1]:.2f}]" if imp else "–",
                     pts(tc.expected[o][-1], signed=False) if o in tc.expected else "–"])
    notes = [f"Each search tunes {tc.choice} = option with {tc.budget} trials ({tc.sampler}); its outcome is the "
             "test score of its best-dev trial. Win shares, Δ (median over paired replicates, in points, with a "
             f"{100 * c.confidence:.0f}% bootstrap CI) and the sign test pair replicate r of every option "
             f"({c.n} paired); P(best > option) with a paired bootstrap CI."]
    if tc.expected:
        notes.append(f"one-search estimate: Dodge et al. (2019)'s expected test score of the best-dev trial among "
                     f"{tc.budget} drawn with replacement from the option's randomly sampled trials, pooled over "
                     "its searches (" + ", ".join(f"{o}: {n}" for o, n in tc.pooled.items()) + ").")
    else:
        notes.append(f"one-search estimate: none ({tc.sampler} searches sample no trial independently at random).")
    if tc.sampler == "tpe" and tc.modelled[1]:
        notes.append(f"TPE drew positions 0–{tc.random - 1} of each search at random (tune.startup, whole waves) "
                     f"and modelled the other {tc.budget - tc.random}; the best-dev trial came from a modelled ask "
                     f"in {tc.modelled[0]} of {tc.modelled[1]} searches.")
    lost = ", ".join(f"{n} {why}" for why, n in sorted(c.left_out.items()))
    if lost:
        notes.append(f"replicates left out (not every option has an outcome): {lost}.")
    if tc.mode == "min":
        notes.insert(0, "Lower scores are better (mode min).")
    return Table(["option", "searches", "tuned median [IQR]", "win share", "Δ to best [CI]", "sign p",
                  "P(best > option) [CI]", "one-search estimate"], rows, notes, numeric_from=1)
