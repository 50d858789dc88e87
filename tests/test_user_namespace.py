"""A user's project with its own ``study.py``, ``analysis.py`` and ``utils.py``
beside ``train.py``: studied as a function and as a command, each module the
user wrote is the one their code gets (on the Ray worker and in the command's
process), and seedsweep's own imports are unaffected (the driver runs from the
project's folder with ``python -m seedsweep``, so that folder is first on its
``sys.path``). The scores are computed from the user's modules, so a trial
that got seedsweep's ``study`` or ``analysis`` fails or scores otherwise."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from seedsweep.study.store.rundir import RunDir

# the user's three modules: names research code uses every day
OWN = {
    "study.py": 'OWNER = "user"\nBIAS = 0.5\n',
    "analysis.py": 'OWNER = "user"\n\n\ndef score(optimizer):\n    return {"sgd": 0.1, "adam": 0.2}[optimizer]\n',
    "utils.py": 'OWNER = "user"\nSTEP = 0.01\n',
}

TRAIN = '''
import argparse

import analysis
import study
import utils


def owners():
    return {m.__name__: getattr(m, "OWNER", m.__file__) for m in (study, analysis, utils)}


def dev_at(optimizer, epoch):
    return study.BIAS + analysis.score(optimizer) + utils.STEP * epoch


def fit(trial):
    if owners() != {"study": "user", "analysis": "user", "utils": "user"}:
        raise RuntimeError(f"not the user's modules: {owners()}")
    for epoch in range(1, trial.max_epochs + 1):
        dev = dev_at(trial.params["optimizer"], epoch)
        trial.report(dev=dev, test=dev - 0.1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--optimizer")
    parser.add_argument("--epochs", type=int)
    args = parser.parse_args()
    if owners() != {"study": "user", "analysis": "user", "utils": "user"}:
        raise SystemExit(f"not the user's modules: {owners()}")
    for epoch in range(1, args.epochs + 1):
        print(f"epoch {epoch} dev {dev_at(args.optimizer, epoch):.4f}", flush=True)
    print(f"test {dev_at(args.optimizer, args.epochs) - 0.1:.4f}", flush=True)
'''

COMMON = """
samples: 1
seeds: 2
compare: {optimizer: [sgd, adam]}
train: {max_epochs: 3, patience: null}
"""
STUDIES = {
    "function": "name: own-modules-function\nfamily: function\ntask: {function: train.py:fit}\n",
    "command": textwrap.dedent("""\
        name: own-modules-command
        family: command
        task:
          command: [python, train.py, --optimizer, "{optimizer}", --epochs, "3"]
          metrics:
            dev: {regex: "dev ([0-9.]+)"}
            epoch: {regex: "epoch ([0-9]+)"}
            test: {regex: "test ([0-9.]+)", at: end}
        """),
}

# by hand from the user's modules: BIAS + score + STEP * epoch, best at the last epoch (3), test = dev - 0.1
EXPECTED_TEST = {"sgd": 0.5 + 0.1 + 0.03 - 0.1, "adam": 0.5 + 0.2 + 0.03 - 0.1}


@pytest.mark.slow
@pytest.mark.parametrize("family", ["function", "command"])
def test_a_users_own_study_analysis_and_utils_modules_are_the_ones_their_code_gets(family, tmp_path, worker_ray):
    project = tmp_path / "project"
    project.mkdir()
    for name, text in {**OWN, "train.py": TRAIN}.items():
        (project / name).write_text(text)
    (project / "study.yaml").write_text(STUDIES[family] + COMMON)
    out = tmp_path / "run"
    run = subprocess.run([sys.executable, "-m", "seedsweep", "run", "study.yaml", "--out", str(out),
                          "--address", worker_ray, "--quiet"], cwd=project, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = RunDir(out).read_trials().to_pylist()
    assert len(rows) == 4 and {r["status"] for r in rows} == {"ok"}, [(r["status"], r["reason"]) for r in rows]
    for r in rows:
        assert r["best_epoch"] == 3 and r["test_score"] == pytest.approx(EXPECTED_TEST[r["option"]], abs=1e-9), r
    # seedsweep's own analysis, from the same folder: the report reads the run with seedsweep's modules
    report = subprocess.run([sys.executable, "-m", "seedsweep", "report", str(out), "-o", str(tmp_path / "r.md")],
                            cwd=project, capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr[-3000:]
    assert "adam" in (tmp_path / "r.md").read_text()
