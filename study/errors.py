"""The one exception type for mistakes a user can make and fix.

Every command turns a :class:`UserError` into its message on stderr and exit
code 2. The message names the file, the place in it and the fix; nothing is
written to disk before the input has been validated.
"""

from __future__ import annotations

import os
import shutil

__all__ = ["UserError", "EXIT_USER_ERROR", "no_space"]

EXIT_USER_ERROR = 2


class UserError(Exception):
    """A problem in the user's input (a search space, a run directory, a flag).

    ``str(err)`` is one paragraph: where (file and key path), what is wrong
    (the bad value), and what is allowed or how to fix it.
    """

    def __init__(self, where: str, problem: str, fix: str = "") -> None:
        self.where = where
        self.problem = problem
        self.fix = fix
        text = f"{where}: {problem}"
        if fix:
            text += f" {fix}"
        super().__init__(text)

    def __reduce__(self):
        # Raised inside a Ray worker, the error is pickled back to the driver:
        # rebuild it from its three parts, not from ``args`` (the joined text).
        return (type(self), (self.where, self.problem, self.fix))


def no_space(exc: OSError, fallback: str | None = None) -> UserError:
    """The located message for a full disk met outside the trial store (which
    says more, ``study.execution.runner.disk_full``): the file, the free space, the fix."""
    where = exc.filename or fallback or "the output"
    try:
        usage = shutil.disk_usage(os.path.dirname(os.path.abspath(where)))
        room = f"; {usage.free / 2**20:.1f} MiB free of {usage.total / 2**20:.1f} MiB there"
    except OSError:
        room = ""
    return UserError(str(where), f"no space left on the device ({exc.strerror}{room}); nothing half-written was "
                     "left.", "Free space on that filesystem, then run the same command again.")
