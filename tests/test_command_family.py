"""The ``command`` family: any program, run as an argv list (never a shell),
its metrics read from the JSON lines it prints (or regular expressions on
its output), killed by signal when seedsweep stops it, and never left
running after the driver is SIGKILLed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from seedsweep import study
from seedsweep.study.errors import UserError
from seedsweep.study.execution.runner import plan_study
from seedsweep.study.store.studies import load_study
from seedsweep.study.families.command.metrics import MetricsError, MetricsReader, parse_metrics
from seedsweep.study.families.command.program import start_time
from seedsweep.study.store.rundir import RunDir
from tests.conftest import REPO, refused_by_check_and_run, remove_tagged

EXAMPLE = REPO / "examples" / "pytorch"
NOTE = "x; touch PWNED && echo $HOME 'quoted' \"double\" `id`"

PROG = '''
import json, os, sys, time
mode, note = sys.argv[1], sys.argv[2]
print(json.dumps({"argv": sys.argv[1:]}), flush=True)
print("a log line that is not a metric", flush=True)
if mode == "exit1":
    print("about to fail: CUDA out of cheese", flush=True)
    sys.exit(1)
if mode == "silent":
    sys.exit(0)
if mode == "malformed":
    print('{"dev_acc": 0.5, "test_acc": 0.4', flush=True)
    time.sleep(30)
if mode == "hang":
    time.sleep(300)
if mode == "regex":
    for e in range(1, 4):
        print(f"epoch {e} loss {1/e:.3f}", flush=True)
        print(f"dev acc {0.5 + e / 10:.2f} / test acc {0.4 + e / 10:.2f}", flush=True)
    sys.exit(0)
if mode == "file":
    with open(os.environ["SEEDSWEEP_METRICS"], "a") as f:
        for e in range(1, 4):
            f.write(json.dumps({"dev_acc": 0.5 + e / 10, "test_acc": 0.3 + e / 10}) + "\\n")
    sys.exit(0)
for e in range(1, 100):            # ok: forever, until seedsweep's SIGTERM (patience 1 after epoch 2)
    dev = 0.9 if e == 2 else 0.5
    print(json.dumps({"dev_acc": dev, "test_acc": dev - 0.1, "loss": 1 / e}), flush=True)
    time.sleep(0.05)
'''

STUDY = """
name: own-command
family: command
samples: 1
seeds: 1
compare:
  mode: [ok, exit1, silent, malformed, hang, file]
fixed:
  note: {note}
task:
  command: [python, prog.py, "{{mode}}", "{{note}}", "--dir={{trial_dir}}"]
  metrics: {{dev: dev_acc, test: test_acc, loss: loss}}
  grace: 2
train: {{max_epochs: 50, patience: 1, timeout_s: 8, retries: 0}}
"""


def write_study(folder: Path, text: str = STUDY) -> Path:
    (folder / "prog.py").write_text(PROG)
    path = folder / "study.yaml"
    path.write_text(textwrap.dedent(text).lstrip().format(note=json.dumps(NOTE)))
    return path


@pytest.mark.slow
def test_each_way_a_program_can_fail_is_a_failed_row_saying_which(tmp_path, ray_local):
    path = write_study(tmp_path)
    t0 = time.monotonic()
    summary = study.run(path, tmp_path / "run")
    assert time.monotonic() - t0 < 120
    rows = {r["option"]: r for r in RunDir(tmp_path / "run").read_trials().to_pylist()}
    assert summary.counts == {"ok": 2, "failed": 4}, {k: (r["status"], r["reason"]) for k, r in rows.items()}

    ok = rows["ok"]     # stopped by seedsweep's SIGTERM after patience ran out: ok, epoch 2 the best
    assert ok["status"] == "ok" and ok["best_epoch"] == 2 and ok["epochs_run"] == 3 and ok["test_score"] == 0.8
    assert rows["file"]["status"] == "ok" and rows["file"]["epochs_run"] == 3 and rows["file"]["best_epoch"] == 3
    assert rows["file"]["reason"] == "the program exited after epoch 3"
    reasons = {k: r["reason"] for k, r in rows.items()}
    assert "ProgramFailed: the program exited with code 1; its last output: about to fail: CUDA out of cheese | a " \
        "log line that is not a metric | {" in reasons["exit1"], reasons
    assert "NoMetrics: reported no metrics: the program exited 0 without a JSON line with the key 'dev_acc'" \
        in reasons["silent"], reasons
    assert "MetricsError: malformed metrics line 3: not valid JSON" in reasons["malformed"], reasons
    assert "ProgramTimeout: timeout: the program ran past train.timeout_s = 8 s after 0 epoch(s)" in reasons["hang"]

    # the value with spaces and shell characters arrived as one argument, untouched; no shell ran it
    work = tmp_path / "run" / "work"
    log = (work / "c00000%2Fmode=ok%2Fseed=1.log").read_text().splitlines()
    argv = json.loads(log[0])["argv"]
    assert argv[:2] == ["ok", NOTE] and argv[2] == f"--dir={work / 'c00000%2Fmode=ok%2Fseed=1'}"
    assert not (tmp_path / "PWNED").exists() and not Path(REPO / "PWNED").exists()
    assert "a log line that is not a metric" in log[1]

    # nothing of the study's programs left running (their process groups were killed)
    leftovers = [p for p in _programs_of(tmp_path) if p]
    assert leftovers == []


def _programs_of(folder: Path) -> list[int]:
    """PIDs of live processes whose command line names ``folder``."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if str(folder) in cmdline and "prog.py" in cmdline or f"{folder}/" in cmdline and "digits.py" in cmdline:
            found.append(int(pid))
    return found


