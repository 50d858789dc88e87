"""Design-choice importance: how much of the score's variance each
hyperparameter explains on its own, by functional ANOVA (Hutter et al. 2014)
over a seeded random forest fitted to the finished trials.

The computation, per tree of the forest (scikit-learn's
``RandomForestRegressor``, ``n_trees`` trees, seeded):

* every hyperparameter is a discrete variable with u levels, uniform over
  them: a category (text, booleans) per level, ``(not set)`` for a value a
  ``when`` condition left unset; a number per distinct value, or per
  quantile bin when it has more than ``max_levels`` distinct values (a
  log-uniform learning rate becomes bins of equal *sample* mass, which is the
  measure the study drew from);
* a leaf of the tree is a box: for each hyperparameter the range of levels it
  admits; its share of the space is the product of (levels admitted / u);
* the tree's mean μ and variance V over the space are the share-weighted
  mean and variance of the leaf values; the marginal prediction of
  hyperparameter i at level c is Σ_leaves value · [c in the leaf's range] ·
  Π_{j≠i} share_j, and V_i is the variance of that marginal over the u_i
  levels (the main effect);
* the tree's importance of i is V_i / V.

Importance is the mean of V_i / V over the trees (trees with V = 0 are left
out), normalised to sum to 1 over ``params`` -- the same normalisation as
Optuna's ``FanovaImportanceEvaluator``. Departure from Optuna's evaluator,
deliberately: categories are level codes in the forest rather than one-hot
columns, and the space is the observed levels rather than the declared
ranges. Optuna's fANOVA took six minutes on one task of the R&G results;
this takes about a second (``tests/test_analysis_stats.py`` checks one
tree against brute-force enumeration of its space, and the ranking against
Optuna's on a small study).

Large studies are subsampled: at most ``max_rows`` finished rows, drawn
without replacement by ``numpy.random.default_rng(seed)`` from the rows
sorted by ``trial_key`` when there is one; :class:`Importance` says how
many were used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from .pairing import finished

__all__ = ["importance", "fanova", "Importance", "NOT_SET", "MAX_LEVELS", "MAX_ROWS"]

NOT_SET = "(not set)"
MAX_LEVELS = 32          # distinct values of a number above which it is binned
MAX_ROWS = 4000          # rows of a large study the report's and dashboard's forests are fitted to


@dataclass(frozen=True)
class Importance:
    """fANOVA main-effect importance, largest first (sums to 1), and the
    rows it was computed from: ``used`` of ``finished`` finished rows."""

    importance: dict[str, float]
    finished: int
    used: int
    levels: dict[str, list[str]] = field(default_factory=dict)     # the levels of each hyperparameter

    @property
    def subsampled(self) -> bool:
        """Whether fewer rows were used than were finished (``max_rows``)."""
        return self.used < self.finished


def _levels(values: pd.Series, max_levels: int) -> tuple[np.ndarray, list[str]]:
    """Level codes 0 … u−1 of a column and a label per level."""
    numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
    missing = values.isna().to_numpy()
    if not numeric:
        text = values.astype(object).where(~missing, NOT_SET).astype(str)
        labels = sorted(set(text))
        codes = pd.Categorical(text, categories=labels).codes.astype(np.int64)
        return codes, labels
    x = values.to_numpy(dtype=float)
    present = x[~missing]
    distinct = np.unique(present)
    if len(distinct) <= max_levels:
        edges = distinct
        codes = np.searchsorted(distinct, x)
        labels = [f"{v:g}" for v in distinct]
    else:                              # quantile bins of equal sample mass
        cuts = np.unique(np.quantile(present, np.linspace(0, 1, max_levels + 1)[1:-1], method="lower"))
        codes = np.searchsorted(cuts, x, side="right")
        edges = np.concatenate([[present.min()], cuts, [present.max()]])
        labels = [f"[{edges[i]:g}, {edges[i + 1]:g}]" for i in range(len(cuts) + 1)]
    if missing.any():
        codes = np.where(missing, 0, codes + 1)
        labels = [NOT_SET] + labels
    return codes.astype(np.int64), labels


def _leaf_boxes(tree, u: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lowest level, highest level, value) of every leaf of a fitted sklearn tree
    whose features are level codes 0 … u−1."""
    t = tree.tree_
    left, right, feat, thr = t.children_left, t.children_right, t.feature, t.threshold
    lo = np.zeros((t.node_count, len(u)), dtype=np.int64)
    hi = np.tile(u - 1, (t.node_count, 1))
    frontier = np.array([0])
    while frontier.size:               # one level of the tree at a time
        inner = frontier[left[frontier] != -1]
        if not inner.size:
            break
        f, cut = feat[inner], np.floor(thr[inner]).astype(np.int64)
        L, R = left[inner], right[inner]
        lo[L], hi[L], lo[R], hi[R] = lo[inner], hi[inner], lo[inner], hi[inner]
        hi[L, f] = np.minimum(hi[inner, f], cut)             # left: code <= threshold
        lo[R, f] = np.maximum(lo[inner, f], cut + 1)
        frontier = np.concatenate([L, R])
    leaves = np.flatnonzero(left == -1)
    return lo[leaves], hi[leaves], t.value[leaves, 0, 0].astype(float)


