"""The contract between the parts: options stored and shown as written (the
manifest's ``compare``), family limits at ``check`` time, every named
resource resolved, options that are model folders and hub ids."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from seedsweep import analysis
from seedsweep.cli import main
from seedsweep.study.families.transformer import model_source
from tests.conftest import seedsweep_here
from tests.rundirs import write_synthetic_run
from tests.test_transformer import write_toy

REPO = Path(__file__).resolve().parents[1]

YES_NO = """
name: yesno
family: synthetic
samples: 5
seeds: 2
compare: {x: [yes, no]}
task: {effects: {x: {yes: 0.04}}, noise: 0.001}
space: {optimizer: {choice: [on, off]}}
"""


def test_yes_no_options_are_reported_as_written(tmp_path, capsys):
    out = tmp_path / "run"
    write_synthetic_run(out, YES_NO)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["compare"] == [{"choice": "x", "options": ["yes", "no"]}]
    assert main(["report", str(out)]) == 0
    text = capsys.readouterr().out
    header = next(line for line in text.splitlines() if line.startswith("| Task"))
    assert header.split("|")[-3:-1] == [" yes ", " no "]            # both options, as written, in file order
    row = next(line for line in text.splitlines() if "win share" in line)
    assert row.split("|")[2].strip() == "5"                          # paired configurations: every one
    assert "True" not in text and "False" not in text
    df = analysis.load(out)
    assert sorted(set(df["option"])) == ["no", "yes"] and set(df["optimizer"]) <= {"on", "off"}


def test_a_manifest_without_compare_reports_the_stored_options(tmp_path, capsys):
    out = tmp_path / "run"
    write_synthetic_run(out, YES_NO)
    manifest = json.loads((out / "manifest.json").read_text())
    del manifest["compare"]                                         # a run directory written before 'compare'
    (out / "manifest.json").write_text(json.dumps(manifest))
    assert main(["report", str(out)]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| Task"))
    assert sorted(h.strip() for h in header.split("|")[-3:-1]) == ["no", "yes"]


TAGGER = """
name: limits
family: tagger
samples: 2
seeds: 1
compare: {{classifier: [softmax, crf]}}
task: {{dataset: wnut16}}
{extra}
"""


@pytest.mark.parametrize("extra, where, words", [
    ("space: {layers: {int: [1, 9]}}", "space.layers", ["[1, 9]", "integer in [1, 3]"]),
    ("space: {dropout_output: {uniform: [0.1, 1.5]}}", "space.dropout_output", ["[0, 1)"]),
    ("space: {optimizer: {choice: [adam, adamw]}}", "space.optimizer", ["'adamw'", "nadam"]),
    ("space: {units: {loguniform: [8.0, 4096.0]}}", "space.units", ["[1, 2048]"]),
    ("fixed: {layers: 4}", "fixed: layers", ["4", "[1, 3]"]),
])
def test_sampled_and_fixed_values_outside_the_family_limits_fail_check(tmp_path, capsys, extra, where, words):
    path = tmp_path / "limits.yaml"
    path.write_text(TAGGER.format(extra=extra))
    out = tmp_path / "run"
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and where in err and all(w in err for w in words), err
    assert main(["run", str(path), "--out", str(out)]) == 2
    assert not out.exists(), "nothing may be written for a study that fails its checks"


def test_compared_options_outside_the_limits_fail_check(tmp_path, capsys):
    path = tmp_path / "limits.yaml"
    path.write_text(TAGGER.format(extra="").replace("[softmax, crf]", "[softmax, crf, hmm]"))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "compare.classifier" in err and "'hmm'" in err


def test_check_resolve_names_the_compared_embeddings_that_cannot_be_found(tmp_path, capsys):
    vectors = tmp_path / "tiny.txt"
    vectors.write_text("the 0.1 0.2\n, 0.3 0.4\n")
    missing = tmp_path / "nowhere.txt"
    path = tmp_path / "embeddings.yaml"
    path.write_text(TAGGER.format(extra="").replace("compare: {classifier: [softmax, crf]}",
                                                     f"compare: {{embeddings: [{vectors}, {missing}]}}"))
    assert main(["check", str(path)]) == 0                           # schema only: no file access
    capsys.readouterr()
    assert main(["check", "--resolve", str(path)]) == 2
    err = capsys.readouterr().err
    assert "compare.embeddings" in err and str(missing) in err, err
    path.write_text(path.read_text().replace(str(missing), "glove-6b-50d"))
    assert main(["check", "--resolve", str(path)]) == 0


def test_the_rg2017_embeddings_study_resolves_every_compared_file(tmp_path):
    """search_spaces/rg2017/embeddings.yaml compares three vector sets, two of
    them files found through SEEDSWEEP_EMBEDDINGS: resolution looks for each
    (the corpus swapped for the packaged WNUT-16, so only embeddings can be missing)."""
    text = (REPO / "search_spaces" / "rg2017" / "embeddings.yaml").read_text()
    assert "task: {dataset: conll2000}" in text
    study_file = tmp_path / "embeddings.yaml"
    study_file.write_text(text.replace("task: {dataset: conll2000}", "task: {dataset: wnut16}"))
    folder = tmp_path / "vectors"
    folder.mkdir()
    env = {**os.environ, "SEEDSWEEP_EMBEDDINGS": str(folder)}

    def check() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "seedsweep", "check", "--resolve", str(study_file)],
                              capture_output=True, text=True, env=env, timeout=300)

    r = check()
    assert r.returncode == 2 and "compare.embeddings" in r.stderr and "komninos" in r.stderr, r.stderr
    (folder / "komninos.txt").write_text("the 0.1 0.2\n")
    r = check()
    assert r.returncode == 2 and "levy_deps" in r.stderr, r.stderr
    (folder / "levy_deps.txt").write_text("the 0.3 0.4\n")
    r = check()
    assert r.returncode == 0, r.stderr
    assert "embeddings komninos" in r.stdout and "embeddings levy_deps" in r.stdout


def test_model_options_with_a_slash_run_end_to_end(tmp_path, worker_ray):
    """A folder (``./models/minilm``, relative to where the study is started)
    and a hub id found on the model search path, both holding the packaged
    MiniLM, compared in one study on a private local Ray."""
    packaged = Path(model_source("all-minilm-l6-v2"))
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "minilm").symlink_to(packaged, target_is_directory=True)
    hub = tmp_path / "hub" / "sentence-transformers"
    hub.mkdir(parents=True)
    (hub / "all-MiniLM-L6-v2").symlink_to(packaged, target_is_directory=True)
    files = write_toy(tmp_path)
    options = ["./models/minilm", "sentence-transformers/all-MiniLM-L6-v2"]
    (tmp_path / "models.yaml").write_text(f"""
