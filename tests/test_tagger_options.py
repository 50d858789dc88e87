"""Every shipped tagger option trains: one real epoch on a small WNUT-16
subset (packaged: no download), then three optimizer steps on one fixed
batch whose loss -- measured without dropout before and after, so that only
the steps can move it -- must stay finite and fall."""

from __future__ import annotations

import math

import pytest

from seedsweep.study.execution.trial import run_trial, seed_everything
from seedsweep.study.families.tagger import DEFAULTS, TaggerModel
from seedsweep.study.schema import TrialSpec
from seedsweep.study.spec.spacefile import parse_space

BASE = {"optimizer": "adam", "dropout": "variational", "chars": "none", "classifier": "softmax", "scheme": "BIO",
        "layers": 1, "clip_value": 0.0, "clip_norm": 1.0}
VARIANTS = (
    [("optimizer", o) for o in ("sgd", "adagrad", "adadelta", "rmsprop", "adam", "nadam")]
    + [("dropout", d) for d in ("none", "naive", "variational")]
    + [("chars", c) for c in ("none", "cnn", "lstm")]
    + [("classifier", c) for c in ("softmax", "crf")]
    + [("scheme", s) for s in ("BIO", "IOB", "IOBES")]
    + [("layers", n) for n in (1, 3)]
    + [("clip_value", 5.0), ("clip_norm", 0.0)]
)


def space():
    return parse_space("""
name: options
family: tagger
samples: 1
seeds: 1
compare: {classifier: [softmax, crf]}
task: {dataset: wnut16, train_sentences: 60, subset_seed: 1}
fixed: {units: 16, batch_size: 16, min_count: 1000}
train: {max_epochs: 1, patience: 1}
""", "options.yaml")


def test_every_option_of_the_families_choices_is_listed():
    from seedsweep.study.families.tagger.settings import LIMITS

    listed = {}
    for key, value in VARIANTS:
        listed.setdefault(key, set()).add(value)
    for key in ("optimizer", "dropout", "chars", "classifier", "scheme"):
        assert listed[key] == set(LIMITS[key].options), key
    assert set(BASE) <= set(DEFAULTS)


@pytest.mark.parametrize("key,value", VARIANTS, ids=[f"{k}={v}" for k, v in VARIANTS])
def test_each_option_trains_and_its_loss_falls_on_a_fixed_batch(key, value):
    sp = space()
    hparams = {**BASE, key: value}
    spec = TrialSpec(key=f"c00000/{key}={value}/seed=1", config_id="c00000", choice=key, option=value, seed=1,
                     params=tuple(hparams.items()))
    rows: list[dict] = []
    run_trial(sp, spec, rows.append)                                    # one real epoch, dev and test scored
    final = rows[-1]
    assert final["status"] == "ok", final["reason"]
    assert math.isfinite(final["train_loss"]) and 0 <= final["test_score_best"] <= 1

    seed_everything(1, torch=True, threads=1)
    model = TaggerModel(sp, hparams, 1)
    n, rows_ = max(model.batches(model.train, shuffle=False), key=lambda b: b[0] * len(b[1]))
    before = model.batch_loss(n, rows_)                               # no dropout: only the steps change it
    steps = [model.step(n, rows_) for _ in range(3)]
    after = model.batch_loss(n, rows_)
    assert all(math.isfinite(x) for x in steps + [before, after]), steps
    assert after < before, f"{key}={value}: the loss did not fall on a fixed batch: {before} -> {after}"
