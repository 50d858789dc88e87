"""Tamper-evident seals: an edit of the sealed claims file, of the manifest, or
of both (consistently, as a careful forger would) is caught by ``claims
verify`` (exit 1), ``report`` in every format (the problem first, every
verdict "(unsealed)") and the dashboard (in a browser); a resume refuses to
store results under a broken seal.

The oracles are computed without the code under test: digests by coreutils'
``sha256sum``, stamps read from the Parquet footers by pyarrow directly.
"""

from __future__ import annotations

import contextlib
import html as html_module
import importlib
import io
import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from seedsweep.cli import main
from seedsweep.study.store.rundir import RunDir
from tests.conftest import seedsweep_here
from tests.test_claims import CLAIMS, STUDY, sha256sum, snapshot
from tests.rundirs import write_synthetic_run
from tests.test_dashboard import FIGURE_READY, Page, browser, dashboard  # noqa: F401 -- the fixtures

KEY = b"seedsweep.sealed_claims_sha256"


class Done:
    """A command's exit code and output."""

    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def cli(*args: str) -> Done:
    """The command line in this process (the real ``main``; no interpreter start-up per call)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return Done(code, out.getvalue(), err.getvalue())


def footer_stamps(folder: Path) -> list[list[str]]:
    """The stamp of every trials file, read from its footer by pyarrow."""
    files = sorted(folder.glob("trials/*.parquet")) + sorted(folder.glob("shards/trials-*.parquet"))
    files += [folder / "trials.parquet"] if (folder / "trials.parquet").is_file() else []
    return [json.loads((pq.read_schema(p).metadata or {}).get(KEY, b"[]")) for p in files]


@pytest.fixture(scope="module")
def sealed_run(tmp_path_factory, worker_ray, ray_local) -> tuple[Path, Path]:
    """A synthetic study run with its claims sealed first: (run directory, study file), on the worker's Ray."""
    tmp = tmp_path_factory.mktemp("sealed")
    space, claims = tmp / "study.yaml", tmp / "claims.yaml"
    space.write_text(STUDY)
    claims.write_text(CLAIMS)
    out = tmp / "run"
    r = seedsweep_here("run", str(space), "--out", str(out), "--claims", str(claims), "--quiet", "--address",
                       worker_ray)           # in this process, joined to the worker's Ray (tests.conftest.joined_here)
    assert r.returncode == 0, r.stderr
    return out, space


def test_every_trials_file_written_after_sealing_carries_the_sealed_hash(sealed_run, tmp_path):
    out, _ = sealed_run
    digest = sha256sum(out / "claims.yaml")
    stamps = footer_stamps(out)
    assert len(stamps) >= 24 // 6 and all(s == [digest] for s in stamps), stamps   # parts and shards alike
    copy = tmp_path / "run"
    shutil.copytree(out, copy)
    # as if the claims were sealed after most results existed: only the part listed last is stamped
    listed = list(RunDir(copy).part_keys(RunDir(copy).trials_dir).values())
    for part in listed[:-1]:
        table = pq.read_table(part)
        pq.write_table(table.replace_schema_metadata({k: v for k, v in table.schema.metadata.items() if k != KEY}),
                       part)
    assert sorted(map(len, footer_stamps(copy))) == [0] * (len(listed) - 1) + [1]
    assert cli("compact", str(copy)).returncode == 0
    assert footer_stamps(copy) == [[digest]], "compaction keeps every stamp of the files it merges"
    r = cli("claims", "verify", str(copy))
    assert r.returncode == 0, r.stderr
    assert "the seal holds" in r.stdout and digest in r.stdout


def tamper(out: Path, how: str) -> None:
    """Edit the sealed claims (target 0.5 -> 0.9 of crf-wins' gate), the manifest, or both consistently."""
    claims, manifest = out / "claims.yaml", out / "manifest.json"
    if how in ("claims", "both"):
        claims.write_text(claims.read_text().replace("gate: 0.5}}\n  - {id: crf-better", "gate: 0.9}}\n  - {id: crf-better"))
    if how in ("manifest", "both"):
        record = json.loads(manifest.read_text())
        record["claims"]["sha256"] = sha256sum(claims) if how == "both" else "0" * 64
        manifest.write_text(json.dumps(record, indent=2))


