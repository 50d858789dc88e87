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

A model that runs its own loop (the user's code: the ``function`` and
``command`` families) defines ``drive(on_epoch)`` instead of
``train_epoch``/``evaluate`` (:func:`drive_trial`): it calls
``on_epoch(loss, scores, extras)`` once per epoch it trained and stops when
that returns True. The same :class:`Record` judges every epoch; epochs
reported after the stop are not counted. A loss of None means "not
reported" (stored as null, never read as diverged).
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

from ..families import get_family, model_part, optional
from ..schema import TrialSpec
from ..spec.space import Space

__all__ = ["seed_everything", "Record", "run_trial", "drive_trial", "NoMetrics", "run_group", "trainable",
           "group_trainable"]


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


def _gpu_ids() -> str:
    """The accelerator IDs Ray gave this trial's worker, comma-separated ("" on CPU or outside Ray)."""
    try:
        import ray

        if ray.is_initialized():
            return ",".join(str(g) for g in ray.get_gpu_ids())
    except Exception:  # noqa: BLE001 - outside a Ray worker there are none
        pass
    return ""


class Record:
    """One trial's early stopping and outcome, epoch by epoch (the shared protocol
    above). A lone trial keeps one; a vectorised population one per seed."""

    def __init__(self, train, node: str, *, shared: bool = False) -> None:
        self.train, self.node, self.shared = train, node, shared     # shared: train_seconds sums epoch shares
        self.gpu_ids = _gpu_ids()
        self.better = (lambda a, b: a > b) if train.mode == "max" else (lambda a, b: a < b)
        self.started, self.t0 = _now(), time.perf_counter()
        self.best_epoch, self.best_dev, self.best_test, self.best_select = 0, math.nan, math.nan, math.nan
        self.max_test, self.since_best, self.seconds = math.nan, 0, 0.0
        self.done, self.status, self.reason = False, "ok", ""

    def epoch(self, epoch: int, loss: float, scores, seconds: float, ran: int | None = None) -> dict[str, Any]:
        """The epoch's row after training loss ``loss`` and ``scores`` (the
        family's ``evaluate``; None when the loss was not finite); sets ``done``.
        ``ran``: the epochs run so far where ``epoch`` is the code's own number
        for this one (``max_epochs`` counts epochs run)."""
        train = self.train
        self.seconds += seconds
        status, reason = "ok", ""
        reported = loss is not None         # the user's code may report no loss: nothing to judge it by
        loss = loss if reported else math.nan
        if reported and not math.isfinite(loss):
            dev, test = math.nan, math.nan
            status, reason = "diverged", f"non-finite training loss ({loss}) at epoch {epoch}"
        else:
            scores = [float(x) for x in scores]
            dev, test = scores[0], scores[1]
            select = scores[2] if len(scores) > 2 else dev
            if not math.isfinite(dev):
                status, reason = "diverged", f"non-finite dev score ({dev}) at epoch {epoch}"
        row = {"epoch": epoch, "train_loss": loss, "dev_score": dev, "test_score": test,
               "seconds": seconds, "node": self.node, "gpu_ids": self.gpu_ids}
        done = status != "ok"
        if not done:
            if math.isfinite(test):
                self.max_test = test if math.isnan(self.max_test) else (
                    max(self.max_test, test) if train.mode == "max" else min(self.max_test, test))
            if self.best_epoch == 0 or self.better(select, self.best_select):
                self.best_epoch, self.best_dev, self.best_test, self.best_select = epoch, dev, test, select
                self.since_best = 0
            else:
                self.since_best += 1
            if train.patience is not None and self.since_best >= train.patience:
                done, reason = True, f"early stop: no better dev {train.metric} for {train.patience} epochs"
            elif (epoch if ran is None else ran) == train.max_epochs:
                done, reason = True, "max_epochs reached"
            elif train.timeout_s is not None and time.perf_counter() - self.t0 > train.timeout_s:
                done, status, reason = True, "failed", "timeout"
        self.done, self.status, self.reason, self.test_last = done, status, reason, test
        return row

    def finish(self, row: dict[str, Any], epoch: int, collapse_reason, results) -> None:
        """Add the outcome to the last epoch's ``row`` (``collapse_reason`` and
        ``results`` are the model's hooks, called with the best epoch)."""
        if self.status == "ok":
            collapsed = collapse_reason(self.best_epoch)
            if collapsed:
                self.status, self.reason = "diverged", f"{collapsed}; stopped: {self.reason}"
        test = self.test_last
        row.update({
            "final": True, "status": self.status, "reason": self.reason, "epochs_run": epoch,
            "best_epoch": self.best_epoch or None, "dev_score_best": self.best_dev,
            "test_score_best": self.best_test, "test_score_max": self.max_test,
            "test_score_last": test if math.isfinite(test) else float("nan"),
            "metric": self.train.metric,
            "train_seconds": self.seconds if self.shared else time.perf_counter() - self.t0,
            "started_at": self.started.isoformat(), "finished_at": _now().isoformat(),
            "results": results(self.best_epoch) if self.status != "failed" else {},
        })


def run_trial(space: Space, trial: TrialSpec, report: Callable[[dict[str, Any]], None], *,
              cache_dir: str | None = None, work_dir: str | None = None) -> None:
    """Train one trial, calling ``report`` once per epoch.

    Every report holds that epoch's row (``epoch``, ``train_loss``,
    ``dev_score``, ``test_score``, ``seconds``), ``node`` and ``gpu_ids``; the last one
    also holds ``final: True`` and the trial's outcome (``status``,
    ``reason``, ``epochs_run``, ``best_epoch``, ``dev_score_best``,
    ``test_score_best``, ``test_score_max``, ``metric``, ``train_seconds``,
    ``started_at``, ``finished_at``) and ``results``, the family's result
    columns (:meth:`~study.families.base.ModelBase.results`). ``cache_dir``
    is the run directory's cache folder, where a family may keep what its
    trials share (the encoder family's embeddings); None where there is none.
    ``work_dir``: the run directory's folder for the trials' own folders and
    logs, given to a family that ``wants_work_dir`` (the user's code).
    """
    family = get_family(space.family)
    record = Record(space.train, _node())
    seed_everything(trial.seed, torch=family.uses_torch, threads=max(1, int(space.resources.cpu)))
    if optional(family, "wants_work_dir"):
        model = family.build(space, trial, cache_dir=cache_dir, work_dir=work_dir)
    else:
        model = family.build(space, trial, cache_dir=cache_dir)
    details, collapse_reason = model_part(model, "details"), model_part(model, "collapse_reason")
    results = model_part(model, "results")
    if model_part(model, "drive") is not None:
        drive_trial(model, record, report, collapse_reason, results)
        return
    for epoch in range(1, space.train.max_epochs + 1):
        e0 = time.perf_counter()
        loss = float(model.train_epoch(epoch))
        scores = model.evaluate(epoch) if math.isfinite(loss) else None
        row = record.epoch(epoch, loss, scores, time.perf_counter() - e0)
        if record.status == "ok":
            row.update(details(epoch))
        if record.done:
            record.finish(row, epoch, collapse_reason, results)
        report(row)
        if record.done:
            return


class NoMetrics(RuntimeError):
    """The user's code ended without reporting one epoch."""


def drive_trial(model, record: Record, report: Callable[[dict[str, Any]], None], collapse_reason,
                results) -> None:
    """Run a model that drives its own loop (``model.drive(on_epoch)``).

    Each ``on_epoch(loss, scores, extras)`` is one epoch judged by ``record``
    (scores: ``(dev, test)``; extras: keys added to the epoch's row) and
    returns True once the trial must stop (patience, ``max_epochs``, a
    diverged loss, the timeout); later calls are ignored. A row is reported
    when the next one arrives, so the trial's last counted epoch carries the
    outcome (``final``) whether the stop came from seedsweep or the code
    simply returned. No epoch at all raises :class:`NoMetrics`.
    """
    pending: list[dict[str, Any]] = []      # the last epoch's row, reported when the next arrives
    clock, count, last = [time.perf_counter()], [0], [0]      # epochs run; the last one's number
    own_test = model_part(model, "test_at_end")     # its test score comes once, after the last epoch

    def on_epoch(loss: float | None, scores, extras: dict[str, Any] | None = None) -> bool:
        if record.done:
            return True
        extras = dict(extras or {})
        count[0] += 1
        # the code's own epoch number where it gives one that increases (a command's epoch regex), else the count
        own = extras.pop("epoch", None)
        epoch = int(own) if own is not None and (count[0] == 1 or int(own) > last[0]) else last[0] + 1
        last[0] = epoch
        now = time.perf_counter()
        seconds, clock[0] = now - clock[0], now
        if pending:
            report(pending.pop())
        finite = loss is None or math.isfinite(loss)
        row = record.epoch(epoch, loss, scores if finite else None, seconds, ran=count[0])
        if record.status == "ok" and extras:
            row.update(extras)
        if record.done:
            record.finish(row, count[0], collapse_reason, results)
            if not own_test:
                report(row)
                return True
        pending.append(row)
        return record.done

    model.drive(on_epoch)
    if not pending:
        if record.done:
            return
        raise NoMetrics(model_part(model, "silent_reason"))
    row = pending.pop()
    if not record.done:
        record.reason = model_part(model, "ended_reason") or f"the code returned after epoch {row['epoch']}"
        record.finish(row, count[0], collapse_reason, results)
    report(_with_final_test(row, model) if own_test else row)


