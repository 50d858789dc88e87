"""The ``command`` family: any program, run once per trial, its metrics read from its output.

::

    family: command
    task:
      command: [python, train.py, --lr, "{lr}", --seed, "{seed}", --out, "{trial_dir}"]
      metrics: {dev: dev_f1, test: test_f1, loss: loss}    # keys of the JSON lines it prints
      grace: 10           # optional: seconds between SIGTERM and SIGKILL when seedsweep stops it
      log_bytes: 1048576  # optional: the per-trial log's cap

Every ``{name}`` in an argument is a hyperparameter of the study, ``seed``
or ``trial_dir`` (``{{`` and ``}}`` are literal braces); each value becomes
part of that one argument -- there is no shell, so ``x; touch PWNED`` stays
one literal argument. ``python`` (or ``python3``) as the program means the
Python that runs seedsweep; other programs are found on ``PATH`` or, when
they hold a ``/``, relative to the study file's folder, which is also the
program's working folder. The program also gets ``SEEDSWEEP_PARAMS`` (every
hyperparameter as JSON), ``SEEDSWEEP_SEED``, ``SEEDSWEEP_TRIAL_DIR``,
``SEEDSWEEP_METRICS`` (a file it may write its JSON lines to instead of
stdout), ``PYTHONUNBUFFERED=1`` (so a Python program's lines arrive as they are
printed; other programs must flush each line) and Ray's
``CUDA_VISIBLE_DEVICES`` for the trial.

Outcomes: its stdout and stderr go to ``work/<trial key>.log`` in the run
directory (capped at ``log_bytes``). Early stopping and ``max_epochs``
send SIGTERM to its process group, then SIGKILL after ``grace`` seconds;
``train.timeout_s`` does the same to a program that runs too long (stored
``failed``, "timeout"). A non-zero exit that seedsweep did not cause is
``failed`` with the log's last lines; a program that exits without a metrics
line is ``failed``, "reported no metrics"; an unreadable metrics line is
``failed``, "malformed metrics line N". How programs never outlive a killed
study: :mod:`.program`.

A program that reports **test once, at its end** (``test: {regex: ..,
at: end}``, :mod:`.metrics`) selects its own checkpoint: its final test
score is the trial's (``test_protocol`` "program"; else "best dev epoch",
seedsweep's selection). Early stopping and ``max_epochs`` then ask it to
finish instead of ending it: SIGINT to its group (Ctrl-C, which the PyTorch
examples catch to stop training and still test), its output read for up to
``grace`` seconds for the final test line, then SIGTERM and SIGKILL. A
program that ends without a test line is ``failed``, "no test score
reported".
"""

from __future__ import annotations

import json
import math
import os
import queue
import re
import shutil
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from ...errors import UserError
from ...files import note_read
from ...schema import Train, TrialSpec
from ..base import Limit
from ..evalsets import check_evaluate
from ..usercode import as_argument, check_task_keys, hyperparameter_names, log_path, study_folder, trial_folder
from ..view import once
from .metrics import METRIC_KEYS, SOURCE_KEYS, WHEN, MetricsError, MetricsReader, parse_metrics, read_new_lines
from .program import CappedLog, kill_group, launch, reap_orphans, stop_group, wait_for_end

if TYPE_CHECKING:
    from ..view import StudyView

__all__ = ["CommandFamily", "CommandModel", "ProgramFailed", "ProgramTimeout", "FAMILY", "placeholders"]

TASK_KEYS = ("command", "metrics", "name", "grace", "log_bytes")
#: the keys inside task keys (the generated study-file keys page lists them)
TASK_SUBKEYS = {"metrics": METRIC_KEYS, "metrics.<metric>": SOURCE_KEYS, "metrics.test.at": WHEN}
PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")
SPECIAL, PYTHONS = ("seed", "trial_dir"), ("python", "python3")
#: ``test_protocol``: whose selection a trial's test score is
PROTOCOLS = {False: "best dev epoch", True: "program"}


class ProgramFailed(RuntimeError):
    """The program exited with a non-zero code that seedsweep did not cause."""


