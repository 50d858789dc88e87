"""Claims files: reading them, sealing them into a run directory before the
first trial (and refusing a changed file unless superseded), and the report's
claims section; the R&G worked example judged on the imported raw results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from seedsweep import analysis
from seedsweep.analysis.pages.report import comparisons_of
from seedsweep.analysis.reading.imported import import_csv
from seedsweep.analysis.stats.claims import judge
from seedsweep.study.errors import UserError
from seedsweep.study.spec.claimsfile import read_claims
from tests.conftest import seedsweep_here

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("SEEDSWEEP_SHARED_DATA", REPO.parent / "shared" / "data"))
RG_CSV = DATA / "rg2017" / "hyperparameter_results.csv.gz"

STUDY = """
name: sealed
family: synthetic
samples: 6
seeds: 2
compare:
  classifier: [softmax, crf]
task:
  effects: {classifier: {crf: 0.02}}
  noise: 0.003
space:
  lr: {loguniform: [1.0e-4, 1.0e-2]}
train: {max_epochs: 3, patience: 2}
"""
CLAIMS = """
source: "a synthetic study with a known answer"
deviations:
  - {what: "synthetic scores", why: "a test", impact: none}
claims:
  - {id: crf-wins, kind: share, choice: classifier, option: crf, target: 1.0, rule: {interval: true, gate: 0.5}}
  - {id: crf-better, kind: delta, choice: classifier, option: crf, other: softmax, target: 0.0, rule: {above: true}}
  - {id: crf-value, kind: value, where: {option: crf}, target: 0.81, rule: {band: 0.5}}
  - {id: softmax-wins, kind: share, choice: classifier, option: softmax, target: 1.0, rule: {interval: true, gate: 0.5}}
