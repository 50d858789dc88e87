"""The one exception type for mistakes a user can make and fix.

Every command turns a :class:`UserError` into its message on stderr and exit
code 2. The message names the file, the place in it and the fix; nothing is
written to disk before the input has been validated.
"""

from __future__ import annotations

__all__ = ["UserError", "EXIT_USER_ERROR"]

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
