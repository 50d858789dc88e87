"""A synthetic study end to end through the real CLI on its own local Ray (the
README's quickstart itself, with real taggers, runs in CI through `make quickstart`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import uuid

import pytest

from tests.conftest import REPO, idle_workers_and_trial_actors, remove_tagged, titles_while_running

pytestmark = pytest.mark.slow


def test_quickstart_runs_and_prints_the_result_table(tmp_path):
    ray_tmp = tempfile.mkdtemp(prefix="ssq-", dir="/tmp")
    # A stale cluster: `ray start` left an address file behind and RAY_ADDRESS points at it.
    # A plain ray.init() would follow either and hang; seedsweep must start its own Ray.
    os.makedirs(os.path.join(ray_tmp, "ray"))
    with open(os.path.join(ray_tmp, "ray", "ray_current_cluster"), "w") as f:
        f.write("127.0.0.1:9")
    # as a user runs it: RAY_AUTH_MODE unset (Ray's default, token authentication; its token in this HOME)
    tag = uuid.uuid4().hex
    env = {**{k: v for k, v in os.environ.items() if k not in ("RAY_AUTH_MODE", "RAY_prestart_worker_first_driver")},
           "RAY_TMPDIR": ray_tmp, "RAY_ADDRESS": "127.0.0.1:9", "HOME": str(tmp_path / "home"),
           "SEEDSWEEP_TEST_TAG": tag}
    try:
        proc = subprocess.Popen([sys.executable, "-m", "seedsweep", "run", "search_spaces/synthetic.yaml",
                                 "--out", str(tmp_path / "qs")], cwd=REPO, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        stdout, stderr, titles = titles_while_running(proc, tag, ray_tmp)
    finally:
        remove_tagged(tag, ray_tmp)
    assert proc.returncode == 0, stderr
    # every worker process the private Ray started ran a trial: none was started idle and stayed so (Ray starts
    # one per CPU for the first driver, with no runtime environment, which Tune's trial actors never use)
    idle, actors = idle_workers_and_trial_actors(titles)
    assert actors and idle == [], titles
    assert "48 trials in the study; ran 48" in stderr
    # quiet: every line on standard error is seedsweep's own (no warning a user cannot act on)
    foreign = [line for line in stderr.splitlines() if line.strip() and not line.startswith("[seedsweep]")
               and "trials in the study" not in line]
    assert foreign == [], "\n".join(foreign)
    # the injected winner (CRF, +2 points) takes the majority of the 12 configurations
    row = re.search(r"\| [^|]* \| (\d+) \| win share \| ([\d.]+)%†? \| ([\d.]+)%†? \|", stdout)
    assert row, stdout
    n, softmax, crf = int(row.group(1)), float(row.group(2)), float(row.group(3))
    assert n == 12 and crf > 50.0 and abs(softmax + crf - 100.0) < 0.2
    status = subprocess.run([sys.executable, "-m", "seedsweep", "status", str(tmp_path / "qs")], cwd=REPO,
                            capture_output=True, text=True)
    assert status.returncode == 0 and "48/48 trials stored" in status.stdout
