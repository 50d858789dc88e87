"""``seedsweep report DIR -o report.html``: one self-contained HTML file.

plotly.js is inlined once (about 4.7 MB), so the file opens with no network:
attach it to a paper's supplement or a pull request. It holds the figures of
:mod:`analysis.figures.core` for every comparison of the run directory (ids
suffixed with the comparison, e.g. ``winshares-classifier``) and the same
tables as ``seedsweep report`` (the paper's layout).

Static images of the same figures (``--images FOLDER``, PNG or SVG, one file
per figure id) are rendered by Kaleido, which drives a local Chrome or
Chromium: offline it works wherever Debian's ``chromium`` (or Chrome) is
installed; ``BROWSER_PATH`` names another browser binary.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
from datetime import datetime, timezone
from pathlib import Path

import kaleido
import plotly.io as pio
from plotly.offline import get_plotlyjs

from seedsweep.study.errors import UserError
from seedsweep.study.files import write_text

from ..figures import core as F
from ..figures.budgetfigure import budget_figure
from ..figures.robustnessfigure import robustness_figure
from ..figures.seqfigure import sequence_figure
from ..figures.statfigures import dominance_figure, evp_figure, importance_figure, parallel_figure
from ..figures.trialfigures import learning_figure
from ..reading.load import study_tau
from ..stats.insights import compute
from ..stats.robustness import robustness_of
from .report import RunJudgement, judge_run, protocol_note, report

__all__ = ["html_report", "write_html_report", "report_figures", "slug", "write_images"]

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5rem auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.2rem 0.5rem; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.meta { color: #666; font-size: 0.85rem; }
"""


# WebGL figures (parallel coordinates) are drawn only while they are on screen:
# a browser keeps about 16 WebGL contexts alive and drops the oldest, and
# software rendering of many at once makes the page take a minute to open.
_LAZY_JS = """
(function () {
  const config = %s;
  const shown = new Set();
  const observer = new IntersectionObserver(entries => entries.forEach(entry => {
    const div = entry.target;
    if (entry.isIntersecting && !shown.has(div)) {
      const spec = JSON.parse(document.getElementById(div.id + '-figure').textContent);
      shown.add(div);
      Plotly.newPlot(div, spec.data, spec.layout, config);
    } else if (!entry.isIntersecting && shown.has(div)) {
      shown.delete(div);
      Plotly.purge(div);
    }
  }), {rootMargin: '200px'});
  document.querySelectorAll('div.lazy-figure').forEach(div => observer.observe(div));
})();
"""


def _webgl(fig) -> bool:
    return any(t.type in ("parcoords", "scattergl", "splom") for t in fig.data)


def _lazy(fig, fig_id: str) -> str:
    """A placeholder of the figure's height and its JSON, drawn by _LAZY_JS when scrolled to."""
    spec = pio.to_json(fig, validate=False).replace("</", "<\\/")
    height = int(fig.layout.height or 500)
    return (f"<div id='{html.escape(fig_id)}' class='lazy-figure' style='height:{height}px'></div>"
            f"<script type='application/json' id='{html.escape(fig_id)}-figure'>{spec}</script>")


