"""Processes by PID and kernel start time (ground floor): what seedsweep
starts and must clear after a SIGKILL is recorded as (PID, start time), so a
PID the kernel has since given to another process is never touched.

Linux's ``/proc`` is read directly (the programs of the command family and
the daemons of a private Ray are Linux processes on every machine seedsweep
runs studies on); elsewhere every process reads as gone.
"""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path

__all__ = ["start_time", "alive", "children", "holding_files_under", "kill", "records_folder"]


def start_time(pid: int) -> str | None:
    """The kernel's start time of process ``pid`` (clock ticks since boot);
    None if it is gone or a zombie (ended, not yet reaped by its parent)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()        # from field 3 (the state) on
    return None if fields[0] in ("Z", "X") else fields[19]     # field 22: the start time


def alive(pid: int, started: str | None) -> bool:
    """Whether ``pid`` runs and is the process that started at ``started``
    (None: any process of that PID)."""
    now = start_time(pid)
    return now is not None and (started is None or now == started)


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _pids() -> list[int]:
    try:
        return [int(n) for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return []


def children(pid: int) -> list[int]:
    """Every descendant of ``pid`` now running (children, their children, ...)."""
    parents = {p: _parent(p) for p in _pids()}
    found, frontier = [], [pid]
    while frontier:
        nxt = [p for p, parent in parents.items() if parent in frontier and p not in found]
        found += nxt
        frontier = nxt
    return found


def holding_files_under(folder: str) -> list[int]:
    """The processes (of this user: others' are unreadable) that hold a file
    open under ``folder``: a Ray daemon keeps its log files open in its
    session folder for as long as it runs."""
    prefix = folder.rstrip("/") + "/"
    found = []
    for pid in _pids():
        if pid == os.getpid():
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}").startswith(prefix):
                    found.append(pid)
                    break
            except OSError:
                continue
    return found


def kill(pid: int, started: str | None) -> bool:
    """SIGKILL ``pid`` if it is still the process that started at ``started``;
    True when a signal was sent."""
    if not alive(pid, started):
        return False
    try:
        os.kill(pid, signal.SIGKILL)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def records_folder(kind: str) -> Path:
    """Where seedsweep records the processes of one ``kind`` that it starts
    (``<tmp>/seedsweep-<kind>-<uid>``: one folder per machine and user),
    so that the next command can clear what a SIGKILLed one left."""
    folder = Path(tempfile.gettempdir()) / f"seedsweep-{kind}-{os.getuid()}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder
