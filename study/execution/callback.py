"""The driver-side Tune callback: every finished trial into the store, one progress line.

Imported only when a study runs (it subclasses ``ray.tune.Callback``, so
``import seedsweep.study`` stays free of Ray).
"""

from __future__ import annotations

import errno
import json
import time
from collections import Counter, defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any, TextIO

import pyarrow as pa
from ray import tune

from ..schema import TrialSpec
from ..store.rows import confusion_rows, epoch_rows, outcome_of, trial_row
from ..store.rundir import RunDir
from ..store.shards import fold_parts
from .failures import OomKills, classify_error, error_kind, error_text

__all__ = ["StoreAndProgress", "StopWhenFull", "clock", "FULL"]

#: the errors of a filesystem that has no room left (no space; over the quota)
FULL = (errno.ENOSPC, errno.EDQUOT)


def clock(seconds: float) -> str:
    """``m:ss`` or ``h:mm:ss``.

    >>> clock(59.6), clock(3725)
    ('1:00', '1:02:05')
    """
    seconds = int(round(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class StoreAndProgress(tune.Callback):
    """Writes each finished trial to the store; prints one progress line.

    Tune pickles its callbacks into its own experiment state; we never
    restore from that state (the store is the record), so pickling keeps
    nothing (``__getstate__``).
    """

    def __init__(self, rd: RunDir, space, plan: dict[str, TrialSpec], schema: pa.Schema,
                 prior_attempts: dict[str, int], stream: TextIO, total: int) -> None:
        self.rd, self.space, self.plan, self.schema = rd, space, plan, schema
        self.prior_attempts, self.stream, self.total = prior_attempts, stream, total
        self.keys: dict[str, str] = {}
        self.groups: dict[str, list[str]] = {}
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="seedsweep-store")
        self.pending: list[Future] = []
        self.epochs: dict[str, list[dict]] = defaultdict(list)
        self.final: dict[str, dict] = {}
        self.attempts: Counter = Counter()
        self.started: dict[str, datetime] = {}
        self.counts: Counter = Counter()
        self.done: set[str] = set()
        self.running = 0
        self.t0 = time.monotonic()
        self.last_print = 0.0
        self.tty = stream.isatty()
        self.fold_every = fold_parts()
        self.unfolded = len(rd.part_keys(rd.trials_dir))     # parts a killed run left count toward the first fold
        self.fold_warned = False
        self.written: dict[str, dict[str, pa.Table | None]] = {}    # key -> its tables, until folded
        self.full: OSError | None = None        # the first write that found the disk full: nothing is written after
        self.unwritten = 0                      # finished trials not stored because the disk was full
        self.oom = OomKills()                   # the kernel's OOM-kill count, to tell why a worker died
        self.sink = None                        # an MlflowSink each stored trial is handed to (study.execution.mlflowsink)

    def __getstate__(self):
        return {}

    def key(self, trial) -> str:
        """The trial key of a Ray trial (read once from its config)."""
        key = self.keys.get(trial.trial_id)
        if key is None:
            key = self.keys[trial.trial_id] = TrialSpec.from_json(trial.config["trial"]).key
        return key

    def members(self, trial) -> list[str]:
        """The trial keys one Ray trial trains: its own, or its population's."""
        found = self.groups.get(trial.trial_id)
        if found is None:
            if "group" in trial.config:
                found = [TrialSpec.from_json(t).key for t in json.loads(trial.config["group"])]
            else:
                found = [self.key(trial)]
            self.groups[trial.trial_id] = found
        return found

    def unfinished(self, batch: list[str], name: str) -> bool:
        """Whether a trial key of ``batch`` (the JSON configs of one ``Tuner.fit``) was not stored."""
        for item in batch:
            specs = json.loads(item) if name == "group" else [item]
            if any(TrialSpec.from_json(t).key not in self.done for t in specs):
                return True
        return False

    def forget(self, trial) -> None:
        """Drop what was kept about a Ray trial that ended (the driver's memory stays flat)."""
        self.keys.pop(trial.trial_id, None)
        self.groups.pop(trial.trial_id, None)

    def unstored(self, trial) -> list[str]:
        """The trial keys of a Ray trial (one, or a population's) not stored yet."""
        return [k for k in self.members(trial) if k not in self.done]

    def on_trial_start(self, iteration, trials, trial, **info):
        now = datetime.now(timezone.utc)
        for key in self.unstored(trial):
            self.started[key] = now
            self.running += 1

    def on_trial_result(self, iteration, trials, trial, result, **info):
        if "seedsweep_group" in result:
            # A population: every seed is stored the moment its last epoch
            # arrives, so a driver killed mid-group loses only the seeds still
            # training. A retried group trains its stored seeds again: ignored.
            for row in json.loads(result["seedsweep_group"]):
                key = row.pop("trial_key")
                if key in self.done:
                    continue
                self.epochs[key].append(row)
                if row.get("final"):
                    self.store(key, outcome_of(row))
            return
        if "seedsweep" not in result:
            return
        key = self.key(trial)
        row = json.loads(result["seedsweep"])
        self.epochs[key].append(row)
        if row.get("final"):
            self.final[key] = row

    def on_trial_recover(self, iteration, trials, trial, **info):
        self.why(trial)                         # a kill this death explains is spent on it
        for key in self.unstored(trial):
            self.attempts[key] += 1
            self.running -= 1
            self.epochs.pop(key, None)
            self.final.pop(key, None)

    def store(self, key: str, outcome: dict[str, Any]) -> None:
        """Queue the trial's parts for the store's writer thread, so that
        Tune's control loop does not wait on Parquet encoding and disk."""
        planned = self.plan[key]
        outcome["attempt"] = self.prior_attempts.get(key, 0) + self.attempts[key] + 1
        rows = self.epochs.pop(key, [])
        self.pending = [f for f in self.pending if not f.done() or f.result() is not None]
        self.pending.append(self.pool.submit(self.write, key, planned, outcome, rows))
        self.counts[outcome["status"]] += 1
        self.done.add(key)
        self.running -= 1
        self.final.pop(key, None)
        self.started.pop(key, None)
        self.unfolded += 1
        if self.unfolded >= self.fold_every:        # compaction the user never has to think of
            self.unfolded = 0
            self.pending.append(self.pool.submit(self.fold, self.fold_every))
        self.progress(force=False)

    def write(self, key: str, planned: TrialSpec, outcome: dict[str, Any], rows: list[dict]) -> None:
        """On the writer thread: the trial's tables, then its parts. The tables
        are kept until the next fold, which then need not read them back."""
        if self.full is not None:
            self.unwritten += 1
            return
        row = trial_row(self.space.name, self.space.task_name, planned, self.schema, outcome)
        epochs, confusion = epoch_rows(key, rows), confusion_rows(key, rows)
        try:
            row = self.rd.write_trial(key, row, epochs, confusion)
        except OSError as exc:
            if exc.errno not in FULL and not self.rd.remote:
                raise
            # A full disk, or an object store that refused the write after its
            # retries: the write left no file (each is written under a temporary
            # name that is removed on failure, or uploaded whole) and the trial
            # is not stored, so a resume runs it again; the study stops (StopWhenFull).
            self.full, self.unwritten = exc, self.unwritten + 1
            return
        self.written[key] = {"trials": row, "epochs": epochs, "confusion": confusion}
        if self.sink is not None:
            self.sink.offer(key, row, epochs)

    def fold(self, min_parts: int) -> None:
        """Fold the stored parts into a shard (on the writer thread, between
        writes). A failed fold loses nothing -- the parts stay -- so it is
        reported once and the study goes on. The tables kept for it are let go
        either way (a later fold reads those parts back), so a study whose folds
        keep failing does not hold every trial it wrote in memory."""
        known, self.written = self.written, {}
        if self.full is not None:
            return                               # a full disk takes no shard either
        try:
            self.rd.fold(min_parts, known=known)
        except Exception as exc:                 # noqa: BLE001 -- the parts are intact; say so and go on
            if not self.fold_warned:
                self.fold_warned = True
                print(f"\n[seedsweep] could not compact {self.rd}: {exc}; the parts stay and are read as they "
                      "are ('seedsweep compact DIR' retries)", file=self.stream, flush=True)

    def flush(self) -> None:
        """Fold what is left (when it is worth a shard), wait for every queued
        write, and re-raise the first that failed."""
        self.pending.append(self.pool.submit(self.fold, max(1, self.fold_every // 5)))
        self.pool.shutdown(wait=True)
        for f in self.pending:
            f.result()

    def on_trial_complete(self, iteration, trials, trial, **info):
        if "group" in trial.config:
            self.stopped(self.unstored(trial))
        else:
            key = self.key(trial)
            res = self.final.get(key)
            if res is None:
                self.stopped([key])
            else:
                self.store(key, outcome_of(res))
        self.forget(trial)

    def stopped(self, keys: list[str]) -> None:
        """Trials that ended before their last epoch (Ctrl-C, Tune shutting
        down): not results. Nothing is stored, so the next run trains them again."""
        for key in keys:
            self.epochs.pop(key, None)
            self.running -= 1
            print(f"\n[seedsweep] trial {key} stopped before it finished; it will run again on resume",
                  file=self.stream, flush=True)

    def why(self, trial) -> tuple[str, str]:
        """The reason and error text of a trial's latest failure. A worker that
        died while the kernel's OOM-kill count rose ran out of memory."""
        text = error_text(trial)
        last = text.rsplit("Failure # ", 1)[-1]
        last = last.split("\n", 1)[-1] if last[:1].isdigit() else last
        reason = classify_error(last, error_kind(trial))
        if reason == "worker died":
            evidence = self.oom.take()
            if evidence:
                reason, last = "out of memory", f"{last.rstrip()}\n[seedsweep] {evidence}\n"
        return reason, last

    def on_trial_error(self, iteration, trials, trial, **info):
        reason, last = self.why(trial)
        for key in self.unstored(trial):
            epochs = self.epochs.get(key, [])
            outcome = {"status": "failed", "reason": reason,
                       "error": last.strip()[-8000:],
                       "epochs_run": len(epochs), "metric": self.space.train.metric,
                       "node": epochs[-1].get("node") if epochs else None,
                       "gpu_ids": epochs[-1].get("gpu_ids") if epochs else None,
                       "started_at": self.started.get(key), "finished_at": datetime.now(timezone.utc)}
            attempts = self.attempts[key] + 1
            self.store(key, outcome)
            print(f"\n[seedsweep] trial {key} failed after {attempts} attempt(s): {outcome['reason']}",
                  file=self.stream, flush=True)
        self.forget(trial)

    def on_step_end(self, iteration, trials, **info):
        self.progress(force=False)

    def progress(self, *, force: bool) -> None:
        """Print the progress line (at most once a second on a terminal, else every 10 s; ``force``: now)."""
        now = time.monotonic()
        interval = 1.0 if self.tty else 10.0
        if not force and now - self.last_print < interval:
            return
        self.last_print = now
        done = sum(self.counts.values())
        elapsed = now - self.t0
        eta = "?" if done == 0 else clock(elapsed / done * (self.total - done))
        text = (f"[seedsweep] {done}/{self.total} done (ok {self.counts['ok']}, diverged "
                f"{self.counts['diverged']}, failed {self.counts['failed']}), {self.running} running, "
                f"elapsed {clock(elapsed)}, ETA {eta}")
        if self.tty:
            print("\r" + text, end="\n" if force else "", file=self.stream, flush=True)
        else:
            print(text, file=self.stream, flush=True)
        try:        # what the dashboard shows as running; advisory, so a failed write is not an error
            self.rd.write_progress({"running": 0 if force else self.running, "done_this_run": done,
                                    "to_run": self.total,
                                    "updated_at": datetime.now(timezone.utc).isoformat()})
        except OSError:
            pass


class StopWhenFull(tune.Stopper):
    """Stops the whole study once the store found the disk full
    (:attr:`StoreAndProgress.full`): training on would only lose results."""

    def __init__(self, callback: StoreAndProgress) -> None:
        self.callback = callback

    def __call__(self, trial_id, result) -> bool:
        return False

    def stop_all(self) -> bool:
        return self.callback.full is not None

    def __getstate__(self):
        return {}
