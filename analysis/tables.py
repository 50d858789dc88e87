"""The paper's comparison tables as Markdown, HTML and LaTeX.

Layout (Reimers & Gurevych 2017, one table per design choice): per task the
number of paired configurations and the win share of each option with its
mark (†), a Δ row (median difference to the option with the largest win
share, with its bootstrap CI, in points = score × 100), a Wilcoxon p row, a
σ row (points, with its mark); and an average row over tasks (mean share,
mean Δ, mean σ). Notes under the table say what was left out and why.

>>> from seedsweep.analysis import compare_tasks
>>> t = comparison_table(compare_tasks(load(run_dir), "classifier"))
>>> print(t.markdown(title="classifier").splitlines()[4])
| synthetic | 6 | win share | 100.0% | 0.0% |
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["pct", "pts", "p_text", "Table", "comparison_table", "seed_variance_table", "importance_table",
           "dominance_table", "DAGGER"]

DAGGER = "†"


@dataclass
class Table:
    """A header, rows of text cells and notes; rendered three ways."""

    header: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    numeric_from: int = 1        # columns from here on are right-aligned

    def markdown(self, title: str | None = None) -> str:
        """The table in Markdown (numbers right-aligned), under a bold ``title`` when given."""
        def line(cells):
            return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"
        align = ["---" if i < self.numeric_from else "---:" for i in range(len(self.header))]
        out = ([f"**{title}**", ""] if title else []) + [line(self.header), "|" + "|".join(align) + "|"]
        out += [line(r) for r in self.rows]
        if self.notes:
            out += [""] + [f"- {n}" for n in self.notes]
        return "\n".join(out)

    def html(self, title: str | None = None) -> str:
        """The table as an HTML ``<table>``, under an ``<h3>`` ``title`` when given."""
        e = html.escape
        head = "".join(f"<th>{e(c)}</th>" for c in self.header)
        body = "\n".join(
            "<tr>" + "".join((f'<td class="num">{e(c)}</td>' if i >= self.numeric_from else f"<td>{e(c)}</td>")
                             for i, c in enumerate(r)) + "</tr>" for r in self.rows)
        cap = f"<caption>{e(title)}</caption>" if title else ""
        notes = "".join(f"<li>{e(n)}</li>" for n in self.notes)
        return (f'<table class="seedsweep">{cap}<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table>'
                + (f'\n<ul class="notes">{notes}</ul>' if notes else ""))

    def latex(self, title: str | None = None) -> str:
        """The table as a LaTeX ``table`` float, captioned with ``title`` when given."""
        spec = "".join("l" if i < self.numeric_from else "r" for i in range(len(self.header)))
        lines = [r"\begin{table}[t]", r"\centering"]
        if title:
            lines.append(r"\caption{" + _tex(title) + "}")
        lines += [r"\begin{tabular}{" + spec + "}", r"\hline",
                  " & ".join(_tex(c) for c in self.header) + r" \\", r"\hline"]
        lines += [" & ".join(_tex(c) for c in r) + r" \\" for r in self.rows]
        lines += [r"\hline", r"\end{tabular}"]
        if self.notes:
            lines.append(r"\par\footnotesize " + " ".join(_tex(n) for n in self.notes))
        lines.append(r"\end{table}")
        return "\n".join(lines)

    def render(self, fmt: str, title: str | None = None) -> str:
        """The table in ``fmt``: markdown, html or latex."""
        if fmt not in ("markdown", "html", "latex"):
            raise ValueError(f"unknown table format {fmt!r}; use markdown, html or latex")
        return getattr(self, fmt)(title)


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
        DAGGER: r"$^\dagger$", "Δ": r"$\Delta$", "σ": r"$\sigma$", "−": "--", "–": "--", "ε": r"$\varepsilon$",
        "≻": r"$\succ$", "½": r"$\frac{1}{2}$"}


def _tex(text: str) -> str:
    return "".join(_TEX.get(ch, ch) for ch in text)


def pct(x: float) -> str:
    """A share as a percentage with one decimal (– when missing)."""
    return "–" if x is None or not math.isfinite(x) else f"{100 * x:.1f}%"


def pts(x: float, signed: bool = True) -> str:
    """A score difference in points (score x 100), signed by default (– when missing)."""
    if x is None or not math.isfinite(x):
        return "–"
    text = f"{100 * x:+.2f}" if signed else f"{100 * x:.2f}"
    return text.replace("-", "−")


def p_text(x: float) -> str:
    """A p-value as text: three decimals, or scientific below 0.001 (– when missing)."""
    if x is None or not math.isfinite(x):
        return "–"
    return f"{x:.3f}" if x >= 0.001 else f"{x:.1e}"


def comparison_table(by_task: dict, *, options: list[str] | None = None) -> Table:
    """The paper's table for one choice from ``{task: Comparison}``."""
    comps = [c for c in by_task.values()]
    if options is None:
        options = list(dict.fromkeys(o for c in comps for o in c.options))
    header = ["Task", "# configs", ""] + options
    rows: list[list[str]] = []
    notes: list[str] = []
    for task, c in by_task.items():
        if c.n == 0:
            rows.append([task or "all", "0", "win share"] + ["–"] * len(options))
        else:
            rows.append([task or "all", str(c.n), "win share"]
                        + [pct(c.shares.get(o)) + (DAGGER if o in c.marks else "") for o in options])
            rows.append(["", "", f"Δ to {c.best} [{100 * c.confidence:.0f}% CI]"]
                        + [("best" if o == c.best else
                            f"{pts(c.delta[o])} [{pts(c.delta_ci[o][0])}, {pts(c.delta_ci[o][1])}]"
                            if o in c.delta else "–") for o in options])
            rows.append(["", "", "Wilcoxon p"] + [("" if o == c.best else p_text(c.wilcoxon_p.get(o, float("nan"))))
                                                   for o in options])
            rows.append(["", "", "σ"] + [pts(c.sigma.get(o, float("nan")), signed=False)
                                         + (DAGGER if o in c.sigma_marks else "") for o in options])
        lost = ", ".join(f"{n} {why}" for why, n in sorted(c.left_out.items()))
        if lost:
            notes.append(f"{task or 'all'}: configurations left out (not every option finished): {lost}.")
        rows_lost = ", ".join(f"{n} {why}" for why, n in sorted(c.unfinished_rows.items()))
        if rows_lost:
            notes.append(f"{task or 'all'}: rows without a finished score: {rows_lost}.")
    if len(comps) > 1:
        have = [c for c in comps if c.n]
        rows.append(["Average", str(sum(c.n for c in comps)), "win share"]
                    + [v if v == "–" else f"{v}%" for v in
                       [_fmt_mean([100 * c.shares.get(o, float("nan")) for c in have], 1) for o in options]])
        rows.append(["", "", "Δ (mean of medians)"]
                    + [_fmt_mean([100 * c.delta.get(o, float("nan")) for c in have], 2, signed=True)
                       for o in options])
        rows.append(["", "", "σ (mean)"]
                    + [_fmt_mean([100 * c.sigma.get(o, float("nan")) for c in have], 2) for o in options])
    alphas = sorted({c.alpha for c in comps}) or [0.01]
    level = " / ".join(f"{a:g}" for a in alphas)
    if any(c.mode == "min" for c in comps):
        notes.insert(0, "Lower scores are better (mode min): the lowest score wins a configuration.")
    notes.insert(0, f"{DAGGER}: marked options are not significantly worse than the best "
                    f"(sign test for win shares, Brown–Forsythe for σ, p < {level}); no mark: no option is. "
                    "Δ and σ in points (score × 100).")
    return Table(header=header, rows=rows, notes=notes, numeric_from=3)