def slug(name: str) -> str:
    """A figure-id-safe form of a comparison name."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", str(name)).strip("-") or "x"


def report_figures(view: F.RunView, *, n_bootstrap: int = 1000, seed: int = 0, computed=None,
                   judged: RunJudgement | None = None) -> list[tuple[str, str, object]]:
    """(section title, figure id, figure) for every figure of the report, in
    order; ``computed``: :func:`analysis.stats.insights.compute` of the view, and
    ``judged``: :func:`analysis.pages.report.judge_run`'s, if found already."""
    if computed is None:
        computed = compute(view.df, view.specs, view.results, n_bootstrap=n_bootstrap, seed=seed)
    if judged is None:
        judged = judge_run(view, view.df, view.specs, view.results, imported=view.imported,
                           n_bootstrap=n_bootstrap, seed=seed)
    out: list[tuple[str, str, object]] = [("Progress", "progress", F.progress_figure(view))]
    decided = judged.decided
    for i, choice in enumerate(dict.fromkeys(t.choice for t in decided.tracked) if decided else ()):
        out.append(("Decisions" if i == 0 else "", f"sequence-{slug(choice)}",     # an adaptive study's sequences
                    sequence_figure(decided, choice, f"sequence-{slug(choice)}")))
    tuned = judged.tuned
    if tuned is not None:       # a tuned study: its budget curves instead of the paired configurations' figures
        out.append(("Tuned comparison", f"budget-{slug(tuned.choice)}",
                    budget_figure(tuned, f"budget-{slug(tuned.choice)}")))
    for spec in view.specs:
        by_task = computed.by_task[spec.name]
        stats = computed.stats[spec.name]
        s = slug(spec.name)
        title = spec.name if spec.name == spec.choice else f"{spec.name} ({spec.choice})"
        if tuned is None:          # (a tuned study pairs no configurations and repeats no seeds)
            out += [(f"Comparison: {title}", f"winshares-{s}",
                     F.winshares_figure(by_task, spec, f"winshares-{s}")),
                    ("", f"distribution-{s}", F.distribution_figure(by_task, spec, f"distribution-{s}")),
                    ("", f"differences-{s}", F.differences_figure(by_task, spec, f"differences-{s}")),
                    ("", f"sigma-{s}", F.sigma_figure(by_task, spec, f"sigma-{s}")),
                    ("", f"dominance-{s}", dominance_figure(stats, f"dominance-{s}")),
                    ("", f"evp-{s}", evp_figure(stats, f"evp-{s}")),
                    ("", f"parallel-{s}", parallel_figure(stats, "score", f"parallel-{s}"))]
        if not view.imported and tuned is None:
            out.append(("", f"seed-distribution-{s}",
                        F.seed_distribution_figure(view.df, spec, f"seed-distribution-{s}")))
        if not view.imported:
            out.append(("", f"learning-{s}", learning_figure(view.epochs, view.df, spec, f"learning-{s}")))
    tau = study_tau(view)
    for i, spec in enumerate(s for s in view.specs if robustness_of(view.df, s, view.results, tau) is not None):
        rob = robustness_of(view.df, spec, view.results, tau)
        out.append(("Robustness to the evaluation sets" if i == 0 else "", f"robustness-{slug(spec.name)}",
                    robustness_figure(rob, f"robustness-{slug(spec.name)}")))
    for i, group in enumerate(computed.importance):
        fig_id = "importance" if len(computed.importance) == 1 else f"importance-{slug(group.spec.name)}"
        out.append(("Hyperparameter importance" if i == 0 else "", fig_id,
                    importance_figure(group.by_task, ", ".join(group.names), fig_id)))
    out.append(("Seed variance", "seeds", F.seeds_figure(view.df, view.results)))
    if not view.imported:
        keys = F.default_trials(view.df, view.spec(None))
        out.append(("Single trials: the median-scoring trial of each option", "curves",
                    F.curves_figure(view.epochs, view.df, keys)))
        if view.confusion is not None:
            out.append(("", "confusion", F.confusion_figure(view.confusion, view.df, keys)))
    out.append(("Diverged and failed trials", "problems", F.problems_figure(view.df)))
    return out


