"""The statistics of ``analysis``: properties (hypothesis) and oracles that do
not just call the code under test."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from seedsweep.analysis import (aso, compare, compare_tasks, expected_max, holm, importance, ks_test, p_improvement,
                      seed_distribution, seed_variance)
from seedsweep.analysis.stats.aso import violation_ratio
from seedsweep.analysis.stats.pairing import pair_ids
from seedsweep.analysis.stats.significance import bootstrap_median, wilcoxon_signed_rank, win_shares

PROPS = settings(max_examples=60, deadline=None, derandomize=True)


def trials(scores: dict[tuple[str, str], list[float]], choice: str = "classifier") -> pd.DataFrame:
    """A trials table from {(config_id, option): [score per seed]}."""
    rows = []
    for (cid, option), values in scores.items():
        for seed, v in enumerate(values, start=1):
            rows.append({"study": "s", "task": "t", "trial_key": f"{cid}/{choice}={option}/seed={seed}",
                         "config_id": cid, "choice": choice, "option": option, "seed": seed, "status": "ok",
                         "test_score": v})
    return pd.DataFrame(rows)


# A random paired study: configurations × two options × seeds, scores from a
# small grid so that ties happen.
score_values = st.sampled_from([0.80, 0.81, 0.82, 0.83, 0.84])


@st.composite
def two_option_studies(draw):
    n = draw(st.integers(1, 15))
    seeds = draw(st.integers(1, 3))
    data = {}
    for i in range(n):
        for o in ("A", "B"):
            data[(f"c{i:05d}", o)] = draw(st.lists(score_values, min_size=seeds, max_size=seeds))
    return trials(data)


@PROPS
@given(two_option_studies(), st.sampled_from([0.0, 0.013, -0.2, 1.5]))
def test_median_difference_shifts_with_a_constant_added_to_one_option(df, c):
    """Δ is equivariant: adding c to every score of B moves median(B − A) by c
    (a wrong pairing, a wrong sign or a median of the wrong column breaks it)."""
    cmp = compare(df, "classifier", options=["A", "B"])
    shifted = compare(df.assign(test_score=df.test_score + c * (df.option == "B")), "classifier", options=["A", "B"])
    assert shifted.median_difference("B", "A") == pytest.approx(cmp.median_difference("B", "A") + c, abs=1e-9)
    # and Δ of the option that is not the best is median(other − best)
    other = "B" if cmp.best == "A" else "A"
    assert cmp.delta[other] == pytest.approx(cmp.median_difference(other, cmp.best), abs=1e-12)


@PROPS
@given(two_option_studies())
def test_win_shares_are_invariant_under_a_monotone_transform_of_all_scores(df):
    """Only the order of the per-configuration means matters: a strictly
    increasing transform of every score keeps the winners (one score per seed:
    the mean over seeds would not commute with the transform)."""
    one_seed = df[df.seed == 1]
    cmp = compare(one_seed, "classifier", options=["A", "B"])
    warped = compare(one_seed.assign(test_score=np.exp(40 * one_seed.test_score) - 3), "classifier",
                     options=["A", "B"])
    assert warped.shares == pytest.approx(cmp.shares) and warped.best == cmp.best


@PROPS
@given(two_option_studies())
def test_swapping_labels_swaps_shares_and_shares_sum_to_one(df):
    cmp = compare(df, "classifier")
    swapped = df.assign(option=df["option"].map({"A": "B", "B": "A"}))
    cmp2 = compare(swapped, "classifier", options=["A", "B"])
    assert cmp2.shares["A"] == pytest.approx(cmp.shares["B"])
    assert cmp2.shares["B"] == pytest.approx(cmp.shares["A"])
    assert sum(cmp.shares.values()) == pytest.approx(1.0)


@PROPS
@given(two_option_studies(), st.randoms(use_true_random=False))
def test_row_order_changes_nothing(df, rnd):
    order = list(range(len(df)))
    rnd.shuffle(order)
    a = compare(df, "classifier", options=["A", "B"])
    b = compare(df.iloc[order], "classifier", options=["A", "B"])
    assert (a.n, a.shares, a.best, a.marks) == (b.n, b.shares, b.best, b.marks)
    assert a.delta == b.delta and a.delta_ci == b.delta_ci
    for o in ("A", "B"):
        assert (a.sigma[o] == b.sigma[o]) or (math.isnan(a.sigma[o]) and math.isnan(b.sigma[o]))
    assert a.table.sort_index().equals(b.table.sort_index())


def test_ties_are_split_equally():
    df = trials({("c1", "A"): [0.8, 0.9], ("c1", "B"): [0.9, 0.8],        # equal means: a tie
                 ("c2", "A"): [0.9], ("c2", "B"): [0.7],
                 ("c3", "A"): [0.5], ("c3", "B"): [0.5]})
    cmp = compare(df, "classifier")
    assert cmp.shares == {"A": pytest.approx(2 / 3), "B": pytest.approx(1 / 3)}
    assert win_shares(np.array([[1.0, 1.0, 0.0]])).tolist() == [0.5, 0.5, 0.0]


def test_left_out_configurations_are_counted_by_reason():
    df = trials({("c1", "A"): [0.9], ("c1", "B"): [0.8],
                 ("c2", "A"): [0.9],                                  # B never ran
                 ("c3", "A"): [0.9], ("c3", "B"): [0.7],
                 ("c4", "A"): [0.9], ("c4", "B"): [0.7]})
    df.loc[(df.config_id == "c3") & (df.option == "B"), ["status", "test_score"]] = ["diverged", np.nan]
    df.loc[(df.config_id == "c4") & (df.option == "B"), ["status", "test_score"]] = ["failed", np.nan]
    cmp = compare(df, "classifier")
    assert cmp.n == 1
    assert cmp.left_out == {"missing option": 1, "diverged": 1, "failed": 1}
    assert cmp.unfinished_rows == {"diverged": 1, "failed": 1}


def test_a_failed_seed_does_not_drop_its_configuration_but_is_reported():
    df = trials({("c1", "A"): [0.9, 0.91], ("c1", "B"): [0.8, 0.81]})
    df.loc[3, ["status", "test_score"]] = ["failed", np.nan]
    cmp = compare(df, "classifier")
    assert cmp.n == 1 and cmp.table.loc["c1", "B"] == pytest.approx(0.8)
    assert cmp.unfinished_rows == {"failed": 1}


@pytest.mark.parametrize("values", [["b", None, "a", "b", "c"], ["ok", "ok", "diverged"], ["x"], [None, None],
                                    [1.0, 2.0, np.nan], [2, None, 10], [True, False, True]])
def test_the_text_of_a_categorical_is_the_text_of_its_values(values):
    """as_text and option_strings take a categorical's texts from its
    categories; the oracle is the same column as plain values, one text per row."""
    from seedsweep.analysis.stats.pairing import as_text, option_strings

    plain = pd.Series(values, index=np.arange(10, 10 + len(values)), name="col")
    if plain.dtype == object and all(v is None or isinstance(v, str) for v in values):
        plain = plain.astype("str")
    cat = plain.astype("category")
    for got, want in ((as_text(cat), plain.astype(str)), (option_strings(cat), option_strings(plain))):
        assert got.index.equals(plain.index) and got.name == "col"
        assert [None if pd.isna(v) else v for v in got] == [None if pd.isna(v) else v for v in want]
        assert all(isinstance(v, str) for v in got if not pd.isna(v))
    text = as_text(cat)
    grouped = pd.Series(np.arange(len(values))).set_axis(plain.index).groupby(text, sort=True).sum()
    assert grouped.to_dict() == pd.Series(np.arange(len(values))).set_axis(plain.index).groupby(
        plain.astype(str), sort=True).sum().to_dict()


def test_pairing_without_config_id_uses_every_other_column():
    # others' data: no config_id; dropout_rate changes with the type, so it is ignored
    df = pd.DataFrame([
        # lr, layers, dropout type, rate, score
        (0.01, 2, "naive", 0.25, 0.90), (0.01, 2, "variational", 0.5, 0.92),
        (0.01, 2, "variational", 0.5, 0.94),                       # a second seed: averaged (0.93)
        (0.01, 3, "naive", 0.25, 0.91), (0.01, 3, "variational", 0.1, 0.89),
        (None, 3, "naive", 0.1, 0.80), (None, 3, "variational", 0.1, 0.85),   # missing lr compares equal
        (0.02, 1, "naive", 0.1, 0.70),                             # no partner
    ], columns=["lr", "layers", "dropout", "dropout_rate", "test_score"])
    cmp = compare(df, "dropout", ignore=["dropout_rate"])
    assert cmp.n == 3
    assert cmp.shares == {"naive": pytest.approx(1 / 3), "variational": pytest.approx(2 / 3)}
    assert sorted(cmp.table["variational"].round(6)) == [0.85, 0.89, 0.93]
    assert cmp.left_out == {"missing option": 1}
    # without ignoring the rate nothing pairs except the row with equal rates
    assert compare(df, "dropout").n == 1
    assert pair_ids(pd.DataFrame({"x": [np.nan, None, 1.0]}), ["x"]).tolist()[:2] == [0, 0]


def test_marks_follow_the_sign_test_rule():
    rng = np.random.default_rng(3)
    data = {}
    for i in range(40):
        base = rng.uniform(0.7, 0.9)
        data[(f"c{i}", "best")] = [base + 0.02]
        data[(f"c{i}", "close")] = [base + 0.02 + (0.001 if i % 2 else -0.001)]   # wins half: not worse
        data[(f"c{i}", "bad")] = [base]                                         # loses every time
    cmp = compare(trials(data), "classifier", options=["best", "close", "bad"])
    assert cmp.share_p["bad"] < 0.01 and cmp.share_p["close"] > 0.01
    # sign test p of 'bad' is the two-sided binomial tail, worked by hand: best wins all 40
    assert cmp.share_p["bad"] == pytest.approx(2 * 0.5 ** 40)
    assert cmp.marks == {"best", "close"} or cmp.marks == {"close", "best"}
    # nobody significantly worse -> no marks at all
    even = trials({(f"c{i}", o): [0.8 + 0.01 * ((i + (o == "B")) % 2)] for i in range(10) for o in "AB"})
    assert compare(even, "classifier").marks == set()


def test_statistics_match_scipy_on_fixed_inputs():
    rng = np.random.default_rng(7)
    data = {}
    for i in range(30):
        data[(f"c{i}", "A")] = list(0.85 + 0.01 * rng.normal(size=3))
        data[(f"c{i}", "B")] = list(0.84 + 0.03 * rng.normal(size=3))
    df = trials(data)
    cmp = compare(df, "classifier")
    worse = "B" if cmp.best == "A" else "A"
    d = cmp.table[worse].to_numpy() - cmp.table[cmp.best].to_numpy()
    assert cmp.wilcoxon_p[worse] == pytest.approx(stats.wilcoxon(d).pvalue)   # the large-sample case
    a_rows = df[df.option == "A"].test_score.to_numpy()
    b_rows = df[df.option == "B"].test_score.to_numpy()
    assert cmp.sigma["A"] == pytest.approx(np.std(a_rows, ddof=1))
    assert cmp.sigma_best == "A"
    assert cmp.sigma_p["B"] == pytest.approx(stats.levene(a_rows, b_rows, center="median").pvalue)
    assert cmp.sigma_marks == ({"A"} if cmp.sigma_p["B"] < 0.01 else set())
    wins = int((cmp.table[cmp.best] > cmp.table[worse]).sum())
    losses = int((cmp.table[cmp.best] < cmp.table[worse]).sum())
    assert cmp.share_p[worse] == pytest.approx(stats.binomtest(wins, wins + losses).pvalue)
    D, p = ks_test(a_rows, b_rows)
    assert (D, p) == pytest.approx(tuple(stats.ks_2samp(a_rows, b_rows)))


@pytest.mark.parametrize("n, n_bootstrap", [(1, 500), (2, 500), (5, 500), (6, 500), (101, 500),
                                        (5000, 1000), (5001, 900)])
def test_bootstrap_median_equals_the_median_of_each_resample(n, n_bootstrap):
    """Oracle: np.median of every resample, all drawn in one call (the code
    draws n = 5000 in two chunks). A second set of values of the same size
    reuses the cached ranks and must still agree."""
    for shift in (0, 1):
        values = np.random.default_rng(n + shift).normal(size=n)
        got = bootstrap_median(values, n_bootstrap=n_bootstrap, seed=11)
        rng = np.random.default_rng(11)
        sorted_values = np.sort(values)
        draws = rng.integers(0, n, size=(n_bootstrap, n))                      # the same draws
        medians = np.median(sorted_values[draws], axis=1)                      # the slow way
        assert got == pytest.approx(tuple(np.quantile(medians, [0.025, 0.975])), abs=0, rel=1e-12)


def test_ranks_drawn_ahead_are_the_oracles_and_threads_asking_at_once_draw_them_once(monkeypatch):
    """prepare_ranks fills the cache in the background with the same ranks
    as drawing by hand (the oracle of the test above); eight threads asking
    for one size at once make one draw between them."""
    import threading

    from seedsweep.analysis.stats import significance as S

    S.forget_ranks()
    S.prepare_ranks([(5001, 300, 4)]).result(timeout=120)
    assert S.ranks_kept(5001, 300, 4)
    draws = np.random.default_rng(4).integers(0, 5001, size=(300, 5001))
    assert np.array_equal(S.median_ranks(5001, 300, 4)[:, 1], np.sort(draws, axis=1)[:, 2500])
    S.forget_ranks()
    made, real = [], np.random.default_rng
    monkeypatch.setattr(S.np.random, "default_rng", lambda seed: made.append(seed) or real(seed))
    start, got = threading.Barrier(8), []

    def ask():
        start.wait()
        got.append(S.median_ranks(20_000, 400, 5))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert made == [5] and len(got) == 8 and all(g is got[0] for g in got)


def test_synthetic_family_winner_is_recovered(tmp_path):
    from tests.rundirs import write_synthetic_run
    from seedsweep import analysis

    write_synthetic_run(tmp_path / "run", """
