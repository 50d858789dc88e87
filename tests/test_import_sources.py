"""Importing an Optuna study, an MLflow experiment and a W&B runs export
(``seedsweep import --storage …``, ``--tracking-uri …``, a W&B CSV): every
trial kept with its state, the scores read the way the source's own API reads
them, and bad input exiting 2 with the flag named and nothing written.

The oracles are the sources' own APIs (Optuna's trial states, MLflow's metric
histories) and values computed by hand from the objective."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from seedsweep import analysis
from seedsweep.cli import main
from seedsweep.study.store.rundir import RunDir


def cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def objective_value(optimizer: str, lr: float) -> float:
    """The test score every source below stores: adam better at small rates, sgd at large ones."""
    x = math.log10(lr) + 2.0
    return 0.80 + (0.03 * -x if optimizer == "adam" else 0.03 * x)


# ---------------------------------------------------------------- Optuna


def optuna_study(storage, name="search", n=20):
    """A real Optuna TPE search: every 7th trial raises (FAIL), every 5th is pruned at step 1 (PRUNED)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    study = optuna.create_study(study_name=name, storage=storage, direction="maximize",
                                sampler=optuna.samplers.TPESampler(seed=0))

    def objective(trial):
        opt = trial.suggest_categorical("optimizer", ["adam", "sgd"])
        lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
        if trial.number % 7 == 3:
            raise RuntimeError("the loss exploded")
        for step in range(3):
            trial.report(objective_value(opt, lr) - 0.01 * (2 - step), step)
            if trial.number % 5 == 4 and step == 1:
                raise optuna.TrialPruned()
        trial.set_user_attr("test_acc", objective_value(opt, lr) - 0.02)
        return objective_value(opt, lr)

    study.optimize(objective, n_trials=n, catch=(RuntimeError,))
    return study


def test_an_optuna_sqlite_study_imports_with_failed_and_pruned_trials_kept_and_counted(tmp_path, capsys):
    db = tmp_path / "optuna.db"
    study = optuna_study(f"sqlite:///{db}")
    states = pd.Series([t.state.name for t in study.trials]).value_counts()       # Optuna's own count
    assert states["FAIL"] >= 2 and states["PRUNED"] >= 2
    out = tmp_path / "run"
    code, text, err = cli(capsys, "import", "--storage", f"sqlite:///{db}", "--study", "search", "--out", str(out),
                          "--score", "user_attrs/test_acc", "--dev-score", "value", "--choice", "optimizer")
    assert code == 0, err
    df = analysis.load(out).set_index("trial_key")
    assert len(df) == len(study.trials)
    assert (df.status == "failed").sum() == states["FAIL"] and (df.status == "stopped").sum() == states["PRUNED"]
    assert (df.status == "ok").sum() == states["COMPLETE"]
    assert f"{len(df)} trials: {states['COMPLETE']} ok, {states['FAIL']} failed, {states['PRUNED']} stopped" in text
    for t in study.trials:
        row = df.loc[f"optuna-{t.number}"]
        assert row["optuna_state"] == t.state.name and row["optimizer"] == t.params["optimizer"]
        if t.state.name == "PRUNED":
            assert row.reason == "optuna state PRUNED at step 1"
        elif t.state.name == "FAIL":
            assert row.reason.startswith("optuna state FAIL")
        else:
            assert math.isclose(row.test_score, objective_value(t.params["optimizer"], t.params["lr"]) - 0.02)
            assert math.isclose(row.dev_score, t.value)
    epochs = RunDir(out).read_epochs().to_pandas()              # intermediate values, step = epoch
    first = study.trials[0]
    mine = epochs[epochs.trial_key == "optuna-0"].set_index("epoch")["metric/intermediate"].to_dict()
    assert mine == pytest.approx(dict(first.intermediate_values))
    report = cli(capsys, "report", str(out))[1]
    assert "optimizer is judged unpaired" in report
    section = report.split("**unpaired: optimizer**")[1].split("\n\n- ")[0]
    not_scored = [line for line in section.splitlines() if line.startswith("| all |")]
    counted = sum(int(part.split()[0]) for line in not_scored for part in line.split("|")[5].split(",")
                  if part.strip() not in ("0", ""))
    assert counted == states["FAIL"] + states["PRUNED"]            # every unscored run shown, by status


def test_an_optuna_journal_file_imports_the_same_trials_as_its_sqlite_twin(tmp_path, capsys):
    import optuna
    from optuna.storages.journal import JournalFileBackend

    journal = tmp_path / "journal.log"
    optuna_study(optuna.storages.JournalStorage(JournalFileBackend(str(journal))), n=8)
    out = tmp_path / "run"
    code, _, err = cli(capsys, "import", "--storage", str(journal), "--out", str(out), "--score", "value",
                       "--choice", "optimizer")
    assert code == 0, err
    df = analysis.load(out)
    assert len(df) == 8 and set(df.status) <= {"ok", "failed", "stopped"}


