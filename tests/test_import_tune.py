"""Importing a Ray Tune experiment folder (``seedsweep import DIR``): a real
``tune.Tuner`` random search with seeds imports as an unpaired comparison
(the report says so and shows the statistics of independent samples, no win
share); the same objective as a grid search imports paired and its win
shares equal seedsweep's own study of that grid; bad input exits 2 naming
what is wrong, with nothing written."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from seedsweep import analysis, study
from seedsweep.analysis.stats.improvement import p_improvement
from seedsweep.study.store.rundir import RunDir
from tests.conftest import seedsweep_here

OBJECTIVE = '''
import math


def score(optimizer, lr, seed, epoch):
    """A smooth objective: adam is better at small learning rates, sgd at large ones; seeds move it a little."""
    x = math.log10(lr) + 2.0
    base = 0.80 + (0.03 * -x if optimizer == "adam" else 0.03 * x) - 0.01 * x * x
    noise = 0.004 * math.sin(7.0 * seed + 13.0 * lr + (1.0 if optimizer == "adam" else 2.0))
    return base + noise - 0.02 * abs(epoch - 2), base + noise - 0.015 / epoch     # dev peaks at epoch 2


def fit(trial):
    for epoch in range(1, 4):
        dev, test = score(trial.params["optimizer"], trial.params["lr"], trial.seed, epoch)
        trial.report(dev=dev, test=test)
'''


def seedsweep(*args):
    """``seedsweep import`` and ``report`` in this process (what they say and write is the test)."""
    return seedsweep_here(*args)


def tune_experiment(folder, name, space):
    """A real tune.Tuner run of the objective (3 reports per trial) into folder/name."""
    from ray import tune

    namespace: dict = {}
    exec(OBJECTIVE, namespace)
    score = namespace["score"]

    def trainable(config):
        c = {**config.get("config", {}), **config}         # the random search nests its drawn configuration
        for epoch in range(1, 4):
            dev, test = score(c["optimizer"], c["lr"], c["seed"], epoch)
            tune.report({"dev_acc": dev, "test_acc": test})

    tuner = tune.Tuner(trainable, param_space=space, tune_config=tune.TuneConfig(reuse_actors=True),
                       run_config=tune.RunConfig(storage_path=str(folder), name=name, verbose=0))
    results = tuner.fit()
    assert not results.errors
    return folder / name


@pytest.mark.slow           # two real Tune searches and a seedsweep study (about 20 s)
def test_a_tune_random_search_imports_unpaired_and_a_grid_search_equals_seedsweeps_own_study(tmp_path, ray_local):
    from ray import tune

    rng = np.random.default_rng(3)
    drawn = [{"optimizer": ["adam", "sgd"][i % 2], "lr": float(10 ** rng.uniform(-3.5, -0.5))} for i in range(10)]
    # a random search with 3 seeds per configuration: each configuration drawn once, with one optimizer
    search = tune_experiment(tmp_path, "random", {"config": tune.grid_search(drawn),
                                                  "seed": tune.grid_search([0, 1, 2])})
    out = tmp_path / "random-run"
    r = seedsweep("import", str(search), "--out", str(out), "--score", "test_acc", "--dev-score", "dev_acc",
                  "--choice", "config/optimizer", "--seed", "seed")
    assert r.returncode == 0, r.stderr
    assert "config/optimizer: 0 of 10 configurations pair" in r.stdout and "judged unpaired" in r.stdout
    df = analysis.load(out)
    assert len(df) == 30 and (df.status == "ok").all() and df.seed.notna().all()
    epochs = RunDir(out).read_epochs().to_pandas()           # every report kept as an epoch
    assert len(epochs) == 90 and sorted(set(epochs.epoch)) == [1, 2, 3] and set(epochs.trial_key) == set(df.trial_key)
    text = seedsweep("report", str(out)).stdout
    assert "config/optimizer is judged unpaired: 0 of 10 configurations pair" in text
    cells = "\n".join(line for line in text.splitlines() if line.startswith("|"))       # every table row
    assert "win share" not in cells and "†" not in cells and "Wilcoxon" not in cells
    assert "**unpaired: config/optimizer**" in text and "ASO ε_min" in text and "EVP@5" in text
    # the oracle for P(better): each configuration's mean test score over its seeds, counted by hand
    means = df.groupby(["config/optimizer", "config/lr"]).test_score.mean()
    adam, sgd = means["adam"].to_numpy(), means["sgd"].to_numpy()
    by_hand = sum((b > a) + 0.5 * (b == a) for a in adam for b in sgd) / (len(adam) * len(sgd))
    assert by_hand == p_improvement(sgd, adam).p
    row = next(line for line in text.splitlines() if line.startswith("| all | sgd | adam |"))
    assert f"{100 * by_hand:.1f}%" in row.split("|")[5]
    # the test score is the best dev report's (epoch 2 of 3), not the last one
    ns: dict = {}
    exec(OBJECTIVE, ns)
    one = df.iloc[0]
    assert one.test_score == ns["score"](one["config/optimizer"], one["config/lr"], int(one.seed), 2)[1]

    # the grid: seedsweep's own study draws 4 learning rates; Tune runs exactly that grid with the same seeds
    (tmp_path / "own").mkdir()
    (tmp_path / "own" / "train.py").write_text(OBJECTIVE)
    (tmp_path / "own" / "study.yaml").write_text(
        "name: grid\nfamily: function\nsamples: 4\nseeds: [0, 1, 2]\ncompare: {optimizer: [adam, sgd]}\n"
        "space: {lr: {loguniform: [3.0e-4, 3.0e-1]}}\ntask: {function: train.py:fit}\n"
        "train: {max_epochs: 3, patience: 3, metric: score}\n")
    own = tmp_path / "own-run"
    assert study.run(tmp_path / "own" / "study.yaml", own).counts == {"ok": 24}
    mine = analysis.load(own)
    rates = sorted(set(mine.lr))
    grid = tune_experiment(tmp_path, "grid", {"optimizer": tune.grid_search(["adam", "sgd"]),
                                              "lr": tune.grid_search(rates), "seed": tune.grid_search([0, 1, 2])})
    paired = tmp_path / "grid-run"
    r = seedsweep("import", str(grid), "--out", str(paired), "--score", "test_acc", "--dev-score", "dev_acc",
                  "--choice", "optimizer", "--seed", "seed")
    assert r.returncode == 0, r.stderr
    assert "optimizer: 4 of 4 configurations pair" in r.stdout and "judged paired" in r.stdout
    theirs = analysis.compare(analysis.load(paired), "optimizer", results=analysis.comparisons_of(paired)[1])
    ours = analysis.compare(mine, "optimizer")
    assert theirs.n == ours.n == 4
    assert theirs.shares == ours.shares and 0 < ours.shares["adam"] < 1, (theirs.shares, ours.shares)
    assert "is judged unpaired" not in seedsweep("report", str(paired)).stdout


def write_trial(folder, name, params, reports, error=None):
    trial = folder / name
    trial.mkdir(parents=True)
    (trial / "params.json").write_text(json.dumps(params))
    (trial / "result.json").write_text("".join(json.dumps(r) + "\n" for r in reports))
    if error:
        (trial / "error.txt").write_text(error)
    return trial


@pytest.fixture
def experiment(tmp_path):
    folder = tmp_path / "exp"
    for i, (opt, lr) in enumerate([("adam", 0.01), ("sgd", 0.02), ("adam", 0.03), ("sgd", 0.04)]):
        write_trial(folder, f"trainable_{i:05d}", {"opt": {"name": opt}, "lr": lr, "rep": i % 2},
                    [{"acc": 0.5 + i / 10, "dev": 0.4, "training_iteration": 1, "trial_id": f"t{i}"}])
    return folder


def test_a_failed_tune_trial_is_kept_with_its_error_and_nested_parameters_are_flattened(tmp_path, experiment):
    write_trial(experiment, "trainable_00009", {"opt": {"name": "adam"}, "lr": 0.5, "rep": 0},
                [{"dev": 0.1, "training_iteration": 1, "trial_id": "t9"}],
                error="Traceback (most recent call last):\nValueError: the loss exploded\n")
    out = tmp_path / "run"
    r = seedsweep("import", str(experiment), "--out", str(out), "--score", "acc", "--choice", "opt/name")
    assert r.returncode == 0, r.stderr
    df = analysis.load(out).set_index("trial_key")
    assert set(df.index) == {"t0", "t1", "t2", "t3", "t9"}
    assert df.loc["t9", "status"] == "failed" and df.loc["t9", "reason"] == "the trial raised: ValueError: the loss " \
                                                                            "exploded"
    assert df.loc["t2", "opt/name"] == "adam" and math.isclose(df.loc["t2", "test_score"], 0.7)


@pytest.mark.parametrize("args, where, fix", [
    (["--score", "f1"], "--score f1", "acc"),                                   # a metric no trial reported
    (["--score", "acc", "--seed", "seed"], "--seed seed", "rep"),                # a seed column that does not exist
    (["--score", "acc", "--choice", "optimizer"], "--choice", "opt/name"),       # a parameter that does not exist
])
def test_bad_flags_of_a_tune_import_exit_2_naming_the_flag_with_nothing_written(tmp_path, experiment, args, where,
                                                                                 fix):
    out = tmp_path / "run"
    r = seedsweep("import", str(experiment), "--out", str(out), *args)
    assert r.returncode == 2, r.stderr
    assert where in r.stderr and fix in r.stderr, r.stderr
    assert not out.exists() and not any(p.name.startswith(".seedsweep") for p in tmp_path.iterdir())


def test_a_corrupt_result_file_and_a_folder_that_is_no_experiment_are_named(tmp_path, experiment):
    broken = experiment / "trainable_00002" / "result.json"
    broken.write_text(broken.read_text() + '{"acc": 0.9, "training_it\n')
    r = seedsweep("import", str(experiment), "--out", str(tmp_path / "run"), "--score", "acc")
    assert r.returncode == 2 and f"{broken}, line 2" in r.stderr, r.stderr
    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    r = seedsweep("import", str(empty), "--out", str(tmp_path / "run"), "--score", "acc")
    assert r.returncode == 2 and f"{empty}: is not a Ray Tune experiment folder" in r.stderr, r.stderr
    assert not (tmp_path / "run").exists()
