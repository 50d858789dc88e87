"""The reproduction ledger (docs/reference/statistics.md, "The ledger"): the sealed claims of many
run directories judged on their own trials and grouped by source (a claims
file's ``source``), for ``seedsweep ledger DIR [DIR ...]``.

Per source: the outcome over all its claims (:func:`analysis.stats.verdict.outcome`);
per study: when its claims were sealed relative to its results, whether the
seal holds, the claims table of :func:`analysis.reading.claimverdicts.claim_verdict_tables` (estimate,
interval, target, rule, verdict, why) and the declared deviations. A run
directory without sealed claims is listed as "no claims"; a folder that is
not a run directory is a :class:`study.errors.UserError` naming it, before
anything is judged, so nothing half-done is written.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from seedsweep.study.errors import UserError
from seedsweep.study.store.rundir import RunDir

from ..reading.claimverdicts import ClaimVerdicts, claim_verdicts, claim_verdict_tables
from ..reading.load import comparisons_of, load
from ..stats.verdict import outcome

__all__ = ["Study", "collect", "sources", "source_outcome", "ledger_markdown", "ledger_html"]

NO_CLAIMS = "no claims"


@dataclass
class Study:
    """One run directory of the ledger: its name, its judged claims (None: none sealed) and its report's file."""

    path: Path
    name: str
    led: ClaimVerdicts | None
    report: Path | None                 # DIR/report.html when it exists

    @property
    def anchor(self) -> str:
        """The id of the study's section on the page."""
        return "study-" + re.sub(r"[^a-z0-9]+", "-", self.name.lower()).strip("-")

    @property
    def source(self) -> str:
        """The claims file's source, or :data:`NO_CLAIMS`."""
        return self.led.claims.source if self.led is not None and self.led.claims is not None else NO_CLAIMS

    @property
    def verdicts(self) -> list[str]:
        """The verdicts of the study's claims, in file order (empty without claims)."""
        return [r.verdict.verdict for r in self.led.results] if self.led is not None else []

    def sealing(self) -> str:
        """When the claims were sealed relative to the results, and whether the seal holds."""
        if self.led is None:
            return "nothing sealed"
        rec = self.led.record
        when = "after the results existed" if rec.get("results_existed") else "before any result existed"
        state = "seal holds" if self.led.sealed else "SEAL BROKEN: " + "; ".join(self.led.problems)
        return f"{rec.get('sealed_at', '?')}, {when} ({state})"


def collect(dirs, *, seed: int = 0) -> list[Study]:
    """The studies of ``dirs`` in the order given, each judged on its own trials.
    Every folder must be a run directory (checked for all before any is judged);
    when none holds sealed claims, the error names them all. ``seed``: the bootstrap intervals' seed."""
    paths = [Path(d) for d in dirs]
    if not paths:
        raise UserError("seedsweep ledger", "no run directory given.", "Give one or more run directories.")
    for p in paths:
        RunDir(p).require()
    studies = []
    for p in paths:
        manifest = RunDir(p).manifest()
        name = str(manifest.get("study") or p.name)
        specs, results = comparisons_of(p)
        df = load(p)
        led = claim_verdicts(p, df, specs, results, seed=seed)
        studies.append(Study(p, name, led, p / "report.html" if (p / "report.html").is_file() else None))
    if all(s.led is None for s in studies):
        raise UserError(", ".join(map(str, paths)), "no claims are sealed into any of these run directories, so "
                        "the ledger would be empty.", "Seal a claims file first: 'seedsweep run SPACE --out DIR "
                        "--claims FILE', or 'seedsweep claims seal FILE DIR' for an existing or imported one.")
    names = [s.name for s in studies]
    for s in studies:                      # studies sharing a name (three imports of one file) go by their folder
        if names.count(s.name) > 1:
            s.name = s.path.name if [p.name for p in paths].count(s.path.name) == 1 else s.path.as_posix()
    return studies


def sources(studies: list[Study]) -> dict[str, list[Study]]:
    """The studies with sealed claims grouped by source, in first-seen order."""
    out: dict[str, list[Study]] = {}
    for s in studies:
        if s.led is not None:
            out.setdefault(s.source, []).append(s)
    return out


def source_outcome(group: list[Study]) -> str:
    """reproduced / partially reproduced / not reproduced over every claim of a
    source's studies; "UNSEALED (...)" when any of their seals is broken."""
    verdicts = [v for s in group for v in s.verdicts]
    result = outcome(verdicts) if verdicts else "no claims to judge"
    return result if all(s.led.sealed for s in group) else f"UNSEALED ({result}): a seal is broken"


def _counts(verdicts: list[str]) -> str:
    names = ("reproduced", "not reproduced", "inconclusive")
    parts = [f"{sum(v == n for v in verdicts)} {n}" for n in names if any(v == n for v in verdicts)]
    return ", ".join(parts) or "none"


