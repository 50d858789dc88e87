"""Run directories for analysis tests, written without Ray.

The trials are trained in this process by the real synthetic family
(``study.execution.trial.run_trial``) and stored through the real store
(``study.store.RunDir``) with the callback's own row builders (``study.store.rows``), so the files are
exactly what ``seedsweep run`` writes; only the scheduling (Ray Tune) is
skipped, which the engine tests cover.
"""

from __future__ import annotations

from pathlib import Path

from seedsweep.study.execution.runner import plan_study
from seedsweep.study.execution.trial import run_trial
from seedsweep.study.files import write_json, write_table
from seedsweep.study.spec.grid import trials_schema_of
from seedsweep.study.spec.spacefile import parse_space
from seedsweep.study.store.manifest import build_manifest
from seedsweep.study.store.rows import confusion_rows, epoch_rows, outcome_of, trial_row
from seedsweep.study.store.rundir import RunDir
from seedsweep.study.store.sealing import seal


def write_synthetic_run(out: Path, yaml_text: str, *, only: int | None = None) -> RunDir:
    """Train the study of ``yaml_text`` (any family; the analysis tests use
    the synthetic one) into ``out``;
    ``only`` stores just the first N trials (a study still running)."""
    space = parse_space(yaml_text, path=str(out / "study.yaml"))
    configs, grid = plan_study(space)
    schema = trials_schema_of(space)
    rd = RunDir(out)
    rd.prepare()
    write_json(build_manifest(space, accelerators={}, command=["tests"]), rd.manifest_path)
    write_table(configs, rd.configs_path)
    for spec in grid[:only]:
        rows: list[dict] = []
        try:
            run_trial(space, spec, rows.append)
            outcome = outcome_of(rows[-1])
        except Exception as exc:  # noqa: BLE001 -- a failing trial is a stored outcome, as in the runner
            outcome = {"status": "failed", "reason": f"exception: {type(exc).__name__}", "error": str(exc),
                       "epochs_run": len(rows), "metric": space.train.metric}
        outcome["attempt"] = 1
        rd.write_trial(spec.key, trial_row(space.name, space.task_name, spec, schema, outcome),
                       epoch_rows(spec.key, rows), confusion_rows(spec.key, rows))
    return rd


def write_sealed_run(out: Path, yaml_text: str, claims_text: str) -> RunDir:
    """:func:`write_synthetic_run`, then ``claims_text`` sealed into it (written beside it as
    ``claims.yaml``; recorded as sealed after its results existed)."""
    rd = write_synthetic_run(out, yaml_text)
    claims = out.parent / "claims.yaml"
    claims.write_text(claims_text)
    manifest = rd.manifest()
    seal(claims, rd, manifest, results_existed=True)
    rd.write_manifest(manifest)
    return rd
