"""The statistics behind the evp, importance, dominance and parallel figures,
each against an oracle computed another way: exact enumeration, brute force
over a tree's whole space, another library (Optuna), exact binomial
probabilities."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from seedsweep.analysis import compare
from seedsweep.analysis.reading.imported import ComparisonSpec
from seedsweep.analysis.stats.aso import boot_quantiles, aso, aso_matrix
from seedsweep.analysis.stats.dominance import dominance
from seedsweep.analysis.stats.evp import expected_selected, log_grid
from seedsweep.analysis.stats.importance import fanova, tree_effects
from seedsweep.analysis.stats.improvement import p_improvement
from seedsweep.analysis.stats.insights import comparison_rows, hyperparameters
from seedsweep.analysis.stats.multiple import holm
from seedsweep.analysis.tables import dominance_table, importance_table


def _enumerated_selection(dev, test, n):
    """Mean and sd of the test score of the best-dev run among every n-subset,
    ties at the top broken uniformly (all equally likely)."""
    first, second, count = 0.0, 0.0, 0
    for subset in itertools.combinations(range(len(dev)), n):
        top = max(dev[i] for i in subset)
        tied = [test[i] for i in subset if dev[i] == top]
        first += sum(tied) / len(tied)
        second += sum(t * t for t in tied) / len(tied)
        count += 1
    mean = first / count
    return mean, math.sqrt(max(0.0, second / count - mean * mean))


@pytest.mark.parametrize("seed", range(4))
def test_expected_test_score_of_the_best_dev_run_equals_enumeration_of_every_subset(seed):
    rng = np.random.default_rng(seed)
    N = 8
    dev = rng.choice([0.70, 0.72, 0.75, 0.80], N).tolist()         # ties on dev, at the top too
    test = rng.normal(0.7, 0.05, N).round(4).tolist()
    mean, sd = expected_selected(dev, test)
    for n in range(1, N + 1):
        m, s = _enumerated_selection(dev, test, n)
        assert mean[n - 1] == pytest.approx(m, abs=1e-12)
        assert sd[n - 1] == pytest.approx(s, abs=1e-9)
    assert mean[0] == pytest.approx(np.mean(test), abs=1e-12)


def test_weights_computed_ahead_are_taken_as_kept_and_give_the_enumerated_curve(monkeypatch):
    """prepare_weights computes in the background the weights of N runs on
    log_grid(N); expected_selected then takes them (no log-gamma computed) and
    gives every subset's enumeration; weights kept for one grid are not taken
    for another."""
    import seedsweep.analysis.stats.evp as E

    rng = np.random.default_rng(7)
    N = 9
    dev, test = rng.choice([0.6, 0.7, 0.8], N).tolist(), rng.normal(0.7, 0.05, N).round(4).tolist()
    grid = log_grid(N, 60)
    E.prepare_weights([N]).result(timeout=60)
    assert E.weights_kept(N, grid)
    calls, real = [], E.gammaln
    monkeypatch.setattr(E, "gammaln", lambda x: calls.append(1) or real(x))
    for ns in (grid, np.arange(1, N + 1), np.array([2, 5])):
        mean, sd = expected_selected(dev, test, ns)
        for n, m, s in zip(ns, mean, sd):
            want_m, want_s = _enumerated_selection(dev, test, int(n))
            assert (m, s) == (pytest.approx(want_m, abs=1e-12), pytest.approx(want_s, abs=1e-9))
        if ns is grid:
            assert calls == []              # the kept weights, not computed again


def test_the_curve_leaves_out_runs_without_both_scores_and_its_grid_is_logarithmic():
    mean, _ = expected_selected([0.1, np.nan, 0.9, 0.5], [0.3, 0.9, 0.7, np.inf])
    assert mean.tolist() == pytest.approx([0.5, 0.7])
    grid = log_grid(1000, 60)
    assert grid[0] == 1 and grid[-1] == 1000 and np.all(np.diff(grid) > 0) and len(grid) <= 60


def test_one_tree_s_main_effects_equal_brute_force_over_its_whole_space():
    from sklearn.tree import DecisionTreeRegressor

    rng = np.random.default_rng(0)
    u = [4, 3, 5]
    X = np.column_stack([rng.integers(0, k, 400) for k in u]).astype(float)
    y = 0.5 * (X[:, 0] == 2) + 0.2 * X[:, 2] + 0.3 * X[:, 0] * (X[:, 1] > 0) + rng.normal(0, 0.05, 400)
    tree = DecisionTreeRegressor(max_depth=6, random_state=0).fit(X, y)
    total, effects = tree_effects(tree, u)
    grid = np.array(list(itertools.product(*[range(k) for k in u])), dtype=float)
    pred = tree.predict(grid)
    assert total == pytest.approx(pred.var(), abs=1e-12)
    frame = pd.DataFrame(grid, columns=["a", "b", "c"]).assign(p=pred)
    for i, col in enumerate("abc"):
        marginal = frame.groupby(col)["p"].mean()
        assert effects[i] == pytest.approx(((marginal - pred.mean()) ** 2).mean(), abs=1e-12)


def test_fanova_agrees_with_optuna_s_evaluator_on_which_parameter_matters():
    import optuna
    from optuna.importance import FanovaImportanceEvaluator, get_param_importances

    rng = np.random.default_rng(1)
    n = 300
    df = pd.DataFrame({"optimizer": rng.choice(["adam", "sgd", "nadam"], n), "lr": rng.uniform(0, 1, n),
                       "layers": rng.integers(1, 4, n), "status": "ok"})
    df["test_score"] = (np.where(df.optimizer == "sgd", 0.6, 0.9) + 0.08 * df.lr + 0.02 * (df.layers == 2)
                        + 0.005 * rng.normal(size=n))
    ours = fanova(df, ["lr", "layers", "optimizer"]).importance
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize")
    dists = {"optimizer": optuna.distributions.CategoricalDistribution(["adam", "nadam", "sgd"]),
             "lr": optuna.distributions.FloatDistribution(0, 1), "layers": optuna.distributions.IntDistribution(1, 3)}
    study.add_trials([optuna.trial.create_trial(params={"optimizer": r.optimizer, "lr": float(r.lr),
                                                        "layers": int(r.layers)},
                                                distributions=dists, value=float(r.test_score))
                      for r in df.itertuples()])
    theirs = get_param_importances(study, evaluator=FanovaImportanceEvaluator(seed=0))
    assert list(ours) == list(theirs)                              # the same ranking
    for k in ours:
        assert ours[k] == pytest.approx(theirs[k], abs=0.05)


def test_fanova_subsamples_deterministically_and_does_not_depend_on_the_order_of_params():
    rng = np.random.default_rng(2)
    n = 500
    df = pd.DataFrame({"a": rng.choice(["x", "y"], n), "b": rng.uniform(0, 1, n), "status": "ok",
                       "trial_key": [f"k{i:04d}" for i in range(n)]})
    df["copy"] = df["a"]                 # splits on a and on its copy tie: the forest's feature order decides
    df["test_score"] = np.where(df.a == "x", 1.0, 0.0) + 0.1 * df.b
    one = fanova(df, ["a", "b", "copy"], max_rows=200)
    two = fanova(df.sample(frac=1, random_state=3), ["copy", "b", "a"], max_rows=200)
    assert one.importance == two.importance and (one.used, one.finished) == (200, 500) and one.subsampled
    assert one.importance["b"] < min(one.importance["a"], one.importance["copy"])


@pytest.mark.parametrize("n, rank", [(5, 1), (5, 3), (7, 7)])
def test_bootstrap_order_statistics_have_the_exact_resampling_distribution(n, rank):
    """P(r-th smallest of n draws ≤ v_j) = P(Binomial(n, (j + 1)/n) ≥ r)."""
    values = np.arange(n, dtype=float)
    t = np.array([(rank - 0.5) / n])                     # a grid point whose rank is ``rank``
    draws = boot_quantiles(values, t, 200_000, np.random.default_rng(0))[:, 0]
    for j in range(n):
        exact = stats.binom.sf(rank - 1, n, (j + 1) / n)
        assert (draws <= values[j]).mean() == pytest.approx(exact, abs=0.004)


def test_aso_matrix_entries_are_aso_and_the_confidence_is_corrected_for_every_ordered_pair():
    rng = np.random.default_rng(0)
    a, b, c = rng.normal(0.9, 0.01, 40), rng.normal(0.85, 0.01, 40), rng.normal(0.86, 0.02, 30)
    m = aso_matrix([a, b, c], n_bootstrap=300)
    assert m[0][1].eps_min == aso(a, b, n_bootstrap=300, num_comparisons=6).eps_min
    assert m[0][1].confidence == pytest.approx(1 - 0.05 / 6)
    assert m[0][1].eps_min < 0.2 and m[1][0].eps_min > 0.8 and m[2][2] is None


def test_paired_p_improvement_ci_matches_resampling_the_pairs():
    rng = np.random.default_rng(0)
    a = rng.normal(0.0, 1.0, 80).round(0)             # ties, which count one half
    b = (a + rng.normal(0.3, 1.0, 80)).round(0)
    assert (a == b).sum() > 10
    ours = p_improvement(a, b, paired=True, n_bootstrap=20_000)
    win = (a > b) + 0.5 * (a == b)
    boots = win[rng.integers(0, 80, size=(20_000, 80))].mean(axis=1)
    assert ours.ci == pytest.approx(tuple(np.quantile(boots, [0.025, 0.975])), abs=0.01)


def _known_trials(mode_sign: float = 1.0) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for cid in range(25):
        base = rng.normal(0.8, 0.02)
        for option, effect in (("a", 0.03), ("b", 0.0), ("c", -0.01)):
            for seed in (1, 2):
                rows.append({"task": "t", "config_id": f"c{cid:02d}", "choice": "opt", "option": option,
                             "seed": seed, "status": "ok", "opt": option, "units": [25, 50][cid % 2],
                             "test_score": mode_sign * (base + effect + rng.normal(0, 0.003))})
    return pd.DataFrame(rows)


def test_dominance_of_every_ordered_pair_with_holm_over_the_unordered_pairs():
    c = compare(_known_trials(), "opt")
    d = dominance(c, n_bootstrap=300)
    assert len(d.pairs) == 6 and d.level == pytest.approx(1 - 0.05 / 6)
    ab = d.pair("a", "b")
    assert ab.eps_min < 0.2 and d.pair("b", "a").eps_min > 0.8
    assert ab.p == pytest.approx((c.table["a"] > c.table["b"]).mean())          # by hand
    assert d.pair("b", "a").p == pytest.approx(1 - ab.p)
    raw = [stats.wilcoxon(c.table[x] - c.table[y]).pvalue for x, y in (("a", "b"), ("a", "c"), ("b", "c"))]
    adjusted, _ = holm(raw)
    assert [d.pair(x, y).wilcoxon_holm for x, y in (("a", "b"), ("a", "c"), ("b", "c"))] == pytest.approx(adjusted)
    assert d.pair("c", "a").wilcoxon_holm == d.pair("a", "c").wilcoxon_holm
    assert d.matrix("p")[0][0] is None


def test_dominance_with_lower_is_better_still_reads_row_is_better():
    c = compare(_known_trials(-1.0), "opt", mode="min")            # negated scores: a is the lowest
    d = dominance(c, n_bootstrap=300)
    assert d.pair("a", "b").eps_min < 0.2 and d.pair("a", "b").p > 0.9


def test_hyperparameters_are_the_varying_settings_with_the_choice_first():
    df = _known_trials()
    spec = ComparisonSpec("opt", "opt", ["a", "b", "c"])
    assert hyperparameters(comparison_rows(df, spec), spec) == ["opt", "units"]


def test_the_new_tables_render_in_every_format():
    c = compare(_known_trials(), "opt")
    d = dominance(c, n_bootstrap=200)
    t = dominance_table({"t": d})
    md = t.markdown()
    assert "| t | a | b |" in md and "ε_min" in md and len(t.rows) == 6
    assert r"$\varepsilon$" in t.latex() and "<table" in t.html()
    imp = fanova(_known_trials(), ["opt", "units"])
    it = importance_table(imp, "t")
    assert it.rows[0][1] == "opt" and "all 150 finished rows" in it.notes[0]
    assert r"\%" in it.latex()


def test_the_dashboard_grows_importance_forests_in_the_background(tmp_path, monkeypatch):
    """While the forests grow, the other statistics of the same selection are
    computed and returned; the importance arrives later through its Future."""
    import threading

    import seedsweep.analysis.pages.liveview as D
    from tests.rundirs import write_synthetic_run
    from tests.test_dashboard import KNOWN

    write_synthetic_run(tmp_path / "run", KNOWN)
    release = threading.Event()
    real = D.importance_by_task

    def slow(*args, **kwargs):
        assert release.wait(timeout=60)
        return real(*args, **kwargs)

    monkeypatch.setattr(D, "importance_by_task", slow)
    views = D.Views(str(tmp_path / "run"))
    view = views.get()
    spec = view.spec("optimizer")
    future = views.importance_of("v1", view, spec, view.df, ("optimizer",))
    _, _, by_task, stats = views.selection(spec, lambda v: v.df, ("optimizer",))     # not held up by the forests
    assert not future.done() and stats.dominance and by_task
    assert views.importance_of("v1", view, spec, view.df, ("optimizer",)) is future    # one computation
    release.set()
    result = future.result(timeout=60)
    assert max(result["synthetic"].importance, key=result["synthetic"].importance.get) == "optimizer"


def test_the_dashboard_reads_a_changed_directory_before_the_page_asks(tmp_path, monkeypatch):
    """watch() reads the new view and computes the page's selection as soon as
    a trial lands; the page's callbacks, asking with their poll's (older)
    version, then get that view and those statistics without reading again."""
    import time

    import seedsweep.analysis.pages.liveview as L
    from tests.rundirs import write_synthetic_run
    from tests.test_dashboard import STUDY, TOTAL

    out = tmp_path / "run"
    write_synthetic_run(out, STUDY, only=TOTAL - 1)
    real, loads = L.F.load_view, []
    monkeypatch.setattr(L.F, "load_view", lambda *a, **k: loads.append(1) or real(*a, **k))
    views = L.Views(str(out))
    views.get()
    polled = views.key                                  # what the page's last poll saw
    prepared = []

    def prepare(view):
        prepared.append((view, views.selection(view.spec("classifier"), lambda v: v.df, ("classifier",))))

    views.watch(0.01, 0.0, prepare)
    write_synthetic_run(out, STUDY)                     # the last trial lands
    deadline = time.monotonic() + 60
    while not any(len(v.df) == TOTAL for v, _ in prepared) and time.monotonic() < deadline:
        time.sleep(0.01)
    views.stopped.set()
    time.sleep(0.05)
    view, (used, _, by_task, stats) = prepared[-1]
    assert used is view and len(view.df) == TOTAL and len(loads) == 1 + len(prepared)
    assert views.get(polled) is view and len(loads) == 1 + len(prepared)   # older: the newer view, not read again
    assert views.selection(view.spec("classifier"), lambda v: v.df, ("classifier",))[2:] == (by_task, stats)
    c = by_task["synthetic"]
    assert c.n == compare(view.df, "classifier").n > 0
    # the bootstrap ranks of one more pair are drawn after it, for the next trial to land
    from seedsweep.analysis.stats.significance import ranks_kept

    nxt = [(c.n + 1, c.n_bootstrap, L.SEED + i) for i, o in enumerate(c.options) if o != c.best]
    while not all(ranks_kept(*k) for k in nxt) and time.monotonic() < deadline + 30:
        time.sleep(0.05)
    assert all(ranks_kept(*k) for k in nxt)
    # and the evp weights of one more run of each option
    from seedsweep.analysis.stats.evp import weights_kept

    sizes = [curve.N + 1 for curves in stats.evp.values() for curve in curves]
    assert sizes
    while not all(weights_kept(N, log_grid(N)) for N in sizes) and time.monotonic() < deadline + 60:
        time.sleep(0.05)
    assert all(weights_kept(N, log_grid(N)) for N in sizes)


def test_statistics_computed_while_a_newer_view_is_read_are_not_taken_for_its_own(tmp_path):
    """A selection under way when a trial lands and get() reads the new view:
    its answer (on the older view) must not be kept as the newer view's."""
    import seedsweep.analysis.pages.liveview as L
    from tests.rundirs import write_synthetic_run
    from tests.test_dashboard import STUDY, TOTAL

    out = tmp_path / "run"
    write_synthetic_run(out, STUDY, only=TOTAL - 1)
    views = L.Views(str(out))
    old = views.get()
    spec = old.spec("classifier")

    def rows_while_a_trial_lands(view):
        write_synthetic_run(out, STUDY)
        views.get(L.signature(out))                     # the newer view, read meanwhile
        return view.df

    first = views.selection(spec, rows_while_a_trial_lands, ("classifier",))
    assert first[0] is old
    again = views.selection(spec, lambda v: v.df, ("classifier",))
    assert again[0] is views.view is not old and len(again[1]) == TOTAL