def _fmt_mean(values: list[float], digits: int = 1, signed: bool = False) -> str:
    v = np.array([x for x in values if x is not None and math.isfinite(x)], dtype=float)
    if len(v) == 0:
        return "–"
    text = f"{v.mean():+.{digits}f}" if signed else f"{v.mean():.{digits}f}"
    return text.replace("-", "−")


def seed_variance_table(frame) -> Table:
    """The paper's Table 2 from :func:`analysis.stats.seeds.seed_variance` output."""
    rows = [[str(r.task), str(r.configurations), pts(r.median, False), pts(r.p95, False), pts(r.max, False)]
            for r in frame.itertuples()]
    return Table(header=["Task", "# configs", "median (max − min)", "95th percentile", "max"], rows=rows,
                 notes=["Per configuration run with ≥ 2 seeds: max − min of the test score over its seeds, "
                        "in points (score × 100)."])


def selection_table(frame, choice: str) -> Table:
    """The mean test score per option under three epoch-selection rules
    (:func:`analysis.stats.seeds.selection_scores` output), as the sentiment
    reproduction study's Table 6 sets them side by side."""
    rows = [[str(r.task) or "all", str(r.option), str(r.n), pts(r.best_dev, False), pts(r.last, False),
             pts(r.best_test, False), pts(r.best_test - r.best_dev)] for r in frame.itertuples()]
    return Table(header=["Task", choice, "n", "best dev epoch", "last epoch", "best test epoch", "peeking − best dev"],
                 rows=rows, numeric_from=2,
                 notes=["Mean test score of the finished runs, in points, with the epoch chosen by the dev set "
                        "(what seedsweep reports), the last epoch (no model selection) and the test set itself "
                        "(peeking: it inflates the score and must never be reported as a result)."])


