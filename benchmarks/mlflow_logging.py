"""What logging every trial to MLflow costs a study, in one run: the same
zero-work study (the synthetic family, no sleep, one epoch per trial) run with
``seedsweep run`` without tracking and with ``--mlflow`` (a SQLite store, and
a real ``mlflow server`` on loopback over SQLite), alternating, each into a
fresh run directory on one Ray started for the benchmark (``--address``).

The machine's CPU seconds during each run are recorded too, and, after the runs, the CPU
seconds MLflow's own client takes to log as many child runs alone (the floor).

A fourth kind, ``beside``, is the untracked run while another process logs
as many child runs with MLflow's client alone (SQLite): what the logging
work costs the study when it is not in the driver's process at all.

The time is the command's whole wall clock: the trials, and for a tracked
run the wait at the end for the logging thread to finish (the study is not
done until every trial is logged or handed to the next run). Throughput is
trials per second; the ratio is tracked over untracked.

    .venv/bin/python benchmarks/mlflow_logging.py --configs 250 --json benchmarks/results/mlflow_logging-2026-12-06.json

(250 configurations x 2 options x 2 seeds = 1,000 trials.) Issue 55's goal:
logging at >= 0.9x the throughput without it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

STUDY = """name: logging-bench
family: synthetic
samples: {configs}
seeds: 2
compare:
  classifier: [softmax, crf]
task: {{name: synthetic, effects: {{classifier: {{softmax: 0.0, crf: 0.02}}}}, noise: 0.01}}
space:
  optimizer: {{choice: [adam, sgd]}}
  lr: {{loguniform: [1.0e-4, 1.0e-2]}}
fixed: {{epoch_seconds: 0.0}}
train: {{max_epochs: 1, patience: 1}}
"""


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_tagged(tag: str) -> None:
    """SIGKILL exactly the Ray this benchmark started: the processes whose environment carries its tag."""
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.pid != os.getpid() and proc.environ().get("SEEDSWEEP_BENCH_TAG") == tag:
                proc.kill()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
            continue


def machine_cpu() -> float:
    """CPU seconds the whole machine has spent (user, nice, system, irq, softirq), from /proc/stat."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    return sum(int(fields[i]) for i in (0, 1, 2, 5, 6)) / os.sysconf("SC_CLK_TCK")


def timed_run(study: Path, out: Path, address: str, env: dict, mlflow: str | None) -> tuple[float, float]:
    cmd = [sys.executable, "-m", "seedsweep", "run", str(study), "--out", str(out), "--address", address, "--quiet"]
    if mlflow:
        cmd += ["--mlflow", mlflow]
    t, c = time.perf_counter(), machine_cpu()
    r = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    took, cpu = time.perf_counter() - t, machine_cpu() - c
    if r.returncode != 0 or (mlflow and "trials logged" not in r.stderr):
        raise SystemExit(f"the run failed or did not log every trial:\n{r.stderr[-3000:]}")
    return took, cpu