class ProgramTimeout(RuntimeError):
    """The program ran past ``train.timeout_s`` and was killed."""


def placeholders(arg: str) -> list[str]:
    """The names of the ``{name}`` placeholders in one argument.

    >>> placeholders("--lr={lr}"), placeholders("{{literal}}"), placeholders("{seed}-{trial_dir}")
    (['lr'], [], ['seed', 'trial_dir'])
    """
    return [m.group(1) for m in PLACEHOLDER.finditer(arg) if m.group(1) is not None]


def fill(arg: str, values: Mapping[str, Any]) -> str:
    """``arg`` with every placeholder replaced by its value (one argument, no shell).

    >>> fill("--opt={opt}", {"opt": "x; touch PWNED"}), fill("{{x}}", {})
    ('--opt=x; touch PWNED', '{x}')
    """
    def one(m: re.Match) -> str:
        if m.group(0) == "{{":
            return "{"
        if m.group(0) == "}}":
            return "}"
        return as_argument(values[m.group(1)])
    return PLACEHOLDER.sub(one, arg)


def _argv(space: "StudyView") -> list[str]:
    where = f"{space.path}: task.command"
    command = space.task.get("command")
    if isinstance(command, str):
        raise UserError(where, "the command is one string; seedsweep never runs a shell.",
                        f"Write it as a list of arguments, e.g. {command.split()!r} (a placeholder as its own "
                        "item: \"{lr}\").")
    if not isinstance(command, list) or not command:
        raise UserError(where, f"expected a non-empty list of arguments, got {command!r}.",
                        "E.g. command: [python, train.py, --lr, '{lr}', --seed, '{seed}'].")
    for i, arg in enumerate(command):
        if isinstance(arg, bool) or not isinstance(arg, (str, int, float)):
            raise UserError(f"{where}[{i}]", f"expected a string, got {arg!r}.", "Quote it.")
        if set("{}") & set(PLACEHOLDER.sub("", str(arg))):        # "{lr": would reach the program as written
            raise UserError(f"{where}[{i}]", f"{arg!r} has a brace that opens or closes no placeholder.",
                            "Write '{lr}' for a placeholder and {{ or }} for a literal brace.")
    return [str(arg) for arg in command]


def _metrics(space: "StudyView"):
    """``task.metrics`` parsed, once per study (the driver's check and every trial read the same)."""
    return once(space, "metrics", lambda: parse_metrics(space.task.get("metrics"), f"{space.path}: task.metrics"))


def _program(space: "StudyView", argv0: str) -> Path | None:
    """The program file ``argv[0]`` names (None: not found)."""
    if argv0 in PYTHONS:
        return Path(sys.executable)
    if "/" in argv0:
        path = Path(argv0).expanduser()
        path = path if path.is_absolute() else study_folder(space) / path
        return path if path.is_file() else None
    found = shutil.which(argv0)
    return Path(found) if found else None


