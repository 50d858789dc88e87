"""Run a study: the trial grid on Ray Tune, every finished trial into the store.

:func:`run` is what ``seedsweep run SPACE --out DIR`` calls. It validates the
space, asks the family to resolve its data and models, checks an existing run
directory against the space (:mod:`study.execution.resume`), writes the manifest and
``configs.parquet``, and hands Ray Tune the trial keys not yet stored. The
driver-side callback (:mod:`study.execution.callback`) writes each finished trial as it
ends, so a killed run loses at most the trials that were running, and the
same command resumes. Ray itself is handled by :mod:`study.execution.session`.
"""

from __future__ import annotations


import json
import os
import shutil
import sys
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

import pyarrow as pa

from ..errors import UserError
from ..families import get_family, optional, result_columns
from ..files import file_sha256, is_uri, reads
from ..schema import TrialSpec
from ..spec.grid import trial_grid, trials_schema_of
from ..spec.sampling import sample_configs
from ..spec.space import Space
from ..store.manifest import build_manifest
from ..store.rundir import RunDir
from ..store.sealing import check_claims, refuse_broken_seal, seal
from ..store.studies import load_study
from ..store.shards import fold_parts
from .mlflowsink import MlflowSink, tracking_of
from .resume import check_code, check_compatible, plan_resume
from .session import accelerators, bound_trainable, check_fits, preflight, ray_session, without_mlflow_import
from .shipping import plan_shipment
from .trial import group_trainable, trainable

__all__ = ["run", "RunSummary", "plan_study", "populations"]


@dataclass
class RunSummary:
    """What one ``run`` did: trials in the study, skipped (already stored),
    run now, and the status counts of every stored trial of the study."""

    out: str
    total: int
    skipped: int
    scheduled: int
    counts: dict[str, int] = field(default_factory=dict)
    interrupted: bool = False   # some scheduled trials were not stored (stopped, or Ctrl-C)

    def line(self) -> str:
        """The run in one line: trials, ran, skipped, stored by status, missing."""
        counts = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items())) or "none"
        missing = self.total - sum(self.counts.values())
        text = (f"{self.out}: {self.total} trials in the study; ran {self.scheduled}, skipped {self.skipped} "
                f"already stored; stored now: {counts}; missing {missing}")
        if missing:
            text += " (run the same command again to resume)"
        return text


def populations(trials: list[TrialSpec]) -> list[list[TrialSpec]]:
    """The trials grouped by (configuration, choice, option), in order of first
    appearance: what ``train.vectorize_seeds`` trains as one model each.

    >>> from seedsweep.study.schema import trial_key
    >>> ts = [TrialSpec(trial_key(c, "x", o, s), c, "x", o, s, ()) for s in (1, 2) for c in ("c0", "c1") for o in "ab"]
    >>> [[t.key for t in g] for g in populations(ts)][:2]
    [['c0/x=a/seed=1', 'c0/x=a/seed=2'], ['c0/x=b/seed=1', 'c0/x=b/seed=2']]
    """
    groups: dict[tuple, list[TrialSpec]] = {}
    for t in trials:
        groups.setdefault((t.config_id, t.choice, repr(t.option)), []).append(t)
    return list(groups.values())


def plan_study(space: Space) -> tuple[pa.Table, list[TrialSpec]]:
    """The configurations table and the full trial grid of ``space``."""
    configs = sample_configs(space)
    return configs, trial_grid(space, configs)


