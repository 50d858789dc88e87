"""Robustness to semantic phenomena: τ-robustness of populations of models.

Definitions (docs/reference/statistics.md, "Test beds and robustness"): a model with test
accuracy p and accuracy p′ on a phenomenon's evaluation sentences (the
result column ``eval_<phenomenon>``) is **τ-robust** when p′ ≥ p − τ and
**bounded invariant** when p − τ ≤ p′ ≤ p + τ; τ\\* = max(0, p − p′).

:func:`robustness` reduces the finished (status ``ok``) rows of one compared
choice to one :class:`PopulationRow` per population and phenomenon: a
population is the seeds of one configuration and option (``by="config"``,
the default), or every row of an option (``by=None``), or the rows sharing a
column's value (``by="architecture"``). Per row: n, p mean ± sd and p′ mean ±
sd (sd with ddof 1), τ\\* mean, the shares τ-robust and bounded invariant.
Between every two options of a group, per phenomenon, a two-sided
Mann–Whitney U test on p′ (scipy), Holm-adjusted over the phenomena; a
mark † where the adjusted p is below ``alpha``.

>>> import pandas as pd
>>> df = pd.DataFrame({"choice": "augment", "option": ["none", "none", "neg", "neg"], "config_id": "c0",
...                    "status": "ok", "test_score": [0.8, 0.9, 0.8, 0.9], "eval_negation": [0.5, 0.85, 0.75, 0.9]})
>>> r = robustness(df, "augment", tau=0.1)
>>> [(x.option, round(x.p_prime_mean, 3), round(x.tau_star_mean, 3), x.robust_share) for x in r.rows]
[('none', 0.675, 0.175, 0.5), ('neg', 0.825, 0.025, 1.0)]
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from seedsweep.study.schema import IDENTITY, OUTCOME, TUNED

from ..specs import rows_where
from ..tables import DAGGER, Table
from .multiple import holm

__all__ = ["robustness", "Robustness", "PopulationRow", "robustness_table", "eval_columns",
           "population_label", "robustness_of", "MAX_POPULATIONS"]


@dataclass
class PopulationRow:
    group: str
    option: str
    phenomenon: str
    n: int
    p_mean: float
    p_sd: float
    p_prime_mean: float
    p_prime_sd: float
    tau_star_mean: float
    robust_share: float
    bounded_share: float
    p_prime: np.ndarray = field(repr=False)      # the population's p′, one per model
    p: np.ndarray = field(repr=False)


@dataclass
class Robustness:
    choice: str
    tau: float
    alpha: float
    phenomena: list[str]
    rows: list[PopulationRow]
    #: (group, phenomenon, option a, option b) -> (Mann–Whitney U, p, Holm-adjusted p)
    tests: dict[tuple[str, str, str, str], tuple[float, float, float]]
    left_out: int                                 # rows of the choice not ok or without a score

    def row(self, group: str, option: str, phenomenon: str) -> PopulationRow | None:
        """The row of one population, option and phenomenon, or None."""
        for r in self.rows:
            if (r.group, r.option, r.phenomenon) == (group, option, phenomenon):
                return r
        return None


def eval_columns(df: pd.DataFrame) -> list[str]:
    """The ``eval_<phenomenon>`` columns of a trials table, in table order."""
    return [c for c in df.columns if str(c).startswith("eval_")]


def _sd(x: np.ndarray) -> float:
    return float(np.std(x, ddof=1)) if len(x) > 1 else math.nan


def population_label(rows: pd.DataFrame, config_id: str, varying: list[str]) -> str:
    """A configuration's name in the tables: its id and the hyperparameters that vary between configurations."""
    first = rows[rows["config_id"] == config_id].iloc[0]
    return config_id + "".join(f" {c}={first[c]}" for c in varying)


def _groups(rows: pd.DataFrame, by: str | None, choice: str, results: list[str]) -> pd.Series:
    if by is None:
        return pd.Series("all", index=rows.index)
    if by != "config":
        return rows[by].astype(str)
    skip = {f.name for f in [*IDENTITY, *TUNED, *OUTCOME]} | set(results) | {choice, "dev_score"}
    params = [c for c in rows.columns if c not in skip and not str(c).startswith("eval_")]
    per_config = rows.drop_duplicates("config_id")
    varying = [c for c in params if per_config[c].astype(str).nunique() > 1]
    labels = {cid: population_label(rows, cid, varying) for cid in per_config["config_id"]}
    return rows["config_id"].map(labels)


