"""Design-choice importance: how much of the score's variance each
hyperparameter explains, by functional ANOVA (Hutter et al. 2014) as
implemented by Optuna's ``FanovaImportanceEvaluator`` (random forest on the
trials, seeded).

Every finished trial (status ``ok``, finite score) becomes one Optuna trial:
numeric hyperparameters become float/int ranges, everything else categories.
fANOVA needs every parameter in every trial: a categorical hyperparameter that
a ``when`` condition left unset gets the category ``(not set)``; an unset
numeric one gets a value below its whole range (low − max(range, 1)), which
one split of a tree separates from the set values.
"""

from __future__ import annotations

import logging
from typing import Sequence

import pandas as pd

from .paired import finished

__all__ = ["importance", "NOT_SET"]

NOT_SET = "(not set)"


def _distribution(values: pd.Series):
    """An Optuna distribution for one column and a cast of its values into it."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
    if not numeric:
        cats = sorted({NOT_SET if pd.isna(v) else str(v) for v in values})
        return CategoricalDistribution(cats), (lambda v: NOT_SET if pd.isna(v) else str(v))
    present = values.dropna()
    lo, hi = (float(present.min()), float(present.max())) if len(present) else (0.0, 0.0)
    unset = lo - max(hi - lo, 1.0)          # below every real value: one split separates "not set"
    if pd.api.types.is_integer_dtype(values):          # no missing values (those make pandas floats)
        return IntDistribution(int(lo), max(int(hi), int(lo) + 1)), int
    low = unset if values.isna().any() else lo
    return FloatDistribution(low, hi if hi > low else low + 1.0), (lambda v: low if pd.isna(v) else float(v))


def importance(df: pd.DataFrame, params: Sequence[str], *, score: str = "test_score", seed: int = 0,
               n_trees: int = 64, max_depth: int = 64) -> dict[str, float]:
    """Normalised fANOVA importance of each hyperparameter in ``params``,
    largest first (values sum to 1).

    >>> imp = importance(load(run_dir), ["classifier", "optimizer", "layers"])
    >>> max(imp, key=imp.get), round(sum(imp.values()), 6)
    ('classifier', 1.0)
    """
    import optuna
    from optuna.importance import FanovaImportanceEvaluator, get_param_importances

    params = list(params)
    missing = [p for p in params if p not in df.columns]
    if missing:
        raise KeyError(f"no hyperparameter column(s) {missing}")
    rows = finished(df, score)
    if len(rows) < 2:
        raise ValueError(f"importance needs at least two finished trials, found {len(rows)}")
    dists, casts = {}, {}
    for p in params:
        dists[p], casts[p] = _distribution(rows[p])
    logging.getLogger("optuna").setLevel(logging.WARNING)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize")
    columns = {p: rows[p].tolist() for p in params}
    values = rows[score].to_numpy(dtype=float)
    trials = [optuna.trial.create_trial(params={p: casts[p](columns[p][i]) for p in params},
                                        distributions=dists, value=float(values[i]))
              for i in range(len(rows))]
    study.add_trials(trials)
    evaluator = FanovaImportanceEvaluator(n_trees=n_trees, max_depth=max_depth, seed=seed)
    result = get_param_importances(study, evaluator=evaluator, params=params)
    return {k: float(v) for k, v in result.items()}
