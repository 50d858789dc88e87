"""A script as researchers write them (``examples/own-selection/train.py``):
a dev score every epoch, its best checkpoint kept, test once at the end, a
pretty-printed JSON summary and a stray ``{`` line at exit, Ctrl-C caught to
stop training and still test. The oracle of every score is the script run
directly, outside seedsweep, with the same arguments."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys

import pytest

from seedsweep import study
from seedsweep.analysis.pages.report import report
from seedsweep.study.errors import UserError
from seedsweep.study.execution.trial import run_trial
from seedsweep.study.families.command.metrics import MetricsError, MetricsReader, parse_metrics
from seedsweep.study.spec.grid import trial_grid
from seedsweep.study.spec.sampling import sample_configs
from seedsweep.study.spec.spacefile import parse_space
from seedsweep.study.store.rundir import RunDir
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "own-selection"
REGEXES = {"dev": {"regex": "valid ppl +([0-9.]+)"}, "loss": {"regex": "batches .* loss +([0-9.]+)"},
           "epoch": {"regex": "end of epoch +([0-9]+)"}, "test": {"regex": "test ppl +([0-9.]+)", "at": "end"}}


def direct(*args: str) -> list[str]:
    """The script's output lines, run as a user would run it."""
    out = subprocess.run([sys.executable, "train.py", *args], cwd=EXAMPLE, capture_output=True, text=True,
                         check=True).stdout
    return out.split("\n")


def printed(lines: list[str]) -> tuple[list[float], float]:
    """Every valid ppl the script printed, and its final test ppl (read by hand, not by the reader)."""
    devs = [float(line.split("valid ppl")[1]) for line in lines if "| end of epoch" in line]
    test = [float(line.split("test ppl")[1]) for line in lines if "| End of training" in line]
    return devs, test[-1]


def test_each_dev_line_is_an_epoch_and_the_test_printed_at_the_end_is_the_trials():
    lines = direct("--lr", "0.5", "--seed", "3", "--epochs", "5")
    devs, test = printed(lines)
    reader = MetricsReader(parse_metrics(REGEXES, "task.metrics"))
    epochs = [e for line in lines for e in reader.feed(line)]
    assert [e["dev"] for e in epochs] == devs and len(devs) == 5
    assert [e["epoch"] for e in epochs] == [1, 2, 3, 4, 5]
    assert all(e["test"] is None for e in epochs)
    # the loss of an epoch is the last batch line before its dev line: 6 - epoch / 10
    assert [e["loss"] for e in epochs] == [pytest.approx(6 - k / 10) for k in range(1, 6)]
    assert reader.final_test == test


def test_a_summary_object_and_a_stray_brace_are_log_lines_but_a_broken_metrics_line_fails_naming_it():
    spec = parse_metrics({"dev": "valid_ppl", "test": {"key": "test_ppl", "at": "end"}}, "task.metrics")
    reader = MetricsReader(spec)
    summary = json.dumps({"best_epoch": 2, "valid_ppl": 400.0, "test_ppl": 410.0, "history": [1, 2]}, indent=2)
    assert [e for line in ["{not json", *summary.split("\n")] for e in reader.feed(line)] == []
    assert reader.feed(json.dumps({"valid_ppl": 401.5})) == [{"dev": 401.5, "test": None, "loss": None,
                                                               "epoch": None}]
    assert reader.feed(json.dumps({"test_ppl": 405.0})) == [] and reader.final_test == 405.0   # test alone
    # a one-line summary at exit repeats the best dev score: the final test, not another epoch
    assert reader.feed(json.dumps({"best_epoch": 1, "valid_ppl": 401.5, "test_ppl": 406.0})) == []
    assert reader.final_test == 406.0
    line = 1 + len(summary.split("\n")) + 3 + 1          # the broken line's number in what was fed
    with pytest.raises(MetricsError, match=f"malformed metrics line {line}: not valid JSON"):
        reader.feed('{"valid_ppl": 3.0, "test_ppl"')


@pytest.mark.parametrize("metrics, where", [
    ({**REGEXES, "dev": {"regex": "valid ppl +([0-9.]+)", "at": "end"}}, "task.metrics.dev.at"),
    ({**REGEXES, "test": {"regex": "test ppl +([0-9.]+)", "at": "once"}}, "task.metrics.test.at"),
    ({**REGEXES, "epoch": {"regex": "epoch"}}, "task.metrics.epoch.regex"),
])
def test_when_test_arrives_is_checked_and_located(metrics, where):
    with pytest.raises(UserError, match=re.escape(where)):
        parse_metrics(metrics, "task.metrics")


