"""The Ray session of one ``seedsweep run``: start or join Ray, run the trials on Tune, clean up.

Without ``address`` a private local Ray is started (``ray.init(address=
"local")``), never a cluster that a stale address file points to; with
``address`` the cluster there is joined after a quick reachability check
(:func:`preflight`). The environment settings Tune needs are applied only for
the length of a session (:func:`tune_environment`) and restored afterwards,
so importing seedsweep changes nothing in ``os.environ``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from ..errors import UserError
from .raydaemons import clear_dead_sessions, forget_session, record_session

__all__ = ["preflight", "accelerators", "check_fits", "remove_stale_tune_folders", "tune_environment", "ray_session",
           "bound_trainable", "TUNE_PREFIX", "FORWARDED_ENV"]

#: Name prefix of the Tune folders in the temp dir: ``seedsweep-tune-<driver pid>-*``.
TUNE_PREFIX = "seedsweep-tune-"
#: Where data, embeddings and downloads live: forwarded to workers, which do not inherit them.
FORWARDED_ENV = ("SEEDSWEEP_DATA", "SEEDSWEEP_EMBEDDINGS", "SEEDSWEEP_CACHE", "SEEDSWEEP_MODELS")

# Tune's console tables and per-trial log files are replaced by our progress
# line and our Parquet store (both measured to slow small trials several-fold);
# its periodic experiment checkpoint serialises every trial's state and
# seedsweep never restores from it (the store is the record), so it is
# written once a day at most instead of every few seconds. A private Ray's
# raylet, started inside the session, reads the last one from its environment:
# when the first driver connects it starts idle worker processes with no runtime
# environment, while every Tune trial actor asks for one (Tune gives each its
# env_vars), so none of those workers ever runs a trial; each holds about 80 MiB
# to the end of the study (Ray's issue: ray-project/ray#33621). Turned off, a
# small run took 0.94x the CPU-seconds at the same wall time here
# (benchmarks/results/prestart-2026-12-07*.json).
_TUNE_ENV = {"RAY_AIR_NEW_OUTPUT": "0", "TUNE_DISABLE_AUTO_CALLBACK_LOGGERS": "1",
             "TUNE_GLOBAL_CHECKPOINT_S": "86400", "RAY_prestart_worker_first_driver": "0"}


@contextmanager
def without_mlflow_import(tracked: bool) -> Iterator[None]:
    """Around a ``Tuner.fit`` of a study that does not log to MLflow: Ray
    Tune's usage tagging imports its MLflow integration whenever callbacks
    are passed, and with it the whole ``mlflow`` package, to count callbacks
    seedsweep never passes (skipping it took a small joined run from 4.8 to
    4.3 CPU-s and 3.4 to 2.9 s here:
    benchmarks/results/ray_cost-2026-12-06-{before,after}-mlflow-skip.json).
    While the fit runs ``import mlflow`` fails (``sys.modules`` holds None,
    which Ray's integration treats as MLflow not installed); afterwards both
    are forgotten, so a later import in this process gets the real package.
    Nothing changes where ``tracked`` (the MLflow sink imports it on its own
    thread meanwhile) or where ``mlflow`` was already imported."""
    integration = "ray.air.integrations.mlflow"
    if tracked or "mlflow" in sys.modules or integration in sys.modules:
        yield
        return
    sys.modules["mlflow"] = None          # type: ignore[assignment]
    try:
        yield
    finally:
        if "mlflow" in sys.modules and sys.modules["mlflow"] is None:
            del sys.modules["mlflow"]
        if sys.modules.pop(integration, None) is not None:     # and its name in the package: imported anew
            package = sys.modules.get(integration.rpartition(".")[0])
            if package is not None and hasattr(package, "mlflow"):
                delattr(package, "mlflow")


@contextmanager
def tune_environment() -> Iterator[None]:
    """Set Tune's environment for a session; restore every variable after it."""
    saved = {k: os.environ.get(k) for k in _TUNE_ENV}
    for k, v in _TUNE_ENV.items():
        if k != "TUNE_GLOBAL_CHECKPOINT_S":
            os.environ.setdefault(k, v)          # a user's own setting wins
        else:
            os.environ[k] = v
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def preflight(address: str) -> None:
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


def accelerators() -> dict[str, Any]:
    """CPUs, GPUs and accelerator types of the live nodes of the connected Ray."""
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


def check_fits(space, address: str | None) -> None:
    """Refuse, before anything is written, a study whose trial asks for more GPUs or CPUs than any node
    of the cluster at ``address`` (or this machine) has, unless an autoscaler may add such nodes."""
    need = space.resources.of_trial(space.train.vectorize_seeds)
    if need["gpu"] <= 0:
        return
    import ray

    if address:
        joined = not ray.is_initialized()
        if joined:
            ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING, include_dashboard=False)
        try:
            nodes = accelerators()["nodes"]
            # Ray's autoscaler writes its status here; it can start nodes that are not up yet
            import ray.experimental.internal_kv

            if _autoscales(ray.experimental.internal_kv._internal_kv_get("__autoscaling_status")):
                return
        finally:
            if joined:
                ray.shutdown()
        where = f"the cluster at {address}"
    else:
        # Ray's own count of this machine's GPUs (what a private local Ray would get), without starting Ray
        from ray._private.accelerators import get_accelerator_manager_for_resource

        gpus = get_accelerator_manager_for_resource("GPU").get_current_node_num_accelerators()
        nodes, where = [{"address": "this machine", "CPU": float(os.cpu_count() or 1), "GPU": float(gpus)}], \
            "this machine"
    if any(n["GPU"] >= need["gpu"] and n["CPU"] >= need["cpu"] for n in nodes):
        return
    have = "; ".join(f"{n['address']}: {n['CPU']:g} CPU, {n['GPU']:g} GPU" for n in nodes) or "no live node"
    raise UserError(f"{space.path}: resources", f"each trial asks for {need['gpu']:g} GPU and {need['cpu']:g} CPU, "
                    f"more than any node of {where} has ({have}), so no trial could ever start.",
                    "Ask for at most what one node has (a fraction, e.g. gpu: 0.5, packs trials onto one GPU), "
                    "or add nodes with more GPUs (an autoscaling cluster's file: available_node_types).")


