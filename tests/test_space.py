"""Search-space validation: every malformed file gives one paragraph naming the
file and key, exit code 2, and nothing on disk."""

from __future__ import annotations

import subprocess
import sys

import pytest

from seedsweep.cli import main
from seedsweep.study import UserError, load_space
from tests.conftest import REPO

GOOD = """
name: demo
family: synthetic
samples: 4
seeds: 2
compare:
  classifier: [softmax, crf]
space:
  dropout: {choice: [none, naive, variational]}
  dropout_rate: {choice: [0.05, 0.5], when: {dropout: [naive, variational]}}
  lr: {loguniform: [1.0e-4, 1.0e-2]}
  layers: {int: [1, 3]}
"""

# (label, YAML text, words the message must contain)
BAD = [
    ("unknown top-level key", GOOD + "sampels: 3\n", ["sampels", "Did you mean 'samples'"]),
    ("wrong type", GOOD.replace("samples: 4", "samples: four"), ["samples", "whole number", "'four'"]),
    ("missing required key", GOOD.replace("family: synthetic\n", ""), ["'family'", "missing"]),
    ("empty options", GOOD.replace("[softmax, crf]", "[]"), ["compare.classifier", "empty"]),
    ("one option only", GOOD.replace("[softmax, crf]", "[crf]"), ["compare.classifier", "two or more"]),
    ("duplicate options", GOOD.replace("[softmax, crf]", "[crf, crf]"), ["compare.classifier", "twice"]),
    ("negative seeds", GOOD.replace("seeds: 2", "seeds: -2"), ["seeds", ">= 1"]),
    ("negative seed in list", GOOD.replace("seeds: 2", "seeds: [1, -3]"), ["seeds[1]", ">= 0"]),
    ("duplicate seeds", GOOD.replace("seeds: 2", "seeds: [1, 1]"), ["seeds", "twice"]),
    ("unknown family", GOOD.replace("family: synthetic", "family: lstm"), ["family", "'lstm'", "synthetic"]),
    ("when names unknown parameter", GOOD.replace("when: {dropout:", "when: {droput:"),
     ["space.dropout_rate.when.droput", "Did you mean 'dropout'"]),
    ("when names unknown value", GOOD.replace("[naive, variational]}}", "[naive, gaussian]}}"),
     ["when.dropout", "'gaussian'"]),
    ("unreadable YAML", GOOD.replace("compare:\n", "compare: [\n"), ["not valid YAML", "line"]),
    ("duplicate mapping key", GOOD + "seeds: 3\n", ["duplicate key 'seeds'"]),
    ("empty file", "", ["empty"]),
    ("reserved name", GOOD.replace("layers:", "seed:"), ["space.seed", "column of the trials table"]),
    ("mixed option types", GOOD.replace("[0.05, 0.5]", "[none, 0.5]"), ["dropout_rate.choice", "mix types", "null"]),
    ("empty range", GOOD.replace("[1, 3]", "[3, 1]"), ["space.layers.int", "empty"]),
    ("non-positive log range", GOOD.replace("[1.0e-4, 1.0e-2]", "[0.0, 1.0e-2]"), ["loguniform", "> 0"]),
    ("two distributions", GOOD.replace("{int: [1, 3]}", "{int: [1, 3], choice: [1]}"), ["exactly one distribution"]),
    ("unknown train key", GOOD + "train: {epochs: 3}\n", ["train.epochs", "max_epochs"]),
    ("bad mode", GOOD + "train: {mode: maximise}\n", ["train.mode", "max, min"]),
    ("bad gpu fraction", GOOD + "resources: {gpu: 1.5}\n", ["resources.gpu", "fraction"]),
    ("name in compare and space", GOOD.replace("  layers:", "  classifier:"), ["space.classifier", "also given"]),
    ("allocate zero MiB", GOOD + "task: {allocate: {crf: 0}}\n", ["task.allocate.crf", "whole number of MiB >= 1"]),
    ("allocate for no option", GOOD + "task: {allocate: {lstm: 64}}\n", ["task.allocate.lstm", "not a compared option"]),
    ("option with equals sign", GOOD.replace("[softmax, crf]", "[softmax, crf=v2]"), ["'crf=v2'", "trial key"]),
]


def test_good_file_parses_with_documented_defaults(space_file):
    space = load_space(space_file(GOOD))
    assert space.n_trials == 4 * 2 * 2
    assert space.seeds == (1, 2)
    assert space.sampler_seed == 0 and space.sampler == "random"
    assert space.train.patience == 3 and space.train.mode == "max"
    assert space.resources.cpu == 1.0 and space.resources.gpu == 0.0
    assert [p.name for p in space.params] == ["dropout", "dropout_rate", "lr", "layers"]


