"""Run a study: the trial grid on Ray Tune, every finished trial into the store.

:func:`run` is what ``seedsweep run SPACE --out DIR`` calls. It validates the
space, checks an existing run directory against it (refusing changes that
would alter stored configurations), writes the manifest and
``configs.parquet``, and hands Ray Tune the trial keys not yet stored. A
driver-side callback writes each finished trial as it ends, so a killed run
loses at most the trials that were running, and the same command resumes.

Ray: without ``address`` it starts its own local Ray (``ray.init(address=
"local")``) and never follows an address file a stale ``ray start`` left
behind; with ``address`` it joins that cluster.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

import pyarrow as pa
import pyarrow.compute as pc

from .errors import UserError
from .grid import TrialSpec, hyperparameter_types, trial_grid
from .sampling import arrow_type, sample_configs
from .schema import CONFUSION, EPOCHS, trials_schema
from .space import Space, load_space, parse_space
from .store import RunDir, build_manifest

__all__ = ["run", "load_study", "RunSummary", "plan_study"]

# Tune's console tables and per-trial log files are replaced by our progress
# line and our Parquet store (both measured to slow small trials several-fold).
os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")


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
        counts = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items())) or "none"
        missing = self.total - sum(self.counts.values())
        text = (f"{self.out}: {self.total} trials in the study; ran {self.scheduled}, skipped {self.skipped} "
                f"already stored; stored now: {counts}; missing {missing}")
        if missing:
            text += " (run the same command again to resume)"
        return text


def load_study(path: str | os.PathLike) -> Space:
    """A search space from a YAML file, or from a run directory's ``manifest.json``
    (a study is re-run from its manifest)."""
    from .store import is_uri

    if is_uri(str(path)):                           # a run directory on an object store
        rd = RunDir(str(path))
        rd.require()
        return parse_space(rd.manifest()["yaml"], f"{path}/manifest.json (yaml)")
    p = Path(path)
    if p.is_dir() and (p / "manifest.json").exists():
        p = p / "manifest.json"
    if p.suffix == ".json" and p.exists():
        try:
            manifest = json.loads(p.read_text())
            return parse_space(manifest["yaml"], f"{p} (yaml)")
        except (json.JSONDecodeError, KeyError, TypeError):
            raise UserError(str(p), "not a seedsweep manifest (no 'yaml' entry).",
                            "Give a search-space YAML file or a run directory's manifest.json.") from None
    return load_space(p)


def plan_study(space: Space) -> tuple[pa.Table, list[TrialSpec]]:
    """The configurations table and the full trial grid of ``space``."""
    configs = sample_configs(space)
    return configs, trial_grid(space, configs)


# ------------------------------------------------------------- compatibility

_FROZEN = {"name": lambda s: s.name, "family": lambda s: s.family, "task": lambda s: s.task,
           "fixed": lambda s: dict(s.fixed)}
_FROZEN_TRAIN = ("max_epochs", "patience", "metric", "mode")


def _check_compatible(rd: RunDir, space: Space, configs: pa.Table) -> None:
    """Refuse a changed file that would change what stored trials mean."""
    old_manifest = rd.manifest()
    try:
        old = parse_space(old_manifest["yaml"], f"{rd.manifest_path} (yaml)")
    except (KeyError, TypeError):
        raise UserError(str(rd.manifest_path), "the manifest holds no study YAML.",
                        "Restore it, or run the study into a new --out folder.") from None
    fix = "Run the changed study into a new --out folder, or undo the change."
    where = f"{space.path} vs {rd.manifest_path}"
    for key, value in _FROZEN.items():
        if value(old) != value(space):
            raise UserError(where, f"'{key}' changed from {value(old)!r} to {value(space)!r}; "
                            "stored trials were run with the old value.", fix)
    for key in _FROZEN_TRAIN:
        a, b = getattr(old.train, key), getattr(space.train, key)
        if a != b:
            raise UserError(where, f"train.{key} changed from {a!r} to {b!r}; stored trials were trained "
                            "with the old value.", fix)
    old_configs = rd.configs()
    if old_configs is None:
        return
    if old_configs.schema != configs.schema:
        before = {f.name: str(f.type) for f in old_configs.schema}
        after = {f.name: str(f.type) for f in configs.schema}
        added = [n for n in after if n not in before]
        removed = [n for n in before if n not in after]
        retyped = [n for n in after if n in before and before[n] != after[n]]
        parts = ([f"added {added}"] if added else []) + ([f"removed {removed}"] if removed else []) + \
                ([f"changed type of {retyped}"] if retyped else [])
        raise UserError(where, "the sampled parameters changed (" + "; ".join(parts) +
                        "), so every stored configuration would change.", fix)
    n = min(old_configs.num_rows, configs.num_rows)
    if not old_configs.slice(0, n).equals(configs.slice(0, n)):
        a, b = old_configs.slice(0, n).to_pylist(), configs.slice(0, n).to_pylist()
        for ra, rb in zip(a, b):
            if ra != rb:
                col = next(c for c in ra if ra[c] != rb[c])
                raise UserError(where, f"configuration {ra['config_id']} would change: {col} was "
                                f"{ra[col]!r}, now {rb[col]!r} (sampler, sampler_seed, ranges or options "
                                "changed).", fix)


# ------------------------------------------------------------------- rows


def _trial_row(space: Space, spec: TrialSpec, schema: pa.Schema, outcome: dict[str, Any]) -> pa.Table:
    row: dict[str, Any] = {
        "study": space.name, "task": space.task_name, "trial_key": spec.key,
        "config_id": spec.config_id, "choice": spec.choice, "option": str(spec.option), "seed": spec.seed,
    }
    row.update(spec.hparams)
    row.update(outcome)
    return pa.Table.from_pylist([{f.name: row.get(f.name) for f in schema}], schema=schema)


def _epoch_rows(key: str, rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist([{**{f.name: r.get(f.name) for f in EPOCHS}, "trial_key": key} for r in rows],
                                schema=EPOCHS)


def _confusion_rows(key: str, rows: list[dict[str, Any]]) -> pa.Table | None:
    """The confusion counts that epoch rows carry (``details`` of a classifying
    family), as rows of the ``confusion`` table; None when there are none."""
    out = []
    for r in rows:
        c = r.get("confusion")
        if not c:
            continue
        labels = c["labels"]
        for split in ("dev", "test"):
            for g, counts in enumerate(c.get(split, [])):
                out.extend({"trial_key": key, "epoch": r["epoch"], "split": split, "gold": labels[g],
                            "predicted": labels[p], "count": int(n)} for p, n in enumerate(counts))
    return pa.Table.from_pylist(out, schema=CONFUSION) if out else None


def _time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _nan_to_none(x: Any) -> Any:
    return None if isinstance(x, float) and math.isnan(x) else x


_DIED = ("ActorDiedError", "RayActorError", "WorkerCrashedError", "NodeDiedError", "ActorUnavailableError",
         "worker process has died", "The actor is dead")


def _classify_error(text: str, kind: str = "") -> str:
    """A short reason for a failed trial from Ray's error type name and text."""
    if "OutOfMemoryError" in kind or "OutOfMemoryError" in text or "out of memory" in text.lower():
        return "out of memory"
    if any(s in kind for s in _DIED) or any(s in text for s in _DIED):
        return "worker died"
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line and not line.startswith(("File ", "^", "~")) and ":" in line:
            return f"exception: {line[:300]}"
    return "exception"