def _autoscales(status: bytes | None) -> bool:
    """Whether the autoscaler whose status is ``status`` can start nodes. Nodes joined by ``ray start`` get a
    read-only one, whose node types are the live nodes themselves (``node_<id>``); a format it does not know
    counts as one that can (a study is never refused for a node that may come)."""
    if not status:
        return False
    try:
        mapping = json.loads(status)["autoscaler_report"]["node_type_mapping"] or {}
    except (ValueError, KeyError, TypeError):
        return True
    return any(kind != f"node_{node}" for node, kind in mapping.items())


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
        if not name.startswith(TUNE_PREFIX):
            continue
        pid_text = name[len(TUNE_PREFIX):].split("-", 1)[0]
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


def _token_enabled_notice(record: logging.LogRecord) -> bool:
    """A logging filter: False for Ray's notice that token authentication is on."""
    return not record.getMessage().startswith("Token authentication is enabled")


def _start(address: str | None, num_cpus: int | None, ray_temp_dir: str | None,
           runtime_env: dict[str, Any] | None = None) -> tuple[bool, Path | None]:
    """Start or join Ray unless this process already is connected: (whether
    started here, the record of the private Ray started, :mod:`study.execution.raydaemons`)."""
    import ray

    if ray.is_initialized():
        return False, None
    clear_dead_sessions()                 # what a SIGKILLed driver's Ray left running
    record = None
    kwargs: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING,
                              "include_dashboard": False}
    # the workers of a cluster do not inherit the driver's environment, so pass
    # these along (a relative folder is made absolute: workers run in another folder)
    forwarded = {k: os.path.abspath(v) if os.path.isdir(v) else v
                 for k in FORWARDED_ENV if (v := os.environ.get(k))}
    env = dict(runtime_env or {})
    if forwarded:
        env["env_vars"] = forwarded
    if env:
        kwargs["runtime_env"] = env
    if address:
        try:
            ray.init(address=address, **kwargs)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            raise UserError(f"--address {address}", f"cannot join a Ray cluster there ({exc}).",
                            "Start the cluster (ray up / ray start --head) or give its address; "
                            "leave --address out to run on a private local Ray.") from None
    else:
        # A private local Ray gets Ray's default, token authentication, and Ray
        # says so on every run; a notice with nothing for the user to do, so it is
        # dropped (only that one: a warning that authentication is *off* still shows).
        notices = logging.getLogger("ray._private.authentication.authentication_token_setup")
        notices.addFilter(_token_enabled_notice)
        try:
            context = ray.init(address="local", num_cpus=num_cpus, _temp_dir=ray_temp_dir, **kwargs)
        finally:
            notices.removeFilter(_token_enabled_notice)
        record = record_session(context.address_info["session_dir"])
    return True, record


