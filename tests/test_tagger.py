"""The tagger family trained for real on small corpora (CPU, seconds each)."""

from __future__ import annotations

import math

import pytest

from seedsweep import analysis
from seedsweep.study.errors import UserError
from seedsweep.study.execution.trial import run_trial
from seedsweep.study.schema import TrialSpec
from seedsweep.study.spec.spacefile import parse_space
from tests.rundirs import write_synthetic_run


def space(extra: str = "", *, task: str = "{dataset: wnut16, train_sentences: 150}", epochs: int = 2):
    return parse_space(f"""
name: tiny
family: tagger
samples: 2
seeds: 1
compare: {{classifier: [softmax, crf]}}
task: {task}
fixed: {{layers: 1, units: 16, chars: cnn, dropout: variational, dropout_output: 0.25, dropout_recurrent: 0.25{extra}}}
train: {{max_epochs: {epochs}, patience: 2}}
""")


def trial(sp, option="crf", seed=1):
    return TrialSpec(key=f"c00000/classifier={option}/seed={seed}", config_id="c00000", choice="classifier",
                     option=option, seed=seed, params=(("classifier", option),))


def outcome(sp, t):
    rows = []
    run_trial(sp, t, rows.append)
    return rows


def test_same_configuration_and_seed_give_identical_scores_on_cpu():
    sp = space()
    a = outcome(sp, trial(sp))
    b = outcome(sp, trial(sp))
    assert [(r["train_loss"], r["dev_score"], r["test_score"]) for r in a] == \
           [(r["train_loss"], r["dev_score"], r["test_score"]) for r in b]
    c = outcome(sp, trial(sp, seed=2))
    assert [r["train_loss"] for r in c] != [r["train_loss"] for r in a]
    assert a[-1]["status"] == "ok" and 0.0 <= a[-1]["test_score_best"] <= 1.0


def test_a_non_finite_loss_ends_the_trial_as_diverged():
    sp = space(", optimizer: sgd, lr: 1.0e+30, clip_norm: 0, clip_value: 0")
    rows = outcome(sp, trial(sp, "softmax"))
    assert rows[-1]["status"] == "diverged" and "non-finite" in rows[-1]["reason"]
    assert math.isnan(rows[-1]["train_loss"])


@pytest.mark.parametrize("scheme", ["IOB", "IOBES"])
def test_other_tagging_schemes_train_and_are_scored_in_bio(scheme):
    sp = space(f", scheme: {scheme}", epochs=1)
    rows = outcome(sp, trial(sp))
    assert rows[-1]["status"] == "ok" and 0.0 <= rows[-1]["dev_score_best"] <= 1.0


def test_a_tagger_study_is_stored_and_compared(tmp_path):
    write_synthetic_run(tmp_path / "run", """
name: tiny-study
family: tagger
samples: 2
seeds: 1
compare: {classifier: [softmax, crf]}
task: {dataset: wnut16, train_sentences: 120}
space: {optimizer: {choice: [adam, nadam]}}
fixed: {layers: 1, units: 16, dropout: naive, chars: lstm}
train: {max_epochs: 2, patience: 1}
""")
    df = analysis.load(tmp_path / "run")
    assert len(df) == 4 and set(df["status"]) == {"ok"} and df["metric"].eq("f1").all()
    assert analysis.compare(df, "classifier").n == 2


@pytest.mark.parametrize("bad,where", [
    ("task: {dataset: nope}", "task.dataset"),
    ("task: {dataset: wnut16, split: 3}", "task.split"),
    ("task: {dataset: wnut16}\nfixed: {chars: gru}", "chars"),
    ("task: {dataset: wnut16}\nfixed: {hidden: 3}", "hidden"),
])
def test_tagger_spaces_are_validated_without_loading_anything(bad, where):
    with pytest.raises(UserError) as err:
        parse_space(f"name: x\nfamily: tagger\nsamples: 1\nseeds: 1\ncompare: {{classifier: [softmax, crf]}}\n{bad}\n")
    assert where in str(err.value)



def test_run_refuses_a_study_whose_corpus_cannot_be_found(tmp_path, monkeypatch, capsys):
    import dataclasses

    import seedsweep.study.families.tagger.corpora as corpora
    from seedsweep.cli import main

    monkeypatch.setenv("SEEDSWEEP_DATA", str(tmp_path / "nothing-here"))
    monkeypatch.setenv("SEEDSWEEP_CACHE", str(tmp_path / "cache"))
    # no download either (this machine has no internet): the registry entry without its URLs
    monkeypatch.setitem(corpora.DATASETS, "conll2000", dataclasses.replace(corpora.DATASETS["conll2000"], urls={}))
    (tmp_path / "s.yaml").write_text("name: x\nfamily: tagger\nsamples: 1\nseeds: 1\n"
                                     "compare: {classifier: [softmax, crf]}\ntask: {dataset: conll2000}\n")
    assert main(["run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "dataset conll2000" in err and "SEEDSWEEP_DATA" in err
    assert not (tmp_path / "run").exists()
