"""The ``function`` family: the user's own Python function, called once per trial.

::

    family: function
    task:
      function: train.py:fit        # beside the study file, or mypkg.train:fit
      extras: [precision, recall]   # optional: other numbers reported, stored at the best dev epoch
  log_bytes: 1048576            # optional: the cap of work/<trial key>.log (what the function prints)

The function receives a :class:`~study.families.function.trialapi.Trial`
and reports each epoch; seedsweep owns the rest of the protocol
(:mod:`study.execution.trial`): seeding before the call (Python and NumPy; torch as
well when the function's module imports it -- a worker never pays torch's
import for a function that does not use it), patience and ``max_epochs``
(``trial.should_stop``), the test score at the best dev epoch, a NaN/inf loss
stored as ``diverged``, an exception as ``failed`` (its last line the
reason) after ``train.retries`` attempts. ``train.timeout_s`` is checked
after each report (an epoch that never returns is not interrupted; a
``command`` study is, by a signal). The hyperparameters are whatever
``compare``, ``space`` and ``fixed`` name.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from ...errors import UserError
from ...files import note_read
from ...schema import RESERVED_NAMES, Train, TrialSpec
from ..base import Limit
from ..evalsets import check_evaluate
from ..usercode import LOG_BYTES, captured_output, check_task_keys, log_path, study_folder, trial_folder
from .loader import check_reference, load_function, parse_reference, source_file
from ..view import once
from .trialapi import Trial

if TYPE_CHECKING:
    from ..view import StudyView

__all__ = ["FunctionFamily", "FunctionModel", "FAMILY"]

TASK_KEYS = ("function", "name", "extras", "log_bytes")


def _extras(space: "StudyView") -> tuple[str, ...]:
    extras = space.task.get("extras") or []
    where = f"{space.path}: task.extras"
    if not isinstance(extras, list) or not all(isinstance(e, str) and e.isidentifier() for e in extras):
        raise UserError(where, f"expected a list of names, got {extras!r}.",
                        "List the extra numbers the function reports, e.g. extras: [precision, recall].")
    taken = set(RESERVED_NAMES) | {c for c, _ in space.compare} | {p.name for p in space.params} | \
        {k for k, _ in space.fixed} | {"dev", "test", "loss", "dev_loss", "test_loss"}
    for name in extras:
        if name in taken:
            raise UserError(f"{where}: {name}", f"'{name}' is already a column or a keyword of report().",
                            "Give the extra another name.")
    return tuple(extras)


class FunctionModel:
    """One trial of the user's function: :meth:`drive` calls it once."""

    def __init__(self, fn, space: "StudyView", trial: TrialSpec, work_dir: str | None) -> None:
        self.fn, self.space, self.trial, self.work_dir = fn, space, trial, work_dir
        self.extras = _extras(space)
        self.per_epoch: list[dict[str, float]] = []
        self.ended_reason: str | None = None

    def drive(self, on_epoch) -> None:
        """Call the function with a :class:`Trial` whose reports go to ``on_epoch``."""
        def counted(loss, scores, extras):
            self.per_epoch.append(extras)
            return on_epoch(loss, scores, extras)

        t = self.trial
        torch = sys.modules.get("torch")
        if torch is not None:       # imported by the function's module: seeded too (the engine never imports it)
            torch.manual_seed(t.seed)
            if torch.cuda.is_available():
                torch.cuda.manual_seed_all(t.seed)
        cap = int(self.space.task.get("log_bytes", LOG_BYTES))
        with trial_folder(self.work_dir, t.key) as folder, captured_output(log_path(self.work_dir, t.key), cap):
            handle = Trial(key=t.key, choice=t.choice, option=t.option, params=t.hparams, seed=t.seed,
                           folder=folder, max_epochs=self.space.train.max_epochs, extras=self.extras,
                           on_epoch=counted)
            self.fn(handle)
        self.ended_reason = f"the function returned after epoch {handle.epochs}"

    def collapse_reason(self, best_epoch: int) -> str | None:
        """Never: the function's run is judged by its scores alone."""
        return None

    def results(self, best_epoch: int) -> dict[str, Any]:
        """Each ``task.extras`` value at the best dev epoch (null if not reported then)."""
        at = self.per_epoch[best_epoch - 1] if 0 < best_epoch <= len(self.per_epoch) else {}
        return {name: at.get(name, math.nan) for name in self.extras}


@dataclass(frozen=True)
class FunctionFamily:
    """The ``function`` family (see the module docstring)."""

    name: str = "function"
    uses_torch: bool = False                 # torch is seeded in drive(), once the function's module imported it
    wants_work_dir: bool = True
    train_defaults: Train = Train(max_epochs=10, patience=3, metric="score", mode="max", timeout_s=None, retries=0)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    limits: Mapping[str, Limit] = field(default_factory=dict)
    source: str = "built in (seedsweep's own: your Python function)"

    def reference(self, space: "StudyView"):
        """``task.function`` parsed (a file beside the study file, or a module), once per study."""
        return once(space, "function", lambda: parse_reference(space.task.get("function"), study_folder(space),
                                                                f"{space.path}: task.function"))

    def validate(self, space: "StudyView") -> None:
        """``task`` keys; the function's file or module exists and, read without running it, takes one argument."""
        check_evaluate(space, False, self.name)
        check_task_keys(space, self.name, TASK_KEYS, ("function",))
        _extras(space)
        cap = space.task.get("log_bytes")
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1024):
            raise UserError(f"{space.path}: task.log_bytes", f"expected a whole number of bytes >= 1024, got {cap!r}.",
                            "Give the per-trial log's cap in bytes, e.g. 1048576.")
        check_reference(self.reference(space), study_folder(space), f"{space.path}: task.function")

    def resolve(self, space: "StudyView") -> list[str]:
        """Imports the function (its import-time errors surface here) and notes its file for the manifest."""
        ref = self.reference(space)
        where = f"{space.path}: task.function"
        load_function(ref, study_folder(space), where)
        path = source_file(ref, study_folder(space), where)
        note_read(path)
        return [f"function {ref.name} in {path}"]

    def code_files(self, space: "StudyView") -> list[str]:
        """The user's code whose change a resume refuses: the function's file."""
        ref = self.reference(space)
        return [str(source_file(ref, study_folder(space), f"{space.path}: task.function"))]

    def build(self, space: "StudyView", trial: TrialSpec, *, cache_dir: str | None = None,
              work_dir: str | None = None) -> FunctionModel:
        """The trial's call of the imported function (``work_dir``: the run directory's ``work/`` folder)."""
        fn = load_function(self.reference(space), study_folder(space), f"{space.path}: task.function")
        return FunctionModel(fn, space, trial, work_dir)

    def result_columns(self, space: "StudyView") -> dict[str, str]:
        """``task.extras``, each a float column (its value at the best dev epoch)."""
        return {name: "float" for name in _extras(space)}


FAMILY = FunctionFamily()