def test_the_parallel_sample_keeps_its_configurations_while_a_study_adds_others():
    """At most ``max_configs`` configurations per task are drawn; a new one
    joins the sample only in place of another (then the sample is the old one
    with one label swapped), so a running study's lines stay where they are."""
    from seedsweep.analysis.stats.insights import parallel_table
    from seedsweep.analysis.stats.paired import compare_tasks

    rng = np.random.default_rng(3)
    rows = [{"task": "t", "config_id": f"c{i:03d}", "choice": "opt", "option": o, "seed": 1, "status": "ok",
             "opt": o, "units": int(rng.integers(1, 9)), "test_score": rng.normal(0.8, 0.02)}
            for i in range(60) for o in ("a", "b")]
    spec = ComparisonSpec("opt", "opt", ["a", "b"])

    def shown(df):
        tables, counts, _ = parallel_table(df, spec, compare_tasks(df, "opt"), max_configs=20)
        assert counts["t"] == (20, df.config_id.nunique())
        return set(tables["t"]["configuration"])

    before, grown = shown(pd.DataFrame(rows)), pd.DataFrame(rows)
    assert shown(pd.DataFrame(rows[::-1])) == before                      # the row order does not matter
    joined = 0
    for i in range(60, 100):                                             # one configuration at a time
        grown = pd.concat([grown, pd.DataFrame([{**rows[0], "config_id": f"c{i:03d}", "option": o, "opt": o}
                                                 for o in ("a", "b")])], ignore_index=True)
        after = shown(grown)
        assert len(after - before) <= 1 and len(before - after) == len(after - before)
        joined += len(after - before)
        before = after
    assert 0 < joined < 20                                               # some joined, most stayed
