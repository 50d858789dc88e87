"""The transformer family and its data: SST trees, (text, label) tables, the
fine-tuning protocol with tiny randomly initialised BERTs (CPU, seconds each),
and a real Ray run that stores confusion matrices and collapsed runs."""

from __future__ import annotations

import contextlib
import os
import pickle
import random
import subprocess
import sys
from pathlib import Path

import pytest

from seedsweep import analysis
from seedsweep import study
from seedsweep.study.errors import UserError
from seedsweep.study.execution.trial import run_trial
from seedsweep.study.families.sentencedata import load_sentences, read_sst_trees, read_table
from seedsweep.study.schema import TrialSpec
from seedsweep.study.spec.spacefile import parse_space
from seedsweep.study.store.rundir import RunDir
from tests.conftest import seedsweep_here

DATA = Path(os.environ.get("SEEDSWEEP_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
REPO = Path(__file__).resolve().parents[1]

TREES = """(3 (2 It) (4 (2 's) (4 (3 a) (4 (4 (2 -LRB-) (4 great) (2 -RRB-)) (2 film)))))
(1 (2 A) (1 (1 dull) (2 (2 and\\/or) (2 film))))

(2 (2 It) (2 exists))
"""


def test_sst_trees_give_root_sentences_phrases_and_sst2_labels(tmp_path):
    f = tmp_path / "train.txt"
    f.write_text(TREES)
    roots = read_sst_trees(f)
    assert roots.texts == ["It 's a ( great ) film", "A dull and/or film", "It exists"]
    assert roots.labels == [3, 1, 2]
    phrases = read_sst_trees(f, phrases=True)
    assert "dull" in phrases.texts and phrases.texts.count("film") == 1      # phrases are deduplicated
    assert phrases.labels[phrases.texts.index("( great ) film")] == 4
    binary = read_sst_trees(f, binary=True)
    assert binary.texts == ["It 's a ( great ) film", "A dull and/or film"] and binary.labels == [1, 0]


@pytest.mark.parametrize("text, problem", [("(3 (2 It) (4 works)", "unbalanced"), ("(x (2 It))", "not a labelled"),
                                           ("(7 (2 It))", "outside 0–4")])
def test_a_broken_tree_names_the_file_and_line(tmp_path, text, problem):
    f = tmp_path / "dev.txt"
    f.write_text("(2 (2 fine))\n" + text + "\n")
    with pytest.raises(UserError) as err:
        read_sst_trees(f)
    assert f"{f}:2" in str(err.value) and problem in str(err.value)


def test_tsv_and_csv_tables_and_their_errors(tmp_path):
    tsv = tmp_path / "train.tsv"
    tsv.write_text("id\ttext\tlabel\n1\tgood film\tpos\n2\tbad film\tneg\n")
    split, names = read_table(tsv)
    assert names == ("neg", "pos") and split.texts == ["good film", "bad film"] and split.labels == [1, 0]
    csv = tmp_path / "dev.csv"
    csv.write_text('sentence,gold\n"fine, really",pos\n')
    split, _ = read_table(csv, text_column="sentence", label_column="gold", label_names=names)
    assert split.texts == ["fine, really"] and split.labels == [1]
    with pytest.raises(UserError, match=r"dev.csv:1: no column 'text'"):
        read_table(csv)
    csv.write_text("text,label\nok,maybe\n")
    with pytest.raises(UserError, match=r"dev.csv:2: label 'maybe' does not occur"):
        read_table(csv, label_names=names)


@pytest.mark.skipif(not (DATA / "sst5" / "train.txt").is_file(),
                    reason=f"SST-5 not found under {DATA} (set SEEDSWEEP_SHARED_DATA to the shared data folder)")
def test_the_official_sst_splits_have_the_published_sizes_and_label_counts():
    sst5 = load_sentences({"dataset": "sst5", "path": str(DATA / "sst5")})
    assert (len(sst5.train), len(sst5.dev), len(sst5.test)) == (8544, 1101, 2210)
    assert [sst5.test.labels.count(k) for k in range(5)] == [279, 633, 389, 510, 399]
    sst2 = load_sentences({"dataset": "sst2", "path": str(DATA / "sst5")})
    assert (len(sst2.train), len(sst2.dev), len(sst2.test)) == (6920, 872, 1821)


# ------------------------------------------------------------ the protocol

def write_toy(folder: Path, seed: int = 0) -> dict[str, str]:
    """A learnable three-way sentiment task: the label is in the words."""
    rng = random.Random(seed)
    words = {"neg": ["awful", "dull", "bad"], "neu": ["table", "film", "plain"], "pos": ["great", "superb", "fun"]}
    files = {}
    for split, n in (("train", 240), ("dev", 60), ("test", 90)):
        rows = ["text\tlabel"]
        for i in range(n):
            label = ["neg", "neu", "pos"][i % 3] if split != "train" else rng.choice(["neg", "neu", "pos", "neu"])
            text = " ".join(rng.choice(words[label]) for _ in range(3)) + " " + rng.choice(words["neu"])
            rows.append(f"{text}\t{label}")
        (folder / f"{split}.tsv").write_text("\n".join(rows) + "\n")
        files[split] = str(folder / f"{split}.tsv")
    return files


def space(folder: Path, fixed: str = "", *, epochs: int = 4, compare: str = "{lr: [3.0e-3, 1.0e-3]}",
          dropout: float = 0.0):
    return parse_space(toy_yaml(folder, fixed, epochs=epochs, compare=compare, dropout=dropout),
                       path=str(folder / "toy.yaml"))


def toy_yaml(folder: Path, fixed: str = "", *, epochs: int = 4, compare: str = "{lr: [3.0e-3, 1.0e-3]}",
             dropout: float = 0.0) -> str:
    files = write_toy(folder)
    return f"""
name: toy
family: transformer
samples: 1
seeds: 2
compare: {compare}
task: {{dataset: table, name: toy, train: {files['train']}, dev: {files['dev']}, test: {files['test']}}}
fixed: {{model: tiny-random-bert, batch_size: 16, max_length: 16, classifier_dropout: {dropout}{fixed}}}
train: {{max_epochs: {epochs}, patience: {epochs}}}
"""


def trial(lr=3e-3, seed=1):
    return TrialSpec(key=f"c00000/lr={lr}/seed={seed}", config_id="c00000", choice="lr", option=lr, seed=seed,
                     params=(("lr", lr),))


def outcome(sp, t):
    rows = []
    run_trial(sp, t, rows.append)
    return rows


def test_the_stored_test_score_is_the_one_of_the_best_dev_epoch(tmp_path):
    rows = outcome(space(tmp_path), trial())
    final = rows[-1]
    assert final["status"] == "ok", final["reason"]
    dev = [r["dev_score"] for r in rows]
    best = dev.index(max(dev))                                  # the first epoch with the best dev score
    assert final["best_epoch"] == best + 1
    assert final["dev_score_best"] == dev[best]
    assert final["test_score_best"] == rows[best]["test_score"]
    assert final["test_score_max"] == max(r["test_score"] for r in rows)
    assert final["test_score_last"] == rows[-1]["test_score"]
    assert final["dev_score_best"] > 0.5                        # it learnt the toy task
    for r in rows:                                              # the losses of every epoch, both splits
        assert r["dev_loss"] > 0 and r["test_loss"] > 0
    for r in rows:                                              # confusion matrices add up to the scores
        c = r["confusion"]
        assert c["labels"] == ["neg", "neu", "pos"]
        test = c["test"]
        assert sum(map(sum, test)) == 90
        assert sum(test[k][k] for k in range(3)) / 90 == pytest.approx(r["test_score"])


def test_same_seed_gives_identical_scores_on_cpu_and_another_seed_does_not(tmp_path):
    sp = space(tmp_path, epochs=2, dropout=0.2)
    key = lambda rows: [(r["train_loss"], r["dev_score"], r["test_score"]) for r in rows]  # noqa: E731
    a, b = outcome(sp, trial()), outcome(sp, trial())
    assert key(a) == key(b)
    c = outcome(sp, trial(seed=2))
    assert [r["train_loss"] for r in c] != [r["train_loss"] for r in a]


def test_a_run_that_cannot_learn_is_kept_as_diverged_with_its_reason(tmp_path):
    rows = outcome(space(tmp_path, epochs=2, compare="{lr: [0.0, 1.0e-3]}"), trial(lr=0.0))
    final = rows[-1]
    assert final["status"] == "diverged"
    assert final["reason"].startswith("collapsed: ")
    assert len(rows) == 2 and final["test_score_best"] == final["test_score_best"]    # scores kept, not NaN


def test_early_stopping_on_dev_loss_selects_by_loss(tmp_path):
    sp = space(tmp_path, ", stop_on: loss", epochs=3)
    from seedsweep.study.families.transformer import TransformerModel

    model = TransformerModel(sp, {"lr": 3e-3}, 1)
    model.train_epoch(1)
    dev, test, select = model.evaluate(1)
    _, loss = model._predict("dev")
    assert select == pytest.approx(-loss) and 0 <= dev <= 1


def test_the_original_protocol_is_adam_at_a_constant_rate_and_adamw_decays_linearly(tmp_path):
    from seedsweep.study.families.transformer import TransformerModel

    rates = {}
    for optimizer in ("adam", "adamw"):
        sp = space(tmp_path, f", optimizer: {optimizer}, warmup: 0.0", epochs=3)
        model = TransformerModel(sp, {"lr": 3e-3}, 1)
        assert type(model.optimizer).__name__ == {"adam": "Adam", "adamw": "AdamW"}[optimizer]
        seen = []
        for epoch in (1, 2, 3):
            model.train_epoch(epoch)
            seen.append(model.optimizer.param_groups[0]["lr"])
        rates[optimizer] = seen
    assert rates["adam"] == [3e-3, 3e-3, 3e-3]
    # 240 training texts in batches of 16: 15 steps an epoch, 45 in all, decaying linearly to 0 without warm-up
    assert rates["adamw"] == pytest.approx([2e-3, 1e-3, 0.0], abs=1e-12)


def test_bf16_autocast_trains_and_scores(tmp_path):
    rows = outcome(space(tmp_path, ", precision: bf16", epochs=1), trial())
    assert rows[-1]["status"] in ("ok", "diverged") and 0 <= rows[-1]["test_score_best"] <= 1


_WATCHING: list[list] = []


def _audit(event: str, args: tuple) -> None:
    if _WATCHING and event in ("socket.getaddrinfo", "socket.connect"):
        _WATCHING[-1].append((event, str(args[:2])))


@contextlib.contextmanager
def network_attempts():
    """The name lookups and connections this process tries inside the block (Python's audit events; the
    hook stays installed, idle outside a block)."""
    if not getattr(network_attempts, "hooked", False):
        sys.addaudithook(_audit)
        network_attempts.hooked = True
    found: list = []
    _WATCHING.append(found)
    try:
        yield found
    finally:
        _WATCHING.pop()


def test_a_model_folder_loads_and_errors_name_the_model(tmp_path):
    from seedsweep.study.families.transformer import TransformerModel, model_source

    sp = space(tmp_path)
    model = TransformerModel(sp, {"lr": 3e-3}, 1)
    folder = tmp_path / "saved"
    model.net.save_pretrained(folder)
    model_source("all-minilm-l6-v2")                            # the packaged weights are installed
    with pytest.raises(UserError, match="no config.json"):
        model_source(str(tmp_path))
    with pytest.raises(UserError, match="no such folder"):
        model_source("./nowhere")
    assert model_source("bert-base-uncased") == "bert-base-uncased"     # a hub name
    hub = tmp_path / "hub.yaml"
    hub.write_text(sp.text.replace("tiny-random-bert", "no-such-org/no-such-model"))
    # HF_HUB_OFFLINE set after the hub library was imported (by TransformerModel above) still holds: no
    # connection is tried (without internet, the check waited out the hub's retries: 23.8 s in
    # benchmarks/results/hub-offline-2026-12-07.txt)
    with network_attempts() as tried:
        r = seedsweep_here("check", "--resolve", str(hub), env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 2 and "model no-such-org/no-such-model: cannot load it" in r.stderr
    assert tried == [], tried
    sp_dir = parse_space(sp.text.replace("tiny-random-bert", str(folder)), path=sp.path)
    # the saved folder has weights but no tokenizer: the tokenizer is the model's own concern
    (folder / "vocab.txt").write_text(Path(model_source("all-minilm-l6-v2"), "vocab.txt").read_text())
    loaded = TransformerModel(sp_dir, {"lr": 3e-3}, 1)
    assert loaded.net.config.hidden_size == 32


def test_user_errors_survive_pickling_from_a_worker():
    err = pickle.loads(pickle.dumps(UserError("task.path x", "missing.", "Fix it.")))
    assert (err.where, err.problem, err.fix) == ("task.path x", "missing.", "Fix it.")


@pytest.mark.parametrize("fixed, message", [
    (", units: 3", "'units' is not a hyperparameter of the transformer family"),
    (", stop_on: f1", "stop_on"),
    (", max_length: 1", "max_length"),
])
def test_check_refuses_bad_transformer_settings_with_exit_2(tmp_path, fixed, message):
    f = tmp_path / "bad.yaml"
    f.write_text(toy_yaml(tmp_path, fixed))
    r = seedsweep_here("check", str(f))
    assert r.returncode == 2 and message in r.stderr and str(f) in r.stderr


@pytest.mark.parametrize("name", ["sst5_models.yaml", "sst5_offline.yaml"])
def test_the_sst5_study_files_pass_check_offline(name):
    r = seedsweep_here("check", str(REPO / "search_spaces" / name), env={**os.environ, "SEEDSWEEP_DATA": "/nonexistent"})
    assert r.returncode == 0, r.stderr
    assert "trials" in r.stdout


@pytest.mark.slow
def test_a_study_on_ray_stores_confusion_matrices_and_collapsed_runs(tmp_path, ray_local):
    sp = space(tmp_path, epochs=4, compare="{lr: [0.0, 3.0e-3]}")
    f = tmp_path / "toy.yaml"
    f.write_text(sp.text)
    out = tmp_path / "run"
    summary = study.run(f, out)
    assert summary.total == 4
    df = analysis.load(out)
    assert set(df.status[df.lr == 0.0]) == {"diverged"}
    assert df.reason[df.lr == 0.0].str.startswith("collapsed").all()
    assert set(df.status[df.lr > 0]) == {"ok"}
    epochs = analysis.load_epochs(out)                   # the protocol's record: losses and the last epoch's score
    assert epochs.dev_loss.notna().all() and epochs.test_loss.notna().all()
    last = epochs.sort_values("epoch").groupby("trial_key").test_score.last()
    assert (df.set_index("trial_key").test_score_last == last.reindex(df.trial_key).to_numpy()).all()
    confusion = RunDir(out).read_confusion().to_pandas()
    assert set(confusion.trial_key) == set(df.trial_key)
    per = confusion.groupby(["trial_key", "epoch", "split"])["count"].sum()
    assert set(per.xs("test", level="split")) == {90} and set(per.xs("dev", level="split")) == {60}
    progress = RunDir(out).read_progress()               # the driver's last word: nothing running
    assert progress["running"] == 0 and progress["done_this_run"] == 4
    RunDir(out).compact()
    assert not list((out / "confusion").glob("*.parquet"))
    assert RunDir(out).read_confusion().num_rows == len(confusion)


@pytest.mark.slow
def test_relative_paths_in_the_study_file_mean_the_folder_the_study_was_started_from(tmp_path, worker_ray):
    folder = tmp_path / "data"
    folder.mkdir()
    text = toy_yaml(folder, epochs=1).replace(str(folder), "data")        # task.train: data/train.tsv, ...
    (tmp_path / "toy.yaml").write_text(text.replace("seeds: 2", "seeds: 1"))
    # joined to the worker's Ray, whose workers run in another folder than this driver: only the driver
    # knows what data/ means here
    r = subprocess.run([sys.executable, "-m", "seedsweep", "run", "toy.yaml", "--out", "run", "--address",
                        worker_ray, "--quiet"], cwd=tmp_path, capture_output=True, text=True,
                       env={**os.environ, "RAY_AUTH_MODE": "disabled"}, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    df = analysis.load(tmp_path / "run")
    assert len(df) == 2 and set(df.status) <= {"ok", "diverged"}, df.reason.tolist()


def write_ambiguous_eval(folder: Path, seed: int = 0) -> None:
    """Dev and test texts with two words of their label and two of another:
    accuracy moves from epoch to epoch instead of jumping to 1."""
    rng = random.Random(seed)
    words = {"neg": ["awful", "dull", "bad"], "neu": ["table", "film", "plain"], "pos": ["great", "superb", "fun"]}
    for split, n in (("dev", 60), ("test", 90)):
        rows = ["text\tlabel"]
        for i in range(n):
            label = ["neg", "neu", "pos"][i % 3]
            other = rng.choice([w for w in words if w != label])
            text = [rng.choice(words[label]) for _ in range(2)] + [rng.choice(words[other]) for _ in range(2)]
            rng.shuffle(text)
            rows.append(" ".join(text) + f"\t{label}")
        (folder / f"{split}.tsv").write_text("\n".join(rows) + "\n")


def test_early_stopping_stops_before_max_epochs_and_keeps_the_best_dev_epochs_test_score(tmp_path):
    """patience 1 of 12 epochs: the run stops at the first epoch that is not
    better on dev, and the stored test score is the best dev epoch's, not the last's."""
    sp = parse_space(toy_yaml(tmp_path, epochs=12).replace("patience: 12", "patience: 1"), "early.yaml")
    write_ambiguous_eval(tmp_path)
    assert sp.train.patience == 1 and sp.train.max_epochs == 12
    rows = outcome(sp, trial(lr=3e-3, seed=2))
    final = rows[-1]
    assert final["status"] == "ok", final["reason"]
    assert final["epochs_run"] < 12 and final["reason"].startswith("early stop"), final["reason"]
    assert final["best_epoch"] == final["epochs_run"] - 1                 # patience 1: one epoch without gain
    dev = [r["dev_score"] for r in rows]
    assert dev[final["best_epoch"] - 1] >= max(dev) and dev[-1] <= dev[final["best_epoch"] - 1]
    best_test, last_test = rows[final["best_epoch"] - 1]["test_score"], rows[-1]["test_score"]
    assert best_test != last_test, "the fixture must tell the best dev epoch's test score from the last one's"
    assert final["test_score_best"] == best_test
