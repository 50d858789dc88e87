"""Pairing: which rows of a results table belong to one configuration
(docs/reference/statistics.md, "Scores and pairing", Pairing), as arrays the statistics work on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from seedsweep.study.schema import IDENTITY, OUTCOME, TUNED

__all__ = ["RESULT_COLUMNS", "PairedRows", "paired_rows", "pair_ids", "by_config", "option_strings", "finished",
           "as_text"]

# Columns of seedsweep's trials table that describe a run's outcome or
# identity rather than its settings (the schema's, less study, task and
# metric, which name the setting): never part of a pairing key.
RESULT_COLUMNS = tuple(n for n in IDENTITY.names + TUNED.names + OUTCOME.names if n not in ("study", "task", "metric"))


def _text_categories(values: pd.Series) -> bool:
    return (isinstance(values.dtype, pd.CategoricalDtype) and len(values.cat.categories) > 0
            and pd.api.types.is_string_dtype(values.cat.categories))


def as_text(values: pd.Series) -> pd.Series:
    """``values.astype(str)`` (missing values stay missing). A categorical's
    text is made from its categories, a few values, not from every row, and
    stays a categorical (its categories the texts, sorted; 1 and "1" one text).

    >>> as_text(pd.Series(["b", None, "a", "b"], dtype="category")).tolist()
    ['b', nan, 'a', 'b']
    """
    if not _text_categories(values):        # numbers: their text depends on the missing values (2 or 2.0)
        return values.astype(str)
    texts = np.asarray(values.cat.categories.astype(str), dtype=object)
    categories, inverse = np.unique(texts, return_inverse=True)
    codes = values.cat.codes.to_numpy()
    codes = np.where(codes >= 0, inverse.reshape(-1)[np.maximum(codes, 0)], -1)
    return pd.Series(pd.Categorical.from_codes(codes, categories=pd.Index(categories, dtype=str)),
                     index=values.index, name=values.name)


def option_strings(values: pd.Series) -> pd.Series:
    """Options compare as text: 2 and "2", True and "True" name the same option."""
    if isinstance(values.dtype, pd.CategoricalDtype) and len(values.cat.categories):
        # the categories' texts, taken for every row: the same values, without one string per row
        texts = option_strings(pd.Series(values.cat.categories)).to_numpy(dtype=object)
        codes = values.cat.codes.to_numpy()
        out = np.where(codes >= 0, texts[np.maximum(codes, 0)], pd.NA)
        return pd.Series(out, index=values.index, name=values.name, dtype=object)
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


def by_config(df: pd.DataFrame, choice: str) -> bool:
    """seedsweep's own layout: rows name their choice and configuration."""
    if not {"config_id", "choice", "option"} <= set(df.columns):
        return False
    rows = df[df["choice"] == choice]
    return len(rows) > 0 and rows["config_id"].notna().all()


def paired_rows(df: pd.DataFrame, choice: str, options: list[str] | None, score: str,
                 ignore: Iterable[str], results: Iterable[str], by: str | None = None
                 ) -> tuple[pd.DataFrame, list[str]]:
    """Rows of ``choice`` as arrays pair (int), label, option, score, status,
    group, and each row's position in ``df`` (``index``)."""
    if score not in df.columns:
        raise KeyError(f"no score column {score!r}; columns are {list(df.columns)}")
    if by_config(df, choice):
        mask = (df["choice"] == choice).fillna(False).to_numpy(dtype=bool)
        rows = df[mask]
        positions = np.flatnonzero(mask)
        # config ids may repeat across studies and tasks: a pair is (study, task, config_id)
        scope = [c for c in ("study", "task") if c in rows.columns and rows[c].nunique(dropna=False) > 1]
        pair = pair_ids(rows, scope + ["config_id"])
        label = rows["config_id"].astype(str)
        for column in reversed(scope):                   # "study/task/config_id", joined column-wise (fast)
            label = rows[column].astype(str) + "/" + label
        label = label.to_numpy(dtype=object)
        option = option_strings(rows["option"])
    elif choice in df.columns:
        rows = df
        positions = np.arange(len(df))
        drop = {choice, score, *ignore, *results, *RESULT_COLUMNS}
        keys = [c for c in df.columns if c not in drop]
        pair = pair_ids(rows, keys)
        label = pair
        option = option_strings(rows[choice])
    else:
        raise KeyError(f"choice {choice!r} is neither a compared choice of these trials nor a column")
    status = rows["status"].astype(object).to_numpy() if "status" in rows.columns else np.full(len(rows), "ok", object)
    group = (rows[by].astype(object).where(rows[by].notna(), "").astype(str).to_numpy()
             if by is not None and by in rows.columns else np.full(len(rows), "", object))
    option = option.to_numpy(dtype=object)
    if options is None:
        options = [o for o in dict.fromkeys(option) if not pd.isna(o)]
    options = [str(o) for o in options]
    opt = pd.Index(options, dtype=object).get_indexer(option).astype(np.int64)    # -1: not a compared option
    keep = opt >= 0
    return PairedRows(pair=np.asarray(pair)[keep], label=np.asarray(label, dtype=object)[keep], opt=opt[keep],
                 score=rows[score].to_numpy(dtype=float)[keep], status=status[keep], group=group[keep],
                      index=positions[keep]), options


@dataclass
class PairedRows:
    """The rows of one choice as arrays: pairing key, display label, option
    index, score, status, group (task) and position in the source table."""

    pair: np.ndarray
    label: np.ndarray
    opt: np.ndarray
    score: np.ndarray
    status: np.ndarray
    group: np.ndarray
    index: np.ndarray

    def take(self, mask: np.ndarray) -> "PairedRows":
        """The rows where ``mask`` is true."""
        return PairedRows(*(getattr(self, f)[mask] for f in ("pair", "label", "opt", "score", "status", "group",
                                                            "index")))


def finished(df: pd.DataFrame, score: str) -> pd.DataFrame:
    """Rows with status ``ok`` (when there is a status column) and a finite score."""
    ok = np.isfinite(df[score].to_numpy(dtype=float))
    if "status" in df.columns:
        ok &= (df["status"] == "ok").to_numpy()
    return df[ok]
