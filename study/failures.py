"""Why a trial failed: Ray's error text and type turned into a short reason."""

from __future__ import annotations

import os

__all__ = ["classify_error", "error_text", "error_kind"]

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