name: recover
family: synthetic
samples: 20
seeds: 2
compare: {classifier: [softmax, crf, mlp]}
task: {effects: {classifier: {softmax: 0.0, crf: 0.03, mlp: -0.02}}, noise: 0.005, tau: 0.5}
space: {lr: {loguniform: [1.0e-4, 1.0e-2]}}
train: {max_epochs: 4, patience: 2}
""")
    cmp = compare(analysis.load(tmp_path / "run"), "classifier")
    assert cmp.n == 20 and cmp.best == "crf" and cmp.shares["crf"] > 0.9
    assert cmp.delta["softmax"] == pytest.approx(-0.03, abs=0.005)
    assert cmp.delta["mlp"] == pytest.approx(-0.05, abs=0.005)
    assert cmp.marks == {"crf"}
    per_task = compare_tasks(analysis.load(tmp_path / "run"), "classifier")
    assert len(per_task) == 1 and next(iter(per_task.values())).shares == cmp.shares


@settings(max_examples=8, deadline=None, derandomize=True)
@given(st.permutations([0.0, 0.02, -0.03]), st.integers(0, 1000))
def test_injected_winner_is_recovered_for_any_effects(effects, sampler_seed):
    import tempfile

    from seedsweep import analysis
    from tests.rundirs import write_synthetic_run

    options = ["softmax", "crf", "mlp"]
    injected = dict(zip(options, effects))
    winner = max(injected, key=injected.get)
    runner_up = sorted(effects)[-2]
    with tempfile.TemporaryDirectory() as tmp:
        write_synthetic_run(Path(tmp) / "run", f"""
