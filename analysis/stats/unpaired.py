"""Comparisons without pairs: an imported random or TPE search, in which no
two configurations of different options agree on every other setting
(docs/reference/statistics.md, "Unpaired comparisons").

A win share, its † and the paired Δ need configurations run with every
option; a search that drew each configuration once, with one option, has
none. Such a comparison is judged **unpaired**: each option's sample is its
configurations (a configuration's score is the mean over its seeds, so seeds
are never counted as independent draws), and the statistics are those valid
for independent samples:

* **median difference** of each option to the first, with a percentile
  bootstrap interval that resamples each option's configurations on its own;
* **P(better)**: the chance that a configuration of the option beats one of
  the first (ties one half; :func:`analysis.stats.improvement.p_improvement`,
  unpaired), with its bootstrap interval;
* **ASO**: ε_min of "the option is almost stochastically dominant over the
  first" (:func:`analysis.stats.aso.aso`);
* **EVP**: per option, the expected test score of the best-dev configuration
  among n drawn (:func:`analysis.stats.evp.expected_selected`), at n = 1, 5
  and 10 where the option has that many; only with dev scores (never chosen
  by test).

:func:`coverage` counts, per task, the configurations and how many of them
pair (every option finished); a comparison is judged unpaired in a task
where fewer than 10 pair (:data:`MIN_PAIRS`: too few for a win share to say
anything) and fewer than half of them (:data:`PAIRED_SHARE`), and the paired table is kept beside it where any pair exists.
R&G's raw results pair only 2-4 % of their configurations, but 90 or more per
task, so they stay judged paired, as the paper judged them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..specs import ComparisonSpec, rows_where
from ..tables import Table, pct, pts
from .aso import aso
from .evp import expected_selected
from .improvement import p_improvement
from .pairing import paired_rows

__all__ = ["Coverage", "coverage", "Unpaired", "UnpairedOption", "UnpairedDelta", "unpaired", "unpaired_tables",
           "banner", "pairing_lines", "needs_pairs", "unpaired_choices", "PAIRED_SHARE", "MIN_PAIRS", "EVP_AT"]

PAIRED_SHARE = 0.5          # judged unpaired where fewer than this share of the configurations pair ...
MIN_PAIRS = 10              # ... and fewer than this many: too few for a win share to say anything
EVP_AT = (1, 5, 10)


@dataclass(frozen=True)
class Coverage:
    """How many configurations of one task's comparison there are and how many pair."""

    configs: int
    paired: int

    @property
    def unpaired(self) -> bool:
        """Judged unpaired: fewer than :data:`MIN_PAIRS` configurations pair, and fewer than :data:`PAIRED_SHARE` of them."""
        return self.configs > 0 and self.paired < MIN_PAIRS and self.paired < PAIRED_SHARE * self.configs


@dataclass(frozen=True)
class UnpairedOption:
    option: str
    configs: int                     # configurations with a finished score
    runs: int                        # finished runs (seeds) behind them
    median: float
    mean: float
    evp: dict[int, float] = field(default_factory=dict)     # n -> expected test score of the best-dev of n
    unscored: dict[str, int] = field(default_factory=dict)  # status -> runs not scored (failed, stopped, no score)


@dataclass(frozen=True)
class UnpairedDelta:
    option: str                      # compared with the first option
    median_diff: float               # median(option) - median(first), in score units
    ci: tuple[float, float]
    p_better: float                  # P(a configuration of option beats one of the first)
    p_ci: tuple[float, float]
    aso_eps: float                   # ε_min of "option is almost stochastically dominant over the first"
    aso_back: float                  # ε_min of "the first is almost stochastically dominant over the option"


@dataclass(frozen=True)
class Unpaired:
    task: str
    coverage: Coverage
    options: list[UnpairedOption]
    deltas: list[UnpairedDelta]
    mode: str = "max"


