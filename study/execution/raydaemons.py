"""The daemons of a private local Ray, recorded so that a SIGKILLed driver's
are cleared by the next start.

A driver that is SIGKILLed cannot shut its Ray down. Its raylet and GCS go
with it, but the raylet's two agents (``ray::DashboardAgent``,
``ray::RuntimeEnvAgent``) first try to report the raylet's death to the dead
GCS, with a timeout Ray 2.60 fixes at 60 s, and outlive the driver that long.
So after a private Ray starts, :func:`record_session` writes down the driver
(PID and kernel start time), the session folder, and every process then
running under the driver (gcs_server, raylet, the agents, the monitors);
:func:`clear_dead_sessions`, called before the next private Ray starts,
kills what is left of each session whose driver is gone: the recorded
daemons (matched by start time, never a reused PID) and any Ray process that
still holds a log file open in that session's folder. A clean shutdown
forgets its record (:func:`forget_session`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..files import write_text
from ..processes import alive, children, holding_files_under, kill, records_folder, start_time

__all__ = ["records_dir", "record_session", "forget_session", "clear_dead_sessions"]


def records_dir() -> Path:
    """Where private Ray sessions are recorded (one folder per machine and user)."""
    return records_folder("ray")


def record_session(session_dir: str) -> Path:
    """Record this driver's private Ray (see the module docstring); returns the record's path."""
    pid = os.getpid()
    daemons = [[p, t] for p in children(pid) if (t := start_time(p)) is not None]
    path = records_dir() / f"{pid}.json"
    write_text(json.dumps({"driver": pid, "driver_started": start_time(pid), "session_dir": session_dir,
                           "daemons": daemons}), path)
    return path


def forget_session(path: Path) -> None:
    """Drop the record of a session shut down cleanly."""
    path.unlink(missing_ok=True)


def _ray_process(pid: int) -> bool:
    """Whether ``pid`` is one of Ray's own processes (not, say, a ``tail -f`` of its log)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv0 = f.read().split(b"\0")[:2]
    except OSError:
        return False
    first = argv0[0].decode(errors="replace")
    script = argv0[1].decode(errors="replace") if len(argv0) > 1 else ""
    return (first.startswith("ray::") or os.path.basename(first) in ("raylet", "gcs_server")
            or f"{os.sep}ray{os.sep}" in first or f"{os.sep}ray{os.sep}" in script)


def clear_dead_sessions() -> list[int]:
    """Kill what is left of every recorded private Ray whose driver is gone,
    and drop those records; returns the PIDs signalled."""
    killed = []
    for path in sorted(records_dir().glob("*.json")):
        try:
            rec = json.loads(path.read_text())
            driver, started, session = int(rec["driver"]), rec.get("driver_started"), str(rec["session_dir"])
            daemons = [(int(p), str(t)) for p, t in rec.get("daemons") or []]
        except (OSError, ValueError, KeyError, TypeError):
            continue                      # being written right now, or not ours to read
        if alive(driver, started):
            continue
        killed += [pid for pid, t in daemons if kill(pid, t)]
        if os.path.isabs(session) and session.rstrip(os.sep):       # never "/" (every process holds a file there)
            killed += [pid for pid in holding_files_under(session)
                       if _ray_process(pid) and kill(pid, start_time(pid))]
        path.unlink(missing_ok=True)
    return killed
