"""Paired comparison of the options of one design choice (DESIGN.md, "Statistics").

This module covers pairing by ``config_id`` -- the layout of seedsweep's own
run directories: a configuration's score for an option is the mean of its
finished seeds; *paired configurations* are those with a finished score for
every option; per paired configuration the best option wins (ties split
equally); Δ is the median over paired configurations of (score_o − score_b),
b being the option with the largest win share.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["Comparison", "compare"]


@dataclass
class Comparison:
    """Win shares and median differences of one choice's options."""

    choice: str
    options: list[str]
    n: int                                   # paired configurations
    shares: dict[str, float]                 # option -> win share
    delta: dict[str, float]                  # option -> median(score_o - score_best); best -> 0
    best: str | None
    left_out: dict[str, int] = field(default_factory=dict)   # reason -> configurations

    def markdown(self) -> str:
        """The paper's layout: configurations, the win share of each option, a Δ row."""
        head = "| | # configs | " + " | ".join(self.options) + " |"
        rule = "|---|---:|" + "---:|" * len(self.options)
        share = f"| win share | {self.n} | " + " | ".join(f"{100 * self.shares[o]:.1f}%" for o in self.options) + " |"
        delta = "| Δ median | | " + " | ".join(
            ("best" if o == self.best else f"{100 * self.delta[o]:+.2f}") for o in self.options) + " |"
        lines = [f"**{self.choice}**", "", head, rule, share, delta]
        if self.left_out:
            lines += ["", "left out: " + ", ".join(f"{n} configurations ({why})" for why, n in self.left_out.items())]
        return "\n".join(lines)


def compare(df: pd.DataFrame, choice: str, *, options: list | None = None, score: str = "test_score") -> Comparison:
    """Compare the options of ``choice`` over the paired configurations of ``df``.

    ``df`` is a trials table (see :func:`analysis.load`). Rows whose status is
    not ``ok`` do not count as finished; configurations missing an option are
    left out and counted in ``left_out`` by reason.

    >>> cmp = compare(load("runs/quickstart"), "classifier")   # doctest: +SKIP
    >>> cmp.shares                                            # doctest: +SKIP
    {'softmax': 0.1, 'crf': 0.9}
    """
    rows = df[df["choice"] == choice]
    if options is None:
        options = list(dict.fromkeys(rows["option"].astype(str)))
    options = [str(o) for o in options]
    rows = rows[rows["option"].astype(str).isin(options)]
    ok = rows[(rows["status"] == "ok") & rows[score].notna()]
    table = ok.groupby(["config_id", "option"])[score].mean().unstack("option").reindex(columns=options)
    configs = set(rows["config_id"])
    complete = table.dropna()
    left_out: dict[str, int] = {}
    for cid in sorted(configs - set(complete.index)):
        statuses = set(rows.loc[rows["config_id"] == cid, "status"])
        why = "diverged" if "diverged" in statuses else "failed" if "failed" in statuses else "missing option"
        left_out[why] = left_out.get(why, 0) + 1
    n = len(complete)
    shares = {o: 0.0 for o in options}
    if n:
        values = complete.to_numpy()
        top = values == values.max(axis=1, keepdims=True)
        wins = (top / top.sum(axis=1, keepdims=True)).sum(axis=0)
        shares = {o: float(w / n) for o, w in zip(options, wins)}
    best = max(options, key=lambda o: shares[o]) if n else None
    delta = {o: (float(np.median(complete[o] - complete[best])) if n else float("nan")) for o in options}
    return Comparison(choice=choice, options=options, n=n, shares=shares, delta=delta, best=best, left_out=left_out)
