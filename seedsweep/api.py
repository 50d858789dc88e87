"""A study defined in Python (a notebook, a script) instead of a YAML file.

::

    import seedsweep
    from train import fit                      # def fit(trial): ... in train.py

    digits = seedsweep.define(name="digits", function=fit, compare={"optimizer": ["adam", "sgd"]},
                          space={"lr": {"loguniform": [1e-3, 1e-1]}}, samples=4, seeds=3,
                          train={"max_epochs": 12, "patience": 3})
    summary = digits.run(out="runs/digits")    # as seedsweep.run("digits.yaml", "runs/digits") would
    digits.save("digits.yaml")                 # the same study as a file

The keywords are the study file's keys; :func:`define` writes them as that
file's YAML text and validates it the way a file is validated (the same
located messages, "seedsweep.define(digits)" in place of the file name), so a
definition is a study file in every respect: its text is in the manifest and
``seedsweep run DIR`` reruns it. ``function`` is a function of a ``.py`` file
(recorded as ``FILE.py:NAME``, or ``module:NAME`` for an importable module)
or the ``FILE.py:NAME`` text itself; a function typed into a notebook cell has
no file a Ray worker could import, and is refused with that fix. Relative
paths mean the working folder (``base`` to change it).

It lives on the top floor because running an adaptive study (``until:``)
asks the statistics (:mod:`analysis.stats.decisions`) after every wave, as
``seedsweep run`` does.
"""

from __future__ import annotations

import inspect
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import yaml

from seedsweep.study.errors import UserError
from seedsweep.study.execution.mlflowsink import log_text, tracking_of
from seedsweep.study.execution.runner import run as run_study
from seedsweep.study.execution.tuned import run_tuned
from seedsweep.study.execution.waves import run_until
from seedsweep.study.files import write_text
from seedsweep.study.spec.space import Space
from seedsweep.study.spec.spacefile import parse_space
from seedsweep.study.store.studies import load_study

__all__ = ["define", "Definition", "run"]


def run(study: str | os.PathLike | Space, out: str | os.PathLike, **kwargs: Any):
    """Run (or resume) a study file (or a :class:`Space`) into ``out`` exactly
    as ``seedsweep run FILE --out OUT`` does: a plain grid; an adaptive study
    (``until:``) wave by wave until the statistics decide it or its budget is
    spent; a tuned comparison (``tune:``) search by search. Keywords as
    :func:`study.execution.runner.run` (``num_cpus``, ``address``,
    ``retry_failed``, ``claims``, ``supersede``…). Returns the grid's or the
    tuned study's :class:`~study.execution.runner.RunSummary`, or an adaptive
    study's :class:`~study.execution.waves.WavesSummary` (``.stopped`` says why)."""
    space = load_study(study)
    if space.tune is not None:
        result = run_tuned(space, out, **kwargs)
    elif space.until is not None:
        from seedsweep.analysis.reading.rundirs import WavePolicy   # the statistics stack, only for an adaptive study

        policy = WavePolicy(space.until, seeds=len(space.seeds), first=space.samples,
                            trials_per_config=space.trials_per_config)
        result = run_until(space, out, policy, **kwargs)
    else:
        result = run_study(space, out, **kwargs)
    tracking = tracking_of(space, kwargs.get("mlflow"))
    if tracking is not None:
        _log_report(tracking, out, kwargs.get("stream") or sys.stderr)
    return result


def _log_report(tracking: dict, out, stream) -> None:
    """The study's report as ``report.md`` of its MLflow parent run (a line says why where it could not be)."""
    from seedsweep import analysis     # the statistics stack: the report of a tracked study

    try:
        text = analysis.report(out)
    except UserError as err:           # e.g. no trial stored yet: nothing to report
        text = f"no report: {err}"
    why = log_text(tracking, str(out), "report.md", text)
    if why is not None:
        print(f"[seedsweep] the report was not logged to MLflow {tracking['uri']} ({why}); "
              "'seedsweep report' prints it", file=stream, flush=True)