name: recover
family: synthetic
samples: 12
seeds: 1
sampler_seed: {sampler_seed}
compare: {{classifier: [softmax, crf, mlp]}}
task: {{effects: {{classifier: {injected}}}, noise: 0.003, tau: 0.3}}
train: {{max_epochs: 3, patience: 3}}
""")
        cmp = compare(analysis.load(Path(tmp) / "run"), "classifier")
    assert cmp.best == winner and cmp.shares[winner] >= 0.9
    second = max((o for o in options if o != winner), key=injected.get)
    assert cmp.delta[second] == pytest.approx(runner_up - max(effects), abs=0.006)


# ------------------------------------------------------------- beyond the paper


def test_p_improvement_is_mann_whitney_u_over_nm():
    a = [0.81, 0.83, 0.83, 0.90, 0.78, 0.85]
    b = [0.80, 0.83, 0.84, 0.79]
    u = stats.mannwhitneyu(a, b, alternative="two-sided").statistic
    res = p_improvement(a, b)
    assert res.p == pytest.approx(u / (len(a) * len(b)))
    assert res.ci[0] <= res.p <= res.ci[1]
    paired = p_improvement([1, 2, 3, 4], [0, 2, 5, 1], paired=True)
    assert paired.p == pytest.approx((1 + 0.5 + 0 + 1) / 4)


def test_expected_validation_performance():
    v = np.array([0.71, 0.62, 0.93, 0.85, 0.80, 0.77])
    N = len(v)
    for replace in (True, False):
        curve = expected_max(v, replace=replace)
        assert curve[0] == pytest.approx(v.mean())
        assert np.all(np.diff(curve) >= -1e-12)
    without = expected_max(v, replace=False)
    assert without[-1] == pytest.approx(v.max())
    # brute force: every subset (without replacement), every sequence (with replacement)
    for n in range(1, N + 1):
        subsets = [max(c) for c in itertools.combinations(v, n)]
        assert without[n - 1] == pytest.approx(np.mean(subsets))
    with_ = expected_max(v, n=[1, 2, 3], replace=True)
    for n in (1, 2, 3):
        assert with_[n - 1] == pytest.approx(np.mean([max(c) for c in itertools.product(v, repeat=n)]))


def test_aso_on_shifted_and_identical_samples():
    rng = np.random.default_rng(0)
    good = rng.normal(0.90, 0.01, 40)
    bad = rng.normal(0.87, 0.01, 40)
    assert aso(good, bad, seed=1).eps_min < 0.2
    assert aso(bad, good, seed=1).eps_min > 0.8
    same_ab, same_ba = aso(good, good.copy(), seed=1), aso(good.copy(), good, seed=1)
    assert not same_ab.dominant and not same_ba.dominant
    # violation ratio worked by hand: quantile functions (1, 2) vs (0, 4): +1 then −2
    assert violation_ratio([1, 2], [0, 4]) == pytest.approx(4 / 5)
    assert violation_ratio([1, 2], [0, 3]) == pytest.approx(1 / 2)


@pytest.mark.parametrize("shift,seed", [(0.0, 1), (0.003, 2), (0.006, 3), (-0.004, 4)])
def test_aso_agrees_with_deepsig(shift, seed):
    deepsig = pytest.importorskip("deepsig")
    rng = np.random.default_rng(seed)
    a = rng.normal(0.85 + shift, 0.01, 30)
    b = rng.normal(0.85, 0.012, 35)
    ours = aso(a, b, seed=seed, confidence=0.95)
    theirs = deepsig.aso(a, b, confidence_level=0.95, seed=seed, show_progress=False)
    assert ours.eps_min == pytest.approx(theirs, abs=0.06)


def test_holm_matches_hand_worked_examples():
    adjusted, reject = holm([0.01, 0.04, 0.03, 0.005], alpha=0.05)
    # sorted 0.005, 0.01, 0.03, 0.04 -> ×4, ×3, ×2, ×1 = 0.02, 0.03, 0.06, 0.04 -> running max
    assert adjusted.tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert reject.tolist() == [True, False, False, True]
    adjusted, _ = holm([0.5, 0.9])
    assert adjusted.tolist() == pytest.approx([1.0, 1.0])
    with pytest.raises(ValueError):
        holm([0.1, 1.5])


def test_fanova_ranks_the_dominant_parameter_first():
    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame({"optimizer": rng.choice(["adam", "sgd", "nadam"], n), "lr": rng.uniform(0, 1, n),
                       "layers": rng.integers(1, 4, n), "status": "ok"})
    df["test_score"] = np.where(df.optimizer == "sgd", 0.6, 0.9) + 0.02 * df.lr + 0.005 * rng.normal(size=n)
    df.loc[df.layers == 3, "lr"] = np.nan           # unset by a `when` condition
    ranks = importance(df, ["lr", "layers", "optimizer"], seed=0)
    assert list(ranks)[0] == "optimizer" and ranks["optimizer"] > 0.8
    assert sum(ranks.values()) == pytest.approx(1.0)


def test_seed_tables():
    df = trials({("c1", "A"): [0.80, 0.84, 0.82], ("c1", "B"): [0.90, 0.91],
                 ("c2", "A"): [0.70], ("c2", "B"): [0.5, 0.6]})
    sv = seed_variance(df)
    assert sv.to_dict("records") == [{"task": "t", "configurations": 3, "median": pytest.approx(0.04),
                                      "p95": pytest.approx(np.percentile([0.04, 0.01, 0.1], 95)),
                                      "max": pytest.approx(0.1)}]
    d = seed_distribution([0.80, 0.84, 0.82])
    assert (d.n, d.min, d.median, d.max) == (3, 0.80, 0.82, 0.84)
    assert d.sd == pytest.approx(0.02)


def test_option_distributions_count_every_finished_run_and_the_peeking_gain():
    import pandas as pd

    from seedsweep.analysis.stats.seeds import option_distributions

    df = pd.DataFrame({
        "task": ["t"] * 6, "model": ["a", "a", "a", "b", "b", "b"],
        "status": ["ok", "ok", "ok", "ok", "ok", "diverged"],
        "test_score": [0.40, 0.50, 0.45, 0.30, 0.34, 0.20],
        "test_score_max": [0.41, 0.50, 0.47, 0.33, 0.34, 0.25],
    })
    out = option_distributions(df, "model").set_index("option")
    assert out.loc["a", "n"] == 3 and out.loc["a", "median"] == 0.45 and out.loc["a", "min"] == 0.40
    assert out.loc["a", "sd"] == pytest.approx(0.05)
    assert out.loc["a", "peeking_gain"] == pytest.approx(0.01)
    assert out.loc["b", "n"] == 2 and out.loc["b", "not_ok"] == 1 and out.loc["a", "not_ok"] == 0
    assert out.loc["b", "peeking_gain"] == pytest.approx(0.015)


# --------------------------------------------------- one policy for missing scores


def test_missing_scores_are_left_out_alike_by_every_statistic():
    """NaN and inf scores are left out (pairs lose both sides) and counted;
    the oracle is each statistic on the scores with the missing ones removed by hand."""
    rng = np.random.default_rng(3)
    a, b = rng.normal(0.8, 0.02, 40), rng.normal(0.78, 0.02, 40)
    a_gaps, b_gaps = a.copy(), b.copy()
    a_gaps[[3, 17]] = np.nan
    b_gaps[5] = np.inf
    keep_a, keep_b = np.isfinite(a_gaps), np.isfinite(b_gaps)

    r = aso(a_gaps, b_gaps, n_bootstrap=200, seed=1)
    assert r.eps_min == aso(a[keep_a], b[keep_b], n_bootstrap=200, seed=1).eps_min and r.dropped == (2, 1)

    assert expected_max(a_gaps).tolist() == expected_max(a[keep_a]).tolist()
    from seedsweep.analysis import expected_max_sd
    assert expected_max_sd(a_gaps).tolist() == expected_max_sd(a[keep_a]).tolist()

    unpaired = p_improvement(a_gaps, b_gaps, n_bootstrap=100)
    assert unpaired.p == p_improvement(a[keep_a], b[keep_b], n_bootstrap=100).p and unpaired.dropped == 3
    both = keep_a & keep_b
    paired = p_improvement(a_gaps, b_gaps, paired=True, n_bootstrap=100)
    assert paired.p == p_improvement(a[both], b[both], paired=True, n_bootstrap=100).p and paired.dropped == 3
    # by hand: the share of finite pairs A wins, ties one half
    assert paired.p == pytest.approx(np.mean((a[both] > b[both]) + 0.5 * (a[both] == b[both])))


def test_holm_leaves_a_missing_p_value_out_of_the_family():
    adjusted, reject = holm([0.01, float("nan"), 0.04, 0.03], alpha=0.05)
    # by hand over the three known p-values: 3 * 0.01, max(2 * 0.03, 0.03), max(1 * 0.04, 0.06)
    assert adjusted[[0, 2, 3]].tolist() == pytest.approx([0.03, 0.06, 0.06])
    assert math.isnan(adjusted[1]) and reject.tolist() == [True, False, False, False]


def test_the_significance_level_of_the_marks_is_kept_and_printed(tmp_path):
    from tests.rundirs import write_synthetic_run

    run = write_synthetic_run(tmp_path / "run", """