"""


def seedsweep(*args: str) -> subprocess.CompletedProcess:
    """A study runs as a command of its own; ``claims`` and ``report`` in this process."""
    if args[0] != "run":
        return seedsweep_here(*args)
    return subprocess.run([sys.executable, "-m", "seedsweep", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=600)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
            and p.name != ".lock"}


def sha256sum(path: Path) -> str:
    """The digest by coreutils, not by the code under test."""
    return subprocess.run(["sha256sum", str(path)], capture_output=True, text=True, check=True).stdout.split()[0]


def test_claims_are_sealed_before_the_first_trial_and_cannot_change_unless_superseded(tmp_path, joined_here):
    space = tmp_path / "study.yaml"
    space.write_text(STUDY)
    claims = tmp_path / "claims.yaml"
    claims.write_text(CLAIMS)
    out = tmp_path / "run"
    r = joined_here("run", str(space), "--out", str(out), "--claims", str(claims), "--quiet")
    assert r.returncode == 0, r.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    record = manifest["claims"]
    assert record["sha256"] == sha256sum(out / "claims.yaml") == sha256sum(claims)
    assert record["results_existed"] is False
    first_trial = min(analysis.load(out)["started_at"])
    assert record["sealed_at"] <= first_trial.isoformat()

    # a changed claims file: exit 2, nothing written
    claims.write_text(CLAIMS.replace("target: 0.81", "target: 0.79"))
    before = snapshot(out)
    r = seedsweep_here("run", str(space), "--out", str(out), "--claims", str(claims), "--quiet")   # refused
    assert r.returncode == 2 and "--supersede" in r.stderr and str(claims) in r.stderr
    assert snapshot(out) == before
    r = seedsweep("claims", "seal", str(claims), str(out))
    assert r.returncode == 2 and snapshot(out) == before

    # superseded with a reason: both kept, the new one sealed after results existed
    r = seedsweep("claims", "seal", str(claims), str(out), "--supersede", "the value target was a typo")
    assert r.returncode == 0, r.stderr
    record = json.loads((out / "manifest.json").read_text())["claims"]
    assert record["sha256"] == sha256sum(claims) and record["results_existed"] is True
    old = record["superseded"][0]
    assert old["reason"] == "the value target was a typo"
    assert sha256sum(out / old["file"]) == old["sha256"] == before_hash(before)

    # a resume without --claims keeps the record
    r = joined_here("run", str(space), "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    assert json.loads((out / "manifest.json").read_text())["claims"]["sha256"] == record["sha256"]

    text = seedsweep("report", str(out)).stdout
    assert "claims and verdicts" in text and "after the results existed" in text
    assert "superseded claims" in text and "the value target was a typo" in text
    assert "| crf-wins | share | 1 |" in text and "reproduced" in text
    assert "a fixed band ignores the run-to-run spread" in text
    assert "Outcome: partially reproduced" in text and "| softmax-wins | share | 0 |" in text
    assert "not reproduced" in text


def before_hash(files: dict[str, bytes]) -> str:
    import hashlib

    return hashlib.sha256(files["claims.yaml"]).hexdigest()


@pytest.mark.parametrize("text, where", [
    ("source: x\nclaims: []\n", "claims"),
    ("source: x\nclaims:\n  - {id: A, kind: share, target: 1, rule: {band: 1}}\n", "claims[0].id"),
    ("source: x\nclaims:\n  - {id: a, kind: share, choice: c, option: o, target: 1, rule: {interval: true}}\n",
     "claims[0].rule"),
    ("source: x\nclaims:\n  - {id: a, kind: rank, choice: c, option: o, rule: {band: 1}}\n", "claims[0].rule"),
    ("source: x\ndeviations: [{what: a, why: b, impact: big}]\nclaims:\n  - {id: a, kind: value, target: 1, "
     "rule: {band: 1}}\n", "deviations[0].impact"),
    ("claims:\n  - {id: a, kind: value, target: 1, rule: {band: 1}}\n", "source"),
    ("source: x\nclaims:\n  - {id: a, kind: guess, target: 1, rule: {band: 1}}\n", "claims[0].kind"),
    ("source: x\nclaims:\n  - {id: a, kind: share, choice: c, option: o, target: 1.5, rule: {band: 0.1}}\n",
     "claims[0].target"),
])
def test_a_bad_claims_file_is_refused_with_its_place(tmp_path, text, where):
    path = tmp_path / "claims.yaml"
    path.write_text(text)
    with pytest.raises(UserError) as err:
        read_claims(path)
    assert str(err.value).startswith(f"{path}: {where}")
    r = seedsweep("claims", "check", str(path))
    assert r.returncode == 2 and where in r.stderr


@pytest.mark.skipif(not RG_CSV.is_file(), reason=f"R&G raw results not found under {DATA} "
                                                  "(set SEEDSWEEP_SHARED_DATA to the shared data folder)")
def test_the_rg2017_classifier_claims_judged_on_the_raw_results(tmp_path):
    out = import_csv(RG_CSV, tmp_path / "rg")
    r = seedsweep("claims", "seal", "claims/rg2017_classifier.yaml", str(out))
    assert r.returncode == 0 and "after results existed" in r.stdout, r.stderr
    claims = read_claims(REPO / "claims" / "rg2017_classifier.yaml")
    specs, results = comparisons_of(out)
    df = analysis.load(out)
    verdicts = {c.id: judge(c, df, results=results, specs=specs) for c in claims.claims}
    # the estimates are the comparison's win shares
    shares = analysis.compare_tasks(df[df.Setting == "SingleTask"], "Decoder", options=["Softmax", "CRF"],
                                    ignore=["Backend"], results=results)
    assert verdicts["crf-chunking"].verdict.estimate == pytest.approx(shares["Chunking"].shares["CRF"])
    assert {k: v.verdict.verdict for k, v in verdicts.items()} == {
        "crf-chunking": "reproduced", "crf-ner": "reproduced", "crf-entities": "reproduced",
        "crf-pos": "inconclusive", "softmax-events": "inconclusive"}
    text = seedsweep("report", str(out)).stdout
    assert "Outcome: partially reproduced" in text and "after the results existed" in text


TAGGER = """
name: recorded
family: tagger
samples: 1
seeds: 1
compare:
  classifier: [softmax, crf]
