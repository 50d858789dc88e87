"""Running one program: its own process group, a capped log, a stop that
always ends it, and no program outliving a killed study.

Each program starts a new session (its own process group), so a stop
reaches everything it started: SIGTERM to the group, then SIGKILL after a
grace period. On Linux its parent-death signal is SIGKILL, so a worker that
dies (a SIGKILLed driver takes its Ray workers with it) takes the program
along. Children the program started are cleaned up through the program
records: :func:`launch` leaves ``<temp>/seedsweep-programs/<pid>.json``
(the program's and its worker's PID and start time) while it runs, and
:func:`reap_orphans` -- at the start of every ``seedsweep run`` of a command
study and before every program a worker starts -- kills the group of any
program whose worker is gone. Start times guard against reused PIDs.
"""

from __future__ import annotations

import collections
import ctypes
import json
import os
import queue
import signal
import subprocess
import time
from pathlib import Path
from typing import IO

from seedsweep.study.processes import alive, records_folder, start_time

__all__ = ["launch", "stop_group", "interrupt_group", "wait_for_end", "kill_group", "reap_orphans", "records_dir",
           "CappedLog", "start_time"]

PR_SET_PDEATHSIG = 1


def records_dir() -> Path:
    """Where running programs are recorded (one folder per machine and user)."""
    return records_folder("programs")


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    # Ctrl-C as a terminal gives it (a Ray worker may ignore SIGINT, and a child inherits that):
    # a script catches KeyboardInterrupt to stop training and still test
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})     # a blocked mask is inherited too
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


def launch(argv: list[str], *, cwd: str, env: dict[str, str], key: str) -> tuple[subprocess.Popen, Path]:
    """Start ``argv`` (never through a shell) in its own process group, output
    merged on a pipe; returns the process and its record's path."""
    reap_orphans()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_die_with_parent,
                            bufsize=0)
    record = records_dir() / f"{proc.pid}.json"
    record.write_text(json.dumps({"pid": proc.pid, "started": start_time(proc.pid), "worker": os.getpid(),
                                  "worker_started": start_time(os.getpid()), "key": key, "argv": argv}))
    return proc, record


def stop_group(proc: subprocess.Popen, grace: float) -> None:
    """SIGTERM to the program's group, SIGKILL after ``grace`` seconds if the
    leader still runs; then SIGKILL to whatever is left in the group."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    kill_group(proc.pid)
    proc.wait()


def interrupt_group(proc: subprocess.Popen) -> None:
    """SIGINT to the program's group: Ctrl-C, which a training script may
    catch to stop training and still test its best checkpoint."""
    try:
        os.killpg(proc.pid, signal.SIGINT)
    except (ProcessLookupError, PermissionError):
        pass


def kill_group(pgid: int) -> None:
    """SIGKILL to every process of group ``pgid`` (none left is fine)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def reap_orphans() -> list[int]:
    """Kill the groups of recorded programs whose worker is gone; returns their PIDs."""
    reaped = []
    for path in records_dir().glob("*.json"):
        try:
            rec = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if alive(rec["worker"], rec.get("worker_started")):
            continue
        if alive(rec["pid"], rec.get("started")) or _groupalive(rec["pid"]):
            kill_group(rec["pid"])
            reaped.append(rec["pid"])
        try:
            path.unlink()
        except OSError:
            pass
    return reaped


def _groupalive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


class CappedLog:
    """A trial's program log: the first ``cap`` bytes as they come, then the
    last 200 lines (with a note of how much was left out) when it closes."""

    def __init__(self, path: Path, cap: int) -> None:
        self.path, self.cap = path, cap
        self.fh: IO[bytes] = open(path, "wb")
        self.written = 0
        self.dropped = 0
        self.tail: collections.deque[bytes] = collections.deque(maxlen=200)
        self.last: collections.deque[str] = collections.deque(maxlen=5)

    def write(self, line: bytes) -> None:
        """One line of output (with its newline)."""
        if line.strip():
            self.last.append(line.decode("utf-8", "replace").rstrip())
        if self.written + len(line) <= self.cap and not self.dropped:
            self.fh.write(line)
            self.fh.flush()
            self.written += len(line)
        else:
            if len(self.tail) == self.tail.maxlen:
                self.dropped += len(self.tail[0])
            self.tail.append(line)

    def close(self) -> None:
        """Write the kept tail after a note of what was left out."""
        if self.tail:
            if self.dropped:
                self.fh.write(f"\n[seedsweep] ... {self.dropped} bytes of output left out (log cap "
                              f"{self.cap} bytes) ...\n".encode())
            self.fh.writelines(self.tail)
        self.fh.close()

    def last_lines(self, limit: int = 120) -> str:
        """The last non-empty lines of output, the latest first (at most
        ``limit`` characters), for a failure's reason."""
        text = " | ".join(reversed(self.last))
        return text if len(text) <= limit else text[:limit] + "..."


def wait_for_end(proc: subprocess.Popen, events: queue.Queue, grace: float, *, interrupt: bool = True) -> None:
    """Ask the program to finish (SIGINT) and wait until its output ends
    (``events``, the reader thread's queue, says ``eof``) or ``grace`` seconds
    pass; epochs it still reports are not counted. ``interrupt`` False: first
    wait ``grace`` seconds for it to end by itself (it reached the epochs it
    was given), then ask."""
    for ask in ((False, True) if not interrupt else (True,)):
        if ask:
            interrupt_group(proc)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            try:
                kind, _ = events.get(timeout=min(0.2, max(deadline - time.monotonic(), 0.01)))
            except queue.Empty:
                continue
            if kind == "eof":
                return