def _summary_rows(studies: list[Study]) -> list[tuple[list[str], list[Study]]]:
    """(source, outcome, claims counted, study names) per source, then one "no claims" row per study without."""
    rows = []
    for source, group in sources(studies).items():
        verdicts = [v for s in group for v in s.verdicts]
        rows.append(([source, source_outcome(group), f"{len(verdicts)}: {_counts(verdicts)}",
                      ", ".join(s.name for s in group)], group))
    rows += [([NO_CLAIMS, "–", "0", s.name], [s]) for s in studies if s.led is None]
    return rows


def _report_hint(s: Study, fmt: str) -> str:
    if s.report is not None:
        target = s.report.as_posix()
        return f"Full report: [{target}]({target})." if fmt == "markdown" else target
    return f"Full report: `seedsweep report {s.path.as_posix()} -o {s.path.as_posix()}/report.html`." \
        if fmt == "markdown" else ""


def ledger_markdown(studies: list[Study], *, command: str = "") -> str:
    """The ledger as Markdown: the summary over sources, then one section per study."""
    out = ["# Reproduction ledger", ""]
    if command:
        out += [f"Regenerate: `{command}`", ""]
    header = ["Source", "Outcome", "Claims", "Studies"]
    out += ["| " + " | ".join(header) + " |", "|---|---|---|---|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r, _ in _summary_rows(studies)]
    for s in studies:
        out += ["", f"## {s.name} <a id=\"{s.anchor}\"></a>", "", f"Run directory: `{s.path.as_posix()}`. "
                f"Source: {s.source}."]
        if s.led is None:
            out += ["", f"{NO_CLAIMS}: nothing is sealed into this run directory "
                        "('seedsweep claims seal FILE DIR' seals a claims file)."]
            continue
        out += [f"Outcome: **{s.led.outcome}**. Claims sealed {s.sealing()}.", _report_hint(s, "markdown")]
        for title, table in claim_verdict_tables(s.led):
            out += ["", table.markdown(title=title)]
    return "\n".join(out).rstrip() + "\n"


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5rem auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.2rem 0.5rem; text-align: left; vertical-align: top; }
td.num { text-align: right; } caption { font-weight: bold; text-align: left; padding: 0.3rem 0; }
.reproduced { background: #d8f0d8; } .not-reproduced { background: #f6d5d5; }
.inconclusive { background: #f3ecd0; } .meta { color: #666; font-size: 0.85rem; }
"""


def _verdict_class(text: str) -> str:
    for name in ("not reproduced", "partially reproduced", "reproduced", "inconclusive"):
        if name in text:
            return name.replace(" ", "-")
    return ""


def ledger_html(studies: list[Study], *, command: str = "") -> str:
    """The ledger as one self-contained HTML page (no script, no network):
    the summary over sources with links to each study's section, then the sections."""
    e = html.escape
    stamp = datetime.now(timezone.utc).replace(microsecond=0).isoformat()
    rows = []
    for (source, result, claims, _), group in _summary_rows(studies):
        links = ", ".join(f'<a href="#{s.anchor}">{e(s.name)}</a>' for s in group)
        rows.append(f'<tr class="source"><td>{e(source)}</td><td class="outcome {_verdict_class(result)}">'
                    f"{e(result)}</td><td>{e(claims)}</td><td>{links}</td></tr>")
    parts = [f"<h1>Reproduction ledger</h1><p class=\"meta\">Generated {e(stamp)}"
             + (f" by <code>{e(command)}</code>" if command else "") + ".</p>",
             '<table id="summary"><thead><tr><th>Source</th><th>Outcome</th><th>Claims</th><th>Studies</th></tr>'
             "</thead><tbody>" + "".join(rows) + "</tbody></table>"]
    for s in studies:
        parts.append(f'<section class="study" id="{s.anchor}" data-source="{e(s.source)}"><h2>{e(s.name)}</h2>'
                     f'<p class="meta">Run directory <code>{e(s.path.as_posix())}</code>. Source: {e(s.source)}.</p>')
        if s.led is None:
            parts.append(f'<p class="no-claims">{NO_CLAIMS}: nothing is sealed into this run directory '
                         "(<code>seedsweep claims seal FILE DIR</code> seals a claims file).</p></section>")
            continue
        report = (f'Full report: <a href="{e(s.report.as_posix())}">{e(s.report.as_posix())}</a>.' if s.report else
                  f"Full report: <code>seedsweep report {e(s.path.as_posix())} -o "
                  f"{e(s.path.as_posix())}/report.html</code>.")
        parts.append(f'<p>Outcome: <b class="outcome {_verdict_class(s.led.outcome)}">{e(s.led.outcome)}</b>. '
                     f"Claims sealed {e(s.sealing())}. {report}</p>")
        for title, table in claim_verdict_tables(s.led):
            body = table.html(title=title)
            if title == "claims and verdicts":     # colour each verdict cell (the 7th column)
                body = re.sub(r'<td class="num">((?:not reproduced|reproduced|inconclusive)[^<]*)</td>',
                              lambda m: f'<td class="num verdict {_verdict_class(m.group(1))}">{m.group(1)}</td>',
                              body)
            parts.append(body)
        parts.append("</section>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Reproduction ledger</title>"
            f"<style>{_STYLE}</style></head><body>\n" + "\n".join(parts) + "\n</body></html>\n")
