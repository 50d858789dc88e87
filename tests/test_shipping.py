"""The study's code on a cluster with nothing shared (issue 54), on a real
three-node Ray on this machine: a head node with no CPUs (the driver's side)
and two worker nodes with 2 CPUs and 2 fake GPUs each (``ray start
--num-gpus 2``: Ray hands out device IDs and sets ``CUDA_VISIBLE_DEVICES``
as for real ones), each started in a private mount namespace with an empty
tmpfs over the folder that holds the studies (``unshare --mount``), so the
study's files exist on the driver's side only. Only the processes this
module started are stopped, by PID."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pandas as pd
import pytest

from seedsweep import analysis
from seedsweep.study.store.rundir import RunDir
from tests.conftest import REPO, free_port, kill_tagged, refused_by_check_and_run, wait_gone, write_yaml

pytestmark = pytest.mark.slow
RAY = str(Path(sys.executable).parent / "ray")

FUNCTION_STUDY = """
name: shipped-function
family: function
task: {function: train.py:fit}
samples: 4
seeds: 1
compare: {classifier: [softmax, crf]}
space: {lr: {loguniform: [1.0e-3, 1.0e-1]}}
train: {max_epochs: 2, patience: 2}
"""
# Test bed only, outside the study's files: a trial marks its worker node (the node's tag) in a folder outside the
# hidden one and waits, up to 60 s, until both worker nodes have a trial. Otherwise the first actors to start on one
# node could run every trial before the other node's first actor was up (seen in CI: 8 of 8 on one node).
SEEN = Path(tempfile.gettempdir()) / f"shipping-seen-{uuid.uuid4().hex}"
BOTH_NODES = """
import os
import time
from pathlib import Path

