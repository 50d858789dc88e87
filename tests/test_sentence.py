"""The sentence family: parameter counts (torch's own count against the
printed one), padding that changes no prediction, augmentation that adds the
train sentences k times, evaluation sets scored at the best dev epoch, and
the user errors of ``evaluate:`` and ``augment``."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from seedsweep.study.execution.trial import run_trial, seed_everything
from seedsweep.study.families.sentence.model import SentenceModel, tokens
from seedsweep.study.families.sentence.network import build_network
from seedsweep.study.families.sentence.settings import ARCHITECTURES, auto_width
from seedsweep.study.schema import TrialSpec
from seedsweep.study.spec.spacefile import parse_space
from seedsweep.study.testbeds import read_testbed

REPO = Path(__file__).resolve().parents[1]
BED = REPO / "testbeds" / "sst_phenomena.yaml"


def write_toy(folder: Path) -> dict[str, str]:
    """A learnable binary task: the label is in the words."""
    rng = random.Random(0)
    words = {"negative": ["awful", "dull", "bad", "boring"], "positive": ["great", "superb", "fun", "good"]}
    files = {}
    for split, n in (("train", 200), ("dev", 60), ("test", 80)):
        rows = ["text\tlabel"]
        for i in range(n):
            label = ["negative", "positive"][i % 2]
            rows.append(" ".join(["the", "film", "was"] + [rng.choice(words[label])] * rng.randint(1, 3)) + f"\t{label}")
        (folder / f"{split}.tsv").write_text("\n".join(rows) + "\n")
        files[split] = str(folder / f"{split}.tsv")
    return files


def toy_yaml(folder: Path, *, fixed: str = "", evaluate: str = f"[{BED}]", family: str = "sentence",
             compare: str = "{architecture: [fc, cnn, lstm, attention]}", epochs: int = 3) -> str:
    f = write_toy(folder)
    return f"""
name: toy
family: {family}
samples: 1
seeds: 1
compare: {compare}
task: {{dataset: table, name: toy, train: {f['train']}, dev: {f['dev']}, test: {f['test']}}}
evaluate: {evaluate}
fixed: {{lr: 1.0e-2{fixed}}}
train: {{max_epochs: {epochs}, patience: {epochs}}}
"""


def model(folder: Path, arch: str, fixed: str = "", seed: int = 1) -> SentenceModel:
    sp = parse_space(toy_yaml(folder, fixed=fixed), path=str(folder / "toy.yaml"))
    seed_everything(seed, torch=True, threads=1)
    return SentenceModel(sp, {"architecture": arch}, seed)


def test_check_resolve_prints_each_architectures_trainable_parameters_as_torch_counts_them(tmp_path):
    path = tmp_path / "toy.yaml"
    path.write_text(toy_yaml(tmp_path))
    r = subprocess.run([sys.executable, "-m", "seedsweep", "check", str(path), "--resolve"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    printed = {m[0]: (int(m[1]), int(m[2].replace(",", ""))) for m in
               re.findall(r"architecture (\w+) \(compare.architecture\) over glove-6b-50d: width (\d+), ([\d,]+) "
                          r"trainable parameters", r.stdout)}
    assert set(printed) == set(ARCHITECTURES)
    for arch, (width, count) in printed.items():
        net = build_network(arch, torch.zeros(10, 50), width, 2, 0.1)
        counted = sum(p.numel() for p in net.parameters() if p.requires_grad)     # torch's count, not the formula
        assert counted == count, arch
        assert 36_000 <= count <= 44_000, (arch, count)                           # 40K ± 10%
        assert width == auto_width(arch, 50, 2)
        # no other width is nearer to 40K: the count one unit wider or narrower is farther away
        for other in (width - 1, width + 1):
            n = sum(p.numel() for p in build_network(arch, torch.zeros(10, 50), other, 2, 0.1).parameters()
                    if p.requires_grad)
            assert abs(n - 40_000) >= abs(count - 40_000)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_padding_changes_no_prediction(tmp_path, arch):
    m = model(tmp_path, arch)
    m.net.eval()
    seqs, _ = m.splits["eval:negation"]
    rows = list(range(0, len(seqs), 37))
    with torch.no_grad():
        ids, lengths, _ = batch_of(m, "eval:negation", rows)
        batched = m.net(ids, lengths)
        for j, i in enumerate(rows):                       # each sentence alone, no padding at all
            alone = m.net(torch.from_numpy(seqs[i][None, :]), torch.tensor([len(seqs[i])]))
            assert torch.allclose(alone[0], batched[j], atol=1e-5), (arch, i)
    assert ids.shape[1] > min(len(seqs[i]) for i in rows)                      # the batch did pad


def batch_of(m: SentenceModel, split: str, rows: list[int]):
    """A padded batch built here (zeros after each sentence), independently of the model's own."""
    seqs, labels = m.splits[split]
    width = max(len(seqs[i]) for i in rows)
    ids = np.zeros((len(rows), width), np.int64)
    for j, i in enumerate(rows):
        ids[j, : len(seqs[i])] = seqs[i]
    return torch.from_numpy(ids), torch.tensor([len(seqs[i]) for i in rows]), torch.from_numpy(labels[rows])


