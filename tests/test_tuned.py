"""Tuned comparisons (``tune:``): Optuna really searches (TPE beats random
search on a smooth objective), the same file asks the same parameters, a
SIGKILLed driver resumes to them, the statistics of :mod:`analysis.stats.tuned`
agree with by-hand loops, counts and enumeration, the report and the
dashboard show the tuned table and the budget curves, and every bad
``tune:`` exits 2 naming its key with nothing written."""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import sys
import tempfile
import uuid

import numpy as np
import optuna
import pandas as pd
import pytest
from scipy.stats import binomtest

from seedsweep import analysis
from seedsweep.analysis.figures.budgetfigure import budget_figure
from seedsweep.analysis.reading.rundirs import study_tuned
from seedsweep.analysis.stats.evp import expected_selected
from seedsweep.analysis.stats.tuned import best_so_far, tuned_comparison, tuned_outcomes, tuned_table
from seedsweep.cli import main
from seedsweep.study.execution.tuned import run_tuned
from seedsweep.study.store.studies import journal_path
from seedsweep.study.errors import UserError
from seedsweep.study.store.rundir import RunDir
from tests.conftest import remove_tagged
from tests.test_dashboard import FIGURE_READY, Page, browser, dashboard  # noqa: F401,F811 (fixtures)
from tests.test_kill import sigkill_when_stored, stored

SMOOTH = """
name: smooth
family: synthetic
compare: {classifier: [softmax, crf]}
task: {optimum: {lr: 0.003, units: 150, momentum: 0.8}, curvature: 0.3, noise: 0.002, epoch_noise: 0.0, tau: 0.01}
space:
  lr: {loguniform: [1.0e-5, 1.0e-1]}
  units: {int: [10, 300]}
  momentum: {uniform: [0.0, 1.0]}
train: {max_epochs: 1, patience: 1}
tune: {sampler: tpe, budget: 32, replicates: 6, wave: 8}
"""

SMALL = """
name: small
family: synthetic
compare: {classifier: [softmax, crf]}
task: {effects: {classifier: {crf: 0.01}}, optimum: {lr: 0.01, dropout: 0.25}, curvature: 0.2, noise: 0.005}
space:
  lr: {loguniform: [1.0e-4, 1.0e-1]}
  dropout: {choice: [0.0, 0.25, 0.5]}
  momentum: {uniform: [0.0, 0.9], when: {dropout: [0.25, 0.5]}}
fixed: {epoch_seconds: 0.1}
train: {max_epochs: 1, patience: 1}
tune: {sampler: tpe, budget: 16, replicates: 2, wave: 4}
"""
PARAMS = ["lr", "dropout", "momentum"]


def rows(out) -> pd.DataFrame:
    return RunDir(out).read_trials().to_pandas().set_index("trial_key").sort_index()


# ------------------------------------------------------------------ Optuna really searches