@dataclass(frozen=True)
class CommandFamily:
    """The ``command`` family (see the module docstring)."""

    name: str = "command"
    uses_torch: bool = False                 # the program seeds itself from {seed}
    wants_work_dir: bool = True
    train_defaults: Train = Train(max_epochs=10, patience=3, metric="score", mode="max", timeout_s=None, retries=0)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    limits: Mapping[str, Limit] = field(default_factory=dict)

    def validate(self, space: "StudyView") -> None:
        """The argv list, every placeholder a hyperparameter, ``seed`` or
        ``trial_dir``, every compared choice passed, the metrics mapping."""
        check_evaluate(space, False, self.name)
        check_task_keys(space, self.name, TASK_KEYS, ("command", "metrics"))
        argv = _argv(space)
        names = hyperparameter_names(space)
        used: set[str] = set()
        for i, arg in enumerate(argv):
            for name in placeholders(arg):
                if name not in names and name not in SPECIAL:
                    raise UserError(f"{space.path}: task.command[{i}]", f"the placeholder {{{name}}} is neither a "
                                    "hyperparameter of the study nor seed or trial_dir.",
                                    f"Use one of: {', '.join(names + list(SPECIAL))} (write {{{{ and }}}} for "
                                    "literal braces).")
                used.add(name)
        for choice, _ in space.compare:
            if choice not in used:
                raise UserError(f"{space.path}: task.command", f"the compared choice '{choice}' is passed to the "
                                "program nowhere, so every option would train the same model.",
                                f"Add it as an argument, e.g. --{choice}, '{{{choice}}}'.")
        _metrics(space)
        for key, low in (("grace", 0.0), ("log_bytes", 1024)):
            value = space.task.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < low):
                raise UserError(f"{space.path}: task.{key}", f"expected a number >= {low:g}, got {value!r}.",
                                "Fix the value (grace in seconds, log_bytes in bytes).")

    def resolve(self, space: "StudyView") -> list[str]:
        """The program exists; files named in the command (a script) are noted for the manifest."""
        argv = _argv(space)
        program = _program(space, argv[0])
        if program is None:
            raise UserError(f"{space.path}: task.command[0]", f"no program {argv[0]!r} was found "
                            f"({'relative to ' + str(study_folder(space)) if '/' in argv[0] else 'on PATH'}).",
                            "Install it, fix its name, or give its path relative to the study file.")
        lines = [f"program {argv[0]}: {program}"]
        for path in self.code_files(space):
            note_read(path)
            lines.append(f"code: {path}")
        reap_orphans()      # programs of an earlier run on this machine whose worker was killed
        return lines

    def code_files(self, space: "StudyView") -> list[str]:
        """Files the command names literally (a script beside the study file): the user's code."""
        out = []
        for arg in _argv(space)[1:]:
            if placeholders(arg) or arg.startswith("-"):
                continue
            path = study_folder(space) / arg
            if path.is_file():
                out.append(str(path.resolve()))
        return out

    def build(self, space: "StudyView", trial: TrialSpec, *, cache_dir: str | None = None,
              work_dir: str | None = None) -> "CommandModel":
        """The trial's program, ready to run (``work_dir``: the run directory's ``work/`` folder)."""
        return CommandModel(space, trial, work_dir)

    def result_columns(self, space: "StudyView") -> dict[str, str]:
        """``test_protocol``: whose selection the test score is (:data:`PROTOCOLS`)."""
        return {"test_protocol": "str"}


