"""The ``function`` family: the user's own Python function, defined in a
temporary folder outside the package, run on real Ray like a built-in
family (per-epoch rows, patience, the test score at the best dev epoch,
NaN loss, exceptions and retries, the changed-file refusal on resume), and
the shared loop (:func:`study.execution.trial.drive_trial`) checked by hand."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import pytest

from seedsweep import study
from seedsweep.study.errors import UserError
from seedsweep.study.execution.trial import NoMetrics, Record, drive_trial
from seedsweep.study.families.function.trialapi import Trial
from seedsweep.study.schema import Train
from seedsweep.study.store.rundir import RunDir
from tests.conftest import REPO, refused_by_check_and_run

# dev scores per epoch of the "good" option: the best is epoch 3 (0.74); with
# patience 2 seedsweep stops after epoch 5, so epochs 6.. are never counted
DEV = [0.50, 0.70, 0.74, 0.72, 0.73, 0.95, 0.96, 0.97]
TEST = [0.40, 0.61, 0.66, 0.69, 0.70, 0.90, 0.91, 0.92]

FIT = '''
import json, math, random, sys
from pathlib import Path

import torch

DEV = {dev}
TEST = {test}

def fit(trial):
    mode = trial.params["mode"]
    log = Path(trial.dir) / "calls.jsonl"
    for epoch in range(1, trial.max_epochs + 1):
        if mode == "boom":
            raise ValueError(f"boom in {{trial.key}} at epoch {{epoch}}")
        loss = float("nan") if mode == "nan" and epoch == 2 else 1.0 / epoch
        dev, test = DEV[epoch - 1], TEST[epoch - 1]
        stop = trial.report(dev=dev, test=test, loss=loss, precision=dev / 2)
        print(f"epoch {{epoch}} reported", flush=sys.stdout.isatty() or sys.stderr.writable())
        with log.open("a") as f:
            f.write(json.dumps({{"epoch": epoch, "told_to_stop": trial.should_stop, "random": random.random(),
                                "torch": torch.rand(1).item()}}) + "\\n")
        if stop and mode != "ignore_stop":
            break
'''

STUDY = """
name: own-function
family: function
samples: 1
seeds: [3]
compare:
  mode: [good, ignore_stop, nan, boom]
task:
  function: model/fit.py:fit
  extras: [precision]