# --------------------------------------------------------------- callbacks


def _make_callback(rd: RunDir, space: Space, plan: dict[str, TrialSpec], schema: pa.Schema,
                   prior_attempts: dict[str, int], stream: TextIO, total: int):
    from ray import tune

    class StoreAndProgress(tune.Callback):
        """Writes each finished trial to the store; prints one progress line.

        Tune pickles its callbacks into its own experiment state; we never
        restore from that state (the store is the record), so pickling keeps
        nothing (``__getstate__``), and nothing here leans on a closure.
        """

        def __init__(self, rd, space, plan, schema, prior_attempts, stream, total) -> None:
            self.rd, self.space, self.plan, self.schema = rd, space, plan, schema
            self.prior_attempts, self.stream, self.total = prior_attempts, stream, total
            self.keys: dict[str, str] = {}
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

        def __getstate__(self):
            return {}

        def key(self, trial) -> str:
            key = self.keys.get(trial.trial_id)
            if key is None:
                key = self.keys[trial.trial_id] = TrialSpec.from_json(trial.config["trial"]).key
            return key

        def on_trial_start(self, iteration, trials, trial, **info):
            self.started[self.key(trial)] = datetime.now(timezone.utc)
            self.running += 1

        def on_trial_result(self, iteration, trials, trial, result, **info):
            if "seedsweep" not in result:
                return
            key = self.key(trial)
            row = json.loads(result["seedsweep"])
            self.epochs[key].append(row)
            if row.get("final"):
                self.final[key] = row

        def on_trial_recover(self, iteration, trials, trial, **info):
            key = self.key(trial)
            self.attempts[key] += 1
            self.running -= 1
            self.epochs.pop(key, None)
            self.final.pop(key, None)

        def _store(self, key: str, outcome: dict[str, Any]) -> None:
            """Queue the trial's parts for the store's writer thread, so that
            Tune's control loop does not wait on Parquet encoding and disk."""
            spec = self.plan[key]
            outcome["attempt"] = self.prior_attempts.get(key, 0) + self.attempts[key] + 1
            row = _trial_row(self.space, spec, self.schema, outcome)
            rows = self.epochs.pop(key, [])
            epochs, confusion = _epoch_rows(key, rows), _confusion_rows(key, rows)
            self.pending = [f for f in self.pending if not f.done() or f.result() is not None]
            self.pending.append(self.pool.submit(self.rd.write_trial, key, row, epochs, confusion))
            self.counts[outcome["status"]] += 1
            self.done.add(key)
            self.running -= 1
            self.final.pop(key, None)
            self.progress(force=False)

        def flush(self) -> None:
            """Wait for every queued write; re-raise the first that failed."""
            self.pool.shutdown(wait=True)
            for f in self.pending:
                f.result()

        def on_trial_complete(self, iteration, trials, trial, **info):
            key = self.key(trial)
            res = self.final.get(key)
            if res is None:
                # Stopped before its last epoch (Ctrl-C, Tune shutting down): not a
                # result. Nothing is stored, so the next run trains it again.
                self.epochs.pop(key, None)
                self.running -= 1
                print(f"\n[seedsweep] trial {key} stopped before it finished; it will run again on resume",
                      file=self.stream, flush=True)
                return
            outcome = {
                "status": res["status"], "reason": res["reason"], "error": None,
                "epochs_run": res["epochs_run"], "best_epoch": res["best_epoch"],
                "dev_score": _nan_to_none(res["dev_score_best"]),
                "test_score": _nan_to_none(res["test_score_best"]),
                "test_score_max": _nan_to_none(res["test_score_max"]),
                "metric": res["metric"], "train_seconds": res["train_seconds"], "node": res["node"],
                "started_at": _time(res["started_at"]), "finished_at": _time(res["finished_at"]),
            }
            self._store(key, outcome)

        def on_trial_error(self, iteration, trials, trial, **info):
            key = self.key(trial)
            text = _error_text(trial)
            last = text.rsplit("Failure # ", 1)[-1]
            last = last.split("\n", 1)[-1] if last[:1].isdigit() else last
            epochs = self.epochs.get(key, [])
            outcome = {"status": "failed", "reason": _classify_error(last, _error_kind(trial)),
                       "error": last.strip()[-8000:],
                       "epochs_run": len(epochs), "metric": self.space.train.metric,
                       "node": epochs[-1].get("node") if epochs else None,
                       "started_at": self.started.get(key), "finished_at": datetime.now(timezone.utc)}
            attempts = self.attempts[key] + 1
            self._store(key, outcome)
            print(f"\n[seedsweep] trial {key} failed after {attempts} attempt(s): {outcome['reason']}",
                  file=self.stream, flush=True)

        def on_step_end(self, iteration, trials, **info):
            self.progress(force=False)

        def progress(self, *, force: bool) -> None:
            now = time.monotonic()
            interval = 1.0 if self.tty else 10.0
            if not force and now - self.last_print < interval:
                return
            self.last_print = now
            done = sum(self.counts.values())
            elapsed = now - self.t0
            eta = "?" if done == 0 else _clock(elapsed / done * (self.total - done))
            text = (f"[seedsweep] {done}/{self.total} done (ok {self.counts['ok']}, diverged "
                    f"{self.counts['diverged']}, failed {self.counts['failed']}), {self.running} running, "
                    f"elapsed {_clock(elapsed)}, ETA {eta}")
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

    return StoreAndProgress(rd, space, plan, schema, prior_attempts, stream, total)