def both_nodes():
    seen = Path(os.environ["SHIPPING_SEEN"])
    (seen / os.environ["SEEDSWEEP_TEST_TAG"]).touch()
    deadline = time.monotonic() + 60
    while len(list(seen.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
"""
# the function imports a sibling module and reads a data file by a relative path
TRAIN = BOTH_NODES + """
from helper import gain

def fit(trial):
    both_nodes()
    base = float(open("data/base.txt").read())
    for epoch in range(1, trial.max_epochs + 1):
        time.sleep(0.3)
        dev = base + gain(trial.params["classifier"])
        if trial.report(dev=dev, test=dev - 0.01, loss=1.0 / epoch):
            break
"""
HELPER = "def gain(classifier):\n    return 0.02 if classifier == 'crf' else 0.0\n"
COMMAND_STUDY = FUNCTION_STUDY.replace("name: shipped-function\nfamily: function\ntask: {function: train.py:fit}", """\
name: shipped-command
family: command
task:
  command: [python, prog/train.py, --classifier, "{classifier}", --seed, "{seed}"]
  metrics: {dev: dev_acc, test: test_acc}""")
PROGRAM = BOTH_NODES + """
import json, sys
sys.path.insert(0, str(Path(__file__).parent))
from helper import gain
both_nodes()
base = float(open("data/base.txt").read())
classifier = sys.argv[sys.argv.index("--classifier") + 1]
for epoch in (1, 2):
    time.sleep(0.4)
    dev = base + gain(classifier)
    print(json.dumps({"dev_acc": dev, "test_acc": dev - 0.01}), flush=True)
"""
GPU_STUDY = FUNCTION_STUDY.replace("samples: 4", "samples: 8").replace(
    "train: {max_epochs: 2, patience: 2}", "train: {max_epochs: 2, patience: 2}\nresources: {cpu: 0.5, gpu: 0.5}")


def _no_node_seen() -> None:
    """No worker node has a trial of this test's study yet (:data:`BOTH_NODES`)."""
    shutil.rmtree(SEEN, ignore_errors=True)
    SEEN.mkdir()


def _function_folder(root: Path, name: str) -> Path:
    _no_node_seen()
    folder = root / name
    (folder / "data").mkdir(parents=True)
    write_yaml(folder, FUNCTION_STUDY, "study.yaml")
    (folder / "train.py").write_text(TRAIN)
    (folder / "helper.py").write_text(HELPER)
    (folder / "data" / "base.txt").write_text("0.8\n")
    return folder


def _command_folder(root: Path, name: str) -> Path:
    _no_node_seen()
    folder = root / name
    (folder / "data").mkdir(parents=True)
    (folder / "prog").mkdir()
    write_yaml(folder, COMMAND_STUDY, "study.yaml")
    (folder / "prog" / "train.py").write_text(PROGRAM)
    (folder / "prog" / "helper.py").write_text(HELPER)
    (folder / "data" / "base.txt").write_text("0.7\n")
    return folder


@pytest.fixture(scope="module")
def cluster():
    """(address, dashboard URL, the hidden root where study folders go, the nodes' tags, a function that starts
    worker node i again)."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs unshare --mount as root (the CI machine has both)")
    tag = uuid.uuid4().hex
    root = Path(tempfile.mkdtemp(prefix="shipped-", dir="/tmp"))
    for name in ("fn", "cmd", "gpu", "job", "job-copy", "resume"):
        (root / name).mkdir()
    temps = [tempfile.mkdtemp(prefix=f"ss{i}-", dir="/tmp") for i in range(3)]
    gone: list[str] = []
    base = {**{k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "SEEDSWEEP_DATA")},
            "SHIPPING_SEEN": str(SEEN)}
    port, dash = free_port(), free_port()
    envs = [{**base, "SEEDSWEEP_TEST_TAG": f"{tag}-{i}", "RAY_TMPDIR": temps[i], "RAY_AUTH_MODE": "disabled"}
            for i in range(3)]
    try:
        head = subprocess.run([RAY, "start", "--head", f"--port={port}", "--num-cpus=0", "--num-gpus=0",
                               f"--temp-dir={temps[0]}", "--include-dashboard=true", f"--dashboard-port={dash}",
                               # each node's agent its own port: jobs go through the head's, and every Ray on this
                               # machine would otherwise ask for Ray's one default
                               f"--dashboard-agent-listen-port={free_port()}",
                               "--dashboard-host=127.0.0.1", "--disable-usage-stats"],
                              env=envs[0], capture_output=True, text=True, timeout=180)
        assert head.returncode == 0, head.stderr
        def start_worker(i: int) -> None:
            # the worker node sees an empty folder where the studies are: nothing of the user's is shared
            hidden = subprocess.run(
                ["unshare", "--mount", "--propagation", "private", "sh", "-c", 'mount -t tmpfs tmpfs "$0" && exec "$@"',
                 str(root), RAY, "start", f"--address=127.0.0.1:{port}", "--num-cpus=2", "--num-gpus=2",
                 f"--dashboard-agent-listen-port={free_port()}",
                 f"--temp-dir={temps[i]}", "--disable-usage-stats"],
                env=envs[i], capture_output=True, text=True, timeout=180)
            assert hidden.returncode == 0, hidden.stderr

        def restart_worker(i: int) -> None:
            """Node i again after a test took it away (the tests may run in any order)."""
            kill_tagged(envs[i]["SEEDSWEEP_TEST_TAG"], temps[i])
            wait_gone(envs[i]["SEEDSWEEP_TEST_TAG"], timeout=30, ray_tmp=temps[i], orphans=True)
            gone.append(temps[i])                       # the dead node's sockets stay there: a fresh folder
            temps[i] = tempfile.mkdtemp(prefix=f"ss{i}-", dir="/tmp")
            envs[i]["RAY_TMPDIR"] = temps[i]
            start_worker(i)

        for i in (1, 2):
            start_worker(i)
        yield (f"127.0.0.1:{port}", f"http://127.0.0.1:{dash}", root, [e["SEEDSWEEP_TEST_TAG"] for e in envs],
               restart_worker)
    finally:
        for i in (2, 1, 0):
            kill_tagged(envs[i]["SEEDSWEEP_TEST_TAG"], temps[i])
        for i in range(3):
            wait_gone(envs[i]["SEEDSWEEP_TEST_TAG"], timeout=30, ray_tmp=temps[i], orphans=True)
            shutil.rmtree(temps[i], ignore_errors=True)
        for folder in gone:
            shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(SEEN, ignore_errors=True)


def _run(study: Path, out: Path, address: str, *extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return subprocess.run([sys.executable, "-m", "seedsweep", "run", str(study), "--out", str(out), "--address",
                           address, "--quiet", *extra], cwd=REPO, env=env, capture_output=True, text=True, timeout=400)


def _ran_on_both_workers(folder: Path, out: Path, address: str, scores: list[float]):
    """Run the folder's study: every one of its 8 trials ok, on both worker nodes, with ``scores`` as test scores."""
    proc = _run(folder / "study.yaml", out, address)
    assert proc.returncode == 0, proc.stderr[-3000:]
    df = analysis.load(out)
    assert len(df) == 8 and (df["status"] == "ok").all(), df[["status", "reason", "error"]]
    assert df["node"].nunique() == 2, "trials ran on one worker node only"
    assert sorted(df["test_score"].round(6).unique()) == scores
    return df


def test_the_folder_is_hidden_from_the_worker_nodes(cluster):
    """The test bed itself: a worker node's raylet cannot see the studies' folder by its path."""
    _, _, root, tags, _ = cluster
    (root / "fn" / "probe.txt").write_text("here")
    from tests.conftest import tagged_processes

    raylets = [p for p in tagged_processes(tags[1]) if "raylet" in p.name()]
    assert raylets, "the worker node's raylet was not found"
    # /proc/PID/root shows the file system as that process sees it (its mount namespace)
    assert not Path(f"/proc/{raylets[0].pid}/root{root}/fn/probe.txt").exists()
    assert Path(f"/proc/{os.getpid()}/root{root}/fn/probe.txt").exists()
    (root / "fn" / "probe.txt").unlink()


def test_a_function_study_runs_on_workers_that_have_none_of_its_files(cluster, tmp_path):
    address, _, root, _, _ = cluster
    folder = _function_folder(root / "fn", "study")
    out = tmp_path / "run"
    df = _ran_on_both_workers(folder, out, address, [0.79, 0.81])           # the data file and the helper, read
    assert set(df["gpu_ids"]) == {""}                                         # CPU trials: no device
    shipped = RunDir(out).manifest()["shipped"]
    assert shipped["by"] == "seedsweep" and shipped["folder"] == str(folder)
    assert set(shipped["files"]) == {"study.yaml", "train.py", "helper.py", "data/base.txt"}
    assert shipped["files"]["helper.py"] == __import__("hashlib").sha256(HELPER.encode()).hexdigest()
    # the sibling module edited, then a resume: refused before anything runs, naming the file
    (folder / "helper.py").write_text(HELPER.replace("0.02", "0.03"))
    again = _run(folder / "study.yaml", out, address)
    assert again.returncode == 2 and str(folder / "helper.py") in again.stderr and "changed" in again.stderr


@pytest.mark.parametrize("waves", [
    "samples: 2\nseeds: 1\nuntil: {budget: {samples: 4}, wave: 2}",            # an adaptive study: 2 waves
    "tune: {sampler: random, budget: 2, replicates: 2, wave: 1}",             # a tuned one: 2 waves of asks
])
def test_a_function_study_in_waves_ships_its_folder_for_every_wave(cluster, tmp_path, waves):
    """The waves of an ``until:`` or ``tune:`` study share one Ray session (and one Tune fit): the
    folder travels with that session, so the workers of every wave find the function's files."""
    address, _, root, _, _ = cluster
    folder = _function_folder(root / "fn", "until" if "until" in waves else "tune")
    (folder / "study.yaml").write_text(FUNCTION_STUDY.replace("samples: 4\nseeds: 1", waves))
    proc = _run(folder / "study.yaml", tmp_path / "run", address)
    assert proc.returncode == 0, proc.stderr[-3000:]
    df = analysis.load(tmp_path / "run")
    assert len(df) == 8 and (df["status"] == "ok").all(), df[["status", "reason", "error"]]
    assert RunDir(tmp_path / "run").manifest()["shipped"]["folder"] == str(folder)
    if "until" in waves:
        assert "wave at 2 configurations" in proc.stderr and "stopped after 4 configurations" in proc.stderr


def test_a_command_study_runs_its_relative_script_on_the_workers(cluster, tmp_path):
    address, _, root, _, _ = cluster
    folder = _command_folder(root / "cmd", "study")
    out = tmp_path / "run"
    _ran_on_both_workers(folder, out, address, [0.69, 0.71])
    assert {"prog/train.py", "prog/helper.py", "data/base.txt"} <= set(RunDir(out).manifest()["shipped"]["files"])


def test_without_shipping_the_worker_does_not_find_the_file(cluster, tmp_path):
    """The sabotage made a test: the same study with nothing shipped (``plan_shipment`` replaced in a driver
    process of its own) fails every trial on the worker, its function's file not found."""
    address, _, root, _, _ = cluster
    folder = _function_folder(root / "fn", "unshipped")
    driver = ("import sys; import seedsweep.study.execution.runner as r; r.plan_shipment = lambda *a, **k: None; "
              "r.run(sys.argv[1], sys.argv[2], address=sys.argv[3], samples=1)")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    proc = subprocess.run([sys.executable, "-c", driver, str(folder / "study.yaml"), str(tmp_path / "run"), address],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    df = analysis.load(tmp_path / "run")
    assert (df["status"] == "failed").all() and len(df) == 2
    assert df["error"].str.contains(f"no such file: {folder / 'train.py'}", regex=False).all(), df["error"].iloc[0]


def test_gpu_trials_are_packed_two_per_fake_device_and_recorded(cluster, tmp_path):
    address, _, root, _, _ = cluster
    folder = _function_folder(root / "gpu", "study")
    write_yaml(folder, GPU_STUDY, "study.yaml")
    # trials long enough (3 s) that more than two trial actors are alive at once: with 0.6 s trials on a loaded
    # machine, the first two actors to start could run all 16 before a third was up (two devices, a flake)
    (folder / "train.py").write_text(TRAIN.replace("time.sleep(0.3)", "time.sleep(1.5)"))
    out = tmp_path / "run"
    proc = _run(folder / "study.yaml", out, address)
    assert proc.returncode == 0, proc.stderr[-3000:]
    df = analysis.load(out)
    assert len(df) == 16 and (df["status"] == "ok").all()
    assert df["gpu_ids"].isin(["0", "1"]).all(), df["gpu_ids"].tolist()      # one device each
    events = []
    for _, r in df.iterrows():
        events += [(r["started_at"], 1, (r["node"], r["gpu_ids"])), (r["finished_at"], -1, (r["node"], r["gpu_ids"]))]
    on_device: dict = {}
    running = most = 0
    for _, step, device in sorted(events, key=lambda e: (e[0], e[1])):      # an end before a start at one instant
        on_device[device] = on_device.get(device, 0) + step
        running += step
        most = max(most, running)
        assert on_device[device] <= 2, f"{on_device[device]} trials on {device} at once"
    assert most <= 8
    assert df.groupby(["node", "gpu_ids"]).size().size >= 3, "the trials were not spread over the devices"


def test_more_gpu_than_any_node_has_is_refused_with_the_cluster_named(cluster, tmp_path):
    address, _, root, _, _ = cluster
    folder = _function_folder(root / "gpu", "four")
    write_yaml(folder, GPU_STUDY.replace("gpu: 0.5", "gpu: 4"), "study.yaml")
    proc = _run(folder / "study.yaml", tmp_path / "run", address)
    assert proc.returncode == 2, proc.stderr
    assert f"{folder / 'study.yaml'}: resources" in proc.stderr and "4 GPU" in proc.stderr
    assert proc.stderr.count("2 CPU, 2 GPU") == 2, proc.stderr                # both worker nodes named
    assert not (tmp_path / "run").exists()


def test_a_study_submitted_as_a_ray_job_ships_nothing_twice(cluster, tmp_path):
    address, dashboard, root, _, _ = cluster
    folder = _function_folder(root / "job", "study")
    out = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    seedsweep = str(Path(sys.executable).parent / "seedsweep")
    deadline = time.monotonic() + 120
    while True:             # the head's job agent answers some seconds after `ray start` returns
        submit = subprocess.run([RAY, "job", "submit", "--address", dashboard, "--working-dir", str(folder),
                                 "--no-wait", "--", seedsweep, "run", "study.yaml", "--out", str(out), "--address",
                                 "auto", "--quiet"], env=env, capture_output=True, text=True, timeout=120)
        if "No available agent" not in submit.stderr or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert submit.returncode == 0, submit.stderr
    job = re.search(r"raysubmit_[A-Za-z0-9]+", submit.stdout + submit.stderr).group(0)
    shutil.rmtree(folder)              # packaged and uploaded: from here on only the job's copy exists
    from ray.job_submission import JobStatus, JobSubmissionClient

    client = JobSubmissionClient(dashboard)
    deadline = time.monotonic() + 300
    while client.get_job_status(job) not in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.STOPPED):
        assert time.monotonic() < deadline, client.get_job_logs(job)[-3000:]
        time.sleep(1)
    assert client.get_job_status(job) == JobStatus.SUCCEEDED, client.get_job_logs(job)[-3000:]
    df = analysis.load(out)
    assert len(df) == 8 and (df["status"] == "ok").all() and df["node"].nunique() == 2
    shipped = RunDir(out).manifest()["shipped"]
    assert shipped["by"] == "ray job" and shipped["folder"] != str(folder)
    assert {"study.yaml", "train.py", "helper.py", "data/base.txt"} <= set(shipped["files"])
    assert json.loads(json.dumps(shipped))["excludes"] == []


SLOW = TRAIN.replace("time.sleep(0.3)", "time.sleep(0.6)")


def test_a_worker_node_killed_mid_study_costs_only_its_trials(cluster, tmp_path):
    """A worker node's raylet SIGKILLed while it trains (the node is started again afterwards); the study stores
    every trial once, the interrupted ones on a later attempt on the other node."""
    address, _, root, tags, restart_worker = cluster
    folder = _function_folder(root / "fn", "killed")
    (folder / "train.py").write_text(SLOW)
    write_yaml(folder, FUNCTION_STUDY.replace(      # one CPU a trial: 4 at once, so 2 waves of 5-second trials
        "train: {max_epochs: 2, patience: 2}", "train: {max_epochs: 8, patience: 8, retries: 3}\nresources: {cpu: 1}"),
        "study.yaml")
    out = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    driver = subprocess.Popen([sys.executable, "-m", "seedsweep", "run", str(folder / "study.yaml"), "--out", str(out),
                               "--address", address, "--quiet"], cwd=REPO, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        deadline, nodes = time.monotonic() + 180, set()
        while time.monotonic() < deadline and len(nodes) < 2:      # both nodes have stored a trial
            time.sleep(0.5)
            if RunDir(out).exists() and RunDir(out).stored_keys():
                nodes = set(analysis.load(out)["node"])
        assert len(nodes) == 2, f"trials ran on {len(nodes)} node(s) only"
        time.sleep(1.2)                                             # inside the node's second-wave trials
        from tests.conftest import tagged_processes

        raylet = next(p for p in tagged_processes(tags[2]) if "raylet" in p.name())
        raylet.kill()
        killed_at = pd.Timestamp.now(tz="UTC")
        _, stderr = driver.communicate(timeout=400)
    finally:
        if driver.poll() is None:
            driver.kill()
        restart_worker(2)                 # the other tests of the module, in whatever order, find both nodes
    assert driver.returncode == 0, stderr[-3000:]
    df = analysis.load(out)
    assert len(df) == 8 and df["trial_key"].is_unique and (df["status"] == "ok").all()
    retried = df[df["attempt"] >= 2]
    assert len(retried) and df["node"].nunique() == 2, df[["trial_key", "node", "attempt"]]
    assert retried["node"].nunique() == 1 and (retried["finished_at"] > killed_at).all()     # on the survivor
    assert sorted(df["test_score"].round(6).unique()) == [0.79, 0.81]       # the shipped code, on the survivor too


def test_a_folder_over_rays_package_limit_is_refused_before_anything(tmp_path):
    folder = _function_folder(tmp_path, "big")
    with open(folder / "data" / "huge.bin", "wb") as f:       # sparse: 600 MiB by its size, no disk used
        f.truncate(600 * 2**20)
    (folder / "runs").mkdir()
    with open(folder / "runs" / "old.bin", "wb") as f:        # under runs/: never travels, never counted
        f.truncate(900 * 2**20)
    port = free_port()                                        # nothing listens: the size is refused first
    proc = _run(folder / "study.yaml", tmp_path / "run", f"127.0.0.1:{port}")
    assert proc.returncode == 2, proc.stderr
    assert "600.0 MiB would travel" in proc.stderr and "data/ (600.0 MiB)" in proc.stderr, proc.stderr
    assert "task.excludes" in proc.stderr and not (tmp_path / "run").exists()
    write_yaml(folder, FUNCTION_STUDY.replace("task: {function: train.py:fit}",
                                              "task: {function: train.py:fit, excludes: [data/huge.bin]}"), "study.yaml")
    proc = _run(folder / "study.yaml", tmp_path / "run", f"127.0.0.1:{port}")
    assert proc.returncode == 2 and "nothing answers" in proc.stderr, proc.stderr     # excluded: on to the address


@pytest.mark.parametrize("task, where, problem", [
    ("{function: train.py:fit, working_dir: nowhere}", "task.working_dir", "no such folder"),
    ("{function: train.py:fit, excludes: data/}", "task.excludes", "expected a list of patterns"),
    ("{function: train.py:fit, excludes: [3]}", "task.excludes", "expected a list of patterns"),
])
def test_bad_shipping_keys_are_refused_by_check_and_run(tmp_path, task, where, problem):
    folder = _function_folder(tmp_path, "bad")
    space = write_yaml(folder, FUNCTION_STUDY.replace("{function: train.py:fit}", task), "study.yaml")
    refused_by_check_and_run(space, tmp_path / "run", where, problem)


def test_an_unbalanced_placeholder_is_refused_by_check_and_run(tmp_path):
    folder = _command_folder(tmp_path, "brace")
    space = write_yaml(folder, COMMAND_STUDY.replace('"{seed}"', '"{seed"'), "study.yaml")
    refused_by_check_and_run(space, tmp_path / "run", "task.command[5]", "a brace that opens or closes no placeholder")
