"""The robustness table: its statistics against hand computation (loops, exact
enumeration of the Mann–Whitney null, Holm by hand), and a real sentence study
on Ray whose table agrees with ``compare`` and shows in the report and the
dashboard."""

from __future__ import annotations

import itertools
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from seedsweep import analysis
from seedsweep import study
from seedsweep.analysis.stats.robustness import robustness, robustness_table
from tests.conftest import seedsweep_here

DATA = Path(os.environ.get("SEEDSWEEP_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
REPO = Path(__file__).resolve().parents[1]
needs_sst = pytest.mark.skipif(not (DATA / "sst5" / "train.txt").is_file(),
                               reason=f"SST-5 not found under {DATA} (set SEEDSWEEP_SHARED_DATA to the shared data folder)")


def exact_mwu_p(a, b) -> float:
    """Two-sided exact p of U by enumerating every split of the pooled values (no ties)."""
    pooled = list(a) + list(b)
    u_obs = sum(x > y for x in a for y in b)
    us = []
    for idx in itertools.combinations(range(len(pooled)), len(a)):
        first = [pooled[i] for i in idx]
        rest = [pooled[i] for i in range(len(pooled)) if i not in idx]
        us.append(sum(x > y for x in first for y in rest))
    us = np.array(us)
    return min(1.0, 2 * min((us <= u_obs).mean(), (us >= u_obs).mean()))


def population_df(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for config, arch in (("c0", "lstm"), ("c1", "cnn")):
        for option, shift in (("none", 0.0), ("negation", 0.25)):
            for s in range(5):
                p = 0.8 + rng.normal(0, 0.02)
                rows.append({"choice": "augment", "option": option, "config_id": config, "seed": s,
                             "architecture": arch, "status": "ok", "test_score": p,
                             "eval_negation": 0.45 + shift + rng.normal(0, 0.05),
                             "eval_sarcasm": 0.5 + rng.normal(0, 0.05)})
    rows.append({**rows[0], "seed": 9, "status": "diverged"})          # left out, counted
    return pd.DataFrame(rows)


def test_the_robustness_statistics_equal_a_hand_computation():
    df = population_df()
    tau = 0.1
    rob = robustness(df, "augment", tau=tau)
    assert rob.left_out == 1
    assert len(rob.rows) == 2 * 2 * 2                       # populations × phenomena × options
    for r in rob.rows:
        config = r.group.split()[0]
        sel = df[(df.config_id == config) & (df.option == r.option) & (df.status == "ok")]
        p, q = list(sel.test_score), list(sel[f"eval_{r.phenomenon}"])
        n = len(p)
        mean_q = sum(q) / n
        assert r.n == n == 5 and r.group == f"{config} architecture={sel.architecture.iloc[0]}"
        assert math.isclose(r.p_mean, sum(p) / n, abs_tol=1e-12)
        assert math.isclose(r.p_prime_mean, mean_q, abs_tol=1e-12)
        assert math.isclose(r.p_prime_sd, math.sqrt(sum((x - mean_q) ** 2 for x in q) / (n - 1)), abs_tol=1e-12)
        assert math.isclose(r.tau_star_mean, sum(max(0.0, a - b) for a, b in zip(p, q)) / n, abs_tol=1e-12)
        assert r.robust_share == sum(b >= a - tau for a, b in zip(p, q)) / n
        assert r.bounded_share == sum(a - tau <= b <= a + tau for a, b in zip(p, q)) / n
    for group in ("c0 architecture=lstm", "c1 architecture=cnn"):
        raw = []
        for phenomenon in rob.phenomena:
            a = rob.row(group, "none", phenomenon).p_prime
            b = rob.row(group, "negation", phenomenon).p_prime
            u, p, _ = rob.tests[(group, phenomenon, "none", "negation")]
            assert u == sum(x > y for x in a for y in b)
            assert math.isclose(p, exact_mwu_p(a, b), abs_tol=1e-12)
            raw.append(p)
        small, large = sorted(raw)                          # Holm over two phenomena, by hand
        holm = {small: min(1.0, 2 * small), large: min(1.0, max(2 * small, large))}
        for phenomenon, p in zip(rob.phenomena, raw):
            assert math.isclose(rob.tests[(group, phenomenon, "none", "negation")][2], holm[p], abs_tol=1e-12)
    # the injected negation effect is found in both populations; sarcasm (no effect) is not
    assert all(rob.tests[(g, "negation", "none", "negation")][2] < 0.05 for g in ("c0 architecture=lstm",
                                                                                "c1 architecture=cnn"))
    text = robustness_table(rob).markdown()
    marks = sum(line.count("†") for line in text.splitlines() if line.startswith("| c"))
    assert marks == 4 and "τ = 0.1" in text                  # two populations × two options on negation
    pooled = robustness(df, "augment", tau=tau, by=None)
    row = pooled.row("all", "negation", "negation")
    ok = df[(df.option == "negation") & (df.status == "ok")]
    assert row.n == 10 and math.isclose(row.p_prime_mean, ok.eval_negation.mean(), abs_tol=1e-12)



def test_the_bounds_of_tau_robust_and_bounded_invariant_are_inclusive():
    """Exact binary fractions on the edges: p′ = p − τ is τ-robust and bounded
    invariant, p′ = p + τ bounded invariant, one step past either edge is not
    (docs/reference/statistics.md, "Test beds and robustness": p′ ≥ p − τ; p − τ ≤ p′ ≤ p + τ)."""
    p, tau, step = 0.75, 0.25, 2.0 ** -10
    q = {"none": [p - tau, p + tau, p - tau - step, p + tau + step],
         "negation": [p - tau, p - tau, p - tau, p - tau]}
    rows = [{"choice": "augment", "option": o, "config_id": "c0", "seed": i, "status": "ok", "test_score": p,
             "eval_negation": v} for o, values in q.items() for i, v in enumerate(values)]
    rob = robustness(pd.DataFrame(rows), "augment", tau=tau, by=None)
    none, neg = rob.row("all", "none", "negation"), rob.row("all", "negation", "negation")
    assert (none.robust_share, none.bounded_share) == (0.75, 0.5)
    assert (neg.robust_share, neg.bounded_share) == (1.0, 1.0)
    assert neg.tau_star_mean == tau and none.tau_star_mean == (tau + tau + step) / 4

SMALL_STUDY = """
name: robust-small
family: sentence
samples: 4
sampler: qmc
seeds: 2
compare:
  augment: [none, negation]
space:
  architecture: {{choice: [fc, cnn, lstm, attention]}}
task: {{dataset: sst2, path: {sst}, train_sentences: 600, dev_sentences: 200, test_sentences: 200}}
evaluate: [{bed}]
tau: 0.2
fixed: {{augment_factor: 2, lr: 3.0e-3}}
train: {{max_epochs: 3, patience: 2}}
"""


@pytest.fixture(scope="module")
def robust_run(tmp_path_factory, ray_local):
    if not (DATA / "sst5" / "train.txt").is_file():
        pytest.skip(f"SST-5 not found under {DATA} (set SEEDSWEEP_SHARED_DATA to the shared data folder)")
    folder = tmp_path_factory.mktemp("robust")
    path = folder / "study.yaml"
    path.write_text(SMALL_STUDY.format(sst=DATA / "sst5", bed=REPO / "testbeds" / "sst_phenomena.yaml"))
    summary = study.run(path, folder / "run")              # on the worker's Ray (ray_local)
    assert summary.counts.get("ok", 0) + summary.counts.get("diverged", 0) == 16
    return folder / "run"


@needs_sst
def test_compare_on_an_evaluation_column_and_the_robustness_table_agree(robust_run):
    df = analysis.load(robust_run)
    assert {"eval_negation", "eval_mixed", "eval_sarcasm", "params", "units"} <= set(df.columns)
    assert set(df.groupby("architecture")["params"].first()) == {40077, 40196, 39790, 40179}
    cmp = analysis.compare(df, "augment", score="eval_negation")
    rob = robustness(df, "augment", tau=0.2, results=["params", "units"])
    checked = 0
    for config in cmp.table.index:
        arch = df.loc[df.config_id == config, "architecture"].iloc[0]
        for option in ("none", "negation"):
            row = rob.row(f"{config} architecture={arch}", option, "negation")
            assert math.isclose(row.p_prime_mean, cmp.table.loc[config, option], abs_tol=1e-12)
            checked += 1
    assert checked == 2 * cmp.n and cmp.n >= 3
    # a test-bed score is a result column: never a pairing key, and stored per model in [0, 1]
    assert df[["eval_negation", "eval_mixed", "eval_sarcasm"]].stack().between(0, 1).all()


@needs_sst
def test_the_report_prints_the_robustness_table_at_the_studys_tau(robust_run, tmp_path):
    r = seedsweep_here("report", str(robust_run))
    assert r.returncode == 0, r.stderr
    assert "**robustness: augment**" in r.stdout and "at τ = 0.2" in r.stdout
    assert "c00003 architecture=" in r.stdout and "| negation | none |" in r.stdout
    page = tmp_path / "report.html"
    r = seedsweep_here("report", str(robust_run), "-o", str(page))
    assert r.returncode == 0, r.stderr
    text = page.read_text()
    assert "id=\"robustness-augment\"" in text and "<caption>robustness: augment</caption>" in text


READY = """id => { const el = document.getElementById(id);
                   const gd = el && (el.classList.contains('js-plotly-plot') ? el : el.querySelector('.js-plotly-plot'));
                   return gd && gd.data && gd.data.length > 0; }"""


@needs_sst
def test_the_dashboard_and_the_report_plot_every_models_accuracy_per_population(robust_run, tmp_path):
    from tests.test_dashboard import CHROMIUM, Page, traces

    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed: 'make test' installs it (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    from tests.conftest import free_port

    df = analysis.load(robust_run)
    ok = df[df.status == "ok"]
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "seedsweep", "dashboard", str(robust_run), "--port", str(port),
                             "--interval", "0.5"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    page = tmp_path / "report.html"
    assert seedsweep_here("report", str(robust_run), "-o", str(page)).returncode == 0
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            for url, fig_id in ((f"http://127.0.0.1:{port}/", "robustness"), (page.as_uri(), "robustness-augment")):
                view = Page(browser)
                for _ in range(120):                             # the dashboard needs a moment to start
                    try:
                        view.page.goto(url)
                        break
                    except Exception:  # noqa: BLE001 - connection refused until it listens
                        view.page.wait_for_timeout(500)
                view.wait(READY, fig_id)
                got = traces(view, fig_id)
                assert {t["meta"]["phenomenon"] for t in got} == {"test", "negation", "mixed", "sarcasm"}
                for t in got:
                    column = "test_score" if t["meta"]["phenomenon"] == "test" else f"eval_{t['meta']['phenomenon']}"
                    expected = ok[ok.option == t["meta"]["option"]]
                    # one point per model of the option, the values of the trials table
                    assert sorted(t["y"]) == pytest.approx(sorted(expected[column].dropna()), abs=1e-12)
                    assert len(set(t["x"])) == expected.config_id.nunique()
                assert view.errors == []
                view.close()
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