def _configs(df: pd.DataFrame, spec: ComparisonSpec, results) -> tuple[pd.DataFrame, list[str], pd.Series]:
    """One row per (task, configuration, option): its mean test score and dev score over its finished runs; and
    the runs not scored, counted by (task, option, status)."""
    source = rows_where(df, spec.where)
    rows, options = paired_rows(source, spec.choice, spec.options, "test_score", spec.ignore, results,
                                by="task" if "task" in df.columns else None)
    frame = pd.DataFrame({"task": rows.group, "pair": rows.pair, "opt": rows.opt, "score": rows.score,
                          "status": rows.status, "index": rows.index})
    frame["dev"] = source["dev_score"].to_numpy(dtype=float)[rows.index] if "dev_score" in source.columns \
        else np.nan
    done = (frame.status == "ok") & np.isfinite(frame.score)
    left = frame[~done].assign(status=frame.status.where(frame.status != "ok", "no score"))
    frame = frame[done]
    grouped = frame.groupby(["task", "pair", "opt"], sort=True).agg(score=("score", "mean"), dev=("dev", "mean"),
                                                                    runs=("score", "size")).reset_index()
    return grouped, options, left.groupby(["task", "opt", "status"]).size()


def coverage(df: pd.DataFrame, spec: ComparisonSpec, results=()) -> dict[str, Coverage]:
    """Per task: the configurations with a finished score, and those finished with every option."""
    return _coverage(*_configs(df, spec, results)[:2])


def _coverage(grouped: pd.DataFrame, options: list[str]) -> dict[str, Coverage]:
    out = {}
    for task, g in grouped.groupby("task", sort=True):
        per_pair = g.groupby("pair")["opt"].nunique()
        out[str(task)] = Coverage(int(len(per_pair)), int((per_pair == len(options)).sum()))
    return out


def unpaired(df: pd.DataFrame, spec: ComparisonSpec, results=(), *, n_bootstrap: int = 1000,
             seed: int = 0) -> dict[str, Unpaired]:
    """The unpaired statistics of ``spec`` per task where it is judged unpaired (see the module docstring)."""
    grouped, options, left = _configs(df, spec, results)
    sign = 1.0 if spec.mode == "max" else -1.0
    cover = _coverage(grouped, options)
    out = {}
    for task, g in grouped.groupby("task", sort=True):
        task = str(task)
        if not cover[task].unpaired:
            continue
        samples = [g[g.opt == i] for i in range(len(options))]
        opts = []
        for i, (name, s) in enumerate(zip(options, samples)):
            scores = s.score.to_numpy(dtype=float)
            mine = left[(left.index.get_level_values(0) == task) & (left.index.get_level_values(1) == i)]
            unscored = {str(st): int(n) for (_, _, st), n in sorted(mine.items())}
            evp = {}
            if len(s) and np.isfinite(s.dev.to_numpy(dtype=float)).any():
                ns = [n for n in EVP_AT if n <= int(np.isfinite(s.dev.to_numpy(dtype=float)).sum())]
                if ns:
                    means, _ = expected_selected(sign * s.dev.to_numpy(dtype=float), scores, ns)
                    evp = dict(zip(ns, (float(m) for m in means)))
            opts.append(UnpairedOption(name, int(len(s)), int(s.runs.sum()),
                                       float(np.median(scores)) if len(s) else float("nan"),
                                       float(scores.mean()) if len(s) else float("nan"), evp, unscored))
        deltas = []
        first = samples[0].score.to_numpy(dtype=float)
        rng = np.random.default_rng(seed)
        for name, s in zip(options[1:], samples[1:]):
            other = s.score.to_numpy(dtype=float)
            if len(first) < 2 or len(other) < 2:
                continue
            boots = np.array([np.median(other[rng.integers(0, len(other), len(other))])
                              - np.median(first[rng.integers(0, len(first), len(first))]) for _ in range(n_bootstrap)])
            lo, hi = np.quantile(boots, [0.025, 0.975])
            better = p_improvement(sign * other, sign * first, n_bootstrap=n_bootstrap, seed=seed)
            eps = aso(sign * other, sign * first, n_bootstrap=n_bootstrap, seed=seed).eps_min
            back = aso(sign * first, sign * other, n_bootstrap=n_bootstrap, seed=seed).eps_min
            deltas.append(UnpairedDelta(name, float(np.median(other) - np.median(first)), (float(lo), float(hi)),
                                        better.p, better.ci, float(eps), float(back)))
        out[task] = Unpaired(task, cover[task], opts, deltas, spec.mode)
    return out


