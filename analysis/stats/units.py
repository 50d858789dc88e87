"""The units of an adaptive study's decisions (the statistics page, "Adaptive
studies"): per task, each configuration's win of option A over B, or its
seed-mean paired difference, in configuration order, with every stored run
counted (a collapsed run keeps its score; a run with none counts as a loss,
or as the declared worst score).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from seedsweep.study.spec.until import Until

from .pairing import by_config, paired_rows
from .sequential import share_units

__all__ = ["Units", "units", "worst_score", "upto_configurations"]


@dataclass(frozen=True)
class Units:
    """One task's units of A against B: their labels and values in
    configuration order, the labels of the units in which a run had no
    score and was given the worst (``imputed``), the configurations left
    out because a mean has no declared worst score (``left_out``), and the
    units with any run that is not ok, scored or not (``flagged``)."""

    labels: list[str]
    values: np.ndarray
    imputed: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()
    flagged: tuple[str, ...] = ()               # units with a run that is not ok (collapsed, diverged, failed)


def units(df: pd.DataFrame, choice: str, a: str, b: str, *, score: str = "test_score", mode: str = "max",
          statistic: str = "share", seeds: int | None = None, upto: int | None = None, ignore=(), results=(),
          worst: float | None = None) -> dict[str, Units]:
    """Per task: the units of A against B in configuration order (stored
    order for imported rows). A configuration enters once every seed of both
    options is stored (``seeds`` per option; None: any), and only as part of
    the unbroken run of complete ones from the first (a unit is never
    changed later). ``upto``: only configurations c00000 … c(upto-1).
    ``ignore`` and ``results``: columns left out of the pairing (imported
    rows pair by the rest).

    Every stored run counts: a collapsed or diverged run that has a score
    keeps it; a run with none (failed, or diverged without a score) is given
    the worst value: ``worst`` (the declared worst score, e.g. the bound of
    ``until.range``), and for a win share, where no worst is declared, a
    value below every score (that side loses the configuration; both sides:
    a tie). A mean with no declared worst cannot value such a run: its
    configuration is left out and counted (:class:`Units`)."""
    if upto is not None:
        df = upto_configurations(df, upto)
    rows, _ = paired_rows(df, choice, [a, b], score, tuple(ignore), tuple(results), by="task")
    sign = -1.0 if mode == "min" else 1.0
    status = rows.status.astype(str)
    scored = np.isfinite(rows.score) & np.isin(status, ("ok", "diverged"))
    floor = sign * worst if worst is not None else (-np.inf if statistic == "share" else np.nan)
    frame = pd.DataFrame({"group": rows.group, "pair": rows.pair, "label": rows.label, "opt": rows.opt,
                          "at": rows.index, "score": np.where(scored, rows.score * sign, floor),
                          "imputed": ~scored, "flagged": status != "ok"})
    out: dict[str, Units] = {}
    if not len(frame):
        return out
    g = frame.groupby(["group", "pair"], sort=False)
    per = g.agg(label=("label", "first"), at=("at", "min"), imputed=("imputed", "any"), flagged=("flagged", "any"))
    cells = frame.groupby(["group", "pair", "opt"], sort=False)["score"]
    count = cells.size().unstack(fill_value=0).reindex(columns=[0, 1], fill_value=0)
    mean = cells.mean().unstack().reindex(columns=[0, 1])
    per = per.join(count.rename(columns={0: "na", 1: "nb"})).join(mean.rename(columns={0: "x", 1: "y"}))
    per = per.reset_index().sort_values(["group", "label" if by_config(df, choice) else "at"], kind="stable")
    for task, part in per.groupby("group", sort=True):
        if seeds is None:
            part = part[(part["na"] > 0) & (part["nb"] > 0)]    # stored rows (a replay): pairs only
        else:                                                    # a running study: the unbroken complete run
            short = ((part["na"] < seeds) | (part["nb"] < seeds)).to_numpy()
            part = part.iloc[:int(np.argmax(short)) if short.any() else len(part)]
        x, y = part["x"].to_numpy(dtype=float), part["y"].to_numpy(dtype=float)
        valued = ~(np.isnan(x) | np.isnan(y))                    # NaN: a mean without a declared worst score
        kept = part[valued]
        labels = [str(v) for v in kept["label"]]
        values = share_units(x[valued], y[valued]) if statistic == "share" else x[valued] - y[valued]  # > 0: A better
        out[str(task)] = Units(labels, np.asarray(values, dtype=float),
                               tuple(str(v) for v in kept.loc[kept["imputed"], "label"]),
                               tuple(str(v) for v in part.loc[~valued, "label"]),
                               tuple(str(v) for v in kept.loc[kept["flagged"], "label"]))
    return out


def worst_score(until: Until, mode: str) -> float | None:
    """The declared worst score a run without one gets in a mean: the bound of
    ``until.range`` on the losing side (None: no range is declared)."""
    if until.range is None:
        return None
    return until.range[0] if mode == "max" else until.range[1]


def upto_configurations(df: pd.DataFrame, upto: int) -> pd.DataFrame:
    """The rows of configurations c00000 … c(upto − 1) (all rows where there is no config_id)."""
    if "config_id" not in df.columns:
        return df
    number = pd.to_numeric(df["config_id"].astype(str).str[1:], errors="coerce")
    return df[(number < upto).to_numpy(dtype=bool)]