name: slash
family: transformer
samples: 1
seeds: 1
compare: {{model: [{options[0]}, {options[1]}]}}
task: {{dataset: table, name: toy, train: {files['train']}, dev: {files['dev']}, test: {files['test']}}}
fixed: {{batch_size: 32, max_length: 16, lr: 1.0e-4}}
train: {{max_epochs: 1, patience: 1}}
""")
    env = {**os.environ, "SEEDSWEEP_MODELS": str(tmp_path / "hub"), "RAY_AUTH_MODE": "disabled"}
    cli = [sys.executable, "-m", "seedsweep"]

    def seedsweep(*args: str) -> str:
        if args[0] != "run":            # what check, status and report say: in this process
            r = seedsweep_here(*args, cwd=tmp_path, env=env)
        else:
            r = subprocess.run(cli + list(args), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, r.stderr[-3000:]
        return r.stdout + r.stderr

    seedsweep("check", "--resolve", "models.yaml")
    seedsweep("run", "models.yaml", "--out", "run", "--address", worker_ray, "--quiet")
    df = analysis.load(tmp_path / "run")
    assert sorted(df["option"]) == sorted(options) and sorted(df["model"]) == sorted(options)
    assert set(df["status"]) == {"ok"}, df[["option", "status", "reason"]]
    assert sorted(df["trial_key"]) == sorted(f"c00000/model={o}/seed=1" for o in options)
    assert len(list((tmp_path / "run" / "trials").glob("*.parquet"))) == 2
    status = seedsweep("status", "run")
    assert all(o in status for o in options), status
    report = seedsweep("report", "run")
    header = next(line for line in report.splitlines() if line.startswith("| Task"))
    assert [h.strip() for h in header.split("|")[-3:-1]] == options
    # resume: the keys round-trip
    again = seedsweep("run", "models.yaml", "--out", "run", "--quiet", "--address", worker_ray)
    assert "2 already stored, 0 to run" in again
