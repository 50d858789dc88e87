"""What compiling the project's own modules costs each process the suite starts.

``PYTHONDONTWRITEBYTECODE=1`` (set on the machines this project is built and
checked on) stops Python from writing ``__pycache__``. The installed packages
were compiled by pip when they were installed, but the project itself is an
editable install: in a clean clone every process that imports
``seedsweep.study`` or ``seedsweep.analysis`` (each ``seedsweep`` command,
each Ray trial actor, each dashboard, each pytest worker with its assertion
rewriting of the test modules) compiles those modules again from source.

Both ways here, alternating, on this checkout: the project's ``__pycache__``
folders moved aside (a clean clone), and present (``compileall`` of the
packages, and pytest's own rewritten test modules written by one collection
with writing allowed). Every measured process runs with
``PYTHONDONTWRITEBYTECODE=1``, so neither way changes while it is measured.
CPU-seconds are the process tree's own (``resource.getrusage`` of the
children), per case:

* ``check``: ``seedsweep check`` of the quickstart study (the command line and the study-file reader);
* ``driver``: the imports of a ``seedsweep run`` driver (the command line, the engine, Ray Tune);
* ``actor``: the imports of a trial actor of the synthetic family (Ray Tune, the trial, the family);
* ``collect``: ``pytest --collect-only`` of the whole suite (what each pytest worker does first);
* ``run``: the 6-trial study of ``tests/test_address.py`` on a private Ray, its CPU-seconds the machine's
  busy time (a driver, two trial actors and Ray's own processes: the difference is within Ray's noise).

::

    .venv/bin/python benchmarks/bytecode.py --reps 3 --json benchmarks/results/bytecode-2026-12-07.json
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from benchmarks.ray_cost import busy_seconds  # noqa: E402  (the machine's busy CPU-s, /proc/stat)
from tests.conftest import kill_tagged  # noqa: E402  (a private Ray's leftovers, by the run's tag)
from tests.test_address import SPACE  # noqa: E402  (3 configurations x 2 options, 3 epochs)

#: what a driver and a trial actor import (``-c``)
IMPORTS = {"driver": "import ray.tune; from seedsweep import cli; from seedsweep.study.execution import runner",
           "actor": "import ray.tune; from seedsweep.study.execution import trial; "
                    "from seedsweep.study.families import synthetic"}
#: the project's own source folders (the editable install's packages, and the tests)
FOLDERS = ("seedsweep", "study", "analysis", "tests", "testbeds")


def caches() -> list[Path]:
    """Every ``__pycache__`` folder of the project's own sources."""
    found = [p for folder in FOLDERS for p in (HERE / folder).rglob("__pycache__")]
    return found + ([HERE / "__pycache__"] if (HERE / "__pycache__").is_dir() else [])


def set_caches(present: bool, stash: Path) -> None:
    """Move the project's ``__pycache__`` folders aside (``present`` False) or write them."""
    for p in caches():
        target = stash / uuid.uuid4().hex
        shutil.move(str(p), str(target))
    if present:
        for folder in FOLDERS:
            compileall.compile_dir(str(HERE / folder), quiet=1)
        compileall.compile_file(str(HERE / "conftest.py"), quiet=1)
        # pytest keeps its rewritten test modules beside them, written only where writing is allowed
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "", "RAY_AUTH_MODE": "disabled"}
        subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q"],
                       cwd=HERE, env=env, capture_output=True, check=True)


def cpu_of(argv: list[str], env: dict, cwd: Path) -> float:
    """The CPU-seconds of ``argv`` and every process it waited for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"{argv} failed:\n{r.stderr[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def one(case: str, folder: Path) -> float:
    """One measurement of ``case``."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "RAY_AUTH_MODE": "disabled"}
    env.pop("RAY_ADDRESS", None)
    if case == "check":
        return cpu_of([sys.executable, "-m", "seedsweep", "check", "search_spaces/quickstart.yaml"], env, HERE)
    if case in IMPORTS:
        return cpu_of([sys.executable, "-c", IMPORTS[case]], env, HERE)
    if case == "collect":
        return cpu_of([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q"], env, HERE)
    tag, ray_tmp = uuid.uuid4().hex, tempfile.mkdtemp(prefix="ssb-", dir="/tmp")
    env.update(SEEDSWEEP_TEST_TAG=tag, RAY_TMPDIR=ray_tmp)
    start = busy_seconds()                  # the machine's: a Ray's daemons are not the driver's children
    try:
        cpu_of([sys.executable, "-m", "seedsweep", "run", str(folder / "space.yaml"), "--out",
                str(folder / uuid.uuid4().hex), "--quiet", "--num-cpus", "2"], env, HERE)
        time.sleep(1.0)                      # Ray's daemons finish stopping
        return busy_seconds() - start
    finally:
        kill_tagged(tag, ray_tmp)
        shutil.rmtree(ray_tmp, ignore_errors=True)


def main() -> None:
    """Both ways, ``--reps`` times each, alternating; medians printed and optionally written."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    ways = {"no project bytecode (a clean clone)": False, "project bytecode written": True}
    cases = ("check", "driver", "actor", "collect", "run")
    runs: dict = {way: {c: [] for c in cases} for way in ways}
    folder = Path(tempfile.mkdtemp(prefix="bytecode-"))
    stash = folder / "stash"
    stash.mkdir()
    (folder / "space.yaml").write_text(SPACE)
    try:
        for _ in range(args.reps):
            for way, present in ways.items():
                set_caches(present, stash)
                for case in cases:
                    runs[way][case].append(one(case, folder))
    finally:
        set_caches(True, stash)
        shutil.rmtree(folder, ignore_errors=True)
    medians = {way: {c: statistics.median(v) for c, v in by.items()} for way, by in runs.items()}
    a, b = (medians[w] for w in ways)
    for case in cases:
        print(f"{case:8s} {a[case]:7.2f} CPU-s without the project's bytecode, {b[case]:7.2f} with it "
              f"({b[case] / a[case]:.2f}x)")
    out = {"runs": runs, "medians": medians, "ratio": {c: b[c] / a[c] for c in cases}, "reps": args.reps,
           "machine_cpus": os.cpu_count(), "python": platform.python_version(),
           "command": "benchmarks/bytecode.py " + " ".join(sys.argv[1:])}
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