@dataclass(frozen=True)
class Definition:
    """A study defined in Python: its YAML ``text`` and the validated :class:`Space`."""

    text: str
    space: Space

    def run(self, out: str | os.PathLike, **kwargs: Any):
        """Run (or resume) the study into ``out``, as :func:`run` does."""
        return run(self.space, out, **kwargs)

    def save(self, path: str | os.PathLike) -> Path:
        """Write the study file (written whole or not at all); returns its path."""
        write_text(self.text, path)
        return Path(path)


def _reference(function: Callable | str, where: str) -> str:
    """``task.function`` for a Python function (its file or module and its name)."""
    if isinstance(function, str):
        return function
    name = getattr(function, "__qualname__", None) or getattr(function, "__name__", None)
    module = getattr(function, "__module__", None)
    if not callable(function) or not name:
        raise UserError(f"{where}: function", f"{function!r} is not a function.",
                        "Pass a function def fit(trial): ... from a .py file, or 'FILE.py:NAME'.")
    if "<" in name:             # a lambda or a function defined inside another one
        raise UserError(f"{where}: function", f"{name} cannot be imported by name in a Ray worker.",
                        "Define it at the top level of a .py file and pass it (or 'FILE.py:NAME').")
    try:
        source = inspect.getsourcefile(function)
    except TypeError:
        source = None
    if not source or not source.endswith(".py") or not Path(source).is_file():
        raise UserError(f"{where}: function", f"{name} has no .py file (defined in a notebook cell or the "
                        "console?), so the Ray workers cannot import it.",
                        f"Put 'def {name}(trial): ...' in a file such as train.py beside the notebook, then "
                        "'from train import fit' and pass fit (or pass 'train.py:fit').")
    if module and module != "__main__" and sys.modules.get(module) is not None \
            and "." in module and Path(source).name != "__init__.py":
        return f"{module}:{name}"           # a package's module: imported by name, so its relative imports work
    return f"{Path(source).resolve()}:{name}"


def define(*, name: str, compare: dict[str, list], family: str | None = None, function: Callable | str | None = None,
           command: list[str] | None = None, metrics: dict[str, Any] | None = None, samples: int | None = None,
           seeds: int | list[int] | None = None, space: dict[str, Any] | None = None,
           fixed: dict[str, Any] | None = None, task: dict[str, Any] | None = None,
           train: dict[str, Any] | None = None, until: dict[str, Any] | None = None,
           tune: dict[str, Any] | None = None, resources: dict[str, Any] | None = None,
           sampler: str | None = None, sampler_seed: int | None = None,
           base: str | os.PathLike | None = None) -> Definition:
    """A study from Python keywords (the study file's keys); raises
    :class:`UserError` exactly as a file with these keys would.

    ``function`` implies ``family: function``; ``command`` and ``metrics``
    imply ``family: command``; ``family`` names any other (then ``task``
    holds its keys). ``samples`` and ``seeds`` are required unless ``tune``
    is given, as in a file."""
    where = f"seedsweep.define({name})"
    task = dict(task or {})
    if function is not None:
        family = family or "function"
        task["function"] = _reference(function, where)
    if command is not None or metrics is not None:
        family = family or "command"
        if command is not None:
            task["command"] = list(command)
        if metrics is not None:
            task["metrics"] = metrics
    if family is None:
        raise UserError(where, "no model given.", "Pass function=fit (a Python function), command=[...] with "
                        "metrics={...} (any program), or family='NAME'.")
    data: dict[str, Any] = {"name": name, "family": family}
    for key, value in (("samples", samples), ("seeds", seeds), ("compare", compare), ("task", task or None),
                       ("sampler", sampler), ("sampler_seed", sampler_seed), ("space", space), ("fixed", fixed),
                       ("train", train), ("resources", resources), ("until", until), ("tune", tune)):
        if value is not None:
            data[key] = value
    try:
        text = yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)
    except yaml.YAMLError as exc:
        raise UserError(where, f"a value cannot be written as YAML ({exc}).",
                        "Use numbers, strings, booleans, lists and dicts only.") from None
    folder = os.path.abspath(base) if base is not None else os.getcwd()
    return Definition(text=text, space=parse_space(text, where, base=folder))