name: alpha
family: synthetic
samples: 6
seeds: 1
compare: {classifier: [softmax, crf]}
task: {effects: {classifier: {crf: 0.05}}, noise: 0.001}
""")
    from seedsweep.analysis import load

    df = load(run.path)
    strict, loose = compare(df, "classifier"), compare(df, "classifier", alpha=0.05)
    # CRF wins all 6 configurations: sign-test p = 2 / 2**6 = 0.03125, between the two levels
    assert strict.share_p["softmax"] == pytest.approx(2 / 2 ** 6)
    assert (strict.alpha, strict.marks) == (0.01, set()) and (loose.alpha, loose.marks) == (0.05, {"crf"})
    assert "p < 0.05" in loose.markdown() and "p < 0.01" in strict.markdown()


# ---------------------------------------------- exact oracles, written out here


def test_wilcoxon_p_equals_exact_enumeration_of_sign_patterns():
    """For n distinct nonzero differences, the two-sided exact p is the share of
    the 2**n sign patterns whose W+ is at least as far from n(n+1)/4."""
    rng = np.random.default_rng(5)
    for n in (6, 9, 12):
        d = rng.normal(0.01, 0.02, n)
        data = {}
        for i, x in enumerate(d):
            data[(f"c{i}", "A")] = [0.8]
            data[(f"c{i}", "B")] = [0.8 + x]
        cmp = compare(trials(data), "classifier", options=["A", "B"])
        worse = "B" if cmp.best == "A" else "A"
        diffs = cmp.table[worse].to_numpy() - cmp.table[cmp.best].to_numpy()
        ranks = np.argsort(np.argsort(np.abs(diffs))) + 1
        w_plus = ranks[diffs > 0].sum()
        centre = n * (n + 1) / 4
        patterns = itertools.product([0, 1], repeat=n)
        extreme = sum(abs(sum(r for r, s in zip(ranks, signs) if s) - centre) >= abs(w_plus - centre) - 1e-9
                      for signs in patterns)
        assert cmp.wilcoxon_p[worse] == pytest.approx(extreme / 2 ** n)


def test_ks_test_equals_exact_enumeration_of_group_assignments():
    """D is the largest gap between the two empirical CDFs; the exact p is the
    share of all C(n+m, n) splits of the pooled scores with a D at least as large."""
    rng = np.random.default_rng(8)
    a, b = rng.normal(0.80, 0.01, 6), rng.normal(0.81, 0.01, 7)

    def d_stat(x, y):
        grid = np.concatenate([x, y])
        return max(abs((x <= t).mean() - (y <= t).mean()) for t in grid)

    D, p = ks_test(a, b)
    assert D == pytest.approx(d_stat(a, b))
    pooled = np.concatenate([a, b])
    count = total = 0
    for idx in itertools.combinations(range(len(pooled)), len(a)):
        mask = np.zeros(len(pooled), bool)
        mask[list(idx)] = True
        total += 1
        count += d_stat(pooled[mask], pooled[~mask]) >= D - 1e-12
    assert total == math.comb(13, 6) and p == pytest.approx(count / total)


# ------------------------------------------------------------------ violins

@pytest.mark.parametrize("n", [7, 400, 25_000])
def test_violin_density_is_the_gaussian_kde_with_plotlys_bandwidth(n):
    """The drawn shape against scipy's exact kernel density (a different
    implementation: a sum over every score), with the bandwidth computed by
    hand from Plotly's rule; the box against numpy and a by-hand whisker."""
    from scipy.stats import gaussian_kde

    from seedsweep.analysis.figures.violins import bandwidth, box_stats, density

    v = np.random.default_rng(n).normal(0.8, 0.02, n) ** 3       # skewed
    q1, q3 = np.percentile(v, 25), np.percentile(v, 75)
    by_hand = max(1.059 * min(v.std(ddof=1), (q3 - q1) / 1.349) / n ** 0.2, (v.max() - v.min()) / 100)
    bw = bandwidth(v)
    assert bw == pytest.approx(by_hand, rel=1e-12)
    t, f = density(v, bw)
    assert t[0] == pytest.approx(v.min() - 2 * bw) and t[-1] == pytest.approx(v.max() + 2 * bw)
    assert np.diff(t).max() <= bw / 3 + 1e-15
    exact = gaussian_kde(v, bw_method=bw / v.std(ddof=1))(t)
    assert np.abs(f - exact).max() <= 1e-3 * exact.max()
    s = box_stats(v)
    assert (s["q1"], s["median"], s["q3"], s["n"]) == (q1, np.median(v), q3, n)
    below = sorted(x for x in v if x >= q1 - 1.5 * (q3 - q1))[0]
    above = sorted(x for x in v if x <= q3 + 1.5 * (q3 - q1))[-1]
    assert (s["lowerfence"], s["upperfence"]) == (below, above)


