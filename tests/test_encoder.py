"""The encoder family and rank agreement: the dispersion score by hand and by
simulation, the published table as data, kNN against a brute-force loop, the
published rankings' Kendall τ against exact enumeration, and an encoder study
end to end on a private Ray (cached embeddings, win shares in mode min, two
studies' rank agreement)."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from seedsweep import analysis
from seedsweep.analysis import rank_agreement
from seedsweep.cli import main
from seedsweep.study.families.encoder.dispersion import dispersion, knn_accuracy
from tests.test_transformer import write_toy

REPO = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ the formula


def test_the_worked_example_by_hand():
    d = dispersion(np.array([[0.0, 0.0], [2.0, 0.0], [10.0, 0.0], [12.0, 0.0]]), np.array([0, 0, 1, 1]))
    # centroids (1, 0) and (11, 0): A = 1 + 1 + 1 + 1; their mean (6, 0): B = 25 + 25
    assert (d.A, d.B, d.M) == (4.0, 50.0, 0.08)
    assert d.sigma2 == {0: 2.0, 1: 2.0}
    # unequal classes: g is the mean of the centroids (2, 0) and (10, 0), not of the points
    d = dispersion(np.array([[0.0, 0.0], [2.0, 0.0], [4.0, 0.0], [10.0, 0.0]]), np.array([0, 0, 0, 1]))
    assert (d.A, d.B, d.M) == (8.0, 32.0, 0.25)


def test_permuting_points_within_classes_and_scaling_change_nothing():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(60, 8))
    y = np.repeat(np.arange(4), 15)
    base = dispersion(x, y)
    for _ in range(5):
        perm = np.concatenate([rng.permutation(np.flatnonzero(y == c)) for c in range(4)])
        same = dispersion(x[perm], y[perm])
        assert same.M == pytest.approx(base.M, rel=1e-12) and same.A == pytest.approx(base.A, rel=1e-12)
    for c in (0.001, 3.0, 250.0):
        scaled = dispersion(c * x, y)
        assert scaled.M == pytest.approx(base.M, rel=1e-10)
        assert scaled.A == pytest.approx(c * c * base.A, rel=1e-10)


def test_random_vectors_with_random_labels_match_the_null_expectation():
    """E[A]/E[B] = N·c·(c − 1)/(N − 1): 12,375 for N = 5 classes of c = 100."""
    rng = np.random.default_rng(2026)
    n_classes, per_class = 5, 100
    labels = np.repeat(np.arange(n_classes), per_class)
    m = [dispersion(rng.normal(size=(n_classes * per_class, 32)), rng.permutation(labels)).M for _ in range(300)]
    expected = n_classes * per_class * (per_class - 1) / (n_classes - 1)
    assert expected == 12375
    assert abs(np.mean(m) / expected - 1) < 0.10


PUBLISHED = {   # model: (A, B, Score) as printed
    "Kyoto": (240131.79, 337.83, 710.81), "MeCab": (97536.21, 154.37, 631.06), "SP": (67744.36, 104.05, 651.06),
    "Tohoku": (49991.31, 65.64, 761.58), "NICT": (106698.11, 151.27, 705.37), "Laboro": (153378.22, 273.83, 560.13),
}


def test_the_published_table_is_score_equals_a_over_b_except_one_row():
    agree = {m: abs(a / b - score) for m, (a, b, score) in PUBLISHED.items()}
    consistent = {m for m, gap in agree.items() if gap <= 0.03}
    assert consistent == {"Kyoto", "SP", "Tohoku", "NICT", "Laboro"}
    for m in consistent:
        a, b, score = PUBLISHED[m]
        assert a / b == pytest.approx(score, abs=0.03)
    # MeCab: 97536.21 / 154.37 = 631.83, printed 631.06
    assert agree["MeCab"] == pytest.approx(0.774, abs=0.001)


def test_knn_accuracy_matches_a_brute_force_loop():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(40, 5)) + np.repeat(np.eye(5)[:4] * 1.5, 10, axis=0)
    y = np.repeat(np.arange(4), 10)
    for k in (1, 3, 10):
        hits = 0
        for i in range(len(y)):
            sims = [(float(x[i] @ x[j] / np.linalg.norm(x[i]) / np.linalg.norm(x[j])), j)
                    for j in range(len(y)) if j != i]
            near = sorted(sims, reverse=True)[:k]
            votes = {c: [s for s, j in near if y[j] == c] for c in set(y[j] for _, j in near)}
            most = max(len(v) for v in votes.values())
            pred = max((sum(v), c) for c, v in votes.items() if len(v) == most)[1]
            hits += pred == y[i]
        assert knn_accuracy(x, y, k) == pytest.approx(hits / len(y))


# ------------------------------------------------------------------ rank agreement

CLUSTERING = {m: score for m, (_, _, score) in PUBLISHED.items()}          # lower is better
FILL_MASK = {"Kyoto": 10.65, "MeCab": 10.83, "SP": 7.88, "Tohoku": 12.54, "NICT": 11.07, "Laboro": 9.72}


def _kendall_by_hand(a: list[float], b: list[float]) -> float:
    pairs = list(itertools.combinations(range(len(a)), 2))
    s = sum(np.sign(a[i] - a[j]) * np.sign(b[i] - b[j]) for i, j in pairs)
    return s / len(pairs)


def test_rank_agreement_of_the_published_rankings_is_checked_by_enumeration():
    r = rank_agreement(CLUSTERING, FILL_MASK, higher_is_better=(False, True))
    models = sorted(PUBLISHED)
    quality_a = [-CLUSTERING[m] for m in models]
    quality_b = [FILL_MASK[m] for m in models]
    tau = _kendall_by_hand(quality_a, quality_b)
    assert r.options == models and r.tau == pytest.approx(tau) and tau == pytest.approx(-7 / 15)
    # exact two-sided p: the share of the 720 orders of B at least as far from independence
    taus = [_kendall_by_hand(quality_a, list(p)) for p in itertools.permutations(quality_b)]
    p = np.mean([abs(t) >= abs(tau) - 1e-12 for t in taus])
    assert r.tau_exact and r.tau_p == pytest.approx(p) and p == pytest.approx(196 / 720)
    assert -1 <= r.rho <= 1 and math.isnan(r.tau_ci[0])        # one score per option: nothing to resample


def test_rank_agreement_bootstraps_per_option_samples_and_lists_unshared_options():
    rng = np.random.default_rng(0)
    a = {o: rng.normal(mu, 0.1, 20) for o, mu in (("x", 1.0), ("y", 2.0), ("z", 3.0), ("only_a", 4.0))}
    b = {o: rng.normal(mu, 0.1, 20) for o, mu in (("x", 1.0), ("y", 2.0), ("z", 3.0))}
    r = rank_agreement(a, b, n_bootstrap=300)
    assert r.tau == 1.0 and r.only_a == ["only_a"] and r.only_b == []
    assert r.tau_ci == (1.0, 1.0)
    with pytest.raises(ValueError):
        rank_agreement({"x": 1.0}, {"x": 2.0})


# ------------------------------------------------------------------ the family on Ray


def _encoder_study(folder: Path, files: dict[str, str], models: list[str], samples: int = 4) -> Path:
    path = folder / "encoders.yaml"
    path.write_text(f"""
