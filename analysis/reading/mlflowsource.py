"""Reading an MLflow experiment for ``seedsweep import --tracking-uri URI
--experiment NAME``: a file store (a folder, or ``file:PATH``), a SQLite
store (``sqlite:///PATH``) or a tracking server (``http://…``), read through
``mlflow.MlflowClient``.

Each run becomes one row (a parent run, one that other runs name as their
``mlflow.parentRunId``, holds trials and is not one): its parameters (MLflow keeps them as text; numbers
are read back as numbers), its tags other than MLflow's own
(``tags/<name>``: results, never pairing keys, unless named by ``--seed`` or
``--choice``), ``mlflow_run_id``, ``mlflow_run_name`` and ``mlflow_status``.
The metrics are the runs' logged metrics. With ``--dev-score`` the run's
scores are those of the step where the dev metric's history is best
(``--mode``), as seedsweep's own trials are; with none, the latest values.
The histories of the two named metrics are kept as epochs (step = epoch).

``FINISHED`` runs are ``ok`` (``failed`` without the score), ``FAILED`` runs
``failed``, ``KILLED`` runs ``stopped``, ``RUNNING`` and ``SCHEDULED`` runs
``failed`` (not ended when read); the status is the reason. Nothing is
written to the store (a SQLite file or file store that does not exist is
refused, not created).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pandas as pd

from seedsweep.study.errors import UserError

from .sources import SourceTrials, canonical_digest, finite, import_source, number, require_metric

__all__ = ["read_mlflow", "import_mlflow", "mlflow_client"]

_FIX_URI = ("Give the tracking URI the runs were logged to: a file store's folder (mlruns), sqlite:///PATH/mlflow.db "
            "(three slashes, then the path) or a tracking server's http://HOST:PORT.")
_STATUS = {"FINISHED": None, "FAILED": "failed", "KILLED": "stopped", "RUNNING": "failed", "SCHEDULED": "failed"}


def mlflow_client(uri: str, *, retries: int = 0, timeout: int = 10):
    """An ``MlflowClient`` on ``uri``, checked to answer (a located error otherwise); creates nothing."""
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", str(retries))   # an import asks once, not for minutes
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", str(timeout))
    from mlflow import MlflowClient   # MLflow loads only for an MLflow import or tracking

    if uri.startswith("sqlite:///"):
        if not Path(uri[len("sqlite:///"):]).is_file():
            raise UserError(f"--tracking-uri {uri}", f"no such SQLite file: {uri[len('sqlite:///'):]}.", _FIX_URI)
    elif not uri.startswith(("http://", "https://", "databricks")):
        folder = Path(uri.removeprefix("file://").removeprefix("file:"))
        if not folder.is_dir():
            raise UserError(f"--tracking-uri {uri}", "no such file-store folder.", _FIX_URI)
        uri = folder.resolve().as_uri()
    client = MlflowClient(tracking_uri=uri)
    try:
        client.search_experiments(max_results=1)
    except Exception as exc:      # requests', SQLAlchemy's or MLflow's own errors: each says the server did not answer
        raise UserError(f"--tracking-uri {uri}", f"the tracking store does not answer ({type(exc).__name__}: "
                        f"{str(exc).splitlines()[0][:200] if str(exc) else ''}).",
                        "Start the tracking server (mlflow server …) or check the URI, then import again.") from None
    return client


def _experiment_names(client) -> list[str]:
    names, token = [], None
    while True:
        page = client.search_experiments(max_results=1000, page_token=token)
        names.extend(e.name for e in page)
        token = page.token
        if not token:
            return names


def _runs(client, experiment_id: str) -> list:
    runs, token = [], None
    while True:
        page = client.search_runs([experiment_id], max_results=10_000, page_token=token,
                                  order_by=["attributes.start_time ASC"])
        runs.extend(page)
        token = page.token
        if not token:
            return runs


def _pick(client, run, score: str, dev_score: str | None, sign: float) -> tuple[dict[str, float], list[dict]]:
    """The run's scores (at the best dev step with a dev metric, else the latest) and its epochs."""
    latest = run.data.metrics
    if dev_score is None:
        return {score: finite(latest.get(score))}, []
    histories = {name: {m.step: m.value for m in client.get_metric_history(run.info.run_id, name)}
                 for name in (dev_score, score) if name in latest}
    dev = histories.get(dev_score, {})
    judged = [(step, finite(v)) for step, v in sorted(dev.items()) if math.isfinite(finite(v))]
    best = max(judged, key=lambda sv: sign * sv[1])[0] if judged else None     # the first best step on ties
    test = histories.get(score, {})
    chosen = {score: finite(test.get(best, latest.get(score))) if best is not None else math.nan,
              dev_score: finite(dev.get(best)) if best is not None else math.nan}
    epochs = [{"trial_key": run.info.run_id, "epoch": int(step), "test_score": finite(test.get(step)),
               "dev_score": finite(dev.get(step))} for step in sorted(set(dev) | set(test))]
    return chosen, epochs