def robustness(df: pd.DataFrame, choice: str, *, phenomena: list[str] | None = None, tau: float = 0.1,
               score: str = "test_score", by: str | None = "config", options: list[str] | None = None,
               results: list[str] | tuple = (), alpha: float = 0.05) -> Robustness:
    """The robustness of every population of ``choice``'s options (see the module docstring)."""
    from scipy.stats import mannwhitneyu

    rows = df[df["choice"].astype(str) == choice] if "choice" in df else df
    phenomena = phenomena or [c[len("eval_"):] for c in eval_columns(rows)]
    cols = [f"eval_{p}" for p in phenomena]
    ok = (rows["status"].astype(str) == "ok") & rows[score].notna() if "status" in rows else rows[score].notna()
    left_out = int((~ok).sum())
    rows = rows[ok]
    group_of = _groups(rows, by, choice, list(results))
    options = options or list(dict.fromkeys(rows["option"].astype(str)))
    out: list[PopulationRow] = []
    tests: dict[tuple[str, str, str, str], tuple[float, float, float]] = {}
    for group in dict.fromkeys(group_of):
        g = rows[group_of == group]
        for phenomenon, col in zip(phenomena, cols):
            for option in options:
                sel = g[g["option"].astype(str) == option]
                both = sel[[score, col]].dropna()
                if both.empty:
                    continue
                p, q = both[score].to_numpy(float), both[col].to_numpy(float)
                out.append(PopulationRow(str(group), option, phenomenon, len(p), float(p.mean()), _sd(p),
                                         float(q.mean()), _sd(q), float(np.maximum(0.0, p - q).mean()),
                                         float((q >= p - tau).mean()), float((np.abs(q - p) <= tau).mean()), q, p))
        for i, a in enumerate(options):
            for b in options[i + 1:]:
                pvals, stats = [], []
                for phenomenon in phenomena:
                    ra = next((r for r in out if (r.group, r.option, r.phenomenon) == (str(group), a, phenomenon)), None)
                    rb = next((r for r in out if (r.group, r.option, r.phenomenon) == (str(group), b, phenomenon)), None)
                    if ra is None or rb is None:
                        stats.append(math.nan)
                        pvals.append(math.nan)
                        continue
                    res = mannwhitneyu(ra.p_prime, rb.p_prime, alternative="two-sided")
                    stats.append(float(res.statistic))
                    pvals.append(float(res.pvalue))
                adjusted, _ = holm(pvals, alpha) if pvals else (np.array([]), None)
                for phenomenon, u, pv, adj in zip(phenomena, stats, pvals, adjusted):
                    tests[(str(group), phenomenon, a, b)] = (u, pv, float(adj))
    return Robustness(choice, tau, alpha, phenomena, out, tests, left_out)


MAX_POPULATIONS = 12      # more configurations than this: one population per option


def robustness_of(df: pd.DataFrame, spec, results=(), tau: float = 0.1) -> Robustness | None:
    """The robustness of a report's comparison ``spec`` (None without ``eval_`` columns): per
    population when the choice has at most :data:`MAX_POPULATIONS` configurations, else per option."""
    rows = rows_where(df, spec.where)
    if not eval_columns(rows) or "option" not in rows:
        return None
    rows = rows[rows["choice"].astype(str) == spec.choice] if "choice" in rows else rows
    by = "config" if "config_id" in rows and rows["config_id"].nunique() <= MAX_POPULATIONS else None
    return robustness(rows, spec.choice, tau=tau, by=by, options=[str(o) for o in spec.options] or None,
                      results=results)


def _pm(mean: float, sd: float) -> str:
    return f"{mean:.3f}" + ("" if math.isnan(sd) else f" ± {sd:.3f}")


def _versus(rob: Robustness, r: PopulationRow) -> str:
    parts = []
    for (group, phenomenon, a, b), (_, _, adj) in rob.tests.items():
        if group == r.group and phenomenon == r.phenomenon and r.option in (a, b) and not math.isnan(adj):
            other = b if r.option == a else a
            parts.append(f"{other}: {adj:.3g}{DAGGER if adj < rob.alpha else ''}")
    return "; ".join(parts) or "–"


def robustness_table(rob: Robustness) -> Table:
    """One row per population and phenomenon: p and p′ (mean ± sd, accuracies), τ* mean, the
    shares τ-robust and bounded invariant, and the Holm-adjusted Mann–Whitney p against each other option."""
    rows = [[r.group, r.phenomenon, r.option, str(r.n), _pm(r.p_mean, r.p_sd), _pm(r.p_prime_mean, r.p_prime_sd),
             f"{r.tau_star_mean:.3f}", f"{100 * r.robust_share:.0f}%", f"{100 * r.bounded_share:.0f}%", _versus(rob, r)]
            for r in sorted(rob.rows, key=lambda r: (r.group, rob.phenomena.index(r.phenomenon)))]
    notes = [f"p: test accuracy, p′: accuracy on the phenomenon's evaluation sentences, mean ± sd over the "
             f"population's models; τ* = max(0, p − p′); τ-robust: p′ ≥ p − τ, bounded invariant: |p′ − p| ≤ τ, "
             f"at τ = {rob.tau:g}. Last column: two-sided Mann–Whitney U on p′ against each other option, "
             f"Holm-adjusted over the {len(rob.phenomena)} phenomena; {DAGGER}: below {rob.alpha:g}."]
    if rob.left_out:
        notes.append(f"Left out: {rob.left_out} trials of {rob.choice} (diverged, failed or without a score).")
    return Table(["Population", "Phenomenon", rob.choice, "n", "p", "p′", "τ*", "τ-robust", "bounded", "vs (p, Holm)"],
                 rows, notes, numeric_from=3)
