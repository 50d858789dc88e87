"""Every stored trial logged to MLflow (``tracking: {mlflow: URI}`` in a
study file, or ``seedsweep run --mlflow URI``), without MLflow ever holding up
or losing a study.

The run directory stays the record. MLflow gets a copy, from one background
thread of the driver:

- one **parent run** per run directory (in the experiment ``tracking.
  experiment``, by default the study's name), tagged ``seedsweep_run_dir``
  with the directory's absolute path, so a resume finds it again; the study
  file, ``manifest.json`` and, from the command line and ``seedsweep.run``,
  the report (``report.md``, :func:`log_text`) are its artifacts, and it is ``FINISHED`` when a
  run of the study ends (``KILLED`` when interrupted);
- one **child run** per stored trial, created with its tags at once
  (``trial_key``, ``config_id``, ``choice``, ``option``, ``seed``, ``status``,
  ``attempt``, ``task``): its hyperparameters as parameters, each epoch's
  ``dev_score``, ``test_score`` and ``train_loss`` as metric history (step =
  epoch), and the trial's own scores as ``best/dev_score``,
  ``best/test_score`` (the test score at the best dev epoch) and
  ``best/epoch``. A failed or diverged trial's child run is ``FAILED``.

The driver hands each trial over after it is stored (:meth:`MlflowSink.offer`,
which never waits: past ``tracking.queue`` (default 1000) queued trials it drops the hand-over and
counts it). When the thread starts it lists the child runs already logged
(their ``trial_key`` tags), deletes any a killed driver left unfinished, and
logs every stored trial that has none; when the run ends it does the same
again, so a dropped hand-over or a server that was away is made good at the
latest by the next run or resume, and a trial key is never logged twice
(a trial stored again by ``--retry-failed`` replaces its child run). An
MLflow that does not answer costs one warning: the study goes on.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from pathlib import Path
from typing import Any, TextIO

import pyarrow as pa

from ..schema import IDENTITY, OUTCOME, TUNED
from ..store.rundir import RunDir

__all__ = ["MlflowSink", "tracking_of", "log_text", "CHILD_TAGS"]

#: the trial's identity and outcome, as tags of its child run
CHILD_TAGS = ("trial_key", "config_id", "choice", "option", "seed", "status", "attempt", "task", "reason")
_END = object()
_LIMITS = {"params": 100, "metrics": 1000}      # MLflow's log_batch limits per call


def tracking_of(space, mlflow: str | None = None) -> dict[str, Any] | None:
    """The study's MLflow settings: ``--mlflow URI`` over the file's ``tracking:``; None without either."""
    given = dict((space.raw or {}).get("tracking") or {})
    if mlflow:
        given["mlflow"] = mlflow
    if not given.get("mlflow"):
        return None
    return {"uri": str(given["mlflow"]), "experiment": str(given.get("experiment") or space.name),
            "queue": int(given.get("queue") or 1000)}


def _ms(value: Any) -> int | None:
    if value is None:
        return None
    try:
        return int(value.timestamp() * 1000)
    except (AttributeError, ValueError, OSError):
        return None


class MlflowSink:
    """The background thread that copies stored trials to MLflow (see the module docstring)."""

    def __init__(self, uri: str, experiment: str, rd: RunDir, space, schema: pa.Schema, result_names: list[str],
                 stream: TextIO, *, capacity: int = 1000, artifacts: list[str] = ()) -> None:
        self.uri, self.experiment, self.rd, self.space, self.stream = uri, experiment, rd, space, stream
        skip = set(IDENTITY.names) | set(TUNED.names) | set(OUTCOME.names) | set(result_names)
        self.params = [n for n in schema.names if n not in skip]
        self.queue: queue.Queue = queue.Queue(maxsize=capacity)
        self.artifacts = [a for a in artifacts if a and Path(a).is_file()]
        self.logged: dict[str, tuple[str, int]] = {}      # trial key -> (child run id, attempt)
        self.count = self.dropped = 0
        self.error: BaseException | None = None
        self.parent: str | None = None
        self.thread = threading.Thread(target=self._main, name="seedsweep-mlflow", daemon=True)

    # -------------------------------------------------------------- the driver's side

    def start(self) -> "MlflowSink":
        """Start the thread (it connects, then logs what the run directory holds and MLflow lacks)."""
        self.thread.start()
        return self

    def offer(self, key: str, row: pa.Table, epochs: pa.Table | None) -> None:
        """Hand over a stored trial; never waits (a full queue drops it, and the closing catch-up logs it)."""
        if self.error is not None:
            self.dropped += 1
            return
        try:
            self.queue.put_nowait((key, row, epochs))
        except queue.Full:
            self.dropped += 1

    def close(self, *, interrupted: bool = False, timeout: float = 60.0) -> None:
        """Let the thread log what is queued and what is missing, then end the parent run; wait at most
        ``timeout`` seconds, then say what was not logged (the next run logs it)."""
        self.interrupted = interrupted
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.queue.put(_END, timeout=0.2)
                break
            except queue.Full:
                if time.monotonic() > deadline or not self.thread.is_alive():
                    break
        self.thread.join(max(0.0, deadline - time.monotonic()))
        stored = len(self.rd.stored_keys())
        missing = max(0, stored - len(self.logged))
        where = f"MLflow {self.uri} (experiment {self.experiment!r})"
        if self.error is not None:
            print(f"[seedsweep] {where} did not answer ({type(self.error).__name__}: "
                  f"{str(self.error).splitlines()[0][:200] if str(self.error) else ''}); every trial is in "
                  f"{self.rd} and the next run or resume logs the {missing} not logged", file=self.stream, flush=True)
        elif self.thread.is_alive() or missing:
            print(f"[seedsweep] {where}: {len(self.logged)} of {stored} stored trials logged; the next run or "
                  "resume logs the others", file=self.stream, flush=True)
        else:
            print(f"[seedsweep] {where}: {stored} trials logged (parent run {self.parent})", file=self.stream,
                  flush=True)

    # -------------------------------------------------------------- the thread

    def _main(self) -> None:
        try:
            self._connect()
            self._catch_up()
            while True:
                item = self.queue.get()
                if item is _END:
                    break
                key, row, epochs = item
                self._log(key, row.to_pylist()[0], epochs)
            self._catch_up()
            self._finish()
        except Exception as exc:      # noqa: BLE001 -- MLflow's, requests' or SQLAlchemy's errors: the study goes on
            self.error = exc
            while True:               # what is still queued is let go (the next run logs it from the store)
                try:
                    self.queue.get_nowait()
                except queue.Empty:
                    break

    def _connect(self) -> None:
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")   # a server that is away costs seconds
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "15")
        from mlflow import MlflowClient   # MLflow loads only where a study logs to it

        self.client = c = MlflowClient(tracking_uri=self.uri)
        exp = c.get_experiment_by_name(self.experiment)
        self.exp = exp.experiment_id if exp is not None else c.create_experiment(self.experiment)
        path = str(Path(str(self.rd.path)).resolve()) if not self.rd.remote else str(self.rd.path)
        found = _parent(c, self.exp, path)
        if found:
            self.parent = found
            c.update_run(self.parent, status="RUNNING")
        else:
            self.parent = c.create_run(self.exp, run_name=self.space.name, tags={
                "seedsweep_run_dir": path, "seedsweep_role": "study", "study": self.space.name,
                "study_sha256": self.space.sha256}).info.run_id
        self._children()

    def _children(self) -> None:
        """The child runs already logged; those a killed driver left unfinished are deleted (logged again)."""
        token = None
        while True:
            page = self.client.search_runs([self.exp], filter_string=f"tags.mlflow.parentRunId = '{self.parent}'",
                                           max_results=5000, page_token=token)
            for run in page:
                key, attempt = run.data.tags.get("trial_key"), run.data.tags.get("attempt", "0")
                if key is None:
                    continue
                if run.info.status == "RUNNING" or key in self.logged:
                    self.client.delete_run(run.info.run_id)
                else:
                    self.logged[key] = (run.info.run_id, int(attempt) if attempt.isdigit() else 0)
            token = page.token
            if not token:
                return

    def _catch_up(self) -> None:
        """Log every stored trial that has no child run (or an older attempt's)."""
        stored = self.rd.read_trials()
        if stored is None or stored.num_rows == 0:
            return
        rows = [r for r in stored.to_pylist() if self._wanted(r["trial_key"], r.get("attempt"))]
        if not rows:
            return
        epochs = self.rd.read_epochs()
        by_key: dict[str, list[dict]] = {}
        if epochs is not None:
            keys = {r["trial_key"] for r in rows}
            for e in epochs.to_pylist():
                if e["trial_key"] in keys:
                    by_key.setdefault(e["trial_key"], []).append(e)
        for r in rows:
            self._log(r["trial_key"], r, by_key.get(r["trial_key"], []))

    def _wanted(self, key: str, attempt: Any) -> bool:
        had = self.logged.get(key)
        return had is None or (attempt is not None and had[1] != int(attempt))

    def _log(self, key: str, row: dict[str, Any], epochs) -> None:
        from mlflow.entities import Metric, Param   # (as in _connect)

        if not self._wanted(key, row.get("attempt")):
            return
        if key in self.logged:                      # stored again (--retry-failed): the new attempt replaces it
            self.client.delete_run(self.logged.pop(key)[0])
        tags = {name: "" if row.get(name) is None else str(row[name]) for name in CHILD_TAGS}
        tags["mlflow.parentRunId"] = self.parent
        child = self.client.create_run(self.exp, start_time=_ms(row.get("started_at")), run_name=key,
                                       tags=tags).info.run_id
        stamp = _ms(row.get("finished_at")) or int(time.time() * 1000)
        params = [Param(n, "" if row.get(n) is None else str(row[n])) for n in self.params]
        metrics = []
        for e in (epochs.to_pylist() if isinstance(epochs, pa.Table) else epochs or []):
            for name in ("dev_score", "test_score", "train_loss"):
                v = e.get(name)
                if isinstance(v, (int, float)) and v == v:
                    metrics.append(Metric(name, float(v), stamp, int(e["epoch"])))
        best = row.get("best_epoch") or 0
        for name, v in (("best/dev_score", row.get("dev_score")), ("best/test_score", row.get("test_score")),
                        ("best/epoch", row.get("best_epoch"))):
            if isinstance(v, (int, float)) and v == v:
                metrics.append(Metric(name, float(v), stamp, int(best)))
        m, p = _LIMITS["metrics"], _LIMITS["params"]
        mb = [metrics[i:i + m] for i in range(0, len(metrics), m)]
        pb = [params[i:i + p] for i in range(0, len(params), p)]
        for j in range(max(len(mb), len(pb))):
            self.client.log_batch(child, metrics=mb[j] if j < len(mb) else [], params=pb[j] if j < len(pb) else [])
        self.client.set_terminated(child, status="FINISHED" if row.get("status") == "ok" else "FAILED",
                                   end_time=stamp)
        self.logged[key] = (child, int(row.get("attempt") or 0))
        self.count += 1

    def _finish(self) -> None:
        for path in self.artifacts:
            self.client.log_artifact(self.parent, path)
        self.client.set_terminated(self.parent, status="KILLED" if getattr(self, "interrupted", False)
                                   else "FINISHED")


def log_text(tracking: dict[str, Any], run_dir: str, name: str, text: str) -> str | None:
    """Log ``text`` as the artifact ``name`` of the run directory's parent run (the report, when a study
    ends); returns why it could not be logged (None: logged). Never raises: MLflow is a copy."""
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    try:
        from mlflow import MlflowClient   # (as in MlflowSink._connect)

        client = MlflowClient(tracking_uri=tracking["uri"])
        exp = client.get_experiment_by_name(tracking["experiment"])
        found = _parent(client, exp.experiment_id, str(Path(run_dir).resolve())) if exp is not None else None
        if not found:
            return "no parent run of this run directory"
        client.log_text(found, text, name)
        return None
    except Exception as exc:        # noqa: BLE001 -- MLflow's or the network's errors: the study is done either way
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"


def _parent(client, experiment_id: str, path: str) -> str | None:
    """The id of the parent run of the run directory at ``path`` (its ``seedsweep_run_dir`` tag), or None."""
    found = client.search_runs([experiment_id], filter_string=f"tags.seedsweep_run_dir = '{_quote(path)}'",
                               max_results=1)
    return found[0].info.run_id if found else None


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")