@contextmanager
def _own_signal_handlers() -> Iterator[None]:
    """Put back, on exit, the SIGINT and SIGUSR1 handlers this (main) thread had on entry."""
    names = [n for n in ("SIGINT", "SIGUSR1") if hasattr(signal, n)]
    main = threading.current_thread() is threading.main_thread()
    saved = {n: signal.getsignal(getattr(signal, n)) for n in names} if main else {}
    try:
        yield
    finally:
        for n, handler in saved.items():
            if handler is not None and signal.getsignal(getattr(signal, n)) is not handler:
                signal.signal(getattr(signal, n), handler)


@contextmanager
def ray_session(*, address: str | None, num_cpus: int | None, ray_temp_dir: str | None,
                runtime_env: dict[str, Any] | None = None) -> Iterator[str]:
    """Ray started or joined, Tune's environment set and its loggers quiet;
    yields a fresh Tune storage folder. Everything is undone on exit (Ray is
    shut down only when this session started it). ``runtime_env``: what every
    worker gets (the folder that travels, :mod:`study.execution.shipping`).
    The process's SIGINT and SIGUSR1 handlers are restored too: a fit in the
    main thread installs Tune's, which would otherwise outlive the session, so
    the next Ctrl-C in a notebook or a Python session would only end a Tune
    run that is over (and say so), not interrupt what runs then."""
    import ray

    with tune_environment(), _own_signal_handlers():
        started, record = _start(address, num_cpus, ray_temp_dir, runtime_env)
        remove_stale_tune_folders()
        storage = tempfile.mkdtemp(prefix=f"{TUNE_PREFIX}{os.getpid()}-")
        quiet = [logging.getLogger(n) for n in ("ray.tune", "ray.train", "ray.air")]
        levels = [lg.level for lg in quiet]
        try:
            for lg in quiet:
                lg.setLevel(logging.CRITICAL)
            yield storage
        finally:
            for lg, level in zip(quiet, levels):
                lg.setLevel(level)
            shutil.rmtree(storage, ignore_errors=True)
            if started:
                ray.shutdown()
            if record is not None:
                forget_session(record)


def bound_trainable(space, trainable: Callable, cache_dir: str | None = None,
                    work_dir: str | None = None, shipped=None) -> Callable:
    """``trainable`` with the (small) study spec baked in. Tune ships it to each
    worker once with the function, instead of ``tune.with_parameters``, whose
    object-store lookup costs every trial a round trip to the driver.
    ``shipped``: the :class:`~study.execution.shipping.Shipment` whose copy
    on the worker the study's files are read from."""
    cwd = os.getcwd()

    def seedsweep_trial(config):
        if shipped is not None:          # the study's folder is the worker's copy of it, wherever that is
            there, folder = shipped.on_worker(space)
            os.chdir(folder)
            trainable(config, space=there, cache_dir=cache_dir, work_dir=work_dir)
            return
        # Tune starts each trial in its own trial folder; go back to the folder
        # the study was started from (where it exists: this machine, or a
        # cluster's shared filesystem), so relative paths in the study file --
        # task.path, embeddings, model folders -- mean what they meant there.
        if os.path.isdir(cwd):
            os.chdir(cwd)
        trainable(config, space=space, cache_dir=cache_dir, work_dir=work_dir)

    return seedsweep_trial