def run(space_path: str | os.PathLike, out: str | os.PathLike, *, address: str | None = None,
        retry_failed: bool = False, num_cpus: int | None = None, ray_temp_dir: str | None = None,
        stream: TextIO | None = None, command: list[str] | None = None, claims: str | os.PathLike | None = None,
        supersede: str | None = None, samples: int | None = None,
        plan: tuple[pa.Table, list[TrialSpec]] | None = None, mlflow: str | None = None) -> RunSummary:
    """Run (or resume) the study of ``space_path`` into the run directory ``out``.

    ``samples``: run this many configurations instead of the file's (an
    adaptive study's waves, :mod:`study.execution.waves`; the same sampler stream).
    ``plan``: the configurations table and the trials to run, instead of
    the file's (a tuned study's trials asked so far, :mod:`study.execution.tuned`).

    ``claims``: a claims file sealed into the run directory before the first
    trial starts (:mod:`study.store.sealing`); a file that differs from claims
    sealed earlier is refused unless ``supersede`` gives the reason.

    ``mlflow``: a tracking URI every stored trial is logged to (over the
    file's ``tracking:``; :mod:`study.execution.mlflowsink`).

    Only trial keys without a stored row run; ``retry_failed`` also reruns the
    trials stored as ``failed`` and replaces their rows. Returns a
    :class:`RunSummary`. Raises :class:`UserError` for bad input, before
    anything is written.

    For example (it trains 12 taggers)::

        run("search_spaces/quickstart.yaml", "runs/quickstart").counts   # {'ok': 12}
    """
    stream = stream or sys.stderr
    space = load_study(space_path)
    if samples is not None:
        space = replace(space, samples=samples)
    configs, grid = plan if plan is not None else plan_study(space)
    out = out if is_uri(str(out)) else Path(out)
    shipment = plan_shipment(space, out, address)     # what travels to the workers; refused here if too large
    if address:
        preflight(address)
    check_fits(space, address)              # a trial no node can hold never starts: refused here
    # the data, embeddings and models must be found here before anything is
    # written or started: a missing corpus is one error, not a study of failed trials
    family = get_family(space.family)
    with reads() as read:           # every corpus, embeddings and model file the study reads, for the manifest
        family.resolve(space)
    read_files = {path: file_sha256(path) for path in sorted(read)}
    # the user's own code (function and command families): a resume refuses a changed file
    code = {path: file_sha256(path) for path in optional(family, "code_files")(space)}
    code.update(shipment.code() if shipment is not None else {})      # on a cluster: every Python file that travels
    rd = RunDir(str(out) if is_uri(str(out)) else out)
    rd.check_out()
    resuming = rd.exists()
    if resuming:
        check_compatible(rd, space, configs)
        check_code(rd, space, code)
    if resuming:
        refuse_broken_seal(rd)          # a resume never stamps new results under claims that changed
    if claims is not None:
        if is_uri(str(out)):
            raise UserError(f"--claims {claims}", "claims are sealed into a local run directory only.",
                            "Run into a local --out, or seal them later with 'seedsweep claims seal'.")
        check_claims(claims, rd, supersede)         # a changed file is refused before anything is written
    schema = trials_schema_of(space)
    with rd.locked():
        previous = rd.manifest() if resuming else None
        manifest = build_manifest(space, accelerators={}, command=command or [])
        manifest["files"] = read_files
        manifest["code"] = code
        if shipment is not None:
            manifest["shipped"] = shipment.record()
        if previous is not None:
            history = previous.pop("history", [])
            manifest["history"] = history + [previous]
            if previous.get("claims"):
                manifest["claims"] = previous["claims"]        # sealed claims stay sealed
        else:
            manifest["history"] = []
        rd.write_manifest(manifest)
        rd.prepare()
        if claims is not None:          # sealed before the first trial starts
            seal(claims, rd, manifest, supersede=supersede, results_existed=bool(rd.stored_keys()))
            rd.write_manifest(manifest)
        rd.seal = (manifest.get("claims") or {}).get("sha256")      # stamped into every trials part from now on
        old = rd.configs()
        if old is None or old.num_rows < configs.num_rows:
            rd.write_configs(configs)

        plan = plan_resume(rd, grid, retry_failed=retry_failed)
        todo, rerun, before = plan.todo, plan.rerun, plan.kept
        skipped = len(grid) - len(todo)
        print(f"[seedsweep] {space.name}: {configs.num_rows} configurations, {len(grid)} trials; "
              f"{skipped} already stored, {len(todo)} to run" + (f" ({len(rerun)} failed to retry)" if rerun else ""),
              file=stream, flush=True)
        interrupted, now, done = False, Counter(), set()
        if not todo:            # parts a killed run left: folded when they make a shard's worth
            rd.fold(max(1, fold_parts() // 5))
        tracking = tracking_of(space, mlflow)
        sink = MlflowSink(tracking["uri"], tracking["experiment"], rd, space, schema, list(result_columns(space)),
                          stream, capacity=tracking["queue"], artifacts=[space.path, str(rd.manifest_path)]
                          ).start() if tracking else None
        try:
            if todo:
                interrupted, now, done = _tune(rd, space, todo, schema, plan.prior_attempts, manifest,
                                               address=address, num_cpus=num_cpus, ray_temp_dir=ray_temp_dir,
                                               stream=stream, sink=sink, shipment=shipment)
        finally:
            if sink is not None:
                sink.close(interrupted=interrupted)
    before["failed"] += len(rerun - done)  # failed rows whose retry did not finish stay failed
    counts = {k: v for k, v in (before + now).items() if v}
    return RunSummary(out=str(out), total=len(grid), skipped=skipped, scheduled=len(todo), counts=counts,
                      interrupted=interrupted)


def _tune(rd: RunDir, space: Space, todo: list[TrialSpec], schema: pa.Schema, prior_attempts: dict[str, int],
          manifest: dict[str, Any], *, address: str | None, num_cpus: int | None, ray_temp_dir: str | None,
          stream: TextIO, sink=None, shipment=None) -> tuple[bool, Counter, set[str]]:
    """Run ``todo`` on Ray Tune; returns (interrupted, status counts of the trials stored
    now, their keys)."""
    # Ray, imported when a study runs: check, status and the readers never load it
    from ray import tune

    from .callback import StopWhenFull, StoreAndProgress      # subclass Ray Tune classes (Ray at import)
    from .feed import Feed, batch_size, batches, parallel_slots, pending_cap     # a Ray Tune Searcher (Ray at import)
    from .fitsession import active as fit_session_active        # Ray Tune classes (Ray at import)

    vectorized = space.train.vectorize_seeds
    resources = space.resources.of_trial(vectorized)
    with ray_session(address=address, num_cpus=num_cpus, ray_temp_dir=ray_temp_dir,
                     runtime_env=shipment.runtime_env() if shipment is not None else None) as storage:
        manifest["accelerators"] = accelerators()
        rd.write_manifest(manifest)
        plan = {t.key: t for t in todo}
        callback = StoreAndProgress(rd, space, plan, schema, prior_attempts, stream, len(todo))
        callback.sink = sink            # each stored trial handed to MLflow's thread (None: not tracked)
        if vectorized:      # one Ray trial per population: the missing seeds of a (configuration, option)
            fn, name, units = group_trainable, "group", populations(todo)
        else:
            fn, name, units = trainable, "trial", todo
        slots = parallel_slots(resources)
        trainable_ = tune.with_resources(bound_trainable(space, fn, rd.cache_dir, rd.work_dir, shipment), resources)
        interrupted = False

        def make_tuner(search_alg, callbacks, stopper, n, samples=-1, storage=storage):
            return tune.Tuner(
                trainable_,
                tune_config=tune.TuneConfig(
                    search_alg=search_alg, num_samples=samples, max_concurrent_trials=pending_cap(slots),
                    reuse_actors=True, trial_dirname_creator=lambda t: t.trial_id),
                run_config=tune.RunConfig(
                    name=f"seedsweep-{n}", storage_path=storage, verbose=0, callbacks=callbacks, stop=stopper,
                    failure_config=tune.FailureConfig(max_failures=space.train.retries)))

        session = fit_session_active()
        try:
            if session is not None:     # a wave of an adaptive or tuned study: the study's one fit runs it
                batch = [json.dumps([t.to_json() for t in u]) if vectorized else u.to_json() for u in units]
                # the waves of one study share a fit while what their trials run on is the same
                signature = (replace(space, samples=0), fn, rd.cache_dir, rd.work_dir, shipment is None,
                             tuple(sorted(resources.items())), sink is not None)
                session.run_wave(signature, lambda q, relay, stop, n: make_tuner(
                    q, [relay], stop, n, storage=session.storage), name, batch, callback, slots, tracked=sink is not None)
            else:
                for n, chunk in enumerate(batches(units, batch_size(slots))):
                    batch = [json.dumps([t.to_json() for t in u]) if vectorized else u.to_json() for u in chunk]
                    tuner = make_tuner(Feed(name, batch), [callback], StopWhenFull(callback), n, samples=len(batch))
                    with without_mlflow_import(sink is not None):
                        tuner.fit()
                    if callback.full is not None or callback.unfinished(batch, name):   # stopped: no next batch
                        break
        except KeyboardInterrupt:
            interrupted = True
        finally:
            callback.flush()
        callback.progress(force=True)
        if callback.full is not None:
            raise disk_full(rd, callback.full, stored=sum(callback.counts.values()) - callback.unwritten)
        return interrupted or len(callback.done) < len(todo), callback.counts, callback.done


def disk_full(rd: RunDir, exc: OSError, *, stored: int) -> UserError:
    """The located message for a run directory whose disk filled up (or whose
    object store refused a write after every retry) while ``stored`` trials were stored."""
    if rd.remote:
        return UserError(str(rd.path), f"the object store refused a write after {rd.storage.retries + 1} tries "
                         f"({exc}). The study stopped: {stored} trial(s) of this run were stored whole, no partial "
                         "object was left, and the trials not stored will run again.",
                         "Check that the store is reachable and accepts writes (credentials, quota, throttling), "
                         "then run the same command again to resume.")
    where = Path(exc.filename).parent if exc.filename else Path(str(rd.path))
    try:
        usage = shutil.disk_usage(where)
        room = f"{usage.free / 2**20:.1f} MiB free of {usage.total / 2**20:.1f} MiB on that filesystem"
    except OSError:
        room = "the free space could not be read"
    return UserError(str(where), f"no space left on the device while storing a trial ({exc.strerror}; {room}). "
                     f"The study stopped: {stored} trial(s) of this run were stored whole, nothing half-written "
                     "was left, and the trials not stored will run again.",
                     "Free space on that filesystem (or move the run directory to a larger one), then run the "
                     "same command again to resume.")