# ---------------------------------------------------------------- MLflow


def mlflow_store(uri):
    """Runs logged through MLflow's own client: dev peaks at step 2 of 3; one FAILED and one KILLED run."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("sweep")
    runs = {}
    for i in range(8):
        opt, lr = ["adam", "sgd"][i % 2], [0.001, 0.01, 0.03, 0.1][i // 2]
        run = client.create_run(exp, run_name=f"run-{i}", tags={"seed": str(i % 2)})
        rid = run.info.run_id
        client.log_param(rid, "optimizer", opt)
        client.log_param(rid, "lr", str(lr))
        for step in (1, 2, 3):
            client.log_metric(rid, "dev_acc", objective_value(opt, lr) - 0.01 * abs(step - 2), step=step)
            client.log_metric(rid, "test_acc", objective_value(opt, lr) + 0.001 * step, step=step)
        client.set_terminated(rid, status={5: "FAILED", 6: "KILLED"}.get(i, "FINISHED"))
        runs[rid] = (opt, lr, i)
    return runs


def test_an_mlflow_sqlite_store_imports_scores_at_the_best_dev_step_and_keeps_failed_and_killed_runs(tmp_path,
                                                                                                      capsys):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    runs = mlflow_store(uri)
    out = tmp_path / "run"
    code, text, err = cli(capsys, "import", "--tracking-uri", uri, "--experiment", "sweep", "--out", str(out),
                          "--score", "test_acc", "--dev-score", "dev_acc", "--choice", "optimizer", "--seed",
                          "tags/seed")
    assert code == 0, err
    assert "8 trials: 6 ok, 1 failed, 1 stopped" in text, text
    df = analysis.load(out).set_index("mlflow_run_id")
    assert set(df.index) == set(runs)
    for rid, (opt, lr, i) in runs.items():
        row = df.loc[rid]
        assert row.optimizer == opt and math.isclose(row.lr, lr) and row.seed == i % 2
        assert math.isclose(row.test_score, objective_value(opt, lr) + 0.002)     # step 2: the best dev step
        assert row.status == {5: "failed", 6: "stopped"}.get(i, "ok")
    assert df.loc[[r for r, v in runs.items() if v[2] == 5][0], "reason"] == "mlflow status FAILED"
    epochs = RunDir(out).read_epochs().to_pandas()
    assert len(epochs) == 24 and sorted(set(epochs.epoch)) == [1, 2, 3]


# ---------------------------------------------------------------- W&B


WANDB_CSV = """Name,State,Notes,User,Tags,Created,Runtime,Sweep,optimizer,lr,seed,dev_acc,test_acc,_step,_runtime
{rows}"""


def test_a_wandb_runs_export_imports_with_states_mapped_and_its_own_columns_never_pairing_keys(tmp_path, capsys):
    rows = []
    for i in range(12):
        opt, lr, seed = ["adam", "sgd"][i % 2], [0.001, 0.01, 0.1][(i // 2) % 3], i // 6
        state = {3: "crashed", 8: "killed"}.get(i, "finished")
        rows.append(f"run-{i},{state},,me,,2026-12-0{1 + i % 3}T10:00:00,{100 + i},sw1,{opt},{lr},{seed},"
                    f"{objective_value(opt, lr) - 0.01},{objective_value(opt, lr)},{30 + i},{100.5 + i}")
    export = tmp_path / "wandb_export_2026-12-05.csv"
    export.write_text(WANDB_CSV.format(rows="\n".join(rows)) + "\n")
    out = tmp_path / "run"
    code, text, err = cli(capsys, "import", str(export), "--out", str(out), "--score", "test_acc", "--dev-score",
                          "dev_acc", "--choice", "optimizer", "--seed", "seed")
    assert code == 0, err
    assert "12 trials: 10 ok, 1 failed, 1 stopped" in text, text
    # Created, Runtime, _step, _runtime differ on every row: as pairing keys nothing would pair
    assert "optimizer: 3 of 3 configurations pair" in text and "judged paired" in text, text
    df = analysis.load(out).set_index("trial_key")
    assert df.loc["wandb-run-3", "reason"] == "wandb state crashed" and df.loc["wandb-run-8", "status"] == "stopped"
    assert math.isclose(df.loc["wandb-run-0", "test_score"], objective_value("adam", 0.001))


# ---------------------------------------------------------------- bad input


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    base = tmp_path_factory.mktemp("sources")
    optuna_study(f"sqlite:///{base / 'optuna.db'}", n=6)
    mlflow_store(f"sqlite:///{base / 'mlflow.db'}")
    return base


def bad_cases(base):
    optuna_db, mlflow_db = f"sqlite:///{base / 'optuna.db'}", f"sqlite:///{base / 'mlflow.db'}"
    return {
        "storage that does not open": (["--storage", f"sqlite:///{base / 'none.db'}", "--score", "value"],
                                       "no such SQLite file", "sqlite:///PATH"),
        "storage not a database": (["--storage", "postgresql://127.0.0.1:1/x", "--score", "value"],
                                   "does not open as an Optuna storage", "sqlite:///PATH"),
        "study that does not exist": (["--storage", optuna_db, "--study", "nope", "--score", "value"],
                                      "--study nope", "search"),
        "metric no trial reported": (["--storage", optuna_db, "--score", "f1"], "--score f1", "user_attrs/test_acc"),
        "seed column that does not exist": (["--storage", optuna_db, "--score", "value", "--seed", "seed"],
                                            "--seed seed", "optimizer"),
        "experiment that does not exist": (["--tracking-uri", mlflow_db, "--experiment", "nope", "--score", "x"],
                                           "--experiment nope", "sweep"),
        "unreachable tracking server": (["--tracking-uri", "http://127.0.0.1:9", "--experiment", "sweep", "--score",
                                         "x"], "does not answer", "mlflow server"),
        "metric no run reported": (["--tracking-uri", mlflow_db, "--experiment", "sweep", "--score", "f1"],
                                   "--score f1", "test_acc"),
        "flag of another source": (["--storage", optuna_db, "--experiment", "sweep", "--score", "value"],
                                   "--experiment", "Leave it out"),
    }


@pytest.mark.parametrize("case", list(bad_cases(__import__("pathlib").Path("."))))
def test_bad_input_of_an_import_exits_2_naming_what_is_wrong_with_nothing_written(sources, tmp_path, capsys, case):
    args, where, fix = bad_cases(sources)[case]
    before = sorted(p.name for p in sources.iterdir())
    out = tmp_path / "run"
    code, _, err = cli(capsys, "import", *args, "--out", str(out))
    assert code == 2, err
    assert where in err and fix in err, err
    assert not out.exists() and not any(p.name.startswith(".seedsweep") for p in tmp_path.iterdir())
    assert sorted(p.name for p in sources.iterdir()) == before          # no storage file created either


def test_claims_and_replay_that_need_pairs_are_refused_on_an_unpaired_import_and_judged_inconclusive(sources,
                                                                                                   tmp_path, capsys):
    """A TPE search pairs nothing: sealing a share or delta claim on its choice exits 2 naming the claim, with
    nothing sealed; a value claim seals; a replay exits 2 naming the choice; and a paired claim judged on it
    anyway (sealed by an earlier version) is inconclusive with the reason, never estimated."""
    from seedsweep.analysis.reading.claimverdicts import judge_claims
    from seedsweep.study.spec.claimsfile import read_claims

    out = tmp_path / "run"
    code, text, err = cli(capsys, "import", "--storage", f"sqlite:///{sources / 'optuna.db'}", "--out", str(out),
                          "--score", "value", "--choice", "optimizer")
    assert code == 0 and "judged unpaired" in text, err
    paired = tmp_path / "paired.yaml"
    paired.write_text("source: a test\nclaims:\n"
                      "  - {id: sgd-median, kind: value, where: {optimizer: sgd}, statistic: median, target: 0.5, "
                      "rule: {above: true}}\n"
                      "  - {id: sgd-wins, kind: share, choice: optimizer, option: sgd, target: 0.5, "
                      "rule: {above: true}}\n")
    manifest = (out / "manifest.json").read_bytes()
    code, _, err = cli(capsys, "claims", "seal", str(paired), str(out))
    assert code == 2 and f"{paired}: claims[1] (sgd-wins)" in err and "judged unpaired" in err, err
    assert "kind: value" in err and (out / "manifest.json").read_bytes() == manifest
    assert not any(p.name.startswith("claims") for p in out.iterdir())
    value = tmp_path / "value.yaml"
    value.write_text(paired.read_text().split("  - {id: sgd-wins")[0])
    code, _, err = cli(capsys, "claims", "seal", str(value), str(out))
    assert code == 0, err
    until = tmp_path / "until.yaml"
    until.write_text("until: {decide: [optimizer]}\n")
    code, _, err = cli(capsys, "replay", str(out), "--until", str(until))
    assert code == 2 and f"--until {until}: decide: optimizer" in err and "judged unpaired" in err, err
    df = analysis.load(out)
    specs, results = analysis.comparisons_of(out)
    judged = judge_claims(read_claims(paired), df, specs, results,
                          unpaired={"optimizer": "0 of 4 configurations pair"})
    assert judged[1].verdict.verdict == "inconclusive" and "judged unpaired" in judged[1].verdict.why
    assert math.isnan(judged[1].verdict.estimate) and judged[1].n == 0
    assert judged[0].verdict.verdict in ("reproduced", "not reproduced") and judged[0].n > 0
