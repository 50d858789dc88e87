"""What an idle ``mlflow server`` (SQLite store, loopback, one worker) costs this
machine, with MLflow 3's job runner (its default with a database store) and
without it (``MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false``), alternating, in one run.

    .venv/bin/python benchmarks/mlflow_server_idle.py --json benchmarks/results/mlflow_server_idle-DATE.json

Figures: the machine's busy CPU seconds (``/proc/stat``) from the start until
``/health`` answers, then over ``--idle`` seconds with nothing asked of it. The
tests and ``benchmarks/mlflow_logging.py`` start their servers without the job
runner; a tracking server a lab shares usually runs on another machine.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

BIN = Path(sys.executable).parent
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.ray_cost import busy_seconds as busy  # noqa: E402  (the machine's busy CPU-s, /proc/stat)


def one(jobs: bool, idle: float, port: int) -> dict:
    """Start a server (with or without its job runner) on a fresh store, measure, stop it."""
    work = Path(tempfile.mkdtemp(prefix="mlflow-idle-"))
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "true" if jobs else "false"}
    b0, t0 = busy(), time.monotonic()
    server = subprocess.Popen([str(BIN / "mlflow"), "server", "--backend-store-uri", f"sqlite:///{work / 's.db'}",
                               "--artifacts-destination", str(work / "artifacts"), "--host", "127.0.0.1",
                               "--port", str(port), "--workers", "1"], cwd=work, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except OSError:
                time.sleep(0.2)
        b1, t1 = busy(), time.monotonic()
        time.sleep(idle)
        b2 = busy()
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
    return {"start_s": round(t1 - t0, 2), "start_cpu_s": round(b1 - b0, 2), "idle_cpu_s": round(b2 - b1, 2),
            "idle_cores": round((b2 - b1) / idle, 2)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--idle", type=float, default=20.0)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--port", type=int, default=5097)
    p.add_argument("--json")
    args = p.parse_args()
    runs: dict = {"job runner (MLflow's default)": [], "no job runner": []}
    for _ in range(args.repeat):
        for name, jobs in (("job runner (MLflow's default)", True), ("no job runner", False)):
            runs[name].append(one(jobs, args.idle, args.port))
            print(name, runs[name][-1], flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    result = {"idle_s": args.idle, "runs": runs, "commit": commit, "cpus": os.cpu_count()}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
