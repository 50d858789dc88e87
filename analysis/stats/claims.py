"""Judging the claims of a claims file (DESIGN.md, "Claims and verdicts") on a
run directory's trials; the file format itself is :mod:`study.spec.claimsfile`.

A claim's estimate, by kind (confidence from the claim or the file, 0.95 by
default):

* ``value`` -- ``statistic`` (mean or median) of ``score`` over every run
  matching ``where``, collapsed and diverged runs included when they have a
  score (:func:`analysis.stats.verdict.value_estimate`);
* ``share`` -- ``option``'s win share in the comparison of ``choice`` on the
  rows matching ``where``, with a percentile bootstrap over the paired
  configurations;
* ``delta`` -- with ``score: [a, b]`` the median over runs of a − b (the
  paired difference of two score columns per run); with ``choice``,
  ``option`` and ``other`` the median over paired configurations of
  score(option) − score(other); percentile bootstrap intervals. ``unit:
  seed`` pairs each seed of a configuration instead (the same initialisation
  and data order under every option): for populations, where one
  configuration is run over many seeds;
* ``rank`` -- per block (``blocks``, default ``task``) the options' mean
  scores (``statistic``: mean, median, or sd -- then the largest spread
  ranks first) ranked, ties averaged; ``option``'s mean rank over blocks as an
  exact fraction, interval by bootstrap over blocks; rule ``best``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pandas as pd

from study.errors import UserError
from study.spec.claimsfile import Claim

from ..specs import rows_where
from .paired import compare
from .significance import bootstrap_median
from .verdict import (Verdict, mean_ranks, percentile_interval, rank_interval, rank_verdict, value_estimate,
                      verdict)

__all__ = ["ClaimResult", "judge"]

@dataclass(frozen=True)
class ClaimResult:
    claim: Claim
    verdict: Verdict
    n: int                                  # runs, paired configurations or blocks behind the estimate
    collapsed: int = 0                      # value claims: collapsed or diverged runs with a score, counted in
    without: float = float("nan")           # value claims: the statistic without them
    rank: Fraction | None = None            # rank claims: the exact mean rank
    collapsed_keys: tuple[str, ...] = ()    # value claims: the trial keys of the collapsed or diverged runs


def judge(claim: Claim, df: pd.DataFrame, *, results=(), specs=(), n_bootstrap: int = 2000,
          seed: int = 0) -> ClaimResult:
    """The estimate, interval and verdict of one claim on a trials table.
    ``results`` and ``specs``: the run directory's result columns and
    comparisons (:func:`analysis.reading.load.comparisons_of`); a share or delta
    claim on a choice the directory compares pairs as that comparison does
    (its row filter, ignored columns and options)."""
    spec = next((s for s in specs if s.choice == claim.choice), None)
    rows = rows_where(rows_where(df, spec.where) if spec is not None else df, claim.where)
    c = claim.confidence
    if claim.kind == "value":
        bad = np.zeros(len(rows), dtype=bool)
        if "status" in rows:
            bad = bad | (rows["status"].astype(str) == "diverged").to_numpy(dtype=bool)
        if "reason" in rows:
            bad = bad | rows["reason"].astype(str).str.startswith("collapsed").to_numpy(dtype=bool)
        scores = rows[claim.score[0]].to_numpy(dtype=float)
        v = value_estimate(scores, statistic=claim.statistic, confidence=c, collapsed=bad, n_bootstrap=n_bootstrap,
                           seed=seed)
        keys = tuple(rows["trial_key"].astype(str).to_numpy()[bad & np.isfinite(scores)]) if "trial_key" in rows else ()
        return ClaimResult(claim, verdict(v.estimate, v.interval, claim.target, claim.rule), v.n, v.collapsed,
                           v.without, collapsed_keys=keys)
    if claim.kind == "delta" and claim.choice is None:
        a, b = (rows[s].to_numpy(dtype=float) for s in claim.score)
        d = (a - b)[np.isfinite(a) & np.isfinite(b)]
        e = float(np.median(d)) if len(d) else float("nan")
        lo, hi = bootstrap_median(d, n_bootstrap=n_bootstrap, confidence=c, seed=seed)
        return ClaimResult(claim, verdict(e, (lo, hi), claim.target, claim.rule), len(d))
    if claim.kind in ("share", "delta"):
        if claim.unit == "seed":          # the seed as a setting: (configuration, seed) is the paired unit
            run_seed = rows["seed"].astype(str)
            rows = rows.assign(config_id=rows["config_id"].astype(str) + "/seed=" + run_seed, pair_seed=run_seed)
        cmp = compare(rows, claim.choice, score=claim.score[0], n_bootstrap=n_bootstrap, seed=seed, confidence=c,
                      options=spec.options if spec is not None else None, results=results,
                      ignore=spec.ignore if spec is not None else (), mode=spec.mode if spec is not None else "max")
        table = cmp.table if cmp.table is not None else pd.DataFrame()
        if claim.option not in table or (claim.kind == "delta" and claim.other not in table):
            missing = claim.option if claim.option not in table else claim.other
            raise UserError(f"claim {claim.id}", f"option {missing!r} is not an option of {claim.choice!r} "
                            f"in these rows (options: {', '.join(cmp.options)}).", "Fix the claim's option.")
        if claim.kind == "share":
            values = table.to_numpy(dtype=float) * (1.0 if cmp.mode == "max" else -1.0)
            top = values == values.max(axis=1, keepdims=True)
            wins = (top / top.sum(axis=1, keepdims=True))[:, list(table.columns).index(claim.option)]
            rng = np.random.default_rng(seed)
            boots = wins[rng.integers(0, len(wins), size=(n_bootstrap, len(wins)))].mean(axis=1) if len(wins) else \
                np.array([np.nan])
            return ClaimResult(claim, verdict(cmp.shares[claim.option], percentile_interval(boots, c), claim.target,
                                              claim.rule), cmp.n)
        d = (table[claim.option] - table[claim.other]).to_numpy(dtype=float)
        lo, hi = bootstrap_median(d, n_bootstrap=n_bootstrap, confidence=c, seed=seed)
        return ClaimResult(claim, verdict(float(np.median(d)), (lo, hi), claim.target, claim.rule), len(d))
    # rank
    ok = rows[(rows["status"] == "ok") if "status" in rows else slice(None)]
    column = claim.choice if claim.choice in ok else "option"
    groups = ok.assign(_o=ok[column].astype(str)).groupby([claim.blocks, "_o"])[claim.score[0]]
    means = groups.agg("std" if claim.statistic == "sd" else claim.statistic).unstack("_o")
    if claim.option not in means:
        raise UserError(f"claim {claim.id}", f"option {claim.option!r} has no finished run in these rows.",
                        "Fix the claim's option or its where filter.")
    ranks = mean_ranks(means)
    interval = rank_interval(means, claim.option, confidence=c, n_bootstrap=n_bootstrap, seed=seed)
    return ClaimResult(claim, rank_verdict(ranks, claim.option, interval), len(means.dropna()), rank=ranks[claim.option])
