"""A report reads its run directory once: ``seedsweep report DIR -o x.html``
(and the Markdown report) of an adaptive study with sealed claims, whose
sections each ask for the comparisons, the study's τ, its ``until:``, its
tuning and its seal, read ``manifest.json`` once and the trials once
(:mod:`analysis.reading.opened`). Counted at the store's readers
(:class:`study.store.rundir.RunDir`), in this process, without Ray."""

from __future__ import annotations

from collections import Counter

import pytest

from seedsweep.cli import main
from seedsweep.study.store.rundir import RunDir
from tests.rundirs import write_sealed_run

STUDY = """
name: one-reading
family: synthetic
samples: 6
seeds: 2
compare: {classifier: [softmax, crf]}
space: {optimizer: {choice: [adam, nadam]}}
task: {effects: {classifier: {crf: 0.05}}, noise: 0.002}
until: {confidence: 0.95, budget: {samples: 12}}
"""

CLAIMS = """
source: "a test of one reading"
claims:
  - {id: crf-wins, kind: share, choice: classifier, option: crf, target: 0.9, rule: {interval: true, gate: 0.5}}
"""


@pytest.fixture(scope="module")
def sealed_until_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("one-reading")
    write_sealed_run(folder / "run", STUDY, CLAIMS)
    return folder


@pytest.mark.parametrize("output", ["report.html", "report.md"])
def test_a_report_reads_the_manifest_and_the_trials_once(sealed_until_run, output, monkeypatch, capsys):
    reads: Counter = Counter()
    for name in ("manifest", "read_trials", "read_epochs"):
        real = getattr(RunDir, name)
        monkeypatch.setattr(RunDir, name, lambda self, *a, _real=real, _name=name, **k:
                            reads.update([_name]) or _real(self, *a, **k))
    out = sealed_until_run / output
    assert main(["report", str(sealed_until_run / "run"), "-o", str(out)]) == 0, capsys.readouterr().err
    text = out.read_text()
    assert "crf-wins" in text and "Decisions" in text          # the claims and the decisions sections ran
    assert reads["manifest"] == 1 and reads["read_trials"] == 1, dict(reads)
    assert reads["read_epochs"] <= 1, dict(reads)