def test_tpe_beats_random_search_on_a_smooth_objective(tmp_path, ray_local):
    """6 replicates of budget 32 per option, TPE and random in one run (one
    Ray): TPE's tuned outcome beats random search's in most of the 12 paired
    replicates of both options, sign test (SciPy's binomtest) p < 0.05, and
    its median is ahead in each option (here 11 of 11 untied pairs, p = 0.001;
    TPE replaced by a random sampler: 7 of 12, p = 0.77, and the test fails). The same at 20 replicates per option
    (each option's own sign test): ``benchmarks/tpe_vs_random.py``, its
    result in ``benchmarks/results/tpe_vs_random-2026-12-05.json``."""
    outcomes = {}
    for sampler in ("tpe", "random"):
        space = tmp_path / f"{sampler}.yaml"
        space.write_text(SMOOTH.replace("sampler: tpe", f"sampler: {sampler}").replace("name: smooth",
                                                                                      f"name: {sampler}"))
        summary = run_tuned(space, tmp_path / sampler, num_cpus=2)
        assert summary.counts == {"ok": 384} and not summary.interrupted
        df = analysis.load(tmp_path / sampler)
        outcomes[sampler] = tuned_outcomes(df, 32)[32]
        if sampler == "tpe":          # startup min(10, 32 // 4) = 8, one wave of 8: TPE asks 24 of each search's 32
            tc = study_tuned(tmp_path / sampler, df, n_bootstrap=10)
            assert tc.random == 8 and tc.modelled[1] == 12
            share = tc.modelled[0] / tc.modelled[1]
            print(f"TPE modelled {32 - tc.random} of 32 asks per search; the best-dev trial was a modelled ask in "
                  f"{tc.modelled[0]} of {tc.modelled[1]} searches")
            # the oracle: the best-dev positions by hand from the rows
            by_hand = sum(int(g.sort_values("position").dev_score.to_numpy().argmax() >= 8)
                          for _, g in df.groupby(["option", "replicate"]))
            assert tc.modelled[0] == by_hand and share > 0.75, share
    # the objective by hand: the bowl around the optimum, as a share of each range (lr on a log scale)
    one = analysis.load(tmp_path / "random").iloc[0]
    bowl = ((math.log(one.lr) - math.log(0.003)) / (math.log(0.1) - math.log(1e-5))) ** 2 + \
        ((one.units - 150) / 290) ** 2 + (one.momentum - 0.8) ** 2
    assert one.test_score == pytest.approx(0.8 - 0.3 * bowl - 0.01, abs=0.01)
    wins = pairs = 0
    for option in ("softmax", "crf"):
        tpe, rnd = outcomes["tpe"].loc[option].to_numpy(), outcomes["random"].loc[option].to_numpy()
        wins, pairs = wins + int((tpe > rnd).sum()), pairs + int((tpe != rnd).sum())
        print(f"{option}: TPE median {np.median(tpe):.4f}, random {np.median(rnd):.4f}; TPE ahead in "
              f"{int((tpe > rnd).sum())} of {tpe.size} paired replicates")
        assert np.median(tpe) > np.median(rnd), option
    p = binomtest(wins, pairs).pvalue
    print(f"both options: TPE ahead in {wins} of {pairs} paired replicates, sign test p = {p:.2g}")
    assert p < 0.05 and wins > pairs / 2


# ------------------------------------------------------------------ determinism and resume


def test_a_tuned_study_asks_the_same_parameters_twice_and_after_a_sigkill_and_a_lost_journal(tmp_path, ray_local):
    """The same file run twice: once whole, once SIGKILLed in its last wave
    (TPE models from position 4: tune.startup's default min(10, 16 // 4);
    waves of 4 ask with 0, 4, 8 and 12 told), with one journal then lost, and
    resumed. A run directory from before tune.startup (its searches drew 10
    at random) is resumed only with tune.startup: 10 written."""
    space = tmp_path / "small.yaml"
    space.write_text(SMALL)
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    run_tuned(space, whole, num_cpus=2)
    ra = rows(whole)
    assert len(ra) == ra.index.nunique() == 2 * 2 * 16
    # replicate r of both options shares its seeds: the startup trials propose the same parameters
    first = ra[ra.position == 0].set_index(["replicate", "option"]).lr.unstack()
    assert (first.softmax == first.crf).all()
    assert ra.momentum.isna().eq(ra.dropout == 0.0).all(), "a parameter whose condition fails is null"
    tag, ray_tmp = uuid.uuid4().hex, tempfile.mkdtemp(prefix="sst-", dir="/tmp")
    env = {**os.environ, "SEEDSWEEP_TEST_TAG": tag, "RAY_TMPDIR": ray_tmp, "RAY_AUTH_MODE": "disabled"}
    try:
        sigkill_when_stored([sys.executable, "-m", "seedsweep", "run", str(space), "--out", str(killed),
                             "--num-cpus", "2", "--quiet"], killed, 52, env,
                            "the study ended before its last wave could be killed")
    finally:
        remove_tagged(tag, ray_tmp)
    at_kill = stored(killed)
    assert 48 <= at_kill < 64, at_kill                    # in the last wave (positions 12-15)
    journal_path(killed, "crf", 1).unlink()               # lost: rebuilt from the stored rows
    run_tuned(space, killed, num_cpus=2)
    rk = rows(killed)
    assert len(rk) == rk.index.nunique() == 64, "every trial key once"
    cols = PARAMS + ["search", "replicate", "position"]
    assert rk[cols].equals(ra[cols]), "the same parameters for every (option, replicate, position)"
    # each journal (rebuilt after the kill: one was lost, the others held asks never told) holds its
    # search's trials in position order; a journal that agrees with the rows is kept as it is
    stamps = {p: p.stat().st_mtime_ns for p in (killed / "optuna").glob("*.journal")}
    again = run_tuned(space, killed, num_cpus=2)
    assert again.scheduled == 0 and again.total == 64
    assert {p: p.stat().st_mtime_ns for p in (killed / "optuna").glob("*.journal")} == stamps and len(stamps) == 4
    for (option, r), g in rk.groupby(["option", "replicate"]):
        path = journal_path(killed, option, r)
        study = optuna.load_study(study_name=f"{option}@r{r:02d}",
                                  storage=optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(
                                      str(path))))
        g = g.sort_values("position")
        assert [t.value for t in study.trials] == pytest.approx(g.dev_score.tolist())
        assert [t.params.get("lr") for t in study.trials] == g.lr.tolist()
    # a study from before tune.startup: its manifest records none, and its searches drew 10 at random
    manifest = json.loads(RunDir(whole).manifest_path.read_text())
    assert manifest["tune"]["startup"] == 4
    del manifest["tune"]["startup"]
    RunDir(whole).manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(UserError, match="tune.startup is 4 now, but the stored searches drew 10") as err:
        run_tuned(space, whole, num_cpus=2)
    assert "Write tune.startup: 10" in err.value.fix
    legacy = tmp_path / "legacy.yaml"
    legacy.write_text(SMALL.replace("wave: 4", "wave: 4, startup: 10"))
    assert run_tuned(legacy, whole, num_cpus=2).scheduled == 0
    # the startup is TPE's: with startup 10 the asks at positions 4-11 are random draws, so they differ from
    # the modelled asks of startup 4, while positions 0-3 (random under both) are the same draws
    run_tuned(legacy, tmp_path / "ten", num_cpus=2)
    ten = rows(tmp_path / "ten")
    same = (ten.lr == ra.lr) | (ten.lr.isna() & ra.lr.isna())
    assert same[ra.position < 4].all() and not same[(ra.position >= 4) & (ra.position < 12)].any()


