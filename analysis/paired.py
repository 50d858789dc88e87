"""Paired comparison of the options of one design choice (DESIGN.md, "Statistics").

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
from scipy import stats

from study.schema import IDENTITY, OUTCOME

__all__ = ["Comparison", "compare", "compare_tasks", "pair_ids", "finished", "RESULT_COLUMNS", "ALPHA",
           "bootstrap_median", "win_shares"]

ALPHA = 0.01   # the paper's significance level for its marks

# Columns of seedsweep's trials table that describe a run's outcome or
# identity rather than its settings (the schema's, less study, task and
# metric, which name the setting): never part of a pairing key.
RESULT_COLUMNS = tuple(n for n in IDENTITY.names + OUTCOME.names if n not in ("study", "task", "metric"))


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
        from .tables import comparison_table

        return comparison_table({"": self}).markdown(title=self.choice)


# ------------------------------------------------------------------ pairing


def _option_strings(values: pd.Series) -> pd.Series:
    """Options compare as text: 2 and "2", True and "True" name the same option."""
    if pd.api.types.is_float_dtype(values):
        return values.map(lambda v: v if pd.isna(v) else (str(int(v)) if float(v).is_integer() else str(v)))
    return values.astype("string").astype(object)


def pair_ids(df: pd.DataFrame, keys: Sequence[str]) -> np.ndarray:
    """An integer per row; equal for rows that agree on every column in ``keys``.
    Missing values compare equal (NaN, None and <NA> are one value)."""
    key = np.zeros(len(df), dtype=np.int64)
    size = 1
    for k in keys:
        try:        # sorted codes: ids depend on the values, not on the row order
            codes, uniques = pd.factorize(df[k], use_na_sentinel=True, sort=True)
        except TypeError:                           # mixed types that do not sort: compare as text
            column = df[k].map(lambda v: v if pd.isna(v) else f"{type(v).__name__}:{v}")
            codes, uniques = pd.factorize(column, use_na_sentinel=True, sort=True)
        card = len(uniques) + 1                     # + the missing value (code -1)
        if size * card >= 2 ** 62:                  # keep the mixed-radix number in range
            key, first = pd.factorize(key)
            size = len(first)
        key = key * card + (codes + 1)
        size *= card
    return pd.factorize(key, sort=True)[0].astype(np.int64)


def _by_config(df: pd.DataFrame, choice: str) -> bool:
    """seedsweep's own layout: rows name their choice and configuration."""
    if not {"config_id", "choice", "option"} <= set(df.columns):
        return False
    rows = df[df["choice"] == choice]
    return len(rows) > 0 and rows["config_id"].notna().all()


def _paired_rows(df: pd.DataFrame, choice: str, options: list[str] | None, score: str,
                 ignore: Iterable[str], results: Iterable[str], by: str | None = None
                 ) -> tuple[pd.DataFrame, list[str]]:
    """Rows of ``choice`` as columns pair (int), label, option, score, status, group."""
    if score not in df.columns:
        raise KeyError(f"no score column {score!r}; columns are {list(df.columns)}")
    if _by_config(df, choice):
        rows = df[df["choice"] == choice]
        # config ids may repeat across studies and tasks: a pair is (study, task, config_id)
        scope = [c for c in ("study", "task") if c in rows.columns and rows[c].nunique(dropna=False) > 1]
        pair = pair_ids(rows, scope + ["config_id"])
        label = rows["config_id"].astype(str)
        if scope:
            label = rows[scope].astype(str).agg("/".join, axis=1) + "/" + label
        label = label.to_numpy(dtype=object)
        option = _option_strings(rows["option"])
    elif choice in df.columns:
        rows = df
        drop = {choice, score, *ignore, *results, *RESULT_COLUMNS}
        keys = [c for c in df.columns if c not in drop]
        pair = pair_ids(rows, keys)
        label = pair
        option = _option_strings(rows[choice])
    else:
        raise KeyError(f"choice {choice!r} is neither a compared choice of these trials nor a column")
    status = rows["status"].astype(object).to_numpy() if "status" in rows.columns else np.full(len(rows), "ok", object)
    group = (rows[by].astype(object).where(rows[by].notna(), "").astype(str).to_numpy()
             if by is not None and by in rows.columns else np.full(len(rows), "", object))
    option = option.to_numpy(dtype=object)
    if options is None:
        options = [o for o in dict.fromkeys(option) if not pd.isna(o)]
    options = [str(o) for o in options]
    code = {o: i for i, o in enumerate(options)}
    opt = np.fromiter((code.get(o, -1) for o in option), dtype=np.int64, count=len(option))
    keep = opt >= 0
    return _Rows(pair=np.asarray(pair)[keep], label=np.asarray(label, dtype=object)[keep], opt=opt[keep],
                 score=rows[score].to_numpy(dtype=float)[keep], status=status[keep], group=group[keep]), options


