"""Every stored trial logged to a real ``mlflow server`` (SQLite backend,
started on loopback by the test): one child run per trial key under one
parent run, through a driver SIGKILLed mid-study and resumed, and a server
stopped mid-study (the study finishes, every trial is in Parquet, the next
resume logs the missing ones); then imported back from MLflow, the study
reports the same comparison table as the study itself."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from seedsweep.study.store.rundir import RunDir
from tests.conftest import REPO, free_port, seedsweep_here
from tests.test_kill import sigkill_when_stored

STUDY = """name: tracked
family: synthetic
samples: 10
seeds: 2
compare:
  classifier: [softmax, crf]
task: {name: synthetic-chunking, effects: {classifier: {softmax: 0.0, crf: 0.02}}, noise: 0.01}
sampler_seed: 3
space:
  optimizer: {choice: [adam, sgd]}
  dropout: {choice: [none, naive]}
  dropout_rate: {choice: [0.1, 0.5], when: {dropout: [naive]}}
  lr: {loguniform: [1.0e-4, 1.0e-2]}
fixed: {epoch_seconds: 0.05}
train: {max_epochs: 4, patience: 4}
"""


#: MLflow 3's server starts a job runner with a database store (its GenAI jobs, which seedsweep does not use);
#: idle, it kept 0.6-0.8 of a core busy here, and starting cost 13-20 CPU-s, not 6-7
#: (benchmarks/results/mlflow_server_idle-2026-12-07.json)
SERVER_ENV = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}


class Server:
    """``mlflow server`` on a free loopback port over a SQLite file; stopped and started again on the same port."""

    def __init__(self, folder):
        self.folder, self.port, self.proc = folder, free_port(), None
        self.uri = f"http://127.0.0.1:{self.port}"

    def start(self):
        self.proc = subprocess.Popen(
            [str(os.path.join(os.path.dirname(sys.executable), "mlflow")), "server", "--backend-store-uri",
             f"sqlite:///{self.folder / 'mlflow.db'}", "--artifacts-destination", str(self.folder / "artifacts"),
             "--host", "127.0.0.1", "--port", str(self.port), "--workers", "1"],
            cwd=self.folder, stdout=subprocess.DEVNULL, stderr=open(self.folder / "server.log", "ab"),
            start_new_session=True, env=SERVER_ENV)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{self.uri}/health", timeout=1)
                return
            except OSError:
                assert self.proc.poll() is None, (self.folder / "server.log").read_text()[-2000:]
                time.sleep(0.3)
        raise AssertionError("mlflow server did not answer in 90 s")

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)          # the server and its workers: its own session
            self.proc.wait()


def children(uri, study="tracked"):
    """The active child runs of the study's parent runs, as (trial_key, status) pairs."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(study)
    runs = client.search_runs([exp.experiment_id], max_results=5000)
    parents = [r for r in runs if r.data.tags.get("seedsweep_role") == "study"]
    assert len(parents) == 1, "one parent run per run directory"
    return [(r.data.tags["trial_key"], r.info.status) for r in runs
            if r.data.tags.get("mlflow.parentRunId") == parents[0].info.run_id]


