"""Run directories for analysis tests, written without Ray.

The trials are trained in this process by the real synthetic family
(``study.trial.run_trial``) and stored through the real store
(``study.store.RunDir``) with the runner's own row builders, so the files are
exactly what ``seedsweep run`` writes; only the scheduling (Ray Tune) is
skipped, which the engine tests cover.
"""

from __future__ import annotations

from pathlib import Path

from study.runner import _confusion_rows, _epoch_rows, _nan_to_none, _time, _trial_row, plan_study
from study.sampling import arrow_type
from study.schema import trials_schema
from study.space import parse_space
from study.store import RunDir, build_manifest, write_json, write_table
from study.grid import hyperparameter_types
from study.trial import run_trial


def write_synthetic_run(out: Path, yaml_text: str, *, only: int | None = None) -> RunDir:
    """Train the study of ``yaml_text`` (any family; the analysis tests use
    the synthetic one) into ``out``;
    ``only`` stores just the first N trials (a study still running)."""
    space = parse_space(yaml_text, path=str(out / "study.yaml"))
    configs, grid = plan_study(space)
    schema = trials_schema({n: arrow_type(t) for n, t in hyperparameter_types(space).items()})
    rd = RunDir(out)
    rd.prepare()
    write_json(build_manifest(space, accelerators={}, command=["tests"]), rd.manifest_path)
    write_table(configs, rd.configs_path)
    for spec in grid[:only]:
        rows: list[dict] = []
        try:
            run_trial(space, spec, rows.append)
            res = rows[-1]
            outcome = {"status": res["status"], "reason": res["reason"], "epochs_run": res["epochs_run"],
                       "best_epoch": res["best_epoch"], "dev_score": _nan_to_none(res["dev_score_best"]),
                       "test_score": _nan_to_none(res["test_score_best"]),
                       "test_score_max": _nan_to_none(res["test_score_max"]), "metric": res["metric"],
                       "train_seconds": res["train_seconds"], "node": res["node"],
                       "started_at": _time(res["started_at"]), "finished_at": _time(res["finished_at"])}
        except Exception as exc:  # noqa: BLE001 -- a failing trial is a stored outcome, as in the runner
            outcome = {"status": "failed", "reason": f"exception: {type(exc).__name__}", "error": str(exc),
                       "epochs_run": len(rows), "metric": space.train.metric}
        outcome["attempt"] = 1
        rd.write_trial(spec.key, _trial_row(space, spec, schema, outcome), _epoch_rows(spec.key, rows),
                       _confusion_rows(spec.key, rows))
    return rd