class CommandModel:
    """One trial of the program: :meth:`drive` runs it and reads its epochs."""

    def __init__(self, space: "StudyView", trial: TrialSpec, work_dir: str | None) -> None:
        self.space, self.trial, self.work_dir = space, trial, work_dir
        self.spec = _metrics(space)
        self.grace = float(space.task.get("grace", 10.0))
        self.cap = int(space.task.get("log_bytes", 1 << 20))
        self.test_at_end = self.spec.test_at_end          # the trial's test score is the program's final one
        self.final_test: float | None = None
        self.no_test_reason = f"no test score reported: the program printed no {self.spec.describe_test()}"

    def collapse_reason(self, best_epoch: int) -> str | None:
        """Never: a program's run is judged by its scores alone."""
        return None

    def results(self, best_epoch: int) -> dict[str, Any]:
        """Whose selection the test score is."""
        return {"test_protocol": PROTOCOLS[self.test_at_end]}

    def drive(self, on_epoch) -> None:
        """Run the program; every epoch it reports goes to ``on_epoch``; stop it when that says so."""
        t, space = self.trial, self.space
        log = log_path(self.work_dir, t.key)
        with trial_folder(self.work_dir, t.key) as folder:
            values = {**t.hparams, "seed": t.seed, "trial_dir": folder}
            argv = [fill(a, values) for a in _argv(space)]
            if argv[0] in PYTHONS:
                argv[0] = sys.executable
            elif "/" in argv[0] and not os.path.isabs(argv[0]):
                argv[0] = str(study_folder(space) / argv[0])
            metrics_file = Path(folder) / "metrics.jsonl"
            env = {**os.environ, "SEEDSWEEP_PARAMS": json.dumps(t.hparams, default=str),
                   "SEEDSWEEP_SEED": str(t.seed), "SEEDSWEEP_TRIAL_DIR": folder,
                   "SEEDSWEEP_METRICS": str(metrics_file), "PYTHONUNBUFFERED": "1"}
            self._run(argv, env, log, metrics_file, on_epoch)

    def _run(self, argv, env, log_file: Path, metrics_file: Path, on_epoch) -> None:
        timeout = self.space.train.timeout_s
        out = CappedLog(log_file, self.cap)
        events: queue.Queue = queue.Queue()
        stdout_reader, file_reader = MetricsReader(self.spec), MetricsReader(self.spec)
        proc, record = launch(argv, cwd=str(study_folder(self.space)), env=env, key=self.trial.key)
        t0 = time.monotonic()

        def pump() -> None:             # the program's output: to the log, its metrics to the queue
            try:
                for line in iter(proc.stdout.readline, b""):
                    out.write(line)
                    try:
                        for epoch in stdout_reader.feed(line.decode("utf-8", "replace")):
                            events.put(("epoch", epoch))
                    except MetricsError as exc:
                        events.put(("error", exc))
            finally:
                events.put(("eof", None))

        reader = threading.Thread(target=pump, name=f"seedsweep-log-{proc.pid}", daemon=True)
        reader.start()
        offset, reported, stopped, failure = 0, 0, False, None
        try:
            eof = False
            while not stopped and failure is None:
                try:
                    kind, item = events.get(timeout=0.2)
                except queue.Empty:
                    kind, item = "idle", None
                if kind == "eof":
                    eof = True
                offset, from_file = read_new_lines(metrics_file, offset, file_reader)
                batch = ([item] if kind == "epoch" else []) + from_file
                if kind == "error":
                    failure = item
                for epoch in batch:
                    reported += 1
                    test = math.nan if epoch["test"] is None else epoch["test"]     # None: test comes at the end
                    own = {} if epoch["epoch"] is None else {"epoch": int(epoch["epoch"])}
                    if on_epoch(epoch["loss"], (epoch["dev"], test), own):
                        stopped = True
                        break
                if eof and not stopped and failure is None:
                    break
                if timeout is not None and not stopped and time.monotonic() - t0 > timeout:
                    failure = ProgramTimeout(f"timeout: the program ran past train.timeout_s = {timeout:g} s "
                                             f"after {reported} epoch(s) and was killed (log: {log_file})")
            if stopped and failure is None and self.test_at_end and not eof:
                # at max_epochs the program is usually ending by itself: a Ctrl-C then could hit its test
                wait_for_end(proc, events, self.grace, interrupt=reported < self.space.train.max_epochs)
            if stopped or failure is not None:
                stop_group(proc, 0.0 if failure is not None else self.grace)
            rc = proc.wait()
            kill_group(proc.pid)        # whatever the program started and left behind
            reader.join(timeout=5)
        finally:
            if proc.poll() is None:
                stop_group(proc, 0.0)
            out.close()
            try:
                record.unlink()
            except OSError:
                pass
        read_new_lines(metrics_file, offset, file_reader)          # a final test line written to the file
        finals = [r.final_test for r in (stdout_reader, file_reader) if r.final_test is not None]
        self.final_test = finals[0] if finals else None
        if self.test_at_end and stopped:
            self.no_test_reason += (f" after it was asked to finish (SIGINT) at epoch {reported}; catch "
                                    f"KeyboardInterrupt, test, and print the test line within task.grace = "
                                    f"{self.grace:g} s (log: {log_file})")
        else:
            self.no_test_reason += f" before it exited (log: {log_file})"
        if failure is not None:
            raise failure if not isinstance(failure, MetricsError) else MetricsError(f"{failure} (log: {log_file})")
        if stopped:
            return
        if rc != 0:
            how = f"was killed by signal {-rc}" if rc < 0 else f"exited with code {rc}"
            raise ProgramFailed(f"the program {how}; its last output: {out.last_lines() or '(none)'} (log: {log_file})")
        self.ended_reason = f"the program exited after epoch {reported}"
        self.silent_reason = (f"reported no metrics: the program exited 0 without {self.spec.describe()} "
                              f"(log: {log_file})")


FAMILY = CommandFamily()