@pytest.mark.slow           # a real MLflow server started twice and three runs of a study (about 40 s)
def test_every_stored_trial_is_one_child_run_through_a_killed_driver_and_a_stopped_server(tmp_path, worker_ray,
                                                                                          joined_here):
    server = Server(tmp_path)
    (tmp_path / "study.yaml").write_text(STUDY)
    out = tmp_path / "run"
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1"}
    cmd = ["run", str(tmp_path / "study.yaml"), "--out", str(out), "--address", worker_ray, "--mlflow", server.uri]
    try:
        server.start()
        at_kill = sigkill_when_stored([sys.executable, "-m", "seedsweep", *cmd, "--quiet"], out, 8, env,
                                      "the study ended before it could be killed")
        assert 8 <= at_kill < 40
        logged = children(server.uri)
        assert len({k for k, _ in logged}) == len(logged) <= at_kill     # never more than stored, each once

        # resume; the server goes away once 24 trials are stored: the study still finishes, every trial stored
        proc = subprocess.Popen([sys.executable, "-m", "seedsweep", *cmd, "--quiet"], cwd=REPO, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 240
        while len(RunDir(out).stored_keys()) < 24 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "the resume ended before the server could be stopped"
        server.stop()
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert "40 trials in the study" in err and "missing 0" in err, err
        assert "did not answer" in err and "the next run or resume logs" in err, err
        stored = RunDir(out).stored_keys()
        assert len(stored) == 40

        # the server back (the same SQLite file): the next resume runs nothing and logs the missing ones
        server.start()
        missing = len(stored) - len([k for k, s in children(server.uri) if s == "FINISHED"])
        assert missing > 0, "the stopped server should have missed some trials"
        # (in this process, joined to the same Ray: a driver's process is the point of the two runs above)
        r = joined_here("run", str(tmp_path / "study.yaml"), "--out", str(out), "--mlflow", server.uri, "--quiet", env=env)
        assert r.returncode == 0, r.stderr
        assert "40 trials logged" in r.stderr, r.stderr
        logged = children(server.uri)
        assert sorted(k for k, _ in logged) == sorted(stored), "one child run per trial key, none missing"
        assert {s for _, s in logged} == {"FINISHED"}
        from mlflow import MlflowClient

        client = MlflowClient(tracking_uri=server.uri)
        parent = next(r for r in client.search_runs([client.get_experiment_by_name("tracked").experiment_id])
                      if r.data.tags.get("seedsweep_role") == "study")
        assert {"study.yaml", "manifest.json", "report.md"} <= {a.path for a in client.list_artifacts(parent.info.run_id)}
        report = Path(client.download_artifacts(parent.info.run_id, "report.md", str(tmp_path))).read_text()
        assert "**classifier**" in report and "win share" in report

        # round trip: imported back from MLflow, the same comparison table as the study's own report
        back = tmp_path / "back"
        r = seedsweep_here("import", "--tracking-uri", server.uri, "--experiment", "tracked", "--out", str(back),
                      "--score", "best/test_score", "--dev-score", "best/dev_score", "--choice", "classifier",
                      "--options", "softmax,crf", "--seed", "tags/seed", "--task", "tags/task", env=env)
        assert r.returncode == 0, r.stderr
        assert "classifier (synthetic-chunking): 10 of 10 configurations pair" in r.stdout, r.stdout
    finally:
        server.stop()
    ours = seedsweep_here("report", str(out), env=env).stdout
    theirs = seedsweep_here("report", str(back), env=env).stdout
    table = ours.split("**classifier**")[1].split("\n\n- ")[0]
    assert "win share" in table and table == theirs.split("**classifier**")[1].split("\n\n- ")[0]


def test_hand_overs_past_the_queue_are_dropped_without_waiting_and_the_closing_catch_up_logs_them(tmp_path,
                                                                                                  joined_here):
    """The driver's hand-over never waits on MLflow: with room for one trial, the other four are dropped (the
    thread not yet started, so exactly four); the thread's catch-up (here its opening pass) logs every stored trial
    from the run directory, each once, with the trial's scores and epochs as the store holds them."""
    from mlflow import MlflowClient

    from seedsweep.study.execution.mlflowsink import MlflowSink
    from seedsweep.study.families import result_columns
    from seedsweep.study.spec.grid import trials_schema_of
    from seedsweep.study.store.studies import load_study

    (tmp_path / "study.yaml").write_text(STUDY.replace("samples: 10", "samples: 2").replace("0.1}", "0.0}"))
    out = tmp_path / "run"
    r = joined_here("run", str(tmp_path / "study.yaml"), "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    space, rd = load_study(tmp_path / "study.yaml"), RunDir(out)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    sink = MlflowSink(uri, "tracked", rd, space, trials_schema_of(space), list(result_columns(space)),
                      open(os.devnull, "w"), capacity=1)
    trials = rd.read_trials()
    for i in range(5):
        sink.offer(trials["trial_key"][i].as_py(), trials.slice(i, 1), None)
    assert sink.dropped == 4 and sink.queue.qsize() == 1
    sink.start().close(timeout=120)
    assert sink.error is None, sink.error
    logged = children(uri)
    assert sorted(k for k, _ in logged) == sorted(rd.stored_keys()) and len(logged) == 8
    client = MlflowClient(tracking_uri=uri)
    row = trials.slice(0, 1).to_pylist()[0]
    run = next(r for r in client.search_runs([client.get_experiment_by_name("tracked").experiment_id])
               if r.data.tags.get("trial_key") == row["trial_key"])
    assert run.data.metrics["best/test_score"] == pytest.approx(row["test_score"])
    assert run.data.params["lr"] == str(row["lr"]) and run.data.tags["option"] == row["option"]
    epochs = [e for e in rd.read_epochs().to_pylist() if e["trial_key"] == row["trial_key"]]
    history = client.get_metric_history(run.info.run_id, "dev_score")
    assert [(m.step, m.value) for m in history] == [(e["epoch"], pytest.approx(e["dev_score"])) for e in epochs]


UNTRACKED = """
import sys
from seedsweep import study
sys.modules.pop("mlflow", None)
assert "mlflow" not in sys.modules
summary = study.run(sys.argv[1], sys.argv[2], address=sys.argv[3])
assert summary.counts == {"ok": 4}, summary.counts
print("imported during the run:", "mlflow" in sys.modules)
import mlflow
from ray.air.integrations import mlflow as integration
print("afterwards:", mlflow.__version__ == integration.mlflow.__version__)
"""


def test_a_study_that_does_not_log_to_mlflow_never_imports_it_and_leaves_it_importable(tmp_path, worker_ray):
    """Ray Tune's usage tagging would import the whole ``mlflow`` package in every
    driver (to count callbacks); a study without ``tracking:`` runs without it
    (study.execution.session.without_mlflow_import), and afterwards ``import
    mlflow`` and Ray's own MLflow integration get the real package."""
    (tmp_path / "s.yaml").write_text(STUDY.replace("samples: 10", "samples: 1").replace("epoch_seconds: 0.05",
                                                                                           "epoch_seconds: 0.0"))
    r = subprocess.run([sys.executable, "-c", UNTRACKED, str(tmp_path / "s.yaml"), str(tmp_path / "run"), worker_ray],
                       cwd=REPO, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "RAY_AUTH_MODE": "disabled"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "imported during the run: False" in r.stdout and "afterwards: True" in r.stdout, r.stdout
