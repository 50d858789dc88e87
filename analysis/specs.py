"""The comparison vocabulary every other module of ``analysis`` speaks: what
one comparison is (:class:`ComparisonSpec`) and how its rows are selected.

It sits at the bottom of the package and imports nothing of seedsweep.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

__all__ = ["ComparisonSpec", "rows_where", "as_categories"]


@dataclass(frozen=True)
class ComparisonSpec:
    """One comparison to report: the column holding the option, the options in
    display order, columns left out of pairing, and a row filter
    (column -> allowed values); ``mode`` says which scores are better
    (``max``, or ``min`` for a loss or a dispersion score)."""

    name: str
    choice: str
    options: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    where: dict[str, list] = field(default_factory=dict)
    mode: str = "max"


def rows_where(df: pd.DataFrame, where: dict) -> pd.DataFrame:
    """Rows whose value (as text) in each named column is one of the allowed
    values (a comparison's row filter, the dashboard's filters)."""
    for col, allowed in where.items():
        if col in df.columns:
            s = df[col]
            text = s if isinstance(s.dtype, pd.StringDtype) else s.astype(str)   # text already: no copy
            df = df[text.isin([str(a) for a in allowed]).fillna(False).to_numpy(dtype=bool)]
    return df


def as_categories(df: pd.DataFrame) -> pd.DataFrame:
    """Text columns with repeated values as categoricals: every comparison
    factorizes the same columns to pair rows, and a categorical is factorized
    already. Values and missing values are unchanged."""
    out = {}
    for col in df.columns:
        s = df[col]
        if (pd.api.types.is_string_dtype(s) or s.dtype == object) and s.nunique(dropna=True) < len(s) // 2:
            out[col] = s.astype("category")
    return df.assign(**out) if out else df
