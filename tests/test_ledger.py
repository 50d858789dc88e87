"""``seedsweep ledger``: one page over many run directories. Two small
synthetic run directories (one whose claims reproduce, one whose claims do
not) and one without claims; every verdict and outcome on the page is checked
against :func:`analysis.stats.claims.judge` on each directory's own trials -- in
Chromium for the HTML page (no console error), by text for Markdown -- and
the located errors exit 2 with nothing written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from seedsweep import analysis
from seedsweep.analysis.pages.report import comparisons_of
from seedsweep.analysis.stats.claims import judge
from seedsweep.cli import main
from seedsweep.study.spec.claimsfile import read_claims
from tests.rundirs import write_synthetic_run
from tests.test_claims import STUDY       # the synthetic study of the claims tests: CRF better by 0.02
from tests.test_dashboard import CHROMIUM, Page, browser  # noqa: F401 -- browser is the module's fixture

HOLDS = """
source: "a synthetic study: CRF is better"
deviations:
  - {what: "synthetic scores", why: "a test", impact: none}
claims:
  - {id: crf-wins, kind: share, choice: classifier, option: crf, target: 1.0, rule: {interval: true, gate: 0.5}}
  - {id: crf-better, kind: delta, choice: classifier, option: crf, other: softmax, target: 0.0, rule: {above: true}}
"""
FAILS = """
source: "a synthetic study: Softmax is better"
claims:
  - {id: softmax-better, kind: delta, choice: classifier, option: softmax, other: crf, target: 0.0, rule: {above: true}}
  - {id: softmax-wins, kind: share, choice: classifier, option: softmax, target: 1.0, rule: {interval: true, gate: 0.5}}
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Three run directories: claims that hold, claims that fail, no claims."""
    root = tmp_path_factory.mktemp("ledger")
    out = {}
    for name, claims in (("holds", HOLDS), ("fails", FAILS), ("bare", None)):
        out[name] = root / name
        write_synthetic_run(out[name], STUDY.replace("name: sealed", f"name: ledger-{name}"))
        if claims:
            (root / f"{name}.yaml").write_text(claims)
            assert main(["claims", "seal", str(root / f"{name}.yaml"), str(out[name])]) == 0
    return out


def expected(run: Path) -> tuple[str, dict[str, str]]:
    """(source, {claim id: verdict}) by judging each claim on the directory's trials, apart from the ledger."""
    claims = read_claims(run / "claims.yaml")
    specs, results = comparisons_of(run)
    df = analysis.load(run)
    return claims.source, {c.id: judge(c, df, specs=specs, results=results).verdict.verdict for c in claims.claims}


def test_the_markdown_ledger_shows_every_verdict_and_outcome_of_judge(runs, tmp_path):
    page = tmp_path / "ledger.md"
    assert main(["ledger", str(runs["holds"]), str(runs["fails"]), str(runs["bare"]), "-o", str(page)]) == 0
    text = page.read_text()
    rows = {cells[0]: cells for cells in (
        [c.strip() for c in line.strip("|").split("|")] for line in text.splitlines() if line.startswith("| "))}
    for name, outcome in (("holds", "reproduced"), ("fails", "not reproduced")):
        source, verdicts = expected(runs[name])
        assert set(verdicts.values()) == {"reproduced" if name == "holds" else "not reproduced"}
        assert rows[source][1] == outcome                       # the summary row of the source
        for cid, verdict in verdicts.items():
            assert rows[cid][6] == verdict, (cid, rows[cid])
    assert rows["no claims"][3] == "ledger-bare"
    assert "Claims sealed" in text and "after the results existed (seal holds)" in text


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed: 'make test' installs it")
def test_the_html_ledger_opens_in_chromium_with_the_verdicts_of_judge(runs, tmp_path, browser):  # noqa: F811
    out = tmp_path / "ledger.html"
    assert main(["ledger", str(runs["holds"]), str(runs["fails"]), str(runs["bare"]), "-o", str(out)]) == 0
    page = Page(browser, offline=True)
    page.page.goto(out.as_uri())
    summary = page.page.eval_on_selector_all(
        "#summary tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.innerText.trim()))")
    sections = page.page.eval_on_selector_all("section.study", """ss => ss.map(s => ({id: s.id,
        source: s.dataset.source, rows: [...s.querySelectorAll('table')].filter(t => t.caption &&
        t.caption.innerText === 'claims and verdicts').flatMap(t => [...t.tBodies[0].rows].map(
        r => [r.cells[0].innerText, r.cells[6].innerText, r.cells[6].className]))}))""")
    links = page.page.eval_on_selector_all("#summary a", "as => as.map(a => a.getAttribute('href'))")
    assert page.errors == [] and page.refused == []
    by_source = {r[0]: r for r in summary}
    for name, outcome in (("holds", "reproduced"), ("fails", "not reproduced")):
        source, verdicts = expected(runs[name])
        assert by_source[source][1] == outcome
        section = next(s for s in sections if s["source"] == source)
        assert {r[0]: r[1] for r in section["rows"]} == verdicts
        assert all(r[2].endswith(r[1].replace(" ", "-")) for r in section["rows"])   # each cell coloured by verdict
    assert by_source["no claims"][3] == "ledger-bare"
    assert sorted(links) == sorted("#" + s["id"] for s in sections)     # every study linked from the summary
    page.context.close()