def banner(name: str, by_task: dict[str, Unpaired]) -> str:
    """The sentence that says a comparison is judged unpaired, and why."""
    cover = [f"{u.coverage.paired} of {u.coverage.configs} configurations pair"
             + (f" in {task}" if task else "") for task, u in by_task.items()]
    return (f"{name} is judged unpaired: {'; '.join(cover)} (the same other settings finished with every "
            "option), as in a random or TPE search. No win share, † or paired Δ is computed from pairs that do not "
            "exist; each option's configurations are independent samples (a configuration's score is its mean over "
            "seeds).")


def unpaired_tables(name: str, by_task: dict[str, Unpaired]) -> list[tuple[str, Table]]:
    """The per-option table and the differences table of an unpaired comparison."""
    ns = sorted({n for u in by_task.values() for o in u.options for n in o.evp})
    per = Table(["Task", "option", "# configs", "runs", "not scored", "median", "mean"] + [f"EVP@{n}" for n in ns],
                [], numeric_from=2)
    diff = Table(["Task", "option", "vs", "Δ median [95% CI]", "P(better) [95% CI]", "ASO ε_min: option ≻ vs",
                  "ASO ε_min: vs ≻ option"], [], numeric_from=3)
    for task, u in by_task.items():
        for o in u.options:
            gone = ", ".join(f"{n} {st}" for st, n in o.unscored.items()) or "0"
            per.rows.append([task or "all", o.option, str(o.configs), str(o.runs), gone, pts(o.median, signed=False),
                             pts(o.mean, signed=False)] + [pts(o.evp[n], signed=False) if n in o.evp else "–"
                                                           for n in ns])
        for d in u.deltas:
            per_first = u.options[0].option
            diff.rows.append([task or "all", d.option, per_first,
                              f"{pts(d.median_diff)} [{pts(d.ci[0])}, {pts(d.ci[1])}]",
                              f"{pct(d.p_better)} [{pct(d.p_ci[0])}, {pct(d.p_ci[1])}]", f"{d.aso_eps:.3f}",
                              f"{d.aso_back:.3f}"])
    per.notes.append("runs: the finished runs behind the configurations; not scored: runs counted but left out, by "
                     "status (failed, stopped early by a pruner or scheduler, no score), so an option whose bad runs "
                     "were stopped early looks better than it is. Scores in points (score × 100); EVP@n: the expected "
                     "test score of the best-dev configuration among n drawn without replacement (– where an "
                     "option has fewer, or no dev score).")
    better = "higher" if all(u.mode == "max" for u in by_task.values()) else "lower"
    diff.notes.append(f"Each option against the first: Δ median in points with a bootstrap interval resampling each "
                      f"option's configurations on its own; P(better): the chance a configuration of the option "
                      f"scores {better} than one of the first (ties one half); ASO ε_min < 0.2: the left side is almost "
                      "stochastically dominant over the right (≻; 95% confidence).")
    return [(f"unpaired: {name}", per), (f"unpaired differences: {name}", diff)]


def needs_pairs(claim) -> bool:
    """A claim whose estimate is taken over paired configurations: a win share, or a delta between options."""
    return claim.kind == "share" or (claim.kind == "delta" and claim.choice is not None and claim.other is not None)


def unpaired_choices(df: pd.DataFrame, specs: list[ComparisonSpec], results=()) -> dict[str, str]:
    """Each compared choice judged unpaired in some task -> how many of its configurations pair, in words."""
    out = {}
    for spec in specs:
        cover = {task: c for task, c in coverage(df, spec, results).items() if c.unpaired}
        if cover:
            out[spec.choice] = "; ".join(f"{c.paired} of {c.configs} configurations pair" + (f" in {t}" if t else "")
                                         for t, c in cover.items())
    return out


def pairing_lines(df: pd.DataFrame, specs: list[ComparisonSpec], results=()) -> list[str]:
    """One line per comparison and task: how many configurations pair, and whether it is judged unpaired."""
    lines = []
    for spec in specs:
        for task, c in coverage(df, spec, results).items():
            where = f" ({task})" if task else ""
            lines.append(f"{spec.name}{where}: {c.paired} of {c.configs} configurations pair (finished with every "
                         f"option on the same other settings): "
                         + ("judged unpaired" if c.unpaired else "judged paired"))
    return lines
