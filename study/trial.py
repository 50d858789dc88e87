"""One trial: seed everything, build the model, train with early stopping on dev.

:func:`run_trial` is the training protocol shared by every family:

* Python's ``random``, NumPy's global generator and torch (CPU and CUDA, when
  the family uses torch) are seeded from the trial's seed before the model is
  built.
* After each epoch the dev and test scores are computed; the best dev epoch
  (``train.mode``) is remembered, and training stops after ``train.patience``
  epochs without a better dev score, or after ``train.max_epochs``.
* ``test_score`` is the test score *at the best dev epoch*; ``test_score_max``
  (the best test score over all epochs) is kept only to show how much picking
  epochs by the test set would inflate results; ``test_score_last`` is the
  last epoch's (what a protocol without model selection reports).
* A NaN/inf training loss or dev score ends the trial with status
  ``diverged`` (its epochs so far are kept); so does a finished run that the
  family's optional ``collapse_reason(best_epoch)`` calls collapsed (the
  transformer family: no better than the majority class, or a loss that
  never fell), with that reason.
* A family's ``evaluate`` may return a third value, the one early stopping
  compares (e.g. minus the dev loss); the dev score is the first. Its
  optional ``details(epoch)`` adds keys to the epoch's row (the transformer
  family's confusion matrices).
* ``train.timeout_s`` is checked after every epoch: past it the trial ends
  with status ``failed`` and reason ``timeout``. (The check is cooperative --
  an epoch that never returns is not interrupted.)
* An exception propagates, so Ray Tune retries the trial up to
  ``train.retries`` times; the driver stores it as ``failed`` after the last.
"""

from __future__ import annotations

import json
import math
import os
import random
import socket
import time
from datetime import datetime, timezone
from typing import Any, Callable

import numpy as np

from .families import get_family
from .families.base import ModelBase
from .schema import TrialSpec
from .space import Space

__all__ = ["seed_everything", "run_trial", "trainable"]


def seed_everything(seed: int, *, torch: bool = False, threads: int | None = None) -> None:
    """Seed Python, NumPy and (if ``torch``) torch on CPU and every CUDA device;
    with ``threads``, also limit torch's CPU threads to the trial's CPUs."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    os.environ["PYTHONHASHSEED"] = str(seed)  # for subprocesses the trial may start
    if torch:
        import torch as torch_module

        torch_module.manual_seed(seed)
        if torch_module.cuda.is_available():
            torch_module.cuda.manual_seed_all(seed)
        if threads:
            torch_module.set_num_threads(threads)


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _node() -> str:
    try:
        import ray

        if ray.is_initialized():
            return ray.get_runtime_context().get_node_id()
    except Exception:  # noqa: BLE001 - outside Ray there is no node id; fall back to the host
        pass
    return socket.gethostname()


def run_trial(space: Space, trial: TrialSpec, report: Callable[[dict[str, Any]], None], *,
              cache_dir: str | None = None) -> None:
    """Train one trial, calling ``report`` once per epoch.

    Every report holds that epoch's row (``epoch``, ``train_loss``,
    ``dev_score``, ``test_score``, ``seconds``) and ``node``; the last one
    also holds ``final: True`` and the trial's outcome (``status``,
    ``reason``, ``epochs_run``, ``best_epoch``, ``dev_score_best``,
    ``test_score_best``, ``test_score_max``, ``metric``, ``train_seconds``,
    ``started_at``, ``finished_at``) and ``results``, the family's result
    columns (:meth:`~study.families.base.ModelBase.results`). ``cache_dir``
    is the run directory's cache folder, where a family may keep what its
    trials share (the encoder family's embeddings); None where there is none.
    """
    family = get_family(space.family)
    train = space.train
    started = _now()
    t0 = time.perf_counter()
    node = _node()
    seed_everything(trial.seed, torch=family.uses_torch, threads=max(1, int(space.resources.cpu)))
    model = family.build(space, trial, cache_dir=cache_dir)
    better = (lambda a, b: a > b) if train.mode == "max" else (lambda a, b: a < b)
    best_epoch, best_dev, best_test, best_select, max_test = 0, math.nan, math.nan, math.nan, math.nan
    defaults = ModelBase()        # the optional hooks' defaults, for a model that lacks them
    details = getattr(model, "details", defaults.details)
    collapse_reason = getattr(model, "collapse_reason", defaults.collapse_reason)
    results = getattr(model, "results", defaults.results)
    since_best = 0
    for epoch in range(1, train.max_epochs + 1):
        e0 = time.perf_counter()
        loss = float(model.train_epoch(epoch))
        status, reason = "ok", ""
        if not math.isfinite(loss):
            dev, test = math.nan, math.nan
            status, reason = "diverged", f"non-finite training loss ({loss}) at epoch {epoch}"
        else:
            scores = [float(x) for x in model.evaluate(epoch)]
            dev, test = scores[0], scores[1]
            select = scores[2] if len(scores) > 2 else dev
            if not math.isfinite(dev):
                status, reason = "diverged", f"non-finite dev score ({dev}) at epoch {epoch}"
        row = {"epoch": epoch, "train_loss": loss, "dev_score": dev, "test_score": test,
               "seconds": time.perf_counter() - e0, "node": node}
        if status == "ok":
            row.update(details(epoch))
        done = status != "ok"
        if not done:
            if math.isfinite(test):
                max_test = test if math.isnan(max_test) else (max(max_test, test) if train.mode == "max"
                                                               else min(max_test, test))
            if best_epoch == 0 or better(select, best_select):
                best_epoch, best_dev, best_test, best_select, since_best = epoch, dev, test, select, 0
            else:
                since_best += 1
            if train.patience is not None and since_best >= train.patience:
                done, reason = True, f"early stop: no better dev {train.metric} for {train.patience} epochs"
            elif epoch == train.max_epochs:
                done, reason = True, "max_epochs reached"
            elif train.timeout_s is not None and time.perf_counter() - t0 > train.timeout_s:
                done, status, reason = True, "failed", "timeout"
        if done and status == "ok":
            collapsed = collapse_reason(best_epoch)
            if collapsed:
                status, reason = "diverged", f"{collapsed}; stopped: {reason}"
        if done:
            row.update({
                "final": True, "status": status, "reason": reason, "epochs_run": epoch,
                "best_epoch": best_epoch or None, "dev_score_best": best_dev, "test_score_best": best_test,
                "test_score_max": max_test, "test_score_last": test if math.isfinite(test) else float("nan"),
                "metric": train.metric,
                "train_seconds": time.perf_counter() - t0,
                "started_at": started.isoformat(), "finished_at": _now().isoformat(),
                "results": results(best_epoch) if status != "failed" else {},
            })
        report(row)
        if done:
            return


def trainable(config: dict[str, Any], *, space: Space, cache_dir: str | None = None) -> None:
    """The Ray Tune function trainable: ``config["trial"]`` is the trial's
    :meth:`TrialSpec.to_json` text (Tune's own sampling is never used)."""
    from ray import tune

    # One string per report: Tune keeps running statistics of every numeric
    # metric it sees, work its control loop would do for a dozen of our columns.
    run_trial(space, TrialSpec.from_json(config["trial"]),
              lambda row: tune.report({"seedsweep": json.dumps(row)}), cache_dir=cache_dir)
