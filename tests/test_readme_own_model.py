"""The tutorial "Your own model" (``docs/tutorials/your-own-model.md``, the
newcomer's second page) run exactly as written: its shell block (in a folder
holding the repository's ``examples/`` and ``.venv``) and its Python block
(from ``examples/pytorch``), each on its own local Ray; and the README's own
example the same way."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from seedsweep.study.store.rundir import RunDir
from tests.conftest import REPO, kill_tagged

pytestmark = pytest.mark.slow


TUTORIAL = REPO / "docs" / "tutorials" / "your-own-model.md"


def block(marker: str, page: Path = TUTORIAL) -> str:
    """The fenced code between ``<!-- marker: begin -->`` and ``<!-- marker: end -->`` on ``page``."""
    text = page.read_text()
    inner = text.split(f"<!-- {marker}: begin -->", 1)[1].split(f"<!-- {marker}: end -->", 1)[0]
    return re.search(r"```\w*\n(.*?)```", inner, re.S).group(1)


def run_as_written(tmp_path: Path, shell: str, python: str | None = None):
    """``shell`` (bash -e) in a folder holding ``examples/`` and the tests' venv as ``.venv``,
    then ``python`` from ``examples/pytorch``, on private Rays; their completed processes."""
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    (tmp_path / ".venv").symlink_to(Path(sys.executable).parents[1])      # the venv that runs the tests
    tag = uuid.uuid4().hex
    ray_tmp = tempfile.mkdtemp(prefix="ssr-", dir="/tmp")
    env = {**os.environ, "SEEDSWEEP_TEST_TAG": tag, "RAY_TMPDIR": ray_tmp, "RAY_AUTH_MODE": "disabled"}
    py = None
    try:
        sh = subprocess.run(["bash", "-e", "-c", shell], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=900)
        assert sh.returncode == 0, sh.stdout[-3000:] + sh.stderr[-3000:]
        if python is not None:
            py = subprocess.run([str(tmp_path / ".venv" / "bin" / "python"), "-c", python],
                                cwd=tmp_path / "examples" / "pytorch", env=env, capture_output=True, text=True,
                                timeout=600)
            assert py.returncode == 0, py.stdout[-3000:] + py.stderr[-3000:]
    finally:
        kill_tagged(tag, ray_tmp)
        shutil.rmtree(ray_tmp, ignore_errors=True)
    return sh, py


def test_the_your_own_model_commands_run_as_written(tmp_path):
    shell, python = block("your-own-model"), block("your-own-model-python")
    assert "seedsweep run examples/pytorch/command.yaml" in shell and "seedsweep.define(" in python
    sh, py = run_as_written(tmp_path, shell, python)
    assert "resolved: function fit in" in sh.stdout
    assert re.search(r"\| command \| 2 \| win share \| [\d.]+%†? \| [\d.]+%†? \|", sh.stdout), sh.stdout[-3000:]
    assert re.search(r"^function +your code", sh.stdout, re.M) and re.search(r"^command +your code", sh.stdout, re.M)
    tables = {}
    for run in ("runs/digits-function", "runs/digits-command", "examples/pytorch/runs/digits-api"):
        table = RunDir(tmp_path / run).read_trials().to_pandas().set_index("trial_key").sort_index()
        assert len(table) == 8 and set(table.status) == {"ok"}, (run, table[["status", "reason"]])
        tables[run] = table
    # the same model two ways (a function seeded by seedsweep, the script seeding itself from {seed}):
    # the same epochs, dev and test scores, trial by trial
    a, b = tables["runs/digits-function"], tables["runs/digits-command"]
    for column in ("epochs_run", "best_epoch", "dev_score", "test_score"):
        assert a[column].tolist() == pytest.approx(b[column].tolist(), abs=1e-6), column
    assert "8 trials in the study; ran 8" in py.stdout
    assert (tmp_path / "examples" / "pytorch" / "digits-api.yaml").read_text().startswith("name: digits-api\n")


def test_the_readme_example_runs_as_written(tmp_path):
    shell = block("readme-own-study", REPO / "README.md")
    assert "seedsweep run examples/pytorch/function.yaml" in shell
    sh, _ = run_as_written(tmp_path, shell)
    assert re.search(r"\| function \| 2 \| win share \| [\d.]+%†? \| [\d.]+%†? \|", sh.stdout), sh.stdout[-3000:]
    table = RunDir(tmp_path / "runs/digits-function").read_trials().to_pandas()
    assert len(table) == 8 and set(table.status) == {"ok"}
