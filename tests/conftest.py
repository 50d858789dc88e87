"""Shared fixtures: search-space files, a private Ray for in-process engine tests,
and helpers to find (and clean up) the Ray processes a test started."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from pathlib import Path

import psutil
import pytest

os.environ.setdefault("RAY_AUTH_MODE", "disabled")

# A suite started in the background by a shell without job control (`make test &` in a script) inherits
# SIGINT ignored, and so would every driver a test starts: the Ctrl-C tests (tests/test_kill.py
# sigint_when_stored) would send a signal the driver never sees. A test sends SIGINT as a terminal does to
# its foreground job, so this process (and through exec, each driver) takes it the default way.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REPO = Path(__file__).resolve().parents[1]


def write_yaml(folder: Path, text: str, name: str = "space.yaml") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


@pytest.fixture
def space_file(tmp_path):
    """A factory: ``space_file(yaml_text)`` -> path of that file in tmp_path."""
    return lambda text, name="space.yaml": write_yaml(tmp_path, text, name)


@pytest.fixture(scope="session")
def ray_local(worker_ray):
    """The in-process engine tests' Ray: this process joins the pytest worker's
    Ray (``worker_ray``) as a driver, so a worker keeps one idle Ray, not two
    (an idle head costs about 0.03 of a core here; a joined run about 0.6 of a
    private one's CPU-seconds: benchmarks/results/ray_cost-2026-12-06.json).
    The runner reuses an initialised Ray."""
    import ray

    ray.init(address=worker_ray, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def free_port() -> int:
    """A TCP port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def worker_ray():
    """One Ray per pytest worker for the command-line tests that are not about
    Ray's own start, stop or death: ``ray start --head`` with its own temp dir
    and port; a test joins it with ``--address`` (the value yielded). Its
    daemons are stopped by PID at the end (never ``ray stop``: that stops
    every Ray on the machine).

    One CPU, so a joined run's fit starts one trial actor, not two (each a worker
    process importing Ray Tune and the family, 1-3 CPU-seconds:
    ``benchmarks/results/suite-census-2026-12-07.json``); no log monitor, which
    globs the session's log folder ten times a second and whose lines no driver
    here reads (they all join with ``log_to_driver=False``). Both measured in
    ``benchmarks/results/worker-ray-2026-12-07.txt``. Started without the variables a driver
    forwards to its workers (``FORWARDED_ENV``: SEEDSWEEP_DATA…), as a cluster's nodes are, so that a
    test of that forwarding can join it (tests/test_address.py)."""
    tag, ray_tmp = uuid.uuid4().hex, tempfile.mkdtemp(prefix="ssw-", dir="/tmp")
    env = {**os.environ, "SEEDSWEEP_TEST_TAG": tag, "RAY_TMPDIR": ray_tmp, "RAY_AUTH_MODE": "disabled",
           "RAY_prestart_worker_first_driver": "0"}          # as the cluster files start their head
    env.pop("RAY_ADDRESS", None)
    from seedsweep.study.execution.session import FORWARDED_ENV     # the engine: only where a Ray is started

    for name in FORWARDED_ENV:
        env.pop(name, None)
    port = free_port()
    try:
        started = subprocess.run([str(Path(sys.executable).parent / "ray"), "start", "--head", f"--port={port}",
                                  "--num-cpus=1", f"--temp-dir={ray_tmp}", "--include-dashboard=false",
                                  "--include-log-monitor=false", "--disable-usage-stats"],
                                 env=env, capture_output=True, text=True, timeout=180)
        assert started.returncode == 0, started.stderr
        if os.environ.get("SEEDSWEEP_CENSUS_DIR"):       # benchmarks/suite_census.py: this Ray's processes are ours
            Path(os.environ["SEEDSWEEP_CENSUS_DIR"], "ray-" + os.path.basename(ray_tmp)).write_text(str(os.getpid()))
        yield f"127.0.0.1:{port}"
    finally:
        remove_tagged(tag, ray_tmp)


def titles_while_running(proc: subprocess.Popen, tag: str, ray_tmp: str,
                         rss: dict[int, int] | None = None) -> tuple[str, str, dict[int, set[str]]]:
    """Wait for ``proc`` (its output read meanwhile), looking every 0.1 s at the test's own processes
    (``tag``, ``ray_tmp``): (stdout, stderr, each process's titles seen); ``rss``, when given, gets
    each process's largest resident memory."""
    outputs: list[str] = []
    reader = threading.Thread(target=lambda: outputs.extend(proc.communicate(timeout=300)))
    reader.start()
    titles: dict[int, set[str]] = {}
    while reader.is_alive():
        for p in tagged_processes(tag, ray_tmp):
            with contextlib.suppress(psutil.Error):
                titles.setdefault(p.pid, set()).add(p.cmdline()[0].strip() if p.cmdline() else "")
                if rss is not None:
                    rss[p.pid] = max(rss.get(p.pid, 0), p.memory_info().rss)
        time.sleep(0.1)
    reader.join()
    return outputs[0], outputs[1], titles


def idle_workers_and_trial_actors(titles: dict[int, set[str]]) -> tuple[list[int], list[int]]:
    """Of :func:`titles_while_running`'s processes: the Ray workers only ever seen idle, and the trial actors."""
    ray_titles = {pid: {t for t in seen if t.startswith("ray::")} for pid, seen in titles.items()}
    return ([pid for pid, seen in ray_titles.items() if seen == {"ray::IDLE"}],
            [pid for pid, seen in ray_titles.items() if any(t.startswith("ray::ImplicitFunc") for t in seen)])


def holds_file_under(pid: int, folder: str) -> bool:
    fd_dir = f"/proc/{pid}/fd"
    try:
        for fd in os.listdir(fd_dir):
            try:
                if os.readlink(f"{fd_dir}/{fd}").startswith(folder):
                    return True
            except OSError:
                continue
    except OSError:
        return False
    return False


def tagged_processes(tag: str, ray_tmp: str | None = None) -> list[psutil.Process]:
    """A test's own processes: those whose environment carries
    SEEDSWEEP_TEST_TAG=tag, or that hold a file open under ``ray_tmp`` (the
    test's private Ray temp dir: every Ray daemon and agent keeps its logs
    there open, while Ray's process titles may overwrite the environment)."""
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.pid == os.getpid():
                continue
            env = proc.environ()
            if env.get("SEEDSWEEP_TEST_TAG") == tag or (ray_tmp and holds_file_under(proc.pid, ray_tmp)):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
            continue
    return found


def orphaned_agent(proc: psutil.Process) -> bool:
    """A Ray agent (dashboard or runtime-env agent) whose raylet is gone.

    When a driver is SIGKILLed, its raylet dies with it and its two agents
    notice at once, but before they exit they try to report the raylet's
    death to the (equally dead) GCS, with a timeout that Ray 2.60 fixes at
    60 s (``ray._private.utils.publish_error_to_driver``). Such an agent is
    on its way out on Ray's own clock, not something seedsweep left running:
    tests tell it apart from the rest (raylet, GCS, workers, a driver), which
    must be gone promptly, and kill it by PID."""
    try:
        if proc.name() not in ("ray::DashboardAgent", "ray::RuntimeEnvAgent"):
            return False
        parent = proc.parent()       # the raylet that started it, or init once that is gone
        return parent is None or parent.name() != "raylet"
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


def wait_gone(tag: str, timeout: float, ray_tmp: str | None = None,
              orphans: bool = False) -> list[psutil.Process]:
    """Wait up to ``timeout`` s for the test's processes to exit; return those
    left. With ``orphans=True``, agents of a dead raylet (``orphaned_agent``)
    are not waited for: they are killed by PID and not returned."""
    deadline = time.monotonic() + timeout

    def left() -> list[psutil.Process]:
        found = tagged_processes(tag, ray_tmp)
        if not orphans:
            return found
        for proc in [p for p in found if orphaned_agent(p)]:
            try:
                proc.kill()
            except psutil.NoSuchProcess:
                pass
        return [p for p in found if not orphaned_agent(p) and p.is_running()]

    now = left()
    while now and time.monotonic() < deadline:
        time.sleep(1.0)
        now = left()
    return now


def kill_tagged(tag: str, ray_tmp: str | None = None) -> None:
    """Clean-up: SIGKILL exactly the test's own processes, one PID at a time."""
    for proc in tagged_processes(tag, ray_tmp):
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass


def remove_tagged(tag: str, ray_tmp: str) -> None:
    """Clean-up, not a claim: SIGKILL the test's own processes (``kill_tagged``), wait up to 30 s for them to go
    (not for a killed driver's Ray to exit on its own: its agents wait out Ray's 60 s timeout), then remove
    ``ray_tmp``."""
    kill_tagged(tag, ray_tmp)
    wait_gone(tag, timeout=30, ray_tmp=ray_tmp, orphans=True)
    shutil.rmtree(ray_tmp, ignore_errors=True)


def refused_by_check_and_run(space: Path, out: Path, where: str, problem: str) -> None:
    """``seedsweep check`` and ``seedsweep run`` of ``space`` both exit 2 with
    one message naming ``{space}: {where}`` and saying ``problem``; ``out`` is never created."""
    for argv in (["check", str(space)], ["run", str(space), "--out", str(out)]):
        proc = seedsweep_here(*argv)
        assert proc.returncode == 2, proc.stderr
        assert f"{space}: {where}" in proc.stderr and problem in proc.stderr, proc.stderr
        assert not out.exists()


def seedsweep_here(*argv: str, cwd: Path = REPO, env: dict | None = None) -> subprocess.CompletedProcess:
    """``seedsweep ARGV`` run by the command line's own ``main`` in this process (in ``cwd``, with
    ``env`` as the whole environment while it runs): for tests of what a command says and writes,
    not of the process it runs in. A subprocess pays its imports each time (about 0.8 CPU-s for
    ``check``: ``benchmarks/results/suite-census-2026-12-07-after.json``); here they are paid once."""
    from seedsweep.cli import main          # the command line: only the tests that call it import it

    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd, saved_argv = dict(os.environ), os.getcwd(), sys.argv
    try:
        sys.argv = ["seedsweep", *argv]         # what a manifest records as the command
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(argv))
            except SystemExit as exc:           # argparse's own usage errors
                code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    finally:
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(["seedsweep", *argv], code, out.getvalue(), err.getvalue())


@pytest.fixture
def joined_here(ray_local, worker_ray):
    """``joined_here(*argv, env=..., cwd=...)``: ``seedsweep ARGV --address <the worker's Ray>`` by
    :func:`seedsweep_here`, in this process, already connected to that Ray (``ray_local``); for tests
    of what a study on a joined Ray stores and says, not of the driver's process or its own Ray. A
    subprocess pays a Python start, the driver's imports and a new Ray job each time
    (``benchmarks/joined_run.py``). The trial actors are the worker Ray's: variables given in
    ``env`` reach the driver only, and no folder is shipped (not for a family of the user's code)."""
    return lambda *argv, **kw: seedsweep_here(*argv, "--address", worker_ray, **kw)
