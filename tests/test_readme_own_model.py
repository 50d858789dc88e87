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


def run_as_written(tmp_path: Path, shell: str, python: str | None = None, *, fresh: bool = True):
    """``shell`` (bash -e) in a folder holding ``examples/`` and the tests' venv as ``.venv``
    (``fresh``: made now; else the folder an earlier block ran in), then ``python`` from
    ``examples/pytorch``, on private Rays; their completed processes."""
    if fresh:
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


@pytest.fixture(scope="module")
def tutorial(tmp_path_factory):
    """The tutorial's shell and Python blocks run once, in a fresh folder: (folder, shell, processes)."""
    folder = tmp_path_factory.mktemp("own-model")
    shell, python = block("your-own-model"), block("your-own-model-python")
    sh, py = run_as_written(folder, shell, python)
    return folder, shell, sh, py


def test_the_your_own_model_commands_run_as_written(tutorial):
    tmp_path, shell, sh, py = tutorial
    python = block("your-own-model-python")
    assert "seedsweep run examples/pytorch/command.yaml" in shell and "seedsweep.define(" in python
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


def test_the_readme_example_runs_as_written(tutorial):
    """The README's block runs as written where the tutorial ran: its study command is, word for word, the
    tutorial's first run (which ran it from scratch), so here the same command finds every trial stored,
    stores nothing twice, and the report prints the table."""
    folder, tutorial_shell, _, _ = tutorial
    shell = block("readme-own-study", REPO / "README.md")
    run_line = next(line for line in shell.splitlines() if " run " in line)
    assert run_line == ".venv/bin/seedsweep run examples/pytorch/function.yaml --out runs/digits-function --quiet"
    assert run_line.removeprefix(".venv/bin/") in [line.split("#")[0].strip() for line in tutorial_shell.splitlines()]
    stored = RunDir(folder / "runs/digits-function").read_trials().to_pandas().sort_values("trial_key")
    sh, _ = run_as_written(folder, shell, fresh=False)
    assert re.search(r"\| function \| 2 \| win share \| [\d.]+%†? \| [\d.]+%†? \|", sh.stdout), sh.stdout[-3000:]
    table = RunDir(folder / "runs/digits-function").read_trials().to_pandas().sort_values("trial_key")
    assert len(table) == 8 and set(table.status) == {"ok"}
    assert table.trial_key.tolist() == stored.trial_key.tolist() and table.finished_at.tolist() == \
        stored.finished_at.tolist(), "the README's run stored trials again"