def _error_text(trial) -> str:
    """The text of a trial's errors: Tune writes it to the driver-side staging
    folder first (``error_file``) and syncs it to storage later."""
    path = trial.error_file
    if path and os.path.exists(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    try:
        return trial.get_error() or "unknown error (Ray kept no error text)"
    except Exception as exc:  # noqa: BLE001 - the error text itself could not be fetched
        return f"unknown error (its text could not be read: {exc})"


def _error_kind(trial) -> str:
    """The class name of the trial's last error (Ray pickles it beside the text)."""
    path = trial.pickled_error_file
    if not path or not os.path.exists(path):
        return ""
    try:
        import ray.cloudpickle as cloudpickle

        with open(path, "rb") as f:
            err = cloudpickle.load(f)
        cause = err.as_instanceof_cause() if hasattr(err, "as_instanceof_cause") else err
        return " ".join(c.__name__ for c in type(cause).__mro__)
    except Exception:  # noqa: BLE001 - the text is still there to classify
        return ""


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _accelerators() -> dict[str, Any]:
    import ray

    nodes = []
    for node in ray.nodes():
        if not node.get("Alive"):
            continue
        res = node.get("Resources", {})
        nodes.append({"node_id": node.get("NodeID"), "address": node.get("NodeManagerAddress"),
                      "CPU": res.get("CPU", 0), "GPU": res.get("GPU", 0),
                      "accelerator_types": sorted(k.split(":", 1)[1] for k in res if k.startswith("accelerator_type:"))})
    return {"nodes": nodes, "GPU": sum(n["GPU"] for n in nodes), "CPU": sum(n["CPU"] for n in nodes)}


# -------------------------------------------------------------------- run


def _preflight(address: str) -> None:
    """Fail fast (before anything is written) when the cluster at ``address`` is
    unreachable: Ray itself would retry for minutes."""
    import socket

    if "://" in address:  # ray client addresses (ray://…) are checked by Ray itself
        return
    resolved = address
    if address == "auto":
        from ray._private.services import canonicalize_bootstrap_address

        try:
            resolved = canonicalize_bootstrap_address("auto")
        except (ConnectionError, ValueError) as exc:
            raise UserError("--address auto", f"no running Ray cluster was found ({exc}).",
                            "Start one (ray up cluster.yaml, or ray start --head) or leave --address out "
                            "to run on a private local Ray.") from None
    host, _, port = str(resolved).rpartition(":")
    if not host or not port.isdigit():
        raise UserError(f"--address {address}", "expected HOST:PORT (or 'auto').",
                        "Give the head node's address, e.g. 10.0.0.5:6379.")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise UserError(f"--address {address}", f"nothing answers at {host}:{port} ({exc.strerror or exc}).",
                        "Start the cluster (ray up / ray start --head) or fix the address; leave --address "
                        "out to run on a private local Ray.") from None


def run(space_path: str | os.PathLike, out: str | os.PathLike, *, address: str | None = None,
        retry_failed: bool = False, num_cpus: int | None = None, ray_temp_dir: str | None = None,
        stream: TextIO | None = None, command: list[str] | None = None) -> RunSummary:
    """Run (or resume) the study of ``space_path`` into the run directory ``out``.

    Only trial keys without a stored row run; ``retry_failed`` also reruns the
    trials stored as ``failed`` and replaces their rows. Returns a
    :class:`RunSummary`. Raises :class:`UserError` for bad input, before
    anything is written.

    >>> run("search_spaces/quickstart.yaml", "runs/quickstart").counts   # doctest: +SKIP
    {'ok': 12}
    """
    stream = stream or sys.stderr
    space = load_study(space_path)
    configs, grid = plan_study(space)
    from .store import is_uri

    out = out if is_uri(str(out)) else Path(out)
    if address:
        _preflight(address)
    # the data, embeddings and models must be found here before anything is
    # written or started: a missing corpus is one error, not a study of failed trials
    from .families import get_family

    get_family(space.family).resolve(space)
    rd = RunDir(str(out) if is_uri(str(out)) else out)
    rd.check_out()
    resuming = rd.exists()
    if resuming:
        _check_compatible(rd, space, configs)
    types = hyperparameter_types(space)
    schema = trials_schema({n: arrow_type(t) for n, t in types.items()})
    with rd.locked():
        previous = rd.manifest() if resuming else None
        manifest = build_manifest(space, accelerators={}, command=command or [])
        if previous is not None:
            history = previous.pop("history", [])
            manifest["history"] = history + [previous]
        else:
            manifest["history"] = []
        rd.write_manifest(manifest)
        rd.prepare()
        old = rd.configs()
        if old is None or old.num_rows < configs.num_rows:
            rd.write_configs(configs)

        stored = rd.stored_keys()
        keys = {t.key for t in grid}
        prior_attempts: dict[str, int] = {}
        rerun: set[str] = set()
        before: Counter = Counter()  # statuses of this study's stored rows that stay
        if stored & keys:
            table = rd.read_trials()
            mine = table.filter(pc.is_in(table["trial_key"], value_set=pa.array(sorted(keys), pa.string())))
            for key, status, attempt in zip(mine["trial_key"].to_pylist(), mine["status"].to_pylist(),
                                            mine["attempt"].to_pylist()):
                if retry_failed and status == "failed":
                    rerun.add(key)
                    prior_attempts[key] = int(attempt or 0)
                else:
                    before[status] += 1
        todo = [t for t in grid if t.key not in stored or t.key in rerun]
        skipped = len(grid) - len(todo)
        print(f"[seedsweep] {space.name}: {space.samples} configurations, {len(grid)} trials; "
              f"{skipped} already stored, {len(todo)} to run" + (f" ({len(rerun)} failed to retry)" if rerun else ""),
              file=stream, flush=True)
        interrupted, now, done = False, Counter(), set()
        if todo:
            interrupted, now, done = _tune(rd, space, todo, schema, prior_attempts, manifest, address=address,
                                     num_cpus=num_cpus, ray_temp_dir=ray_temp_dir, stream=stream)
    before["failed"] += len(rerun - done)  # failed rows whose retry did not finish stay failed
    counts = {k: v for k, v in (before + now).items() if v}
    return RunSummary(out=str(out), total=len(grid), skipped=skipped, scheduled=len(todo), counts=counts,
                      interrupted=interrupted)


def _bound_trainable(space: Space):
    """The trainable with the (small) study spec baked in. Tune ships it to each
    worker once with the function, instead of ``tune.with_parameters``, whose
    object-store lookup costs every trial a round trip to the driver."""
    from .trial import trainable

    cwd = os.getcwd()

    def seedsweep_trial(config):
        # Tune starts each trial in its own trial folder; go back to the folder
        # the study was started from (where it exists: this machine, or a
        # cluster's shared filesystem), so relative paths in the study file --
        # task.path, embeddings, model folders -- mean what they meant there.
        if os.path.isdir(cwd):
            os.chdir(cwd)
        trainable(config, space=space)

    return seedsweep_trial


_TUNE_PREFIX = "seedsweep-tune-"


def remove_stale_tune_folders(root: str | None = None) -> list[str]:
    """Remove the Tune folders (``seedsweep-tune-<pid>-*`` in the temp dir)
    of drivers that no longer run -- a SIGKILLed driver cannot remove its own.
    Returns the folders removed. A folder whose PID is alive (or unparsable)
    is left alone."""
    root = root or tempfile.gettempdir()
    removed = []
    try:
        names = os.listdir(root)
    except OSError:
        return removed
    for name in names:
        if not name.startswith(_TUNE_PREFIX):
            continue
        pid_text = name[len(_TUNE_PREFIX):].split("-", 1)[0]
        if not pid_text.isdigit():
            continue
        try:
            os.kill(int(pid_text), 0)
            continue                              # its driver still runs
        except ProcessLookupError:
            pass
        except PermissionError:
            continue                              # someone else's live process
        shutil.rmtree(os.path.join(root, name), ignore_errors=True)
        removed.append(os.path.join(root, name))
    return removed


_FORWARDED_ENV = ("SEEDSWEEP_DATA", "SEEDSWEEP_EMBEDDINGS", "SEEDSWEEP_CACHE")


def _tune(rd: RunDir, space: Space, todo: list[TrialSpec], schema: pa.Schema, prior_attempts: dict[str, int],
          manifest: dict[str, Any], *, address: str | None, num_cpus: int | None, ray_temp_dir: str | None,
          stream: TextIO) -> tuple[bool, Counter, set[str]]:
    """Run ``todo`` on Ray Tune; returns (interrupted, status counts of the trials stored
    now, their keys)."""
    import ray
    from ray import tune

    started_ray = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING,
                                  "include_dashboard": False}
        # where data, embeddings and downloads live: the workers of a cluster
        # do not inherit the driver's environment, so pass these along
        # (a relative folder is made absolute: Ray workers run in another folder)
        forwarded = {k: os.path.abspath(v) if os.path.isdir(v) else v
                     for k in _FORWARDED_ENV if (v := os.environ.get(k))}
        if forwarded:
            kwargs["runtime_env"] = {"env_vars": forwarded}
        if address:
            try:
                ray.init(address=address, **kwargs)
            except (ConnectionError, ValueError, RuntimeError) as exc:
                raise UserError(f"--address {address}", f"cannot join a Ray cluster there ({exc}).",
                                "Start the cluster (ray up / ray start --head) or give its address; "
                                "leave --address out to run on a private local Ray.") from None
        else:
            ray.init(address="local", num_cpus=num_cpus, _temp_dir=ray_temp_dir, **kwargs)
        started_ray = True
    remove_stale_tune_folders()
    storage = tempfile.mkdtemp(prefix=f"{_TUNE_PREFIX}{os.getpid()}-")
    quiet = [logging.getLogger(n) for n in ("ray.tune", "ray.train", "ray.air")]
    levels = [lg.level for lg in quiet]
    try:
        manifest["accelerators"] = _accelerators()
        rd.write_manifest(manifest)
        plan = {t.key: t for t in todo}
        callback = _make_callback(rd, space, plan, schema, prior_attempts, stream, len(todo))
        resources = {"cpu": space.resources.cpu, "gpu": space.resources.gpu}
        tuner = tune.Tuner(
            tune.with_resources(_bound_trainable(space), resources),
            param_space={"trial": tune.grid_search([t.to_json() for t in todo])},
            tune_config=tune.TuneConfig(reuse_actors=True, trial_dirname_creator=lambda t: t.trial_id),
            run_config=tune.RunConfig(
                name="seedsweep", storage_path=storage, verbose=0, callbacks=[callback],
                failure_config=tune.FailureConfig(max_failures=space.train.retries),
            ),
        )
        for lg in quiet:
            lg.setLevel(logging.CRITICAL)
        interrupted = False
        # Tune's periodic experiment checkpoint serialises every trial's state;
        # seedsweep never restores from it (the store is the record), so it is
        # written once a day at most instead of every few seconds.
        saved_period = os.environ.get("TUNE_GLOBAL_CHECKPOINT_S")
        os.environ["TUNE_GLOBAL_CHECKPOINT_S"] = "86400"
        try:
            tuner.fit()
        except KeyboardInterrupt:
            interrupted = True
        finally:
            if saved_period is None:
                os.environ.pop("TUNE_GLOBAL_CHECKPOINT_S", None)
            else:
                os.environ["TUNE_GLOBAL_CHECKPOINT_S"] = saved_period
            for lg, level in zip(quiet, levels):
                lg.setLevel(level)
            callback.flush()
        callback.progress(force=True)
        return interrupted or len(callback.done) < len(todo), callback.counts, callback.done
    finally:
        shutil.rmtree(storage, ignore_errors=True)
        if started_ray:
            ray.shutdown()
