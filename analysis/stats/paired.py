"""Paired comparison of the options of one design choice (docs/reference/statistics.md, "Scores and pairing").

The definitions, in the paper's words where it has them:

* **Pairing.** By ``config_id`` when the rows have one (seedsweep's own run
  directories). Otherwise rows pair when they agree on every column except
  the choice, the score, the result columns (:data:`RESULT_COLUMNS` plus any
  the caller names) and the columns in ``ignore``; missing values compare
  equal. Rows that agree on everything -- repeated runs, i.e. seeds -- are
  averaged: a configuration's score for an option is the mean over its
  finished seeds.
* **Paired configurations**: those with a finished score (status ``ok``, a
  finite score) for every option. Only these enter win shares, Δ and σ; the
  others are counted in ``left_out`` by reason (``diverged`` if one of its
  rows diverged, else ``failed`` if one failed, else ``missing option``).
* **Win share**: per paired configuration the option with the highest score
  wins; ties are split equally; share = wins / paired configurations.
* **Marks** (the paper's †): b is the option with the largest win share. A
  two-sided sign test (binomial, ties dropped) of b against each other option
  o; o is significantly worse when p < 0.01. If no option is significantly
  worse nothing is marked; otherwise b and every option not significantly
  worse than b are marked.
* **Δ**: for o ≠ b, the median over paired configurations of
  (score_o − score_b), a percentile bootstrap CI resampling configurations,
  and the Wilcoxon signed-rank p.
* **σ**: the sample standard deviation (ddof = 1) of the scores of the paired
  rows of each option, all seeds; marks as above with the smallest σ as b and
  Brown–Forsythe (Levene, median-centred) pairwise tests.

Everything here is a pure function of a DataFrame; randomness (the
bootstrap) comes from the ``seed`` argument.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from ..specs import ComparisonSpec, rows_where
from ..tables import comparison_table
from .pairing import PairedRows, paired_rows
from .significance import bootstrap_median, brown_forsythe, marks, sign_test, wilcoxon_signed_rank, win_shares

__all__ = ["Comparison", "compare", "compare_tasks", "compare_spec", "mode_of", "ALPHA"]

ALPHA = 0.01   # the paper's significance level for its marks

@dataclass
class Comparison:
    """The paired comparison of one choice's options (see the module docstring).

    ``table`` holds one row per paired configuration (index: its pairing key)
    and one column per option: the configuration's mean score over seeds.
    ``rows`` holds the finished rows of the paired configurations (columns
    ``pair``, ``option``, ``score``): the per-seed scores σ is computed from.
    """

    choice: str
    options: list[str]
    score: str
    n: int                                        # paired configurations
    shares: dict[str, float]                      # option -> win share
    best: str | None                              # largest win share (first in option order on ties)
    marks: set[str]                               # the paper's † on win shares
    share_p: dict[str, float]                     # option -> sign-test p against best (best: nan)
    delta: dict[str, float]                       # option -> median(score_o - score_best); best: 0
    delta_ci: dict[str, tuple[float, float]]      # bootstrap CI of delta
    wilcoxon_p: dict[str, float]                  # option -> Wilcoxon signed-rank p against best
    sigma: dict[str, float]                       # option -> sd of its paired rows (all seeds)
    sigma_best: str | None                        # smallest sigma
    sigma_marks: set[str]
    sigma_p: dict[str, float]                     # Brown-Forsythe p against sigma_best
    left_out: dict[str, int] = field(default_factory=dict)        # reason -> configurations
    unfinished_rows: dict[str, int] = field(default_factory=dict)  # status -> rows not counted
    confidence: float = 0.95
    n_bootstrap: int = 1000
    alpha: float = 0.01                           # significance level of the marks (sign test, Brown–Forsythe)
    mode: str = "max"                             # "min": lower scores are better
    table: pd.DataFrame | None = field(default=None, repr=False)
    rows: pd.DataFrame | None = field(default=None, repr=False)

    def median_difference(self, a: str, b: str) -> float:
        """median over paired configurations of (score_a − score_b)."""
        if self.table is None or not self.n:
            return float("nan")
        return float(np.median(self.table[a].to_numpy() - self.table[b].to_numpy()))

    def scores(self, option: str) -> np.ndarray:
        """The per-configuration mean scores of ``option`` (paired configurations)."""
        return self.table[option].to_numpy() if self.table is not None else np.empty(0)

    def markdown(self) -> str:
        """This comparison as a small Markdown table (see :mod:`analysis.tables` for the paper's layout)."""
        return comparison_table({"": self}).markdown(title=self.choice)


# ------------------------------------------------------------------ compare


def compare(df: pd.DataFrame, choice: str, *, options: Sequence | None = None, score: str = "test_score",
            ignore: Iterable[str] = (), results: Iterable[str] = (), n_bootstrap: int = 1000,
            confidence: float = 0.95, alpha: float = ALPHA, seed: int = 0, mode: str | None = None) -> Comparison:
    """Compare the options of ``choice`` over the paired configurations of ``df``.

    ``df`` is a trials table (:func:`analysis.load`) or anyone's raw results
    with one row per run; ``choice`` is a compared choice of the study or,
    for others' data, the column that holds the option. ``ignore`` names
    columns left out of the pairing key (e.g. dropout rates when comparing
    dropout types); ``results`` names further outcome columns of imported
    data. ``mode="min"`` makes lower scores better (a loss, a dispersion
    score): the lowest score wins a configuration, the best option is the
    one with the largest win share as always, and Δ stays score_o − score_best.
    Without ``mode``, the study's own (``df.attrs["mode"]``, which
    :func:`analysis.load` sets), else ``max``. Returns a :class:`Comparison`.

    >>> cmp = compare(load(run_dir), "classifier")
    >>> cmp.n, cmp.best, cmp.shares
    (6, 'crf', {'crf': 1.0, 'softmax': 0.0})
    """
    rows, options = paired_rows(df, choice, None if options is None else list(options), score,
                                 tuple(ignore), tuple(results))
    return _compare_rows(rows, choice, options, score, n_bootstrap=n_bootstrap, confidence=confidence,
                         alpha=alpha, seed=seed, mode=mode_of(df, mode))


def mode_of(df: pd.DataFrame, mode: str | None) -> str:
    """``mode`` when given, else the study's (``df.attrs``, set by :func:`analysis.load`), else ``max``."""
    return mode if mode is not None else df.attrs.get("mode", "max")


def compare_tasks(df: pd.DataFrame, choice: str, *, by: str = "task", options: Sequence | None = None,
                  score: str = "test_score", ignore: Iterable[str] = (), results: Iterable[str] = (),
                  paired: tuple | None = None, **kwargs) -> dict[str, Comparison]:
    """:func:`compare` per task (the paper's rows): task name -> Comparison,
    tasks sorted by name (``mode`` as :func:`compare` takes it). Rows without a task form the group ``""``.
    ``paired``: ``df``'s :func:`~analysis.stats.pairing.paired_rows` with these
    arguments, when the caller has them already (the dashboard)."""
    rows, options = paired or paired_rows(df, choice, None if options is None else list(options), score,
                                          tuple(ignore), tuple(results), by=by)
    groups, inverse = np.unique(rows.group.astype(str), return_inverse=True)
    kwargs["mode"] = mode_of(df, kwargs.get("mode"))
    return {str(g): _compare_rows(rows.take(inverse == i), choice, options, score, **kwargs)
            for i, g in enumerate(groups)}


def _compare_rows(rows: PairedRows, choice: str, options: list[str], score: str, *, n_bootstrap: int = 1000,
                  confidence: float = 0.95, alpha: float = ALPHA, seed: int = 0, mode: str = "max") -> Comparison:
    if mode not in ("max", "min"):
        raise ValueError(f"mode must be 'max' or 'min', got {mode!r}")
    better = 1.0 if mode == "max" else -1.0       # wins and the sign test compare better * score
    k = len(options)
    _, first, pair_codes = np.unique(rows.pair, return_index=True, return_inverse=True)
    pair_codes = pair_codes.reshape(-1)
    P = len(first)
    opt = rows.opt
    values_all = rows.score
    status = rows.status
    done = (status == "ok") & np.isfinite(values_all)
    unfinished_rows: dict[str, int] = {}
    for st in status[~done]:
        name = "no score" if st is None or st == "ok" or (isinstance(st, float) and np.isnan(st)) else str(st)
        unfinished_rows[name] = unfinished_rows.get(name, 0) + 1

    # means over seeds; rows sorted by (pair, option, score) so that row order cannot change a sum (or a tie)
    f = np.flatnonzero(done)
    order = f[np.lexsort((values_all[f], opt[f], pair_codes[f]))]
    cell = pair_codes[order] * k + opt[order]
    sums = np.bincount(cell, weights=values_all[order], minlength=P * k).reshape(P, k)
    counts = np.bincount(cell, minlength=P * k).reshape(P, k)
    complete = (counts > 0).all(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts
    labels = rows.label[first]
    table = pd.DataFrame(means[complete], index=pd.Index(labels[complete], name="pair", dtype=object),
                         columns=pd.Index(options, dtype=object))

    left_out: dict[str, int] = {}
    if (~complete).any():
        diverged = np.bincount(pair_codes, weights=(status == "diverged"), minlength=P) > 0
        failed = np.bincount(pair_codes, weights=(status == "failed"), minlength=P) > 0
        for why, mask in (("diverged", diverged), ("failed", failed & ~diverged),
                          ("missing option", ~failed & ~diverged)):
            count = int((mask & ~complete).sum())
            if count:
                left_out[why] = count

    n = int(complete.sum())
    values = means[complete]
    shares = dict(zip(options, map(float, win_shares(better * values)))) if k else {}
    best = max(options, key=lambda o: shares[o]) if n else None

    nan = float("nan")
    share_p = {o: nan for o in options}
    wilcoxon_p = {o: nan for o in options}
    delta = {o: (0.0 if o == best else nan) for o in options}
    delta_ci = {o: ((0.0, 0.0) if o == best else (nan, nan)) for o in options}
    if best is not None:
        b = values[:, options.index(best)]
        for i, o in enumerate(options):
            if o == best:
                continue
            d = values[:, i] - b
            share_p[o] = sign_test(better * b, better * values[:, i])
            delta[o] = float(np.median(d))
            delta_ci[o] = bootstrap_median(d, n_bootstrap=n_bootstrap, confidence=confidence, seed=seed + i)
            wilcoxon_p[o] = wilcoxon_signed_rank(d)
    share_marks = marks(best, share_p, alpha)

    keep = order[complete[pair_codes[order]]]
    paired = pd.DataFrame({"pair": pd.Series(labels[pair_codes[keep]], dtype=object),
                           "option": pd.Series(np.asarray(options, object)[opt[keep]], dtype=object),
                           "score": values_all[keep]})
    # sorted, so that the sums inside std (and Levene) do not depend on row order
    per_option = {o: np.sort(values_all[keep][opt[keep] == i]) for i, o in enumerate(options)}
    sigma = {o: (float(np.std(v, ddof=1)) if len(v) >= 2 else nan) for o, v in per_option.items()}
    finite = [o for o in options if np.isfinite(sigma[o])]
    sigma_best = min(finite, key=lambda o: sigma[o]) if finite else None
    sigma_p = {o: (nan if sigma_best is None or o == sigma_best
                   else brown_forsythe(per_option[sigma_best], per_option[o])) for o in options}
    sigma_marks = marks(sigma_best, {o: (1.0 if np.isnan(v) else v) for o, v in sigma_p.items()}, alpha)

    return Comparison(choice=choice, options=options, score=score, n=n, shares=shares, best=best, marks=share_marks,
                      share_p=share_p, delta=delta, delta_ci=delta_ci, wilcoxon_p=wilcoxon_p, sigma=sigma,
                      sigma_best=sigma_best, sigma_marks=sigma_marks, sigma_p=sigma_p, left_out=left_out,
                      unfinished_rows=unfinished_rows, confidence=confidence, n_bootstrap=n_bootstrap, alpha=alpha,
                      mode=mode, table=table, rows=paired)


def compare_spec(df: pd.DataFrame, spec: ComparisonSpec, results=(), *, n_bootstrap: int = 1000,
                 seed: int = 0, paired: tuple | None = None) -> dict[str, Comparison]:
    """The comparison ``spec`` per task on the rows its filter keeps: the one
    computation behind the tables, the figures and the dashboard (``paired``:
    those rows' :func:`analysis.stats.insights.paired_of`, if computed already)."""
    return compare_tasks(rows_where(df, spec.where), spec.choice, options=spec.options, ignore=spec.ignore,
                         results=list(results), n_bootstrap=n_bootstrap, seed=seed, mode=spec.mode, paired=paired)