name: encoders
family: encoder
samples: {samples}
seeds: 1
compare: {{model: [{', '.join(models)}]}}
task: {{dataset: table, name: toy, train: {files['train']}, dev: {files['dev']}, test: {files['test']}}}
fixed: {{per_class: 12, pooling: mean, k: 5}}
""")
    return path


def test_an_encoder_study_caches_embeddings_and_reports_win_shares_in_mode_min(tmp_path, ray_local, capsys):
    files = write_toy(tmp_path)
    models = ["all-minilm-l6-v2@2", "random:all-minilm-l6-v2@2", "glove-6b-50d"]
    path = _encoder_study(tmp_path, files, models)
    assert main(["check", "--resolve", str(path)]) == 0
    assert "mean of 50-dimensional word vectors" in capsys.readouterr().out
    out = tmp_path / "run"
    assert main(["run", str(path), "--out", str(out), "--quiet"]) == 0
    df = analysis.load(out)
    assert len(df) == 12 and set(df["status"]) == {"ok"} and (df["metric"] == "dispersion").all()
    # one vectors file per (option, split), shared by every configuration's draw
    assert len(list((out / "cache").glob("encoder-*.npy"))) == len(models) * 2
    assert df["sentences"].eq(36).all() and df["knn_accuracy"].between(0, 1).all()
    np.testing.assert_allclose(df["test_score"], df["dispersion_A"] / df["dispersion_B"], rtol=1e-12)
    sigma2 = df["sigma2"].map(lambda t: sum(json.loads(t).values()))
    np.testing.assert_allclose(sigma2, df["dispersion_A"], rtol=1e-9)
    # every option of a configuration saw the same sentences: the random encoder's draws differ by configuration
    assert df[df.option == models[1]]["test_score"].nunique() == 4
    # win shares in mode min, by hand: per configuration the lowest M wins
    table = df.pivot(index="config_id", columns="option", values="test_score")
    wins = table.idxmin(axis=1).value_counts(normalize=True).reindex(models, fill_value=0.0)
    cmp = analysis.compare(df, "model", mode="min")
    assert cmp.shares == pytest.approx(wins.to_dict()) and cmp.best == wins.idxmax()
    assert main(["report", str(out)]) == 0
    report = capsys.readouterr().out
    assert "Lower scores are better" in report and f"Δ to {wins.idxmax()}" in report

    # a second study over the same draws, one option left out: its ranking agrees with the first
    other = tmp_path / "other"
    second = _encoder_study(tmp_path, files, models[:2], samples=4)
    assert main(["run", str(second), "--out", str(other), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["report", str(out), str(other)]) == 0
    text = capsys.readouterr().out
    line = next(row for row in text.splitlines() if row.startswith("| model"))
    assert "| 2 | 1.000 |" in line, line


def test_the_shipped_encoder_studies_pass_check():
    for name in ("sst5_encoders.yaml", "sst5_encoders_finetuned.yaml"):
        r = subprocess.run([sys.executable, "-m", "seedsweep", "check", str(REPO / "search_spaces" / name)],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("edit, message", [
    (("pooling: mean", "pooling: max"), "fixed: pooling: 'max' is outside the encoder family's limit"),
    (("k: 5", "k: 0"), "k: 0 is outside the encoder family's limit"),
])
def test_a_bad_encoder_option_exits_2_located(tmp_path, capsys, edit, message):
    path = _encoder_study(tmp_path, write_toy(tmp_path), ["glove-6b-50d", "random:all-minilm-l6-v2@2"])
    path.write_text(path.read_text().replace(*edit))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and str(path) in err, err