def test_augmentation_adds_the_phenomenons_train_sentences_k_times_and_never_an_eval_sentence(tmp_path):
    plain = model(tmp_path, "fc")
    aug = model(tmp_path, "fc", fixed=", augment: negation, augment_factor: 3")
    bed = read_testbed(BED)
    train = bed.sentences("train", "negation")
    assert len(aug.splits["train"][1]) == len(plain.splits["train"][1]) + 3 * len(train)
    added = aug.splits["train"][0][len(plain.splits["train"][1]):]
    expected = [r.text for r in train] * 3
    assert len(added) == len(expected)
    for seq, text in zip(added, expected):
        assert len(seq) == len(tokens(text))
    labels = aug.splits["train"][1][len(plain.splits["train"][1]):]
    assert list(labels) == [["negative", "positive"].index(r.label) for r in train] * 3
    evals = {r.text for r in bed.sentences("eval")}
    assert not evals & set(expected)


def test_evaluation_sets_are_scored_with_the_best_dev_epochs_weights(tmp_path):
    sp = parse_space(toy_yaml(tmp_path, compare="{architecture: [lstm, fc]}", epochs=4), path=str(tmp_path / "t.yaml"))
    t = TrialSpec(key="c00000/architecture=lstm/seed=3", config_id="c00000", choice="architecture", option="lstm",
                  seed=3, params=(("architecture", "lstm"),))
    rows = []
    run_trial(sp, t, rows.append)
    final = rows[-1]
    assert set(final["results"]) == {"params", "units", "eval_negation", "eval_mixed", "eval_sarcasm"}
    # replay the trial by hand, scoring each evaluation set after every epoch, one sentence at a time
    seed_everything(3, torch=True, threads=1)
    m = SentenceModel(sp, {"architecture": "lstm"}, 3)
    by_epoch = {}
    for epoch in range(1, final["epochs_run"] + 1):
        m.train_epoch(epoch)
        m.evaluate(epoch)
        m.net.eval()
        by_epoch[epoch] = {}
        for name in ("negation", "mixed", "sarcasm"):
            seqs, labels = m.splits[f"eval:{name}"]
            with torch.no_grad():
                hits = [int(m.net(torch.from_numpy(s[None, :]), torch.tensor([len(s)])).argmax()) == y
                        for s, y in zip(seqs, labels)]
            by_epoch[epoch][name] = sum(hits) / len(hits)
    best = final["best_epoch"]
    assert [r["dev_score"] for r in rows] == [m.dev_accuracy[e] for e in range(1, final["epochs_run"] + 1)]
    for name in ("negation", "mixed", "sarcasm"):
        assert final["results"][f"eval_{name}"] == pytest.approx(by_epoch[best][name], abs=1e-12)
    others = [e for e in by_epoch if by_epoch[e] != by_epoch[best]]
    assert others, "every epoch scored the same: this trial cannot tell the best epoch from another"