@dataclass
class _Rows:
    """The rows of one choice as arrays: pairing key, display label, option
    index, score, status and group (task)."""

    pair: np.ndarray
    label: np.ndarray
    opt: np.ndarray
    score: np.ndarray
    status: np.ndarray
    group: np.ndarray

    def take(self, mask: np.ndarray) -> "_Rows":
        return _Rows(*(getattr(self, f)[mask] for f in ("pair", "label", "opt", "score", "status", "group")))


# --------------------------------------------------------------- statistics


def finished(df: pd.DataFrame, score: str) -> pd.DataFrame:
    """Rows with status ``ok`` (when there is a status column) and a finite score."""
    ok = np.isfinite(df[score].to_numpy(dtype=float))
    if "status" in df.columns:
        ok &= (df["status"] == "ok").to_numpy()
    return df[ok]


def win_shares(values: np.ndarray) -> np.ndarray:
    """Win share of each column of a (configurations × options) score matrix;
    per row the highest score wins, ties split equally."""
    if values.shape[0] == 0:
        return np.zeros(values.shape[1])
    top = values == values.max(axis=1, keepdims=True)
    return (top / top.sum(axis=1, keepdims=True)).sum(axis=0) / values.shape[0]


def bootstrap_median(values: np.ndarray, *, n_bootstrap: int = 1000, confidence: float = 0.95,
                     seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of the median of ``values`` (resampling with
    replacement, ``n_bootstrap`` resamples of the same size).

    Each resample's median is read off the sorted values through the resample's
    counts (a median of a resample of sorted values is the value at the middle
    count), which gives exactly ``np.median`` of the resample without sorting it.

    >>> bootstrap_median(np.array([1.0, 2.0, 3.0, 4.0]), seed=1)   # doctest: +SKIP
    (1.5, 3.5)
    """
    values = np.sort(np.asarray(values, dtype=float))
    n = len(values)
    if n == 0:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    medians = np.empty(n_bootstrap)
    chunk = max(1, min(n_bootstrap, 4_000_000 // n))
    lo_k, hi_k = (n - 1) // 2, n // 2
    for start in range(0, n_bootstrap, chunk):
        m = min(chunk, n_bootstrap - start)
        draws = rng.integers(0, n, size=(m, n))
        counts = np.bincount((draws + (np.arange(m) * n)[:, None]).ravel(), minlength=m * n).reshape(m, n)
        cumulative = np.cumsum(counts, axis=1)
        # index of the k-th smallest element = number of sorted positions whose cumulative count <= k
        lo = (cumulative <= lo_k).sum(axis=1)
        hi = (cumulative <= hi_k).sum(axis=1)
        medians[start:start + m] = (values[lo] + values[hi]) / 2
    tail = (1 - confidence) / 2
    lo, hi = np.quantile(medians, [tail, 1 - tail])
    return (float(lo), float(hi))


def _sign_test(b: np.ndarray, o: np.ndarray) -> float:
    wins = int((b > o).sum())
    losses = int((o > b).sum())
    if wins + losses == 0:
        return 1.0
    # two-sided binomial test at p = 1/2: the distribution is symmetric, so the
    # outcomes as extreme as observed are both tails (scipy's binomtest gives the same)
    n = wins + losses
    return float(min(1.0, 2.0 * stats.binom.cdf(min(wins, losses), n, 0.5)))


def _wilcoxon(d: np.ndarray) -> float:
    if len(d) == 0:
        return float("nan")
    if not np.any(d != 0):
        return 1.0
    return float(stats.wilcoxon(d).pvalue)


def _brown_forsythe(a: np.ndarray, b: np.ndarray) -> float:
    if len(a) < 2 or len(b) < 2:
        return float("nan")
    if np.all(a == a[0]) and np.all(b == b[0]):
        return 1.0
    # Levene's test with median centring: one-way ANOVA of |x − median(group)|
    za, zb = np.abs(a - np.median(a)), np.abs(b - np.median(b))
    na, nb = len(za), len(zb)
    grand = (za.sum() + zb.sum()) / (na + nb)
    between = na * (za.mean() - grand) ** 2 + nb * (zb.mean() - grand) ** 2
    within = ((za - za.mean()) ** 2).sum() + ((zb - zb.mean()) ** 2).sum()
    if within == 0:                      # no spread of the deviations: the test is undefined
        return float("nan")
    f = between / (within / (na + nb - 2))
    return float(stats.f.sf(f, 1, na + nb - 2))


def _marks(best: str | None, p: dict[str, float], alpha: float) -> set[str]:
    if best is None:
        return set()
    worse = {o for o, v in p.items() if o != best and v < alpha}
    if not worse:
        return set()
    return {o for o in p if o not in worse}


# ------------------------------------------------------------------ compare


def compare(df: pd.DataFrame, choice: str, *, options: Sequence | None = None, score: str = "test_score",
            ignore: Iterable[str] = (), results: Iterable[str] = (), n_bootstrap: int = 1000,
            confidence: float = 0.95, alpha: float = ALPHA, seed: int = 0) -> Comparison:
    """Compare the options of ``choice`` over the paired configurations of ``df``.

    ``df`` is a trials table (:func:`analysis.load`) or anyone's raw results
    with one row per run; ``choice`` is a compared choice of the study or,
    for others' data, the column that holds the option. ``ignore`` names
    columns left out of the pairing key (e.g. dropout rates when comparing
    dropout types); ``results`` names further outcome columns of imported
    data. Returns a :class:`Comparison`.

    >>> cmp = compare(load("runs/quickstart"), "classifier")   # doctest: +SKIP
    >>> cmp.n, cmp.shares                                     # doctest: +SKIP
    (12, {'softmax': 0.0, 'crf': 1.0})
    """
    rows, options = _paired_rows(df, choice, None if options is None else list(options), score,
                                 tuple(ignore), tuple(results))
    return _compare_rows(rows, choice, options, score, n_bootstrap=n_bootstrap, confidence=confidence,
                         alpha=alpha, seed=seed)


def compare_tasks(df: pd.DataFrame, choice: str, *, by: str = "task", options: Sequence | None = None,
                  score: str = "test_score", ignore: Iterable[str] = (), results: Iterable[str] = (),
                  **kwargs) -> dict[str, Comparison]:
    """:func:`compare` per task (the paper's rows): task name -> Comparison,
    tasks sorted by name. Rows without a task form the group ``""``."""
    rows, options = _paired_rows(df, choice, None if options is None else list(options), score,
                                 tuple(ignore), tuple(results), by=by)
    groups, inverse = np.unique(rows.group.astype(str), return_inverse=True)
    return {str(g): _compare_rows(rows.take(inverse == i), choice, options, score, **kwargs)
            for i, g in enumerate(groups)}


def _compare_rows(rows: _Rows, choice: str, options: list[str], score: str, *, n_bootstrap: int = 1000,
                  confidence: float = 0.95, alpha: float = ALPHA, seed: int = 0) -> Comparison:
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
    shares = dict(zip(options, map(float, win_shares(values)))) if k else {}
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
            share_p[o] = _sign_test(b, values[:, i])
            delta[o] = float(np.median(d))
            delta_ci[o] = bootstrap_median(d, n_bootstrap=n_bootstrap, confidence=confidence, seed=seed + i)
            wilcoxon_p[o] = _wilcoxon(d)
    marks = _marks(best, share_p, alpha)

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
                   else _brown_forsythe(per_option[sigma_best], per_option[o])) for o in options}
    sigma_marks = _marks(sigma_best, {o: (1.0 if np.isnan(v) else v) for o, v in sigma_p.items()}, alpha)

    return Comparison(choice=choice, options=options, score=score, n=n, shares=shares, best=best, marks=marks,
                      share_p=share_p, delta=delta, delta_ci=delta_ci, wilcoxon_p=wilcoxon_p, sigma=sigma,
                      sigma_best=sigma_best, sigma_marks=sigma_marks, sigma_p=sigma_p, left_out=left_out,
                      unfinished_rows=unfinished_rows, confidence=confidence, n_bootstrap=n_bootstrap,
                      table=table, rows=paired)