def _with_final_test(row: dict[str, Any], model) -> dict[str, Any]:
    """The final row of a trial whose code reports test once, at its end: that
    score is the trial's (no per-epoch test to peek at); none makes it failed."""
    final = model_part(model, "final_test")
    if final is None:
        if row["status"] != "failed":
            row.update(status="failed", reason=model_part(model, "no_test_reason"), results={})
        return row
    row.update(test_score_best=float(final), test_score_last=float(final), test_score_max=math.nan)
    return row


def run_group(space: Space, trials: list[TrialSpec], report: Callable[[list[dict[str, Any]]], None], *,
              cache_dir: str | None = None) -> None:
    """Train a population (the seeds of one configuration and option) as one
    vectorised model (``train.vectorize_seeds``), calling ``report`` once per
    epoch with one row per seed still training, each as :func:`run_trial`
    reports it plus its ``trial_key``.

    Every seed keeps its own :class:`Record`: a seed that stops early or
    diverges is finished (its row carries ``final``) and masked out of the
    model (``stop``) while the others go on; the group ends when every seed
    has stopped. An epoch's ``seconds`` is the group's wall time for it
    shared equally by the seeds that trained in it; ``train_seconds`` adds a
    seed's share of building the population, so the seeds' ``train_seconds``
    sum to the population's wall time.
    """
    family = get_family(space.family)
    node = _node()
    records = [Record(space.train, node, shared=True) for _ in trials]
    seed_everything(min(t.seed for t in trials), torch=family.uses_torch,
                    threads=max(1, int(space.resources.of_trial(True)["cpu"])))
    model = family.build_group(space, trials, cache_dir=cache_dir)
    for r in records:                 # building the population is shared too
        r.seconds = (time.perf_counter() - r.t0) / len(trials)
    for epoch in range(1, space.train.max_epochs + 1):
        active = [i for i, r in enumerate(records) if not r.done]
        if not active:
            return
        e0 = time.perf_counter()
        losses = [float(x) for x in model.train_epoch(epoch)]
        scores = model.evaluate(epoch)
        share = (time.perf_counter() - e0) / len(active)
        rows = []
        for i in active:
            r = records[i]
            row = r.epoch(epoch, losses[i], scores[i] if math.isfinite(losses[i]) else None, share)
            row["trial_key"] = trials[i].key
            if r.done:
                r.finish(row, epoch, lambda best, i=i: model.collapse_reason(i, best),
                         lambda best, i=i: model.results(i, best))
                model.stop(i)
            rows.append(row)
        report(rows)


def trainable(config: dict[str, Any], *, space: Space, cache_dir: str | None = None,
              work_dir: str | None = None) -> None:
    """The Ray Tune function trainable: ``config["trial"]`` is the trial's
    :meth:`TrialSpec.to_json` text (Tune's own sampling is never used)."""
    from ray import tune

    # One string per report: Tune keeps running statistics of every numeric
    # metric it sees, work its control loop would do for a dozen of our columns.
    run_trial(space, TrialSpec.from_json(config["trial"]),
              lambda row: tune.report({"seedsweep": json.dumps(row)}), cache_dir=cache_dir, work_dir=work_dir)


def group_trainable(config: dict[str, Any], *, space: Space, cache_dir: str | None = None,
                    work_dir: str | None = None) -> None:
    """The Ray Tune trainable of a vectorised population: ``config["group"]``
    is a JSON list of its trials' :meth:`TrialSpec.to_json` texts."""
    from ray import tune

    trials = [TrialSpec.from_json(t) for t in json.loads(config["group"])]
    run_group(space, trials, lambda rows: tune.report({"seedsweep_group": json.dumps(rows)}), cache_dir=cache_dir)