def test_the_epoch_numbers_are_the_scripts_own_and_max_epochs_counts_epochs_run(tmp_path):
    # no Ray: the trial protocol on the command family directly, the script numbering its epochs from 10
    path = _study(tmp_path, extra_args=', --start-epoch, "10"')
    space = parse_space(path.read_text(), str(path))
    trial = trial_grid(space, sample_configs(space))[0]
    rows = []
    run_trial(space, trial, rows.append, work_dir=str(tmp_path / "work"))
    devs, test = printed(direct("--optimizer", str(trial.option), "--lr", str(trial.hparams["lr"]), "--seed",
                                str(trial.seed), "--epochs", "4"))
    assert [r["epoch"] for r in rows] == [10, 11, 12, 13] and [r["dev_score"] for r in rows] == devs
    final = rows[-1]
    assert final["epochs_run"] == 4 and final["reason"] == "max_epochs reached"
    assert final["best_epoch"] == 10 + devs.index(min(devs))
    assert final["test_score_best"] == test and final["results"] == {"test_protocol": "program"}


def _study(folder, *, extra_args: str = "", train: str = "{max_epochs: 4, mode: min, patience: null}",
           compare: str = "optimizer: [sgd, adam]", samples: int = 2, seeds: int = 2) -> object:
    shutil.copy(EXAMPLE / "train.py", folder / "train.py")
    text = (EXAMPLE / "study.yaml").read_text()
    text = re.sub(r"(?m)^train: .*$", f"train: {train}", text)
    text = re.sub(r"(?m)^samples: .*$", f"samples: {samples}", text)
    text = re.sub(r"(?m)^seeds: .*$", f"seeds: {seeds}", text)
    text = text.replace("  optimizer: [sgd, adam]", f"  {compare}")
    text = text.replace('--epochs, "4"]', f'--epochs, "4"{extra_args}]')
    path = folder / "study.yaml"
    path.write_text(text)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["min", "max"])
def test_a_script_that_tests_once_at_its_end(tmp_path, ray_local, mode):
    path = _study(tmp_path, train=f"{{max_epochs: 4, mode: {mode}, patience: null}}")
    summary = study.run(path, tmp_path / "run")
    rd = RunDir(tmp_path / "run")
    trials = rd.read_trials().to_pylist()
    epochs = rd.read_epochs().to_pylist()
    assert summary.counts == {"ok": 8} and len(trials) == 8      # 2 options x 2 configurations x 2 seeds
    for t in trials:
        devs, test = printed(direct("--optimizer", t["option"], "--lr", str(t["lr"]), "--seed", str(t["seed"]),
                                    "--epochs", "4"))
        rows = sorted((e for e in epochs if e["trial_key"] == t["trial_key"]), key=lambda e: e["epoch"])
        assert [e["dev_score"] for e in rows] == devs and t["epochs_run"] == 4
        assert all(e["test_score"] is None or math.isnan(e["test_score"]) for e in rows)      # no test to peek at
        best = (devs.index(min(devs)) if mode == "min" else devs.index(max(devs))) + 1
        assert t["best_epoch"] == best and t["dev_score"] == devs[best - 1]
        assert t["test_score"] == test and t["test_protocol"] == "program"
        assert t["reason"] == "max_epochs reached"
    text = report(tmp_path / "run")
    assert "Test protocol: 8 trial(s) report test once, at the program's end" in text


@pytest.mark.slow
def test_early_stopping_asks_the_script_to_finish_and_stores_its_final_test(tmp_path, ray_local):
    # the dev curve worsens after epoch 1: patience 1 stops at epoch 2; SIGINT; the script tests
    # epoch 1's checkpoint (caught) or dies untested (die: failed, saying why)
    path = _study(tmp_path, extra_args=', --curve, worsens, --sleep, "0.4", --on-interrupt, "{on}"',
                  train="{max_epochs: 10, mode: min, patience: 1}", compare="on: [test, die]", samples=1,
                  seeds=1)
    text = path.read_text().replace('--epochs, "4"', '--epochs, "10"').replace('"{optimizer}"', "sgd")
    path.write_text(text)
    summary = study.run(path, tmp_path / "run")
    trials = {t["option"]: t for t in RunDir(tmp_path / "run").read_trials().to_pylist()}
    assert summary.counts == {"ok": 1, "failed": 1}, {k: (t["status"], t["reason"]) for k, t in trials.items()}
    caught = trials["test"]
    devs, test = printed(direct("--lr", str(caught["lr"]), "--seed", str(caught["seed"]), "--epochs", "1",
                                "--curve", "worsens"))
    assert caught["status"] == "ok" and caught["epochs_run"] == 2 and caught["best_epoch"] == 1
    assert caught["test_score"] == test and caught["dev_score"] == devs[0]
    died = trials["die"]
    assert died["status"] == "failed" and died["epochs_run"] == 2
    assert died["reason"].startswith("no test score reported") and "SIGINT" in died["reason"]