@pytest.mark.parametrize("how", ["claims", "manifest", "both"])
def test_an_edit_after_sealing_is_caught_by_verify_report_dashboard_and_run(sealed_run, tmp_path, how, browser,  # noqa: F811
                                                                             dashboard):  # noqa: F811
    out, space = sealed_run
    run = tmp_path / "run"
    shutil.copytree(out, run)
    if how == "both":
        assert cli("compact", str(run)).returncode == 0      # the stamp survives compaction
    before_edit = (run / "claims.yaml").read_text()
    tamper(run, how)
    assert (run / "claims.yaml").read_text() != before_edit or how == "manifest"

    fix = f"so that 'seedsweep claims verify {run}' passes"     # one wording: verify, report, run
    r = cli("claims", "verify", str(run))
    assert r.returncode == 1, r.stdout + r.stderr
    assert fix in r.stderr
    assert "BROKEN" in r.stderr and ("manifest.json was edited" in r.stderr if how == "both" else
                                     "claims.yaml changed after it was sealed" in r.stderr)

    for fmt in ("markdown", "html", "latex"):
        text = cli("report", str(run), "--format", fmt).stdout
        assert "THE SEAL IS BROKEN" in text, fmt
        assert text.index("THE SEAL IS BROKEN") < text.index("claims and verdicts"), "the problem comes first"
        assert "(unsealed)" in text and "UNSEALED" in text, fmt
        assert fix in html_module.unescape(text).replace("\\_", "_"), fmt
    page_file = tmp_path / "report.html"
    assert cli("report", str(run), "-o", str(page_file)).returncode == 0
    html = page_file.read_text()
    assert "id='seal-broken'" in html and html.index("seal-broken") < html.index("<h2>")

    page = Page(browser)
    page.page.goto(dashboard(run))
    page.wait(FIGURE_READY, ["claims"])
    meta = page.figure("claims")["meta"]
    assert meta["sealed"] is False and meta["problems"] and meta["outcome"].startswith("UNSEALED")
    assert "THE SEAL IS BROKEN" in page.page.inner_text("#claims")
    assert page.errors == []
    page.close()

    # a resume stores nothing under a broken seal: exit 2, the directory unchanged
    before = snapshot(run)
    r = cli("run", str(space), "--out", str(run), "--quiet")
    assert r.returncode == 2 and fix in " ".join(r.stderr.split()), r.stderr
    assert snapshot(run) == before

    # the fix the message names: seal the source file again (claims.yaml edits only)
    if how == "claims":
        source = json.loads((run / "manifest.json").read_text())["claims"]["source"]
        assert cli("claims", "seal", source, str(run)).returncode == 0
        assert cli("claims", "verify", str(run)).returncode == 0


def test_the_html_report_verifies_the_seal_once_and_decides_once(sealed_run, monkeypatch):
    from seedsweep.analysis.pages.htmlreport import html_report

    verdicts_module, report_module = (importlib.import_module(m) for m in ("seedsweep.analysis.reading.claimverdicts",
                                                                         "seedsweep.analysis.pages.report"))

    calls = {"verify": 0, "decided": 0}

    def counted(name, real):
        def call(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(verdicts_module, "verify", counted("verify", verdicts_module.verify))
    monkeypatch.setattr(report_module, "study_decided", counted("decided", report_module.study_decided))
    page = html_report(sealed_run[0], n_bootstrap=50)
    assert "claims and verdicts" in page and "seal-broken" not in page
    assert calls == {"verify": 1, "decided": 1}


def test_an_intact_seal_reads_as_sealed_and_verify_needs_claims(sealed_run, tmp_path):
    out, _ = sealed_run
    text = cli("report", str(out)).stdout
    assert "THE SEAL IS BROKEN" not in text and "(unsealed)" not in text and "claims and verdicts" in text
    bare = tmp_path / "bare"
    write_synthetic_run(bare, STUDY, only=4)        # the real store, no claims sealed
    assert footer_stamps(bare) and all(s == [] for s in footer_stamps(bare)), "no claims, no stamp"
    r = cli("claims", "verify", str(bare))
    assert r.returncode == 2 and "no claims are sealed" in r.stderr and str(bare) in r.stderr