def test_a_ledger_over_a_folder_that_is_not_a_run_directory_or_without_claims_exits_2(runs, tmp_path, capsys):
    out = tmp_path / "ledger.md"
    notrun = tmp_path / "notes"
    notrun.mkdir()
    assert main(["ledger", str(runs["holds"]), str(notrun), "-o", str(out)]) == 2
    assert f"{notrun}: this folder has no manifest.json" in capsys.readouterr().err
    assert main(["ledger", str(runs["bare"]), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert re.search(r"bare: no claims are sealed into any of these run directories", err)
    assert "seedsweep claims seal FILE DIR" in err
    assert not out.exists()


REPO = Path(__file__).resolve().parents[1]
LEDGER = REPO / "docs" / "ledger.md"
CLAIMS = sorted((REPO / "claims").glob("*.yaml"))


def ledger_rows(text: str) -> dict[str, list[str]]:
    """The committed ledger's table rows by their first cell."""
    return {cells[0]: cells for cells in ([c.strip() for c in line.strip("|").split("|")]
                                          for line in text.splitlines() if line.startswith("| "))}


@pytest.mark.parametrize("path", CLAIMS, ids=lambda p: p.name)
def test_every_shipped_claims_file_passes_check_and_is_in_the_committed_ledger_with_its_verdicts(path):
    claims = read_claims(path)
    rows = ledger_rows(LEDGER.read_text())
    assert rows[claims.source][1] in ("reproduced", "partially reproduced", "not reproduced")
    assert rows[claims.source][2].startswith(f"{len(claims.claims)}:")
    for c in claims.claims:
        assert rows[c.id][6] in ("reproduced", "not reproduced", "inconclusive"), (path.name, c.id)


def test_claim_ids_are_unique_across_the_shipped_claims_files():
    """The ledger's rows are found by claim id: two files sharing one would make a row ambiguous."""
    ids = [c.id for path in CLAIMS for c in read_claims(path).claims]
    assert len(ids) == len(set(ids)) and len(CLAIMS) >= 8


RG_CSV = Path(__import__("os").environ.get("SEEDSWEEP_SHARED_DATA", REPO.parent / "shared" / "data")) / \
    "rg2017" / "hyperparameter_results.csv.gz"


@pytest.mark.skipif(not RG_CSV.is_file(), reason=f"the R&G raw results are not at {RG_CSV} "
                                                  "(set SEEDSWEEP_SHARED_DATA)")
def test_the_rg2017_optimizer_and_character_claims_on_the_raw_results_match_the_committed_ledger(tmp_path):
    from seedsweep.analysis.reading.imported import import_csv

    out = import_csv(RG_CSV, tmp_path / "rg")
    specs, results = comparisons_of(out)
    df = analysis.load(out)
    rows = ledger_rows(LEDGER.read_text())
    judged = {}
    for name in ("rg2017_optimizer", "rg2017_chars"):
        for c in read_claims(REPO / "claims" / f"{name}.yaml").claims:
            judged[c.id] = judge(c, df, specs=specs, results=results)
            assert rows[c.id][6] == judged[c.id].verdict.verdict, c.id
    single = df[df.Setting == "SingleTask"]
    # oracles computed apart from judge: the comparison's win share, and the spread ranked by pandas
    shares = analysis.compare_tasks(single, "Optimizer", options=["Adam_org", "Nadam", "RMSProp", "Adadelta",
                                                                  "Adagrad", "SGD"], ignore=["Backend"],
                                    results=results)
    assert judged["nadam-pos"].verdict.estimate == pytest.approx(shares["POS"].shares["Nadam"])
    assert judged["nadam-pos"].verdict.estimate == pytest.approx(0.826, abs=0.001)     # the published share
    for task in ("POS", "Chunking", "NER"):
        sd = single[(single.task == task) & (single.status == "ok")].groupby("Optimizer", observed=True)[
            "test_score"].std()
        assert sd.idxmax() == "SGD" and judged[f"sgd-spread-largest-{task.lower()}"].verdict.verdict == "reproduced"