def test_violin_traces_place_each_task_and_option_and_draw_few_scores():
    from seedsweep.analysis.figures.violins import POINTS_UP_TO, violin_traces

    rng = np.random.default_rng(1)
    samples = {"a": {"t1": rng.random(POINTS_UP_TO), "t2": rng.random(POINTS_UP_TO + 1)},
               "b": {"t1": rng.random(5), "t2": np.full(3, 0.5)}}        # a constant violin: its box only
    data, xaxis = violin_traces(samples, ["a", "b"], ["t1", "t2"], {"a": "#1f77b4", "b": "#d62728"})
    assert xaxis["ticktext"] == ["t1", "t2"] and xaxis["tickvals"] == [0, 1]
    parts = {(t["meta"]["part"], t["name"]): t for t in data}
    assert set(parts) == {("violin", "a"), ("violin", "b"), ("box", "a"), ("box", "b"), ("points", "a"),
                          ("points", "b")}
    assert parts["box", "a"]["x"] == pytest.approx([-0.2, 0.8]) and parts["box", "b"]["x"] == pytest.approx([0.2, 1.2])
    assert parts["box", "b"]["meta"]["n"] == [5, 3] and parts["box", "b"]["median"][1] == 0.5
    assert sorted(parts["points", "a"]["y"]) == sorted(samples["a"]["t1"])     # t2 has too many to draw
    assert sorted(parts["points", "b"]["y"]) == sorted(np.concatenate([samples["b"]["t1"], samples["b"]["t2"]]))
    outline = parts["violin", "b"]["x"]
    assert np.isnan(outline).sum() == 1                  # one polygon: the constant violin has none
    assert 0.2 - 0.18 - 1e-12 <= np.nanmin(outline) and np.nanmax(outline) <= 0.2 + 0.18 + 1e-12   # its slot