train: {max_epochs: 8, patience: 2, retries: 1, metric: f1}
"""


@pytest.fixture
def user_study(tmp_path):
    """A study file whose function lives in a folder outside the package."""
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "fit.py").write_text(FIT.format(dev=DEV, test=TEST))
    path = tmp_path / "study.yaml"
    path.write_text(textwrap.dedent(STUDY).lstrip())
    return path


@pytest.mark.slow
def test_a_function_outside_the_package_is_studied_like_a_built_in_family(tmp_path, user_study, ray_local):
    out = tmp_path / "run"
    summary = study.run(user_study, out)
    assert summary.counts == {"ok": 2, "diverged": 1, "failed": 1}
    rd = RunDir(out)
    trials = {r["option"]: r for r in rd.read_trials().to_pylist()}
    epochs = rd.read_epochs().to_pandas()

    # patience 2 after the best epoch 3: five epochs counted, the test score of epoch 3 (by hand: TEST[2])
    for option in ("good", "ignore_stop"):
        row = trials[option]
        assert row["status"] == "ok" and row["epochs_run"] == 5 and row["best_epoch"] == 3, row
        assert row["dev_score"] == DEV[2] and row["test_score"] == TEST[2]
        assert row["test_score_max"] == max(TEST[:5]) and row["test_score_last"] == TEST[4]
        assert row["precision"] == DEV[2] / 2          # the extra at the best dev epoch
        mine = epochs[epochs.trial_key == row["trial_key"]].sort_values("epoch")
        assert mine.epoch.tolist() == [1, 2, 3, 4, 5], "no epoch after the stop is stored"
        assert mine.dev_score.tolist() == DEV[:5] and mine.test_score.tolist() == TEST[:5]
        assert mine.train_loss.tolist() == [1.0 / e for e in range(1, 6)]
    # the function was told: should_stop turned true at epoch 5; one that ignores it runs on uncounted
    calls = [__import__("json").loads(line) for line in
             (out / "work" / "c00000%2Fmode=good%2Fseed=3" / "calls.jsonl").read_text().splitlines()]
    assert [c["told_to_stop"] for c in calls] == [False] * 4 + [True]
    ignored = (out / "work" / "c00000%2Fmode=ignore_stop%2Fseed=3" / "calls.jsonl").read_text().splitlines()
    assert len(ignored) == 8
    # what the function printed is kept beside its folder
    printed = (out / "work" / "c00000%2Fmode=good%2Fseed=3.log").read_text().splitlines()
    assert printed == [f"epoch {e} reported" for e in range(1, 6)]

    assert trials["nan"]["status"] == "diverged" and "non-finite training loss" in trials["nan"]["reason"]
    boom = trials["boom"]
    assert boom["status"] == "failed" and boom["attempt"] == 2, boom          # retries: 1
    assert boom["reason"] == "exception: ValueError: boom in c00000/mode=boom/seed=3 at epoch 1", boom["reason"]

    # seeded before the call: Python's random gives the same first draw in every option of seed 3
    import random

    random.seed(3)
    assert calls[0]["random"] == random.random()
    import torch

    torch.manual_seed(3)
    assert calls[0]["torch"] == torch.rand(1).item(), "torch is seeded when the function's module imports it"

    # the function's file is hashed into the manifest; a changed file is refused on resume
    fit = tmp_path / "model" / "fit.py"
    assert rd.manifest()["code"] == {str(fit): __import__("hashlib").sha256(fit.read_bytes()).hexdigest()}
    fit.write_text(fit.read_text().replace("1.0 / epoch", "2.0 / epoch"))
    proc = subprocess.run([sys.executable, "-m", "seedsweep", "run", str(user_study), "--out", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert f"task ({fit})" in proc.stderr and "changed since the stored trials ran" in proc.stderr, proc.stderr
    assert rd.read_trials().num_rows == 4


class Scripted:
    """A model that drives its own loop through a list of (loss, dev, test)."""

    def __init__(self, epochs, *, obey=True):
        self.epochs, self.obey, self.calls = epochs, obey, 0

    def drive(self, on_epoch):
        for loss, dev, test in self.epochs:
            self.calls += 1
            if on_epoch(loss, (dev, test), {}) and self.obey:
                return


def drive(epochs, *, patience=2, max_epochs=10, obey=True, mode="max"):
    reports = []
    record = Record(Train(max_epochs=max_epochs, patience=patience, metric="f1", mode=mode, timeout_s=None,
                          retries=0), "here")
    model = Scripted(epochs, obey=obey)
    drive_trial(model, record, reports.append, lambda best: None, lambda best: {})
    return reports, model


@pytest.mark.parametrize("obey", [True, False])
def test_the_driven_loop_counts_epochs_until_the_stop_and_keeps_the_best_dev_epochs_test(obey):
    epochs = [(1.0, 0.5, 0.4), (0.9, 0.8, 0.3), (0.8, 0.7, 0.9), (0.7, 0.6, 0.95), (0.6, 0.99, 0.99)]
    reports, model = drive(epochs, obey=obey)
    assert [r["epoch"] for r in reports] == [1, 2, 3, 4]
    final = reports[-1]
    assert final["final"] and final["best_epoch"] == 2 and final["test_score_best"] == 0.3
    assert final["test_score_max"] == 0.95 and final["reason"].startswith("early stop")
    assert model.calls == (4 if obey else 5)
    assert sum(1 for r in reports if r.get("final")) == 1


def test_the_driven_loop_ends_with_the_codes_own_return_and_a_missing_loss_is_not_divergence():
    reports, _ = drive([(None, 0.5, 0.4), (None, 0.6, 0.5)])
    assert [r.get("final", False) for r in reports] == [False, True]
    assert reports[-1]["status"] == "ok" and reports[-1]["best_epoch"] == 2
    assert reports[-1]["reason"] == "the code returned after epoch 2"
    assert all(math.isnan(r["train_loss"]) for r in reports)


def test_the_driven_loop_stores_a_nan_loss_as_diverged_and_no_report_as_an_error():
    reports, model = drive([(1.0, 0.5, 0.4), (math.nan, 0.6, 0.5), (1.0, 0.7, 0.6)])
    assert reports[-1]["status"] == "diverged" and reports[-1]["epoch"] == 2 and model.calls == 2
    with pytest.raises(NoMetrics, match="reported no metrics"):
        drive([])
    reports, _ = drive([(1.0, 0.1 * e, 0.0) for e in range(1, 20)], patience=None, max_epochs=3)
    assert [r["epoch"] for r in reports] == [1, 2, 3] and reports[-1]["reason"] == "max_epochs reached"


BAD = [
    ("task: {function: nowhere.py:fit}", "task.function", "no such file"),
    ("task: {function: 'no_such_module_here.train:fit'}", "task.function", "no module named"),
    ("task: {function: model/fit.py:train}", "task.function", "defines no function 'train'"),
    ("task: {function: model/fit.py:two}", "task.function", "must take exactly one argument"),
    ("task: {function: 'model/fit.py'}", "task.function", "expected 'FILE.py:NAME'"),
    ("task: {function: model/fit.py:fit, extras: [mode]}", "task.extras: mode", "already a column"),
    ("task: {function: model/fit.py:fit, epochs: 3}", "task.epochs", "unknown key 'epochs'"),
    ("task: {}", "task", "needs task.function"),
]


@pytest.mark.parametrize("task, where, problem", BAD)
def test_a_bad_function_reference_exits_2_at_check_naming_the_key(tmp_path, user_study, task, where, problem):
    (tmp_path / "model" / "fit.py").write_text("def fit(trial):\n    pass\n\ndef two(trial, other):\n    pass\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text(user_study.read_text().replace("task:\n  function: model/fit.py:fit\n  extras: [precision]\n",
                                                  task + "\n"))
    refused_by_check_and_run(bad, tmp_path / "run", where, problem)


def test_a_name_made_at_import_time_is_checked_when_resolved(tmp_path, user_study):
    (tmp_path / "model" / "fit.py").write_text("fit = 3\n")
    study.check(user_study)                 # check reads the file without running it: a plain name passes
    with pytest.raises(UserError, match="is a int, not a function"):
        study.check(user_study, resolve=True)
    (tmp_path / "model" / "fit.py").write_text("def make():\n    return lambda a, b: None\nfit = make()\n")
    with pytest.raises(UserError, match=r"cannot be called with one argument"):
        study.check(user_study, resolve=True)
    (tmp_path / "model" / "fit.py").write_text("import no_such_package_anywhere\ndef fit(trial):\n    pass\n")
    with pytest.raises(UserError, match="ModuleNotFoundError"):
        study.check(user_study, resolve=True)


def test_a_module_path_is_found_beside_the_study_file(tmp_path):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "train.py").write_text("from .helpers import K\n\ndef fit(trial):\n    trial.report(dev=K, test=K)\n")
    (pkg / "helpers.py").write_text("K = 0.5\n")
    path = tmp_path / "s.yaml"
    path.write_text("name: m\nfamily: function\nsamples: 1\nseeds: 1\ncompare: {x: [a, b]}\n"
                    "task: {function: 'mypkg.train:fit'}\n")
    space = study.check(path, resolve=True)
    from seedsweep.study.families import get_family

    assert get_family("function").code_files(space) == [str(pkg / "train.py")]


def test_an_infinite_extra_or_dev_loss_is_stored_as_nan_never_as_inf():
    """trialapi's promise (a result column never holds inf): what reaches the
    epoch row is NaN where the function reported inf, the finite values as given."""
    seen = []
    trial = Trial(key="k", choice="c", option="a", params={}, seed=1, folder=".", max_epochs=3,
                  extras=("perplexity",), on_epoch=lambda loss, scores, extras: seen.append(extras) or False)
    trial.report(dev=0.5, test=0.4, loss=1.0, perplexity=math.inf, dev_loss=-math.inf)
    trial.report(dev=0.6, test=0.5, loss=0.9, perplexity=12.5, dev_loss=0.3)
    assert math.isnan(seen[0]["perplexity"]) and math.isnan(seen[0]["dev_loss"])
    assert seen[1] == {"perplexity": 12.5, "dev_loss": 0.3}



def test_a_function_study_parses_its_task_and_imports_the_users_module_once_per_process(tmp_path, monkeypatch):
    """Everything a start asks of the family -- the file's check, resolve, the
    code files, the result columns (the trials' schema and the manifest) and a
    trial's build in a worker that received the study by pickle -- parses
    ``task.function`` once and imports the user's module once in a process."""
    import pickle

    from seedsweep.study.execution.runner import plan_study
    from seedsweep.study.families import get_family, optional
    from seedsweep.study.families.function import family as function_family, loader
    from seedsweep.study.spec.grid import trials_schema_of
    from seedsweep.study.store.manifest import build_manifest
    from seedsweep.study.store.studies import load_study

    (tmp_path / "train.py").write_text("import builtins\nbuiltins.seedsweep_imports = "
                                       "getattr(builtins, 'seedsweep_imports', 0) + 1\n\ndef fit(trial):\n    pass\n")
    (tmp_path / "study.yaml").write_text("name: once\nfamily: function\nsamples: 2\nseeds: [1]\n"
                                         "compare: {mode: [a, b]}\ntask: {function: train.py:fit, extras: [f1]}\n")
    parsed, columns = [], []
    real_parse, real_columns = loader.parse_reference, function_family.FunctionFamily.result_columns
    monkeypatch.setattr(function_family, "parse_reference", lambda *a: parsed.append(a) or real_parse(*a))
    monkeypatch.setattr(function_family.FunctionFamily, "result_columns",
                        lambda self, space: columns.append(1) or real_columns(self, space))
    import builtins
    monkeypatch.setattr(builtins, "seedsweep_imports", 0, raising=False)
    space = load_study(tmp_path / "study.yaml")
    family = get_family(space.family)
    configs, grid = plan_study(space)
    assert family.resolve(space)[0].startswith("function fit in ")
    assert optional(family, "code_files")(space) == [str(tmp_path / "train.py")]
    assert build_manifest(space, accelerators={}, command=["t"])["results"] == ["f1"]
    assert "f1" in trials_schema_of(space).names
    worker_space = pickle.loads(pickle.dumps(space))          # what a Ray worker receives
    family.build(worker_space, grid[0], work_dir=str(tmp_path / "work"))
    family.build(space, grid[1], work_dir=str(tmp_path / "work"))
    assert len(parsed) == 1, f"task.function parsed {len(parsed)} times"
    assert len(columns) == 1, f"result_columns asked {len(columns)} times"
    assert builtins.seedsweep_imports == 1, f"the user's module imported {builtins.seedsweep_imports} times"
