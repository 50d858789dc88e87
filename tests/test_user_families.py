"""Every capability on a model seedsweep has never seen.

On the ``function`` family (a function in a temporary folder): the report
(Markdown and HTML in Chromium), the dashboard in Chromium, sealed claims
judged in ``seedsweep ledger`` (one study); an ``until:`` study that decides
and a ``tune:`` study, both defined and run through the Python API
(:func:`seedsweep.define`) and rerun from their manifests; a run directory on
the loopback object store. Beside them: an installed family package found
through its entry point, one that breaks the interface, and the ``Trainer``
example through its callback.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from seedsweep import analysis
from seedsweep import study
from seedsweep.analysis.pages.report import comparisons_of
from seedsweep.analysis.stats.claims import judge
from seedsweep.study.spec.claimsfile import read_claims
from seedsweep.study.store.rundir import RunDir
from tests.conftest import REPO, seedsweep_here
from tests.test_dashboard import CHROMIUM, FIGURE_READY, Page, assert_matches_compare, browser, dashboard, open_report  # noqa: F401
from tests.test_s3 import CREDENTIALS, s3_server  # noqa: F401 -- the loopback object store fixture

DATA = Path(os.environ.get("SEEDSWEEP_SHARED_DATA", REPO.parent / "shared" / "data"))

# CRF better by 0.03 on every configuration, a smooth bowl in lr (the optimum at 0.01) and small seed noise
BOWL = '''
import math, os, pathlib, random

def fit(trial):
    with open(pathlib.Path(__file__).with_name("pids"), "a") as f:
        f.write(f"{os.getpid()}\\n")        # the trial actor's process (a study's waves share one fit)
    p = trial.params
    q = 0.8 + (0.03 if p["classifier"] == "crf" else 0.0) - 0.02 * math.log10(p["lr"] / 0.01) ** 2
    q += random.Random(trial.key).gauss(0.0, 0.004)     # noise of its own for every trial
    for epoch in range(1, trial.max_epochs + 1):
        level = q * (1 - math.exp(-epoch))
        if trial.report(dev=level, test=level - 0.01, loss=math.exp(-epoch)):
            break
'''

STUDY = """
name: user-bowl
family: function
samples: 8
seeds: 2
compare: {classifier: [softmax, crf]}
task: {function: bowl.py:fit}
space: {lr: {loguniform: [1.0e-4, 1.0]}}
train: {max_epochs: 3, patience: 2}
"""

CLAIMS = """
source: "a user's function: CRF is better"
claims:
  - {id: crf-better, kind: delta, choice: classifier, option: crf, other: softmax, target: 0.0, rule: {above: true}}
  - {id: softmax-wins, kind: share, choice: classifier, option: softmax, target: 1.0, rule: {interval: true, gate: 0.5}}