task: {dataset: conll2000, train_sentences: 30, subset_seed: 0}
fixed: {units: 25, layers: 1, chars: none, embeddings: glove-6b-50d, batch_size: 16}
train: {max_epochs: 1, patience: 1}
"""


@pytest.mark.skipif(not (DATA / "conll2000").is_dir(), reason=f"the shared data folder is not at {DATA} "
                                                                 "(set SEEDSWEEP_SHARED_DATA)")
def test_the_manifest_records_every_file_a_study_read_the_packages_and_the_command(tmp_path, worker_ray):
    space = tmp_path / "study.yaml"
    space.write_text(TAGGER)
    out = tmp_path / "run"
    env = {**os.environ, "SEEDSWEEP_DATA": str(DATA)}
    r = subprocess.run([sys.executable, "-m", "seedsweep", "run", str(space), "--out", str(out), "--quiet",
                        "--address", worker_ray], capture_output=True, text=True, cwd=REPO, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    files = manifest["files"]
    corpus = sorted(str(p.resolve()) for p in (DATA / "conll2000").iterdir() if p.is_file())
    read = [f for f in files if f.startswith(str((DATA / "conll2000").resolve()))]
    assert read and set(read) <= set(corpus)
    for path in read:
        assert files[path] == sha256sum(Path(path))               # coreutils' digest of the shared file
    assert any(f.endswith("glove_6B_50d_emb.npy") for f in files)   # the packaged embeddings
    assert manifest["packages"]["numpy"] == __import__("numpy").__version__ and len(manifest["packages"]) > 50
    assert "run" in manifest["command"] and str(space) in manifest["command"]


def test_a_share_claim_s_interval_resamples_configurations_with_ties_split():
    from seedsweep.study.spec.claimsfile import parse_claims

    rows = []
    for cid in range(40):
        tie = cid < 20                                      # half the configurations tie exactly
        for option, score in (("crf", 0.9), ("softmax", 0.9 if tie else 0.8)):
            rows.append({"task": "t", "config_id": f"c{cid}", "choice": "classifier", "option": option, "seed": 1,
                         "status": "ok", "classifier": option, "test_score": score})
    df = __import__("pandas").DataFrame(rows)
    claim = parse_claims({"source": "x", "claims": [{"id": "a", "kind": "share", "choice": "classifier",
                                                     "option": "crf", "target": 0.75,
                                                     "rule": {"interval": True, "gate": 0.2}}]}).claims[0]
    r = judge(claim, df)
    assert r.verdict.estimate == 0.75 and r.n == 40                # 20 wins + 20 halves, by hand
    lo, hi = r.verdict.interval
    assert 0.6 < lo < 0.75 < hi <= 0.9 and r.verdict.verdict == "reproduced"


def test_the_report_lists_collapsed_runs_and_both_means_beside_band_and_interval_verdicts():
    import numpy as np
    import pandas as pd

    from seedsweep.study.spec.claimsfile import Claims, parse_claims
    from seedsweep.analysis.reading.claimverdicts import ClaimVerdicts, claim_verdict_tables

    rng = np.random.default_rng(0)
    scores = np.concatenate([rng.normal(70.3, 0.6, 98), [15.9, 9.3]])
    df = pd.DataFrame({"trial_key": [f"run-{i:03d}" for i in range(100)], "model": "m", "test_score": scores,
                       "status": ["ok"] * 98 + ["diverged"] * 2,
                       "reason": [None] * 98 + ["collapsed: best dev accuracy at the majority rate"] * 2})
    claims: Claims = parse_claims({"source": "the seed record", "claims": [
        {"id": "band", "kind": "value", "where": {"model": "m"}, "target": 70.3, "rule": {"band": 0.5}},
        {"id": "gated", "kind": "value", "where": {"model": "m"}, "target": 70.3,
         "rule": {"interval": True, "gate": 0.5}}]})
    results = [judge(c, df) for c in claims.claims]
    assert [r.verdict.verdict for r in results] == ["not reproduced", "inconclusive"]
    table = claim_verdict_tables(ClaimVerdicts(claims, results, "not reproduced", {"sealed_at": "t", "sha256": "x"}))[0][1]
    why = table.rows[0][-1]
    assert "run-098, run-099" in why and "2 of the 100 runs" in why
    assert f"{scores.mean():.4g} with them" in why and f"{scores[:98].mean():.4g} without them" in why
    assert "a fixed band ignores the run-to-run spread" in why


def test_a_rank_claim_ranks_the_options_within_each_block_and_refuses_a_shared_best():
    import pandas as pd

    from seedsweep.study.spec.claimsfile import parse_claims

    rows = []
    scores = {"d1": {"rocket": 0.9, "other": 0.8, "third": 0.7}, "d2": {"rocket": 0.8, "other": 0.8, "third": 0.6},
              "d3": {"rocket": 0.9, "other": 0.7, "third": 0.8}}
    for block, by_option in scores.items():
        for option, score in by_option.items():
            for seed in (1, 2):
                rows.append({"dataset": block, "classifier": option, "seed": seed, "status": "ok",
                             "test_score": score})
    df = pd.DataFrame(rows)
    claim = parse_claims({"source": "x", "claims": [{"id": "best", "kind": "rank", "choice": "classifier",
                                                     "option": "rocket", "blocks": "dataset",
                                                     "rule": {"best": True}}]}).claims[0]
    r = judge(claim, df)
    # by hand: ranks 1, 1.5, 1 -> 7/6 for rocket; other 2, 1.5, 3 -> 13/6
    assert str(r.rank) == "7/6" and r.verdict.verdict == "reproduced" and r.n == 3
    df.loc[(df.dataset == "d1") & (df.classifier == "other"), "test_score"] = 0.9
    df.loc[(df.dataset == "d3") & (df.classifier == "other"), "test_score"] = 0.9
    tied = judge(claim, df)
    assert str(tied.rank) == "3/2" and tied.verdict.verdict == "not reproduced" and "shared" in tied.verdict.why


def test_a_rank_claim_by_sd_ranks_the_largest_spread_first():
    import numpy as np
    import pandas as pd

    from seedsweep.study.spec.claimsfile import parse_claims

    rng = np.random.default_rng(3)
    spreads = {"POS": {"SGD": 0.2, "Adam": 0.01, "Nadam": 0.02}, "NER": {"SGD": 0.05, "Adam": 0.1, "Nadam": 0.01}}
    rows = [{"task": t, "Optimizer": o, "status": "ok", "test_score": 0.8 + s * rng.standard_normal()}
            for t, by in spreads.items() for o, s in by.items() for _ in range(40)]
    df = pd.DataFrame(rows)
    claim = parse_claims({"source": "x", "claims": [{"id": "spread", "kind": "rank", "choice": "Optimizer",
                                                     "option": "SGD", "statistic": "sd",
                                                     "rule": {"best": True}}]}).claims[0]
    # by hand: the sample standard deviations per task, ranked largest first
    sd = {t: {o: float(np.std(df[(df.task == t) & (df.Optimizer == o)].test_score, ddof=1)) for o in by}
          for t, by in spreads.items()}
    ranks = {o: np.mean([1 + sum(sd[t][p] > sd[t][o] for p in sd[t]) for t in sd]) for o in ("SGD", "Adam")}
    r = judge(claim, df)
    assert float(r.rank) == ranks["SGD"] == 1.5 < ranks["Adam"] and r.verdict.verdict == "reproduced"
    pos, ner = judge(claim, df[df.task == "POS"]), judge(claim, df[df.task == "NER"])
    assert float(pos.rank) == 1.0 and pos.verdict.verdict == "reproduced"
    assert float(ner.rank) == 2.0 and ner.verdict.verdict == "not reproduced"      # Adam spreads most on NER
    with pytest.raises(UserError, match="statistic"):
        parse_claims({"source": "x", "claims": [{"id": "v", "kind": "value", "statistic": "sd", "target": 0.1,
                                                 "rule": {"above": True}}]})


def test_a_delta_claim_with_unit_seed_pairs_each_seed_of_one_configuration():
    import numpy as np
    import pandas as pd

    from seedsweep.study.spec.claimsfile import parse_claims

    rng = np.random.default_rng(5)
    base = rng.normal(0.5, 0.05, size=7)                 # one configuration, 7 seeds: a population
    gain = np.array([0.10, 0.12, -0.01, 0.08, 0.09, 0.11, 0.07])
    rows = [{"config_id": "c00000", "choice": "augment_factor", "option": str(k), "augment_factor": k,
             "seed": s + 1, "status": "ok", "trial_key": f"c00000/augment_factor={k}/seed={s + 1}",
             "eval_negation": base[s] + (gain[s] if k == 4 else 0.0), "test_score": 0.8}
            for k in (0, 4) for s in range(7)]
    df = pd.DataFrame(rows)
    raw = {"id": "x4", "kind": "delta", "choice": "augment_factor", "option": 4, "other": 0,
           "score": "eval_negation", "target": 0.0, "rule": {"above": True}}
    by_seed = judge(parse_claims({"source": "x", "claims": [{**raw, "unit": "seed"}]}).claims[0], df)
    assert by_seed.n == 7 and by_seed.verdict.estimate == pytest.approx(float(np.median(gain)))
    assert by_seed.verdict.verdict == "reproduced"
    by_config = judge(parse_claims({"source": "x", "claims": [raw]}).claims[0], df)
    assert by_config.n == 1 and by_config.verdict.estimate == pytest.approx(float(np.mean(gain)))
    with pytest.raises(UserError, match="unit"):
        parse_claims({"source": "x", "claims": [{"id": "v", "kind": "value", "unit": "seed", "target": 0.1,
                                                 "rule": {"above": True}}]})


SST5 = DATA / "sst5"


@pytest.mark.slow
@pytest.mark.skipif(not (SST5 / "train.txt").is_file(), reason=f"SST-5 not found at {SST5} "
                                                                 "(set SEEDSWEEP_SHARED_DATA to the shared data folder)")
def test_the_sst5_protocol_replay_runs_with_its_claims_sealed_first(tmp_path, worker_ray):
    """The worked example: MiniLM on SST-5, the original protocol (Adam at a
    constant rate) beside AdamW, every epoch run; three test scores per run."""
    out = tmp_path / "sst5"
    env = {**os.environ, "SEEDSWEEP_DATA": str(DATA)}
    # the shipped study on smaller inputs (same model, splits and epochs; one seed of each optimizer, fewer
    # and shorter sentences, still enough that no run collapses to the majority class): its full-size run
    # is benchmarks/results/sst5_protocol-2026-12-01.md
    shipped = (REPO / "search_spaces" / "sst5_protocol_cpu.yaml").read_text()
    small = shipped.replace("train_sentences: 400, dev_sentences: 300, test_sentences: 500",
                            "train_sentences: 160, dev_sentences: 64, test_sentences: 96").replace(
                            "max_length: 48", "max_length: 32").replace("seeds: 3", "seeds: 1")
    assert "train_sentences: 160" in small and "max_length: 32" in small and "seeds: 1" in small
    space = tmp_path / "sst5_protocol_small.yaml"
    space.write_text(small)
    r = subprocess.run([sys.executable, "-m", "seedsweep", "run", str(space), "--out", str(out),
                        "--claims", "claims/sst5_protocol.yaml", "--address", worker_ray], capture_output=True,
                       text=True, cwd=REPO, env=env, timeout=1200)
    assert r.returncode == 0, r.stderr
    text = r.stdout
    assert "claims and verdicts" in text and "before any result existed" in text
    assert "| peeking-inflates | delta |" in text and "| roberta-accuracy | value |" in text
    assert "declared deviations" in text and "material" in text
    assert "test score by epoch selection: optimizer" in text
    df = analysis.load(out)
    assert len(df) == 2 and (df.epochs_run == 3).all()                 # patience null: every epoch ran
    assert (df.status == "ok").all(), df[["trial_key", "status", "reason"]]      # none collapsed
    assert (df.test_score_max >= df.test_score).all() and df.test_score_last.notna().all()
    epochs = analysis.load_epochs(out)
    assert epochs.test_loss.notna().all() and len(epochs) == 6
    specs, results = comparisons_of(out)
    for c in read_claims(REPO / "claims" / "sst5_protocol.yaml").claims:
        v = judge(c, df, results=results, specs=specs).verdict
        assert f"| {c.id} |" in text and v.verdict in text
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["claims"]["sha256"] == sha256sum(REPO / "claims" / "sst5_protocol.yaml")
    assert any(f.endswith("test.txt") for f in manifest["files"])           # the SST-5 files it read


@pytest.mark.skipif(not (SST5 / "train.txt").is_file(), reason=f"SST-5 not found at {SST5} "
                                                                 "(set SEEDSWEEP_SHARED_DATA to the shared data folder)")
def test_dev_and_test_subsets_are_fixed_draws_of_the_official_splits():
    from seedsweep.study.families.sentencedata import load_sentences

    task = {"dataset": "sst5", "path": str(SST5), "train_sentences": 400, "dev_sentences": 300,
            "test_sentences": 500, "subset_seed": 0}
    data, again, full = load_sentences(task), load_sentences(task), load_sentences({"dataset": "sst5",
                                                                                     "path": str(SST5)})
    assert (len(data.train), len(data.dev), len(data.test)) == (400, 300, 500)
    assert data.test.texts == again.test.texts and set(data.test.texts) <= set(full.test.texts)
    assert len(full.test) == 2210
    with pytest.raises(UserError, match="task.test_sentences"):
        load_sentences({**task, "test_sentences": 0})
