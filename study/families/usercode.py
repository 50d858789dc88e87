"""What the two families of the user's own code share (``function`` and ``command``).

Their hyperparameters are whatever the study file names (``compare``,
``space``, ``fixed``): there is no table of defaults or limits to check them
against. Files they name are relative to the study file's folder
(:attr:`~study.families.view.StudyView.base`). Each trial gets a folder of its own,
``trial.dir`` (``{trial_dir}`` in a command): under the run directory's
``work/`` folder, kept after the trial (checkpoints, logs the code writes;
emptied when the trial runs again), or a temporary folder, removed afterwards,
when the run directory is on an object store.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from ..errors import UserError
from ..files import folder_under
from ..schema import escape_key

if TYPE_CHECKING:
    from .view import StudyView

__all__ = ["study_folder", "check_shipping_keys", "SHIPPING_KEYS", "hyperparameter_names",
           "check_task_keys", "trial_folder", "log_path", "as_argument", "captured_output", "LOG_BYTES"]

#: The task keys that say what travels to a cluster's workers (:mod:`study.execution.shipping`).
SHIPPING_KEYS = ("working_dir", "excludes")
#: the default cap of a trial's log (``task.log_bytes``)
LOG_BYTES = 1 << 20


def study_folder(space: "StudyView") -> Path:
    """The folder that relative paths of the study file mean: the file's own
    folder (recorded in the manifest, so a rerun from it means the same)."""
    return Path(space.base or os.getcwd())


def hyperparameter_names(space: "StudyView") -> list[str]:
    """Every hyperparameter the study names, in file order: compared choices, sampled, fixed."""
    names = [c for c, _ in space.compare] + [p.name for p in space.params] + [k for k, _ in space.fixed]
    return list(dict.fromkeys(names))


def check_task_keys(space: "StudyView", family: str, allowed: tuple[str, ...], required: tuple[str, ...]) -> None:
    """Known ``task`` keys only (the family's and :data:`SHIPPING_KEYS`), and the required ones present."""
    for key in space.task:
        if key not in allowed and key not in SHIPPING_KEYS:
            raise UserError(f"{space.path}: task.{key}", f"unknown key '{key}' for the {family} family.",
                            f"Allowed: {', '.join(allowed + SHIPPING_KEYS)}.")
    for key in required:
        if key not in space.task:
            raise UserError(f"{space.path}: task", f"the {family} family needs task.{key}.",
                            f"Add it, e.g. {_EXAMPLES.get(key, key + ': ...')}")
    check_shipping_keys(space)


def check_shipping_keys(space) -> None:
    """``task.working_dir`` a folder that exists, ``task.excludes`` a list of strings (located errors)."""
    task = space.task
    if "excludes" in task:
        ex = task["excludes"]
        if not isinstance(ex, (list, tuple)) or not all(isinstance(x, str) and x.strip() for x in ex):
            raise UserError(f"{space.path}: task.excludes", f"expected a list of patterns, got {ex!r}.",
                            "Write e.g. excludes: [data/raw/, '*.ckpt'] (Ray's .gitignore-style patterns, "
                            "relative to the folder that travels).")
    if "working_dir" in task:
        wd = task["working_dir"]
        if not isinstance(wd, str) or not wd.strip():
            raise UserError(f"{space.path}: task.working_dir", f"expected a folder, got {wd!r}.",
                            "Write e.g. working_dir: .. (relative to the study file's folder).")
        folder = folder_under(space.base, wd)
        if not folder.is_dir():
            raise UserError(f"{space.path}: task.working_dir", f"no such folder: {folder}.",
                            "Give a folder that exists, relative to the study file's folder (or leave the key "
                            "out to ship the study file's folder).")


_EXAMPLES = {"function": "task: {function: train.py:fit} (a file beside the study file, or mypkg.train:fit).",
             "command": "task: {command: [python, train.py, --lr, '{lr}'], metrics: {dev: dev_f1, test: test_f1}}.",
             "metrics": "metrics: {dev: dev_f1, test: test_f1, loss: loss} (keys of the JSON lines printed)."}


def log_path(work_dir: str | None, key: str) -> Path:
    """Where a trial's program log goes: ``work/<escaped key>.log`` (a
    temporary folder when there is no local run directory)."""
    base = Path(work_dir) if work_dir else Path(tempfile.gettempdir()) / "seedsweep-logs"
    base.mkdir(parents=True, exist_ok=True)
    return base / f"{escape_key(key)}.log"


@contextmanager
def trial_folder(work_dir: str | None, key: str) -> Iterator[str]:
    """The trial's own folder for the length of the block: ``work/<escaped
    key>/``, emptied first and kept afterwards; a temporary folder, removed
    afterwards, when ``work_dir`` is None."""
    if work_dir is None:
        folder = tempfile.mkdtemp(prefix="seedsweep-trial-")
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return
    folder = Path(work_dir) / escape_key(key)
    shutil.rmtree(folder, ignore_errors=True)       # a retried attempt starts from an empty folder
    folder.mkdir(parents=True, exist_ok=True)
    yield str(folder)


def as_argument(value: Any) -> str:
    """A hyperparameter value as one command-line argument (JSON spellings
    for booleans and null, ``repr`` for floats so no digit is lost).

    >>> [as_argument(v) for v in (True, None, 0.1, 3, "x; touch PWNED")]
    ['true', '', '0.1', '3', 'x; touch PWNED']
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


class _CappedText(io.TextIOBase):
    """A text stream that keeps the first ``cap`` bytes and counts the rest
    (a full text stream: libraries ask ``sys.stdout.isatty()`` and the like)."""

    def __init__(self, fh, cap: int) -> None:
        super().__init__()
        self.fh, self.cap, self.written, self.dropped = fh, cap, 0, 0

    @property
    def encoding(self) -> str:
        return "utf-8"

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        size = len(text.encode("utf-8", "replace"))
        if self.written + size <= self.cap:
            self.fh.write(text)
            self.fh.flush()
            self.written += size
        else:
            self.dropped += size
        return len(text)

    def flush(self) -> None:
        self.fh.flush()


@contextmanager
def captured_output(path: Path, cap: int = LOG_BYTES) -> Iterator[None]:
    """Python's ``sys.stdout`` and ``sys.stderr`` into ``path`` for the
    length of the block (at most ``cap`` bytes; a note says how much more
    there was). Output of C code and of subprocesses is not captured."""
    with open(path, "w", encoding="utf-8", errors="replace") as fh:
        stream = _CappedText(fh, cap)
        with contextlib.redirect_stdout(stream), contextlib.redirect_stderr(stream):
            try:
                yield
            finally:
                sys.stdout.flush()
        if stream.dropped:
            fh.write(f"\n[seedsweep] ... {stream.dropped} more bytes of output left out (log cap {cap} bytes)\n")