def read_mlflow(uri: str, experiment: str | None, score: str | None, dev_score: str | None = None, *,
                mode: str = "max") -> SourceTrials:
    """The runs of the MLflow experiment ``experiment`` at ``uri`` (see the module docstring)."""
    client = mlflow_client(uri)
    names = _experiment_names(client)
    if experiment is None or client.get_experiment_by_name(experiment) is None:
        where = f"--tracking-uri {uri}" + (f": --experiment {experiment}" if experiment else "")
        raise UserError(where, "no experiment of that name." if experiment else "which experiment to import is not said.",
                        f"Name one the store holds with --experiment: {', '.join(names[:30]) or '(none)'}.")
    exp = client.get_experiment_by_name(experiment)
    runs = _runs(client, exp.experiment_id)
    parents = {r.data.tags.get("mlflow.parentRunId") for r in runs}
    runs = [r for r in runs if r.info.run_id not in parents]        # a parent run holds runs; it is not a trial
    metrics = sorted({k for r in runs for k in r.data.metrics})
    where = f"--tracking-uri {uri} --experiment {experiment}"
    if score is None:
        raise UserError(f"{where}: --score", "an MLflow experiment needs the metric that is the test score.",
                        f"Name it with --score (and the dev metric with --dev-score): {', '.join(metrics[:30])}.")
    for flag, name in (("--score", score), ("--dev-score", dev_score)):
        require_metric(where, flag, name, metrics, "run")
    sign = 1.0 if mode == "max" else -1.0
    rows, keys, statuses, reasons, epochs, records, tag_columns = [], [], [], [], [], [], {}
    for run in runs:
        info, data = run.info, run.data
        tags = {f"tags/{k}": number(v) for k, v in sorted(data.tags.items()) if not k.startswith("mlflow.")}
        tag_columns.update(dict.fromkeys(tags))
        scores, run_epochs = _pick(client, run, score, dev_score, sign)
        row: dict[str, Any] = {**{k: number(v) for k, v in sorted(data.params.items())}, **tags,
                               "mlflow_run_id": info.run_id, "mlflow_run_name": info.run_name,
                               "mlflow_status": info.status, **scores}
        rows.append(row)
        keys.append(str(data.tags.get("trial_key", info.run_id)))
        for e in run_epochs:
            e["trial_key"] = keys[-1]
        epochs.extend(run_epochs)
        given = _STATUS.get(info.status, "failed")
        statuses.append(given)
        ok = math.isfinite(scores[score])
        reasons.append(None if given is None and ok else f"reported no {score}" if given is None
                       else f"mlflow status {info.status}")
        records.append([info.run_id, info.status, data.params, data.metrics, data.tags, run_epochs])
    return SourceTrials(pd.DataFrame(rows), keys, statuses, reasons, pd.DataFrame(epochs), metrics, "mlflow",
                        canonical_digest(records), ["mlflow_run_id", "mlflow_run_name", "mlflow_status",
                                                    *tag_columns], experiment)


def import_mlflow(uri: str, experiment: str | None, out: str | Path, *, score: str | None,
                  dev_score: str | None = None, mode: str = "max", **flags) -> Path:
    """Import the MLflow experiment ``experiment`` at ``uri`` as the run directory ``out`` (flags as
    :func:`analysis.reading.imported.import_csv`; ``choice`` and ``seed`` name parameters or tags, the latter
    as ``tags/<name>``); returns its path."""
    read = read_mlflow(uri, experiment, score, dev_score, mode=mode)
    return import_source(f"{uri} (experiment {experiment})", read, out, score=score, dev_score=dev_score, mode=mode,
                         **flags)