def test_a_regular_expression_reads_an_unmodified_programs_output():
    spec = parse_metrics({"dev": {"regex": r"dev acc ([0-9.]+)"}, "test": {"regex": r"test acc ([0-9.]+)"},
                          "loss": {"regex": r"loss ([0-9.]+)"}}, "task.metrics")
    reader = MetricsReader(spec)
    epochs = []
    for line in ["starting", "epoch 1 loss 1.000", "dev acc 0.60 / test acc 0.50", "epoch 2 loss 0.500",
                 "dev acc 0.70 / test acc 0.55"]:
        epochs += reader.feed(line)
    assert epochs == [{"dev": 0.6, "test": 0.5, "loss": 1.0, "epoch": None},
                      {"dev": 0.7, "test": 0.55, "loss": 0.5, "epoch": None}]
    json_reader = MetricsReader(parse_metrics({"dev": "d", "test": "t"}, "task.metrics"))
    assert json_reader.feed('{"d": 0.5, "t": 0.25, "other": "x"}') == [{"dev": 0.5, "test": 0.25, "loss": None,
                                                                            "epoch": None}]
    assert json_reader.feed("{'a python': 'dict, not a metrics line'}") == []
    with pytest.raises(MetricsError, match="line 3: d is '0.5', not a number"):
        json_reader.feed('{"d": "0.5", "t": 0.2}')
    with pytest.raises(MetricsError, match="has 'd' but no 't'"):
        json_reader.feed('{"d": 0.5}')


BAD = [
    ('command: [python, prog.py, "{lr}"]', "task.command[2]", "{lr} is neither a hyperparameter"),
    ('command: [python, prog.py]', "task.command", "compared choice 'mode' is passed to the program nowhere"),
    ('command: "python prog.py {mode}"', "task.command", "never runs a shell"),
    ('metrics: {dev: dev_acc, test: test_acc, f1: f1}', "task.metrics.f1", "unknown metric 'f1'"),
    ('metrics: {dev: dev_acc}', "task.metrics", "'test' is not mapped"),
    ('metrics: {dev: {regex: "dev ([0-9]+) ([0-9]+)"}, test: t}', "task.metrics.dev.regex", "exactly one"),
]


@pytest.mark.parametrize("change, where, problem", BAD)
def test_a_bad_command_exits_2_at_check_naming_the_key(tmp_path, change, where, problem):
    path = write_study(tmp_path)
    key = change.split(":")[0]
    lines = [line for line in path.read_text().splitlines() if not line.strip().startswith(key + ":")]
    at = lines.index("task:") + 1
    path.write_text("\n".join(lines[:at] + ["  " + change] + lines[at:]) + "\n")
    refused_by_check_and_run(path, tmp_path / "run", where, problem)