@pytest.mark.parametrize("label,text,words", BAD, ids=[b[0] for b in BAD])
def test_malformed_file_exits_2_with_one_paragraph_and_creates_nothing(space_file, tmp_path, capsys, label, text, words):
    path = space_file(text)
    out = tmp_path / "run"
    code = main(["run", str(path), "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert not out.exists(), "a bad file must not create the run directory"
    assert "\n" not in err, f"one paragraph expected, got:\n{err}"
    assert str(path) in err
    for word in words:
        assert word in err, f"{label}: {word!r} not in {err!r}"


def test_missing_file_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="no such search-space file"):
        load_space(tmp_path / "nope.yaml")


def test_real_cli_exit_code_and_check_output(space_file, tmp_path):
    bad = space_file(GOOD.replace("samples: 4", "samples: 0"), "bad.yaml")
    proc = subprocess.run([sys.executable, "-m", "seedsweep", "check", str(bad)], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 2
    assert "samples" in proc.stderr and ">= 1" in proc.stderr
    good = space_file(GOOD, "good.yaml")
    proc = subprocess.run([sys.executable, "-m", "seedsweep", "check", str(good)], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert "4 configurations" in proc.stdout and "= 16 trials" in proc.stdout


def test_shipped_search_spaces_validate():
    for path in sorted((REPO / "search_spaces").glob("*.yaml")):
        if "runs/sst2_test_phrases.tsv" in path.read_text():
            continue        # reads a table made from the shared data: tests/test_search_spaces.py makes it, then checks
        load_space(path)


def test_yes_no_on_off_stay_option_names(space_file):
    sp = load_space(space_file(GOOD.replace("[softmax, crf]", "[yes, no]") + "fixed: {bidirectional: on, frozen: true}\n"))
    assert sp.choices["classifier"] == ("yes", "no")
    assert dict(sp.fixed) == {"bidirectional": "on", "frozen": True}


def test_an_unreachable_cluster_address_fails_fast_with_nothing_created(space_file, tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["run", str(space_file(GOOD)), "--out", str(out), "--address", "127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code == 2 and "--address 127.0.0.1:9" in err and "nothing answers" in err
    assert not out.exists()


def test_a_corrupt_part_is_a_user_error_naming_the_file(tmp_path, capsys):
    run_dir = tmp_path / "run"
    (run_dir / "trials").mkdir(parents=True)
    (run_dir / "manifest.json").write_text('{"study": "x", "n_trials": 1}')
    bad = run_dir / "trials" / "c00000%2Fc=a%2Fseed=1.parquet"
    bad.write_bytes(b"PAR1 this is not parquet")
    assert main(["status", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "cannot be read" in err and "run again" in err


def test_status_of_a_folder_that_is_not_a_run_directory(tmp_path, capsys):
    assert main(["status", str(tmp_path)]) == 2
    assert "no manifest.json" in capsys.readouterr().err


def test_a_grid_over_the_limit_is_refused_by_check_and_run_before_anything_is_sampled(space_file, tmp_path, capsys,
                                                                                        monkeypatch):
    path = space_file(GOOD.replace("samples: 4", "samples: 100000000000"))
    out = tmp_path / "run"
    for argv in (["check", str(path)], ["run", str(path), "--out", str(out)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert f"{path}: samples" in err and "400,000,000,000 trials" in err and "1,000,000" in err, err
        assert "SEEDSWEEP_MAX_TRIALS" in err
    assert not out.exists()
    monkeypatch.setenv("SEEDSWEEP_MAX_TRIALS", "15")
    assert main(["check", str(space_file(GOOD))]) == 2                 # 4 x 2 x 2 = 16 > 15
    monkeypatch.setenv("SEEDSWEEP_MAX_TRIALS", "16")
    assert main(["check", str(space_file(GOOD))]) == 0


REPEATED = """
name: repeated
family: synthetic
samples: 8
seeds: 2
compare: {classifier: [softmax, crf]}
"""


def test_check_warns_when_configurations_repeat_and_they_do_train_the_same_trials(space_file, tmp_path, capsys):
    from seedsweep.analysis import load
    from tests.rundirs import write_synthetic_run

    cases = {REPEATED: "all 8 configurations are the same one",
             REPEATED + "space: {optimizer: {choice: [adam, nadam]}}\n": "draws only 2 distinct configurations",
             REPEATED + "space: {lr: {loguniform: [0.001, 0.1]}}\n": None,
             REPEATED.replace("samples: 8", "samples: 1"): None}
    for text, warning in cases.items():
        assert main(["check", str(space_file(text))]) == 0
        out = capsys.readouterr().out
        assert ("warning:" in out) == (warning is not None) and (warning or "") in out, (text, out)
    # the encoder family draws its sentences per configuration: ten configurations without a space differ
    assert main(["check", str(REPO / "search_spaces" / "sst5_encoders.yaml")]) == 0
    assert "warning:" not in capsys.readouterr().out
    # what the warning says, seen in stored trials: the 8 configurations score alike, seed by seed
    write_synthetic_run(tmp_path / "run", REPEATED)
    df = load(tmp_path / "run")
    assert df.config_id.nunique() == 8
    assert (df.groupby(["option", "seed"], observed=True).test_score.nunique() == 1).all()
