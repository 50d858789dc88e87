"""``seedsweep run`` in a process already joined to a Ray, against the same command as a process of its own.

The suite's tests of what a study stores and says run on their pytest worker's
Ray (``tests/conftest.py``: ``worker_ray``). Run as a subprocess, each such
``seedsweep run --address`` pays a Python start, the imports of the command
line, Ray Tune and the statistics stack, and a new Ray job; without
``--address`` (as the resumes of the kill tests ran) it also starts and stops a
private Ray of its own; run by the command line's own ``main`` in a process
already joined to the worker's Ray (``tests.conftest.joined_here``), it pays
the study alone. This runs the same four-trial synthetic study the three ways,
in turn, the joined ones on one ``ray start --head`` of one CPU (as the
worker's Ray), the private one with ``--num-cpus 2`` (as those resumes), and
prints the machine's busy CPU-seconds of each (``/proc/stat``: user, nice,
system, irq, softirq, steal), the first in-process run (which pays the
imports once) apart::

    RAY_AUTH_MODE=disabled .venv/bin/python benchmarks/joined_run.py --json benchmarks/results/joined_run-DATE.json
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
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

from tests.conftest import free_port, kill_tagged, wait_gone  # noqa: E402 -- the tests' own Ray clean-up

STUDY = """
name: joined
family: synthetic
samples: 2
seeds: 1
compare: {classifier: [softmax, crf]}
task: {}
train: {max_epochs: 2, patience: 1}
"""


def busy_cpu_s() -> float:
    """The machine's busy CPU-seconds so far (user, nice, system, irq, softirq, steal)."""
    with open("/proc/stat") as f:
        fields = f.readline().split()[1:]
    return sum(float(fields[i]) for i in (0, 1, 2, 5, 6, 7)) / os.sysconf("SC_CLK_TCK")


def timed(fn) -> tuple[int, float, float]:
    """(exit code, wall s, busy CPU-s) of ``fn()``, with 2 s after it for the job's workers to exit."""
    c0, t0 = busy_cpu_s(), time.monotonic()
    code = fn()
    wall = time.monotonic() - t0
    time.sleep(2)
    return code, wall, busy_cpu_s() - c0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5, help="runs of each way (default 5)")
    p.add_argument("--json", help="write the figures here")
    args = p.parse_args()
    import ray                                        # the measured process joins the Ray started below
    from seedsweep.cli import main as cli_main        # the command line, as tests.conftest.seedsweep_here calls it

    work, tag = Path(tempfile.mkdtemp(prefix="sjr-", dir="/tmp")), uuid.uuid4().hex
    port = free_port()
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "SEEDSWEEP_TEST_TAG": tag}
    try:
        started = subprocess.run([str(Path(sys.executable).parent / "ray"), "start", "--head", f"--port={port}",
                                  "--num-cpus=1", f"--temp-dir={work / 'ray'}", "--include-dashboard=false",
                                  "--include-log-monitor=false", "--disable-usage-stats"],
                                 env=env, capture_output=True, text=True, timeout=180)
        if started.returncode:
            raise SystemExit(started.stderr)
        address = f"127.0.0.1:{port}"
        (work / "s.yaml").write_text(STUDY)
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
        rows: dict[str, list[dict]] = {"private Ray": [], "subprocess": [], "in-process": []}
        for k in range(args.repeat):
            for way in rows:
                out = work / f"{way.replace(' ', '-')}-{k}"
                argv = ["run", str(work / "s.yaml"), "--out", str(out), "--address", address, "--quiet"]
                if way == "private Ray":
                    private = argv[:4] + ["--num-cpus", "2", "--quiet"]
                    code, wall, cpu = timed(lambda: subprocess.run(
                        [sys.executable, "-m", "seedsweep", *private], cwd=HERE, capture_output=True,
                        env={**env, "RAY_TMPDIR": str(work / "private")}).returncode)
                elif way == "subprocess":
                    code, wall, cpu = timed(lambda: subprocess.run([sys.executable, "-m", "seedsweep", *argv], cwd=HERE,
                                                                   env=env, capture_output=True).returncode)
                else:
                    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                        code, wall, cpu = timed(lambda: cli_main(argv))
                if code:
                    raise SystemExit(f"{way} run {k} exited {code}")
                rows[way].append({"wall_s": round(wall, 2), "busy_cpu_s": round(cpu, 2)})
                print(f"{way:>11} {k}: {wall:5.2f} s, {cpu:5.2f} busy CPU-s", flush=True)
        ray.shutdown()
    finally:
        for folder in ("ray", "private"):
            kill_tagged(tag, str(work / folder))
            wait_gone(tag, timeout=30, ray_tmp=str(work / folder), orphans=True)
        shutil.rmtree(work, ignore_errors=True)
    private = statistics.median(r["busy_cpu_s"] for r in rows["private Ray"])
    sub = statistics.median(r["busy_cpu_s"] for r in rows["subprocess"])
    here = statistics.median(r["busy_cpu_s"] for r in rows["in-process"][1:])
    print(f"median busy CPU-s: private Ray {private:.2f}, joined subprocess {sub:.2f}, in-process after the "
          f"first {here:.2f} ({here / sub:.2f}x the joined subprocess, {here / private:.2f}x the private Ray)")
    if args.json:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=HERE).stdout.strip()
        Path(args.json).write_text(json.dumps({
            "runs": rows, "median_busy_cpu_s": {"private_ray": private, "subprocess": sub,
                                                "in_process_after_first": here},
            "ratio_to_subprocess": round(here / sub, 3), "ratio_to_private_ray": round(here / private, 3),
            "study": STUDY, "cpus": os.cpu_count(), "commit": commit,
            "command": "benchmarks/joined_run.py " + " ".join(sys.argv[1:])}, indent=2) + "\n")


if __name__ == "__main__":
    main()
