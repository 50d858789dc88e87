"""Why a trial failed: Ray's error text and type turned into a short reason."""

from __future__ import annotations

import os

__all__ = ["classify_error", "error_text", "error_kind", "OomKills", "memory_cgroup"]

_DIED = ("ActorDiedError", "RayActorError", "WorkerCrashedError", "NodeDiedError", "ActorUnavailableError",
         "worker process has died", "The actor is dead")


def classify_error(text: str, kind: str = "") -> str:
    """A short reason for a failed trial from Ray's error type name and text.

    >>> classify_error("Traceback (most recent call last):\\nValueError: bad lr")
    'exception: ValueError: bad lr'
    >>> classify_error("", "RayActorError Exception")
    'worker died'
    """
    if ("OutOfMemoryError" in kind or "OutOfMemoryError" in text or "out of memory" in text.lower()
            or "MemoryError" in kind.split() or _raised(text, "MemoryError")):
        return "out of memory"
    if any(s in kind for s in _DIED) or any(s in text for s in _DIED):
        return "worker died"
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line and not line.startswith(("File ", "^", "~")) and ":" in line:
            return f"exception: {line[:300]}"
    return "exception"


def _raised(text: str, name: str) -> bool:
    r"""Whether the traceback ``text`` ends in the exception ``name`` (Python's
    own ``MemoryError``: an allocation past a memory limit, e.g. ``ulimit -v``).

    >>> _raised("Traceback (most recent call last):\nMemoryError: Unable to allocate 4.00 GiB", "MemoryError")
    True
    >>> _raised("Traceback (most recent call last):\nValueError: MemoryError is not my name", "MemoryError")
    False
    """
    last = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return bool(last) and (last[-1] == name or last[-1].startswith(f"{name}:"))


def error_text(trial) -> str:
    """The text of a Tune trial's errors: Tune writes it to the driver-side
    staging folder first (``error_file``) and syncs it to storage later."""
    path = trial.error_file
    if path and os.path.exists(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    try:
        return trial.get_error() or "unknown error (Ray kept no error text)"
    except Exception as exc:  # noqa: BLE001 - the error text itself could not be fetched
        return f"unknown error (its text could not be read: {exc})"


def error_kind(trial) -> str:
    """The class names of the trial's last error (Ray pickles it beside the text)."""
    path = trial.pickled_error_file
    if not path or not os.path.exists(path):
        return ""
    try:
        import ray.cloudpickle as cloudpickle

        with open(path, "rb") as f:
            err = cloudpickle.load(f)
        cause = err.as_instanceof_cause() if hasattr(err, "as_instanceof_cause") else err
        return " ".join(c.__name__ for c in type(cause).__mro__)
    except Exception:  # noqa: BLE001 - the text is still there to classify
        return ""


def memory_cgroup(proc_cgroup: str = "/proc/self/cgroup", root: str = "/sys/fs/cgroup") -> tuple[str, int] | None:
    r"""This process's memory cgroup folder and its cgroup version (1 or 2),
    or None where there is none to read (not Linux, no memory controller).

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> _ = open(f"{d}/cg", "w").write("4:memory:/box/job\n0::/\n")
    >>> memory_cgroup(f"{d}/cg", "/sys/fs/cgroup")
    ('/sys/fs/cgroup/memory/box/job', 1)
    """
    try:
        with open(proc_cgroup, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    unified = None
    for line in lines:
        number, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if "memory" in controllers.split(","):
            return os.path.join(root, "memory", path.lstrip("/")).rstrip("/"), 1
        if number == "0" and controllers == "":
            unified = os.path.join(root, path.lstrip("/")).rstrip("/")
    return (unified, 2) if unified is not None else None


class OomKills:
    """The kernel's count of processes its OOM killer ended in this process's
    memory cgroup and every cgroup below it (cgroup v1: ``oom_kill`` in each
    ``memory.oom_control``; v2: ``oom_kill`` in ``memory.events``, which
    already counts the ones below).

    The driver and, on a single machine, every Ray worker share that cgroup
    (a container's memory limit is one), so a worker that died while the
    count rose was, with that evidence, ended for memory. :meth:`take`
    spends one kill per death it explains, so two deaths and one kill give
    one "out of memory". Workers on other nodes are counted on their own
    machines, out of reach here: their deaths stay "worker died".
    """

    def __init__(self, cgroup: tuple[str, int] | None = None) -> None:
        self.cgroup = cgroup if cgroup is not None else memory_cgroup()
        self.seen = self.count()

    def count(self) -> int | None:
        """The kills so far (None where the kernel does not say)."""
        if self.cgroup is None:
            return None
        folder, version = self.cgroup
        if version == 2:
            return _field(os.path.join(folder, "memory.events"), "oom_kill")
        total, found = 0, False
        for here, _, names in os.walk(folder):
            if "memory.oom_control" in names:
                value = _field(os.path.join(here, "memory.oom_control"), "oom_kill")
                if value is not None:
                    total, found = total + value, True
        return total if found else None

    def take(self) -> str | None:
        """Evidence that a worker that just died was killed for memory (a
        kill not yet spent on another death), or None."""
        now = self.count()
        if now is None or self.seen is None or now <= self.seen:
            return None
        self.seen += 1
        return (f"the kernel's OOM killer ended a process of this study (oom_kill {now} in the memory cgroup "
                f"{self.cgroup[0]} and below, {self.seen - 1} before this death)")


def _field(path: str, name: str) -> int | None:
    """The integer after ``name`` in a ``key value`` file, or None."""
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(" ")
                if key == name:
                    return int(value)
    except (OSError, ValueError):
        return None
    return None