def tree_effects(tree, u: Sequence[int]) -> tuple[float, np.ndarray]:
    """(V, [V_i]): the variance of one tree's prediction over the level space
    and the variance of each hyperparameter's main effect (module docstring)."""
    u = np.asarray(u, dtype=np.int64)
    lo, hi, value = _leaf_boxes(tree, u)
    share = (hi - lo + 1) / u                                  # leaves × hyperparameters
    volume = share.prod(axis=1)
    mean = float(volume @ value)
    total = float(volume @ (value - mean) ** 2)
    effects = np.zeros(len(u))
    for i, levels in enumerate(u):
        others = volume / share[:, i]           # Π_{j≠i} share_j (a leaf admits at least one level of each)
        c = np.arange(levels)
        inside = (lo[:, i, None] <= c) & (c <= hi[:, i, None])   # leaves × levels
        marginal = (value * others) @ inside
        effects[i] = float(np.mean((marginal - mean) ** 2))
    return total, effects


def fanova(df: pd.DataFrame, params: Sequence[str], *, score: str = "test_score", seed: int = 0,
           n_trees: int = 64, max_depth: int = 64, max_rows: int | None = None,
           max_levels: int = MAX_LEVELS) -> Importance:
    """fANOVA importance of ``params`` on the finished rows of ``df``, with the
    number of rows used (see the module docstring)."""
    from sklearn.ensemble import RandomForestRegressor

    params = sorted(dict.fromkeys(params))      # the forest sees them in one order, whatever the caller's
    missing = [p for p in params if p not in df.columns]
    if missing:
        raise KeyError(f"no hyperparameter column(s) {missing}")
    if not params:
        raise ValueError("importance needs at least one hyperparameter")
    rows = finished(df, score)
    if len(rows) < 2:
        raise ValueError(f"importance needs at least two finished trials, found {len(rows)}")
    n_finished = len(rows)
    if "trial_key" in rows.columns:
        rows = rows.iloc[np.argsort(rows["trial_key"].astype(str).to_numpy(), kind="stable")]
    if max_rows is not None and len(rows) > max_rows:
        pick = np.sort(np.random.default_rng(seed).choice(len(rows), max_rows, replace=False))
        rows = rows.iloc[pick]
    coded = [_levels(rows[p], max_levels) for p in params]
    X = np.column_stack([c for c, _ in coded]).astype(float)
    u = np.array([len(labels) for _, labels in coded])
    y = rows[score].to_numpy(dtype=float)
    forest = RandomForestRegressor(n_estimators=n_trees, max_depth=max_depth, min_samples_split=2,
                                   min_samples_leaf=1, random_state=seed, n_jobs=1).fit(X, y)
    fractions = []
    for tree in forest.estimators_:
        total, effects = tree_effects(tree, u)
        if total > 0:
            fractions.append(effects / total)
    mean = np.mean(fractions, axis=0) if fractions else np.zeros(len(params))
    norm = mean / mean.sum() if mean.sum() > 0 else np.full(len(params), 1 / len(params))
    order = sorted(range(len(params)), key=lambda i: (-norm[i], params[i]))
    return Importance({params[i]: float(norm[i]) for i in order}, n_finished, len(rows),
                      {p: labels for p, (_, labels) in zip(params, coded)})


def importance(df: pd.DataFrame, params: Sequence[str], *, score: str = "test_score", seed: int = 0,
               n_trees: int = 64, max_depth: int = 64, max_rows: int | None = None) -> dict[str, float]:
    """Normalised fANOVA importance of each hyperparameter in ``params``,
    largest first (values sum to 1).

    >>> imp = importance(load(run_dir), ["classifier", "optimizer", "layers"])
    >>> max(imp, key=imp.get), round(sum(imp.values()), 6)
    ('classifier', 1.0)
    """
    return fanova(df, params, score=score, seed=seed, n_trees=n_trees, max_depth=max_depth,
                  max_rows=max_rows).importance