def client_floor(uri: str, trials: int) -> float:
    """CPU seconds MLflow's own client takes to log ``trials`` child runs the way the sink does (create_run with
    the tags, one log_batch of the params and metrics, set_terminated), in this process with nothing else running:
    what logging costs before seedsweep does anything."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param

    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("floor")
    parent = client.create_run(exp).info.run_id
    t = time.process_time()
    for i in range(trials):
        tags = {"mlflow.parentRunId": parent, "trial_key": f"t{i}", "config_id": "c", "option": "crf", "seed": "0",
                "status": "ok", "task": "synthetic", "attempt": "0"}
        run = client.create_run(exp, tags=tags).info.run_id
        client.log_batch(run, params=[Param(n, "1") for n in ("optimizer", "lr", "classifier", "epoch_seconds")],
                         metrics=[Metric(n, 0.5, 0, 0) for n in ("dev_score", "test_score", "train_loss",
                                                                 "best/dev_score", "best/test_score", "best/epoch")])
        client.set_terminated(run)
    return time.process_time() - t


def main() -> int:
    """Start a Ray and an MLflow server, time the three kinds of run, print and optionally write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", type=int, default=250)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--floor-only", nargs=2, metavar=("TRIALS", "URI"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor_only:                 # the process that logs beside an untracked run
        client_floor(args.floor_only[1], int(args.floor_only[0]))
        return 0
    work = Path(tempfile.mkdtemp(prefix="mlflow-bench-"))
    ray_tmp = tempfile.mkdtemp(prefix="mlb-", dir="/tmp")
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "SEEDSWEEP_BENCH_TAG": uuid.uuid4().hex}
    port, mport = free_port(), free_port()
    study = work / "study.yaml"
    study.write_text(STUDY.format(configs=args.configs))
    server = None
    times: dict[str, list[float]] = {"untracked": [], "sqlite": [], "server": [], "beside": []}
    cpus: dict[str, list[float]] = {"untracked": [], "sqlite": [], "server": [], "beside": []}
    try:
        subprocess.run([str(BIN / "ray"), "start", "--head", f"--port={port}", "--num-cpus=2",
                        f"--temp-dir={ray_tmp}", "--include-dashboard=false", "--disable-usage-stats"],
                       env=env, check=True, capture_output=True)
        server = subprocess.Popen([str(BIN / "mlflow"), "server", "--backend-store-uri", f"sqlite:///{work / 's.db'}",
                                   "--artifacts-destination", str(work / "artifacts"), "--host", "127.0.0.1",
                                   "--port", str(mport), "--workers", "1"], cwd=work, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, start_new_session=True,
                                  # no job runner: idle, it kept 0.6-0.8 of a core busy (mlflow_server_idle-2026-12-07.json)
                                  env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"})
        for _ in range(300):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{mport}/health", timeout=1)
                break
            except OSError:
                time.sleep(0.3)
        address = f"127.0.0.1:{port}"
        for i in range(args.repeat):
            for kind, uri in (("untracked", None), ("sqlite", f"sqlite:///{work / f'm{i}.db'}"),
                              ("server", f"http://127.0.0.1:{mport}"), ("beside", None)):
                beside = None
                if kind == "beside":      # untracked, while another process logs as many runs with MLflow's client
                    beside = subprocess.Popen([sys.executable, __file__, "--floor-only", str(args.configs * 4),
                                               f"sqlite:///{work / f'b{i}.db'}"], env=env, stdout=subprocess.DEVNULL,
                                              stderr=subprocess.DEVNULL)
                took, cpu = timed_run(study, work / f"{kind}-{i}", address, env, uri)
                if beside is not None:
                    beside.wait()
                times[kind].append(took)
                cpus[kind].append(round(cpu, 1))
                print(f"{kind:10s} run {i}: {took:7.1f} s, {cpu:6.1f} CPU-s on the machine", flush=True)
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        stop_tagged(env["SEEDSWEEP_BENCH_TAG"])
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(ray_tmp, ignore_errors=True)
    trials = args.configs * 4
    floor_dir = Path(tempfile.mkdtemp(prefix="mlflow-floor-"))
    try:
        floor = client_floor(f"sqlite:///{floor_dir / 'floor.db'}", trials)
    finally:
        shutil.rmtree(floor_dir, ignore_errors=True)
    print(f"MLflow's client alone, {trials} child runs to SQLite: {floor:.1f} CPU-s", flush=True)
    best = {k: min(v) for k, v in times.items()}
    result = {"trials": trials, "repeat": args.repeat, "seconds": times, "machine_cpu_s": cpus, "best_s": best,
              "throughput_per_s": {k: round(trials / v, 1) for k, v in best.items()},
              "ratio_sqlite": round(best["untracked"] / best["sqlite"], 3),
              "ratio_server": round(best["untracked"] / best["server"], 3),
              "ratio_beside": round(best["untracked"] / best["beside"], 3), "goal_ratio": 0.9,
              "client_floor_cpu_s": round(floor, 1),
              "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                                       text=True).stdout.strip(), "cpus": os.cpu_count()}
    print(f"{trials} trials: untracked {best['untracked']:.1f} s, sqlite {best['sqlite']:.1f} s "
          f"(throughput x{result['ratio_sqlite']:.2f}), server {best['server']:.1f} s (x{result['ratio_server']:.2f}), "
          f"untracked beside a logging process {best['beside']:.1f} s (x{result['ratio_beside']:.2f})")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