# ------------------------------------------------------------------ exactness


def by_hand_best(dev, test, ok, mode):
    out, best, chosen = [], None, float("nan")
    for d, t, good in zip(dev, test, ok):
        if good and not math.isnan(d) and (best is None or (d > best if mode == "max" else d < best)):
            best, chosen = d, t
        out.append(chosen)
    return out


@pytest.mark.parametrize("mode", ["max", "min"])
def test_the_tuned_outcome_curve_is_the_best_dev_trials_test_score_so_far(mode):
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(1, 15))
        dev = rng.choice([0.1, 0.2, 0.3, np.nan], size=n)             # ties and missing dev scores
        test = rng.random(n)
        ok = rng.random(n) > 0.2                                      # failed trials spend their position
        got = best_so_far(dev, test, ok, mode=mode)
        assert np.array_equal(got, by_hand_best(dev, test, ok, mode), equal_nan=True)


def frame(outcome_rows):
    return pd.DataFrame(outcome_rows, columns=["choice", "option", "replicate", "position", "status", "dev_score",
                                               "test_score"])


def test_win_shares_delta_and_the_one_search_estimate_agree_with_counts_and_enumeration():
    rng = np.random.default_rng(5)
    budget, reps = 4, 9
    data = [("c", o, r, p, "failed" if rng.random() < 0.1 else "ok", float(rng.integers(0, 6)) / 10,
             float(rng.integers(0, 4)) / 4) for o in ("a", "b") for r in range(reps) for p in range(budget)]
    # (few distinct scores: ties in dev, in the chosen test scores and between paired replicates)
    df = frame(data)
    tc = tuned_comparison(df, choice="c", options=["a", "b"], budget=budget, sampler="random", n_bootstrap=200)
    # the win shares at the full budget by a hand count over paired replicates
    final = {}
    for o, r in itertools.product("ab", range(reps)):
        mine = [x for x in data if x[1] == o and x[2] == r]
        final[o, r] = by_hand_best([x[5] for x in mine], [x[6] for x in mine], [x[4] == "ok" for x in mine],
                                   "max")[-1]
    paired = [r for r in range(reps) if not math.isnan(final["a", r]) and not math.isnan(final["b", r])]
    wins_a = sum(1.0 if final["a", r] > final["b", r] else 0.5 if final["a", r] == final["b", r] else 0.0
                 for r in paired)
    assert tc.full.n == len(paired)
    assert tc.full.shares["a"] == pytest.approx(wins_a / len(paired))
    assert tc.shares.loc[budget, "a"] == pytest.approx(wins_a / len(paired))
    loser = "b" if tc.full.best == "a" else "a"
    assert tc.full.delta[loser] == pytest.approx(np.median([final[loser, r] - final[tc.full.best, r]
                                                            for r in paired]))
    # the curves at every b: win share, median Δ to the best and P(best > option) by hand
    for b in range(1, budget + 1):
        at = {}
        for o, r in itertools.product("ab", range(reps)):
            mine = [x for x in data if x[1] == o and x[2] == r]
            at[o, r] = by_hand_best([x[5] for x in mine], [x[6] for x in mine], [x[4] == "ok" for x in mine],
                                    "max")[b - 1]
        both = [r for r in range(reps) if not math.isnan(at["a", r]) and not math.isnan(at["b", r])]
        best = tc.full.best
        other = "b" if best == "a" else "a"
        ahead = [1.0 if at[best, r] > at[other, r] else 0.5 if at[best, r] == at[other, r] else 0.0 for r in both]
        assert tc.p_better.loc[b, other] == pytest.approx(np.mean(ahead))
        assert tc.shares.loc[b, best] == pytest.approx(np.mean(ahead))
        assert tc.delta.loc[b, other] == pytest.approx(np.median([at[other, r] - at[best, r] for r in both]))
    # Dodge's estimate by enumerating every ordered draw of b trials (with replacement) from the pooled pool;
    # ties on dev share the mean test score of the tied trials (a uniformly random pick among them)
    for o in "ab":
        pool = [(x[5], x[6]) for x in data if x[1] == o and x[4] == "ok"]
        for b in (1, 2, 3):
            total = 0.0
            for draw in itertools.product(pool, repeat=b):
                top = max(d for d, _ in draw)
                total += np.mean([t for d, t in draw if d == top])
            assert tc.expected[o][b - 1] == pytest.approx(total / len(pool) ** b)
    searches = sum(1 for r in range(reps) if not math.isnan(final["a", r]))
    assert f"| a | {searches} | " in tuned_table(tc).markdown()