def html_report(run_dir: str | Path, *, n_bootstrap: int = 1000, seed: int = 0) -> str:
    """The report of ``run_dir`` as one HTML document (figures and tables)."""
    view = F.load_view(run_dir)
    computed = compute(view.df, view.specs, view.results, n_bootstrap=n_bootstrap, seed=seed)
    judged = judge_run(view, view.df, view.specs, view.results, imported=view.imported,
                       n_bootstrap=n_bootstrap, seed=seed)
    parts = [f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
             f"<title>seedsweep report: {html.escape(view.study)}</title><style>{_STYLE}</style>"
             f"<script type='text/javascript'>{get_plotlyjs()}</script></head><body>",
             f"<h1>seedsweep report: {html.escape(view.study)}</h1>",
             f"<p class='meta'>Run directory {html.escape(str(run_dir))}; {len(view.df)} trial rows; generated "
             f"{datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}. Scores are test scores at the best "
             "dev epoch; figures plot them as stored (fractions), tables in points.</p>"]
    note = protocol_note(view.df)
    if note:                                 # not every test score is at seedsweep's best dev epoch
        parts.append(f"<p class='meta' id='test-protocol'>{html.escape(note)}</p>")
    led = judged.led
    if led is not None and not led.sealed:   # first and loud: the verdicts below are unsealed
        parts.append("<div id='seal-broken' style='border:3px solid #b00020;padding:0.6em;color:#b00020'>"
                     "<b>THE SEAL IS BROKEN: the verdicts of this report are unsealed.</b><ul>"
                     + "".join(f"<li>{html.escape(p)}</li>" for p in led.problems) + "</ul></div>")
    config = {"displaylogo": False, "responsive": True}
    for title, fig_id, fig in report_figures(view, n_bootstrap=n_bootstrap, seed=seed, computed=computed,
                                               judged=judged):
        if title:
            parts.append(f"<h2>{html.escape(title)}</h2>")
        if _webgl(fig):
            parts.append(_lazy(fig, fig_id))
        else:
            parts.append(pio.to_html(fig, include_plotlyjs=False, full_html=False, div_id=fig_id, config=config,
                                     validate=False))
    parts.append("<h2>Tables</h2>")
    parts.append(report(view, "html", n_bootstrap=n_bootstrap, seed=seed, computed=computed,
                        judged=judged))
    parts.append(f"<script type='text/javascript'>{_LAZY_JS % json.dumps(config)}</script>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def write_html_report(run_dir: str | Path, out: str | Path, **kwargs) -> None:
    """Write :func:`html_report` to ``out`` atomically."""
    write_text(html_report(run_dir, **kwargs), out)


def write_images(run_dir: str | Path, folder: str | Path, fmt: str = "png", *, n_bootstrap: int = 1000,
                 seed: int = 0) -> list[Path]:
    """Every report figure as ``folder/<figure id>.<fmt>`` (png or svg); returns the files."""
    if fmt not in ("png", "svg"):
        raise UserError(f"--image-format {fmt}", "unknown image format.", "Use png or svg.")
    if not os.environ.get("BROWSER_PATH"):
        found = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
        if found:
            os.environ["BROWSER_PATH"] = found
    view = F.load_view(run_dir)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    figs = report_figures(view, n_bootstrap=n_bootstrap, seed=seed)
    tmps = [folder / f".tmp-{fig_id}.{fmt}" for _, fig_id, _ in figs]
    specs = [{"fig": fig.to_dict(), "path": tmp,
              "opts": {"format": fmt, "width": 1100, "height": int(fig.layout.height or 500), "scale": 1}}
             for (_, _, fig), tmp in zip(figs, tmps)]
    try:
        # One browser session for every figure. Kaleido called directly rather
        # than through pio.write_images, which cannot turn MathJax off: its page
        # would fetch MathJax from a CDN (no figure here uses TeX), which is a
        # download at run time and, measured, twice the rendering time.
        kaleido.write_fig_from_object_sync(specs, kopts={"mathjax": False})
    except Exception as exc:  # noqa: BLE001 -- Kaleido reports a missing browser in several ways
        for tmp in tmps:
            tmp.unlink(missing_ok=True)
        raise UserError(f"--images {folder}", f"cannot render the figures ({type(exc).__name__}: "
                        f"{str(exc).splitlines()[0][:200] if str(exc) else ''}).",
                        "Static images need Kaleido and a local Chrome or Chromium (apt-get install chromium; "
                        "BROWSER_PATH names another binary).") from None
    written = []
    for (_, fig_id, _), tmp in zip(figs, tmps):
        path = folder / f"{fig_id}.{fmt}"
        tmp.replace(path)
        written.append(path)
    return written