def test_the_signed_rank_p_with_ties_or_zeros_is_scipys_exact_permutation_p():
    """For at most 13 differences with ties or zeros, seedsweep counts the
    signed-rank sums where SciPy enumerates every sign flip: the two must give
    the same number (SciPy's wilcoxon is the oracle), and without ties or
    zeros, or with more differences, seedsweep is SciPy itself."""
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(40):              # SciPy takes about half a second for each
        d = rng.choice([-0.03, -0.02, -0.01, 0.0, 0.01, 0.02, 0.03, 0.05], size=int(rng.integers(1, 14)))
        if np.any(d != 0):
            assert wilcoxon_signed_rank(d) == float(stats.wilcoxon(d).pvalue), d
            checked += 1
    assert checked > 35
    for d in (rng.normal(size=9), rng.choice([-1.0, 0.0, 1.0, 2.0], size=20)):   # no tie; too many to enumerate
        assert wilcoxon_signed_rank(d) == float(stats.wilcoxon(d).pvalue)
    # by hand: |d| = 0.5, 1, 1, 3 rank 1, 2.5, 2.5, 4; the positive ones sum to T+ = 6; every one of the
    # 16 sign patterns enumerated
    ranks = [1, 2.5, 2.5, 4]
    sums = [sum(r for r, s in zip(ranks, signs) if s) for signs in np.ndindex(2, 2, 2, 2)]
    t_plus = 1 + 2.5 + 2.5
    by_hand = min(1.0, 2 * min(np.mean([s <= t_plus for s in sums]), np.mean([s >= t_plus for s in sums])))
    assert wilcoxon_signed_rank(np.array([0.5, 1.0, 1.0, -3.0])) == pytest.approx(by_hand, abs=1e-15)