def test_dodges_estimate_equals_enumeration_with_distinct_dev_scores():
    dev, test = [0.3, 0.1, 0.7, 0.5], [0.9, 0.2, 0.4, 0.6]
    for n in (1, 2, 3):
        by_enum = np.mean([test[max(idx, key=lambda i: dev[i])] for idx in itertools.product(range(4), repeat=n)])
        assert expected_selected(dev, test, n, replace=True)[0][0] == pytest.approx(by_enum)


# ------------------------------------------------------------------ report, dashboard, readers


def test_the_report_and_the_dashboard_show_the_tuned_table_and_the_budget_curves(tmp_path, ray_local, browser,  # noqa: F811
                                                                                 dashboard):  # noqa: F811
    space = tmp_path / "small.yaml"
    space.write_text(SMALL.replace("budget: 16", "budget: 8").replace("epoch_seconds: 0.1", "epoch_seconds: 0.0"))
    out = tmp_path / "run"
    run_tuned(space, out, num_cpus=2)
    df = analysis.load(out)
    tc = study_tuned(out, df, n_bootstrap=200)
    curves = tuned_outcomes(df, 8)
    md = analysis.report(out, n_bootstrap=200)
    assert md.startswith("**tuned comparison: classifier at budget 8 (tpe)**")
    assert "| softmax | 2 |" in md and "| crf | 2 |" in md and "seed variance" not in md
    for fmt, marker in (("html", "<caption>tuned comparison"), ("latex", "tuned comparison")):
        assert marker in analysis.report(out, fmt, n_bootstrap=200)
    page = Page(browser)
    page.page.goto(dashboard(out))
    page.wait(FIGURE_READY, ["sequence"])
    meta = page.figure("sequence")["meta"]
    assert meta["id"] == "budget" and meta["budget"] == 8
    for option in ("softmax", "crf"):
        assert meta["median"][option] == pytest.approx(np.median(curves.loc[option].to_numpy(), axis=0).tolist())
        assert meta["shares"][option] == pytest.approx(tc.shares[option].tolist())
    assert page.errors == []
    page.close()
    html = tmp_path / "report.html"
    assert main(["report", str(out), "-o", str(html)]) == 0
    text = html.read_text()
    assert 'id="budget-classifier"' in text and 'id="winshares-classifier"' not in text
    loser = "softmax" if tc.full.best == "crf" else "crf"
    title = budget_figure(tc).layout.title.text         # the table's headline, on the dashboard too
    assert f"P({tc.full.best} > {loser}) {tc.improvement[loser].p:.2f}" in title
    assert f"Δ {100 * tc.full.delta[loser]:+.2f} pts" in title
    # the contract's readers keep working on the new columns
    assert main(["status", str(out)]) == 0 and main(["export", str(out), "-o", str(tmp_path / "x.csv")]) == 0
    assert {"search", "replicate", "position"} <= set(pd.read_csv(tmp_path / "x.csv").columns)


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("edit, key", [
    (("budget: 16", "budget: 0"), "tune.budget"),
    (("replicates: 2", "replicates: 1"), "tune.replicates"),
    (("sampler: tpe", "sampler: cmaes"), "tune.sampler"),
    (("name: small", "name: small\nsamples: 10"), "samples"),
    (("name: small", "name: small\nseeds: 3"), "seeds"),
    (("wave: 4", "wave: 17"), "tune.wave"),
    (("wave: 4", "wave: 4, startup: -1"), "tune.startup"),
    (("wave: 4", "wave: 4, startup: 17"), "tune.startup"),              # above the budget of 16
    (("sampler: tpe", "sampler: random, startup: 4"), "tune.startup"),   # only TPE draws before it models
    (("wave: 4", "wave: 4, patience: 3"), "tune.patience"),
    (("compare: {classifier: [softmax, crf]}", "compare: {classifier: [softmax, crf], opt: [adam, sgd]}"),
     "compare"),
    (("fixed: {epoch_seconds: 0.1}", "fixed: {epoch_seconds: 0.1}\nuntil: {budget: {samples: 4}}"), "until"),
])
def test_a_bad_tune_block_exits_2_naming_its_key_with_nothing_written(tmp_path, capsys, edit, key):
    space = tmp_path / "bad.yaml"
    space.write_text(SMALL.replace(*edit))
    out = tmp_path / "never"
    assert main(["run", str(space), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{space}: {key}" in err, err
    assert not out.exists()


def test_an_empty_space_is_refused(tmp_path, capsys):
    space = tmp_path / "bad.yaml"
    text = re.sub(r"space:\n(  .*\n)+", "space: {}\n", SMALL)
    space.write_text(text.replace("optimum: {lr: 0.01, dropout: 0.25}, ", ""))
    assert main(["check", str(space)]) == 2
    assert f"{space}: space" in capsys.readouterr().err


def test_retry_failed_reruns_a_tuned_studys_failed_trials_with_their_parameters(tmp_path, ray_local):
    """Every trial fails while a file exists (the environment, not the
    model): the searches are told the failures and ask on. Once it is gone a
    plain resume keeps the failed rows, and ``--retry-failed`` runs each
    failed trial again with its stored parameters and seed: every key once,
    the attempts counted on, each journal rebuilt with the retried values."""
    broken = tmp_path / "broken"
    broken.write_text("")
    space = tmp_path / "retry.yaml"
    space.write_text(SMALL.replace("noise: 0.005}", f"noise: 0.005, fail_while_exists: '{broken}'}}")
                     .replace("budget: 16, replicates: 2, wave: 4", "budget: 2, replicates: 2, wave: 2")
                     .replace("train: {max_epochs: 1, patience: 1}", "train: {max_epochs: 1, patience: 1, retries: 0}"))
    out = tmp_path / "run"
    # 2 configurations x 2 options x 2 replicates; each failure costs Ray Tune a new trial actor
    first = run_tuned(space, out, num_cpus=2)           # retries: 0, so each failure is one attempt, not two
    assert first.counts == {"failed": 8}
    before = rows(out)
    broken.unlink()
    assert run_tuned(space, out, num_cpus=2).scheduled == 0, "a plain resume keeps the failed rows"
    again = run_tuned(space, out, num_cpus=2, retry_failed=True)
    assert again.scheduled == 8 and again.counts == {"ok": 8}
    after = rows(out)
    assert len(after) == after.index.nunique() == 8, "every key once"
    assert (after.status == "ok").all() and (after.attempt > before.attempt).all()
    cols = PARAMS + ["search", "replicate", "position", "seed"]
    assert after[cols].equals(before[cols]), "the same parameters and seeds, asked with the failures told"
    for (option, r), g in after.groupby(["option", "replicate"]):
        study = optuna.load_study(study_name=f"{option}@r{r:02d}", storage=optuna.storages.JournalStorage(
            optuna.storages.journal.JournalFileBackend(str(journal_path(out, option, r)))))
        assert [t.value for t in study.trials] == pytest.approx(g.sort_values("position").dev_score.tolist())