def test_a_program_that_does_not_exist_is_refused_by_check_resolve(tmp_path):
    path = write_study(tmp_path)
    path.write_text(path.read_text().replace("[python, prog.py,", "[no-such-program-here, prog.py,"))
    proc = subprocess.run([sys.executable, "-m", "seedsweep", "check", str(path)], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr           # schema only
    proc = subprocess.run([sys.executable, "-m", "seedsweep", "check", str(path), "--resolve"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and f"{path}: task.command[0]" in proc.stderr
    assert "no program 'no-such-program-here' was found (on PATH)" in proc.stderr, proc.stderr
    with pytest.raises(UserError, match="relative to"):
        path.write_text(path.read_text().replace("[no-such-program-here,", "[./bin/missing,"))
        study.check(path, resolve=True)


@pytest.mark.slow
def test_the_example_script_as_a_command_survives_a_driver_sigkill_and_resumes(tmp_path):
    """examples/pytorch/command.yaml at one configuration (2 options x 2 seeds;
    every program imports torch and scikit-learn, ~5 CPU-s): SIGKILL the
    driver while programs run; every program of it is gone (checked by PID);
    the resume stores every trial key once."""
    folder = tmp_path / "example"
    shutil.copytree(EXAMPLE, folder)
    space = folder / "command.yaml"
    assert "\nsamples: 2\n" in space.read_text()
    space.write_text(space.read_text().replace("\nsamples: 2\n", "\nsamples: 1\n"))
    # the copy starts a child of its own (a grandchild of the worker) and writes its metrics to the file
    # $SEEDSWEEP_METRICS instead of stdout: a program that stops writing to its pipe does not die of it
    script = folder / "digits.py"
    text = script.read_text()
    for old, new in (('    print(json.dumps({"argv": argv}), flush=True)       # a log line: it has no dev key\n',
                      '    print(json.dumps({"argv": argv}), flush=True)\n    import os, subprocess\n'
                      '    child = subprocess.Popen(["sleep", "600"])\n'
                      '    open(os.path.join(os.environ["SEEDSWEEP_TRIAL_DIR"], "child.pid"), "w").write(str(child.pid))\n'),
                     ('        print(json.dumps({"epoch": epoch, "loss": loss, "dev_acc": dev, '
                      '"test_acc": test}), flush=True)',
                      '        with open(os.environ["SEEDSWEEP_METRICS"], "a") as f:\n'
                      '            f.write(json.dumps({"epoch": epoch, "loss": loss, "dev_acc": dev, '
                      '"test_acc": test}) + "\\n")')):
        assert old in text
        text = text.replace(old, new)
    script.write_text(text)
    tag = uuid.uuid4().hex
    ray_tmp = tempfile.mkdtemp(prefix="ssu-", dir="/tmp")
    private_tmp = tempfile.mkdtemp(prefix="ssu-tmp-", dir="/tmp")   # the program records of this test only
    env = {**os.environ, "SEEDSWEEP_TEST_TAG": tag, "RAY_TMPDIR": ray_tmp, "RAY_AUTH_MODE": "disabled",
           "TMPDIR": private_tmp}
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "seedsweep", "run", str(space), "--out", str(out), "--num-cpus", "2", "--quiet"]
    records = Path(private_tmp) / f"seedsweep-programs-{os.getuid()}"

    def live(seen):
        """The PIDs still running the process recorded (start times guard against reuse; None: any)."""
        return [pid for pid, started in seen.items()
                if start_time(pid) is not None and started in (None, start_time(pid))]

    try:
        proc = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 180
        seen: dict[int, str] = {}
        while time.monotonic() < deadline and proc.poll() is None:
            for rec in records.glob("*.json") if records.is_dir() else []:
                try:
                    data = json.loads(rec.read_text())
                except (OSError, ValueError):
                    continue
                seen[data["pid"]] = data["started"]
            stored = len(list((out / "trials").glob("*.parquet"))) if (out / "trials").is_dir() else 0
            if stored >= 1 and len(live(seen)) >= 1:
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.stdout.read().decode()
        running = live(seen)
        assert running, f"programs should be running when the driver is killed: {seen}"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and live(seen):
            time.sleep(0.2)
        assert live(seen) == [], f"programs of the killed study still running: {live(seen)} (killed while {running} ran)"
        stored_before = RunDir(out).read_trials().num_rows
        assert 1 <= stored_before < 4
        print(f"killed while programs {running} ran, {stored_before} trials stored")

        children = {int(p.read_text()): None for p in (out / "work").glob("*/child.pid")}
        children = {pid: start_time(pid) for pid in children}
        assert children, "the programs started their children"

        done = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert f"{stored_before} already stored" in done.stderr, done.stderr[-2000:]
        # the children of the killed programs were cleaned up by the next start; the new ones at their trial's end
        assert live(children) == [], f"children of the study's programs still running: {live(children)}"
        now = {int(p.read_text()): None for p in (out / "work").glob("*/child.pid")}
        deadline = time.monotonic() + 10         # killed at their program's end; reaped by whoever adopted them
        while time.monotonic() < deadline and live(now):
            time.sleep(0.2)
        assert live(now) == [], f"children of the resumed study's programs still running: {live(now)}"
    finally:
        remove_tagged(tag, ray_tmp)
        shutil.rmtree(private_tmp, ignore_errors=True)
    table = RunDir(out).read_trials()
    keys = table["trial_key"].to_pylist()
    assert sorted(keys) == sorted(t.key for t in plan_study(load_study(space))[1]) and len(keys) == 4
    assert set(table["status"].to_pylist()) == {"ok"}