@pytest.mark.parametrize("edit, message", [
    (dict(family="synthetic", compare="{x: [a, b]}"), "the synthetic family does not classify sentences"),
    (dict(fixed=", augment: irony"), "augment 'irony' is not a phenomenon"),
    (dict(evaluate="[missing.yaml]"), "missing.yaml: cannot read the test bed"),
    (dict(evaluate="[notes.md]"), "neither a test bed (.yaml) nor a table"),
    (dict(fixed=", augment: negation, augment_factor: 1001"), "limit for augment_factor: expected an integer in [0, 1000]"),
    (dict(fixed=", augment: [negation]"), "fixed.augment: expected a single value"),
    (dict(compare="{architecture: [fc, rnn]}"), "compare.architecture: 'rnn' is outside the sentence family's limit"),
])
def test_evaluate_and_augment_mistakes_exit_2_before_anything_runs(tmp_path, edit, message):
    text = toy_yaml(tmp_path, **{k: v for k, v in edit.items() if k in ("fixed", "evaluate", "compare", "family")})
    if edit.get("family") == "synthetic":
        text = re.sub(r"task: .*\n", "", text).replace("fixed: {lr: 1.0e-2}", "")
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    r = subprocess.run([sys.executable, "-m", "seedsweep", "check", str(path)], capture_output=True, text=True)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert message in r.stderr and str(path) in r.stderr


def test_an_evaluation_table_whose_labels_the_dataset_lacks_is_named(tmp_path):
    table = tmp_path / "extra.tsv"
    table.write_text("text\tlabel\nfine film\tneutral\n")
    sp = parse_space(toy_yaml(tmp_path, evaluate=f"[{table}]"), path=str(tmp_path / "t.yaml"))
    from seedsweep.study.errors import UserError

    with pytest.raises(UserError, match=r"extra.tsv \(extra\).*label 'neutral' is not one of the dataset's labels"):
        SentenceModel(sp, {"architecture": "fc"}, 0)


def test_a_transformer_trial_scores_the_evaluation_sets_at_its_best_dev_epoch(tmp_path):
    text = toy_yaml(tmp_path, family="transformer", compare="{lr: [3.0e-3, 1.0e-3]}", epochs=2)
    text = text.replace("fixed: {lr: 1.0e-2}", "fixed: {model: tiny-random-bert, batch_size: 16, max_length: 24}")
    sp = parse_space(text, path=str(tmp_path / "t.yaml"))
    t = TrialSpec(key="c00000/lr=0.003/seed=1", config_id="c00000", choice="lr", option=3e-3, seed=1,
                  params=(("lr", 3e-3),))
    rows = []
    run_trial(sp, t, rows.append)
    results = rows[-1]["results"]
    sizes = {s: len(read_testbed(BED).sentences("eval", s)) for s in ("negation", "mixed", "sarcasm")}
    assert set(results) == {f"eval_{s}" for s in sizes}
    for s, n in sizes.items():                      # an accuracy over that set's sentences
        assert 0 <= results[f"eval_{s}"] <= 1 and abs(results[f"eval_{s}"] * n - round(results[f"eval_{s}"] * n)) < 1e-6


def test_the_phrases_hyperparameter_overrides_task_phrases_and_factor_0_adds_nothing(tmp_path):
    trees = ["(3 (2 The) (4 (4 great) (2 film)))", "(1 (2 A) (0 (0 dull) (2 plot)))", "(4 (3 Fun) (2 .))"]
    for split in ("train", "dev", "test"):
        (tmp_path / f"{split}.txt").write_text("\n".join(trees) + "\n")
    # by hand: the distinct labelled phrases that are not neutral (2): 3 roots, "great film", "great",
    # "dull plot", "dull", "Fun"
    phrases = {"The great film", "great film", "great", "A dull plot", "dull plot", "dull", "Fun .", "Fun"}
    text = f"""
name: phrases
family: sentence
samples: 1
seeds: 1
compare: {{phrases: [false, true]}}
task: {{dataset: sst2, path: {tmp_path}, phrases: true}}
evaluate: [{BED}]
fixed: {{architecture: fc, augment: negation, augment_factor: 0}}
"""
    sp = parse_space(text, path=str(tmp_path / "s.yaml"))
    roots, every = (SentenceModel(sp, {"phrases": p}, 1) for p in (False, True))
    assert len(roots.splits["train"][1]) == 3 and len(every.splits["train"][1]) == len(phrases)
    assert sorted(every.splits["train"][1].tolist()) == sorted([1, 1, 1, 0, 0, 0, 1, 1])
    follows_task = SentenceModel(sp, {}, 1)                  # null: task.phrases (true) decides
    assert len(follows_task.splits["train"][1]) == len(phrases)