"""


def seedsweep(*args, env=None, timeout=300, cwd=REPO):
    """report, ledger and claims in this process; the commands that find families by their entry points
    (check, families, run) in a new one, which reads the installed packages afresh."""
    if args[0] in ("report", "ledger", "claims"):
        return seedsweep_here(*args, cwd=cwd, env=env)
    return subprocess.run([sys.executable, "-m", "seedsweep", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=timeout)


@pytest.fixture
def bowl(tmp_path) -> Path:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "bowl.py").write_text(BOWL)
    (folder / "study.yaml").write_text(STUDY.lstrip())
    (folder / "claims.yaml").write_text(CLAIMS.lstrip())
    return folder


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed: 'make test' installs it")
def test_report_dashboard_and_ledger_on_a_function_study(tmp_path, bowl, ray_local, browser, dashboard):  # noqa: F811
    out = tmp_path / "run"
    summary = study.run(bowl / "study.yaml", out, claims=bowl / "claims.yaml")
    assert summary.counts == {"ok": 32}
    df = analysis.load(out)
    c = analysis.compare(df, "classifier")
    assert c.n == 8 and c.shares["crf"] == 1.0

    md = seedsweep("report", str(out))
    assert md.returncode == 0, md.stderr
    assert "| function | 8 | win share | 0.0% | 100.0%† |" in md.stdout, md.stdout
    html = tmp_path / "report.html"
    assert seedsweep("report", str(out), "-o", str(html)).returncode == 0
    page = open_report(browser, html)
    assert_matches_compare(page, df, "classifier", "-classifier")
    assert page.errors == [] and page.refused == []
    page.close()

    page = Page(browser)
    page.page.goto(dashboard(out))
    page.wait(FIGURE_READY, ["winshares", "distribution", "claims"])
    assert_matches_compare(page, df, "classifier")
    specs, results = comparisons_of(out)
    expected = {cl.id: judge(cl, df, specs=specs, results=results).verdict.verdict
                for cl in read_claims(out / "claims.yaml").claims}
    assert expected == {"crf-better": "reproduced", "softmax-wins": "not reproduced"}
    assert page.figure("claims")["meta"]["verdicts"] == expected
    assert page.errors == []
    page.close()

    ledger = seedsweep("ledger", str(out))
    assert ledger.returncode == 0, ledger.stderr
    assert "a user's function: CRF is better" in ledger.stdout and "partially reproduced" in ledger.stdout
    assert "| crf-better |" in ledger.stdout and "| softmax-wins |" in ledger.stdout
    assert seedsweep("claims", "verify", str(out)).returncode == 0


def shared_actor(pids: list[str], per_wave: int) -> bool:
    """Whether every wave (``per_wave`` trials, in the order they started) ran a trial in a process of the wave before."""
    waves = [set(pids[i:i + per_wave]) for i in range(0, len(pids), per_wave)]
    assert len(waves) > 1 and len(pids) % per_wave == 0, pids
    return all(a & b for a, b in zip(waves, waves[1:]))


@pytest.mark.slow
def test_an_adaptive_and_a_tuned_study_of_a_function_defined_in_python(tmp_path, bowl, ray_local, monkeypatch,
                                                                        joined_here):
    import seedsweep as api

    monkeypatch.syspath_prepend(str(bowl))
    from bowl import fit

    adaptive = api.define(name="user-until", function=fit, compare={"classifier": ["softmax", "crf"]},
                          space={"lr": {"loguniform": [1e-4, 1.0]}}, samples=4, seeds=1,
                          train={"max_epochs": 2, "patience": 2}, until={"budget": {"samples": 40}, "wave": 4})
    assert f"function: '{bowl / 'bowl.py'}:fit'" in adaptive.text
    waves = adaptive.run(tmp_path / "until")
    assert waves.stopped == "every comparison decided (1)" and waves.samples < 40, waves
    # the waves are one Tune fit: a trial actor of each wave runs the next wave's first trial, where a fit
    # of each wave ends its actors with it (a trial writes its process's id as it starts; 8 trials a wave)
    assert len(waves.waves) == 3 and shared_actor((bowl / "pids").read_text().split(), 8)
    (bowl / "pids").unlink()
    decided = analysis.report(tmp_path / "until", n_bootstrap=50)
    assert "| classifier | softmax | crf | function | 12 |" in decided and "| B better | 10 |" in decided, decided[:800]

    tuned = api.define(name="user-tune", function=fit, compare={"classifier": ["softmax", "crf"]},
                       space={"lr": {"loguniform": [1e-4, 1.0]}}, train={"max_epochs": 1, "patience": 1},
                       tune={"sampler": "tpe", "budget": 6, "replicates": 2, "wave": 3})
    summary = tuned.run(tmp_path / "tune")
    assert summary.counts == {"ok": 24}
    assert shared_actor((bowl / "pids").read_text().split(), 12)         # 4 searches x 3 asks a wave
    rows = RunDir(tmp_path / "tune").read_trials().to_pandas()
    assert rows.search.nunique() == 4 and rows.groupby("search").size().tolist() == [6] * 4
    assert rows.lr.nunique() > 4 and "tuned" in analysis.report(tmp_path / "tune", n_bootstrap=50)

    # a definition is a study file in every respect: rerun from its manifest, nothing left to do
    again = joined_here("run", str(tmp_path / "until"), "--out", str(tmp_path / "until"), "--quiet")
    assert again.returncode == 0, again.stderr[-2000:]
    assert "0 to run" in again.stderr
    adaptive.save(tmp_path / "until.yaml")
    assert study.check(tmp_path / "until.yaml").family == "function"


def test_the_python_api_refuses_what_a_worker_could_not_import_and_validates_like_a_file(tmp_path):
    import seedsweep as api
    from seedsweep.study.errors import UserError

    with pytest.raises(UserError, match=r"define\(bad\): function: .*<lambda> cannot be imported"):
        api.define(name="bad", function=lambda trial: None, compare={"x": [1, 2]}, samples=1, seeds=1)
    namespace: dict = {}
    exec("def fit(trial):\n    pass\n", namespace)          # as a notebook cell would define it
    with pytest.raises(UserError, match="has no .py file"):
        api.define(name="cell", function=namespace["fit"], compare={"x": [1, 2]}, samples=1, seeds=1)
    (tmp_path / "t.py").write_text("def fit(trial):\n    pass\n")
    with pytest.raises(UserError, match=r"seedsweep.define\(typo\): train.max_epoch: unknown key"):
        api.define(name="typo", function="t.py:fit", compare={"x": [1, 2]}, samples=1, seeds=1,
                   train={"max_epoch": 3}, base=tmp_path)
    with pytest.raises(UserError, match="the required key 'samples' is missing"):
        api.define(name="nosamples", function="t.py:fit", compare={"x": [1, 2]}, seeds=1, base=tmp_path)


@pytest.mark.slow
def test_a_function_study_on_the_object_store(tmp_path, bowl, s3_server, ray_local, monkeypatch):  # noqa: F811
    import pyarrow.fs as pafs

    for k, v in CREDENTIALS.items():
        monkeypatch.setenv(k, v)
    pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{s3_server}", scheme="http",
                      allow_bucket_creation=True).create_dir("mine")
    uri = f"s3://mine/run?endpoint_override=127.0.0.1:{s3_server}&scheme=http"
    summary = study.run(bowl / "study.yaml", uri)
    assert summary.counts == {"ok": 32}
    df = analysis.load(uri)
    assert len(df) == 32 and analysis.compare(df, "classifier").shares["crf"] == 1.0
    assert RunDir(uri).manifest()["code"] == {str(bowl / "bowl.py"): __import__("hashlib").sha256(
        (bowl / "bowl.py").read_bytes()).hexdigest()}


FAMILY_PACKAGE = REPO / "examples" / "family_package"


@pytest.mark.slow
def test_an_installed_family_package_runs_a_study_and_is_listed(tmp_path):
    import shutil

    source = tmp_path / "src"
    shutil.copytree(FAMILY_PACKAGE, source)
    site = tmp_path / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                          "--no-deps", "--no-build-isolation", "--target", str(site), str(source)],
                         capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stderr[-2000:]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
           "RAY_AUTH_MODE": "disabled"}
    listed = seedsweep("families", env=env)
    assert listed.returncode == 0
    line = next(ln for ln in listed.stdout.splitlines() if ln.startswith("digits "))
    assert "installed" in line and "seedsweep-digits 0.1.0 (entry point seedsweep_digits:FAMILY)" in line
    assert "digits" not in seedsweep("families").stdout                 # not installed without it
    bad = source / "study.yaml"
    bad.write_text(bad.read_text().replace("task: {dataset: digits}", "task: {dataset: digits}\nfixed: {units: 3}"))
    refused = seedsweep("check", str(bad), env=env)
    assert refused.returncode == 2 and "'units' is not a hyperparameter of the digits family" in refused.stderr
    bad.write_text((FAMILY_PACKAGE / "study.yaml").read_text())
    out = tmp_path / "run"
    run = seedsweep("run", str(source / "study.yaml"), "--out", str(out), "--num-cpus", "2", "--quiet", env=env,
                    timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = RunDir(out).read_trials().to_pandas()
    assert len(rows) == 8 and set(rows.status) == {"ok"} and rows.test_score.between(0.05, 1.0).all()


def test_an_entry_point_that_does_not_provide_the_interface_exits_2(tmp_path):
    site = tmp_path / "site"
    (site / "brokenfam").mkdir(parents=True)
    (site / "brokenfam" / "__init__.py").write_text("class Half:\n    name = 'broken'\n\nFAMILY = Half()\n")
    info = site / "brokenfam-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenfam\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[seedsweep.families]\nbroken = brokenfam\n")
    space = tmp_path / "s.yaml"
    space.write_text("name: b\nfamily: broken\nsamples: 1\nseeds: 1\ncompare: {x: [a, b]}\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    proc = seedsweep("check", str(space), env=env)
    assert proc.returncode == 2, proc.stderr
    assert f"{space}: family 'broken' from brokenfam 1.0 (entry point brokenfam)" in proc.stderr, proc.stderr
    assert "does not provide the Family interface: missing uses_torch, train_defaults" in proc.stderr
    unknown = seedsweep("check", str(space))
    assert unknown.returncode == 2 and "unknown family 'broken'" in unknown.stderr
    assert "family: function (a Python function) or family: command" in unknown.stderr


@pytest.mark.slow
@pytest.mark.skipif(not (DATA / "sst5").is_dir(), reason=f"the shared data is not at {DATA} (SEEDSWEEP_SHARED_DATA)")
def test_the_trainer_example_reports_every_evaluation_of_the_trainer(tmp_path, worker_ray):
    # the example as shipped, on a fifth of its slice (64 / 32 / 32 sentences) and one seed of each rate (it
    # ships two): the claim -- every evaluation the Trainer logs is an epoch row -- does not depend on the slice
    # or on how many trials make it; the full example runs as the docs say
    out = tmp_path / "run"
    shutil.copy(REPO / "examples" / "trainer" / "minilm.py", tmp_path / "minilm.py")
    text = (REPO / "examples" / "trainer" / "study.yaml").read_text()
    assert "\nseeds: 2\n" in text
    (tmp_path / "study.yaml").write_text(text.replace("\nseeds: 2\n", "\nseeds: 1\n") + "fixed: {train_sentences: 64}\n")
    env = {**os.environ, "SEEDSWEEP_DATA": str(DATA), "RAY_AUTH_MODE": "disabled"}
    proc = seedsweep("run", str(tmp_path / "study.yaml"), "--out", str(out), "--address", worker_ray,
                     "--quiet", env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rd = RunDir(out)
    trials = rd.read_trials().to_pandas()
    assert len(trials) == 2 and set(trials.status) == {"ok"} and set(trials.option) == {"3e-05", "0.0001"}
    epochs = rd.read_epochs().to_pandas()
    for key in trials.trial_key:
        history = json.loads((out / "work" / key.replace("/", "%2F") / "log_history.json").read_text())
        evals = [h for h in history if "eval_accuracy" in h]
        losses = [h["loss"] for h in history if "loss" in h]
        mine = epochs[epochs.trial_key == key].sort_values("epoch")
        assert mine.dev_score.tolist() == [h["eval_accuracy"] for h in evals]
        assert mine.dev_loss.tolist() == [h["eval_loss"] for h in evals]
        assert mine.train_loss.tolist() == losses[:len(mine)]
        assert mine.epoch.tolist() == [int(round(h["epoch"])) for h in evals]