def option_distribution_table(frame, choice: str) -> Table:
    """Per task and option: the seed distribution of every finished run
    (:func:`analysis.stats.seeds.option_distributions` output)."""
    rows = [[str(r.task) or "all", str(r.option), str(r.n), pts(r.min, False), pts(r.median, False),
             pts(r.max, False), pts(r.sd, False), pts(r.peeking_gain, False), str(r.not_ok)]
            for r in frame.itertuples()]
    return Table(header=["Task", choice, "n", "min", "median", "max", "σ", "peeking gain", "not ok"], rows=rows,
                 notes=["Every finished run (configurations × seeds) of each option; scores in points. Peeking "
                        "gain: median of (best test epoch's score − the reported score at the best dev epoch). "
                        "Not ok: diverged or failed runs of the option (kept in the run directory)."],
                 numeric_from=2)


def importance_table(imp, task: str) -> Table:
    """fANOVA importance of one task (:class:`analysis.stats.importance.Importance`), largest first."""
    rows = [[str(i), name, pct(v)] for i, (name, v) in enumerate(imp.importance.items(), 1)]
    used = (f"a deterministic subsample of {imp.used} of its {imp.finished} finished rows" if imp.subsampled
            else f"all {imp.finished} finished rows")
    return Table(header=["Rank", "Hyperparameter", "Importance"], rows=rows, numeric_from=2,
                 notes=[f"{task or 'all'}: fANOVA main effects of a seeded 32-tree random forest on {used}; "
                        "shares of the explained variance, summing to 100%."])


def dominance_table(by_task: dict) -> Table:
    """Every ordered pair of options per task (:class:`analysis.stats.dominance.Dominance` per task)."""
    rows: list[list[str]] = []
    level = conf = tau = None
    for task, d in by_task.items():
        if d is None:
            continue
        level, conf, tau = d.level, d.confidence, d.tau
        for p in d.pairs:
            rows.append([task or "all", p.a, p.b, f"{p.eps_min:.3f}", f"{p.p:.3f} [{p.p_ci[0]:.3f}, {p.p_ci[1]:.3f}]",
                         p_text(p.wilcoxon_holm)])
    notes = []
    if level is not None:
        notes.append(f"ε_min: ASO upper bound of the share of A's quantile function below B's, at {100 * level:.3g}% "
                     f"(Bonferroni over the ordered pairs); A dominates B when ε_min < {tau:g}. P(A > B): paired "
                     f"share of configurations A wins (ties ½) with its {100 * conf:g}% bootstrap CI. Wilcoxon "
                     "signed-rank p of the paired differences, Holm-adjusted over the pairs. On the configurations' "
                     "mean scores over seeds.")
    return Table(header=["Task", "A", "B", "ε_min(A ≻ B)", "P(A > B) [CI]", "Wilcoxon p (Holm)"], rows=rows,
                 notes=notes, numeric_from=3)
