"""The live dashboard and the self-contained report in a real headless
Chromium (Debian's ``chromium``, driven by Playwright through its
executablePath; ``make test`` installs it).

Checked: no console errors; every figure has data; the numbers a figure
plots equal those of ``analysis.compare``; the choice selector and the
filters change the figures; a trial row stored after the page opened shows
up without a reload; the report opens with every network request refused.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from seedsweep import analysis
from seedsweep.analysis.reading.imported import import_csv
from seedsweep.study.store.studies import load_study
from tests.conftest import free_port, seedsweep_here
from tests.rundirs import write_synthetic_run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DATA = Path(os.environ.get("SEEDSWEEP_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
RG_CSV = DATA / "rg2017" / "hyperparameter_results.csv.gz"

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed: 'make test' installs it "
                                                         "(apt-get install chromium); the browser tests need it")

STUDY = """
name: dash
family: synthetic
samples: 12
seeds: 2
compare:
  classifier: [softmax, crf]
  optimizer: [adam, nadam, sgd]
  clipping: [none, value, norm]
task:
  effects: {classifier: {softmax: 0.0, crf: 0.02}, optimizer: {adam: 0.01, nadam: 0.0, sgd: -0.02}}
  noise: 0.004
  diverge: [norm]
space:
  dropout: {choice: [none, variational]}
  lr: {loguniform: [1.0e-4, 1.0e-2]}
train: {max_epochs: 5, patience: 2}
"""
TOTAL = 12 * (2 + 3 + 3) * 2


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


class Page:
    """A page that records console errors and uncaught exceptions."""

    def __init__(self, browser, *, offline: bool = False) -> None:
        self.context = browser.new_context(viewport={"width": 1300, "height": 900})
        self.refused: list[str] = []
        if offline:                          # the report must not need the network: refuse every request
            self.context.route("**/*", self._offline)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def _offline(self, route) -> None:
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            self.refused.append(route.request.url)
            route.abort()

    def figure(self, fig_id: str) -> dict:
        """The figure as the page holds it, its traces' x and y as lists."""
        fig = self.page.evaluate(
            """id => { const gd = document.getElementById(id).classList.contains('js-plotly-plot')
                         ? document.getElementById(id) : document.querySelector('#' + CSS.escape(id) + ' .js-plotly-plot');
                       return gd && gd.data ? {data: gd.data, meta: gd.layout.meta || {}} : null; }""", fig_id)
        for t in (fig or {}).get("data", []):
            for axis in ("x", "y"):
                if axis in t:
                    t[axis] = _decoded(t[axis])
        return fig

    def wait(self, js: str, arg=None, timeout: float = 20_000) -> None:
        self.page.wait_for_function(js, arg=arg, timeout=timeout)

    def close(self) -> None:
        self.context.close()


def wait_listening(proc: subprocess.Popen, port: int, timeout: float = 60) -> str:
    """Wait until the dashboard ``proc`` accepts connections on ``port``; its address."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the dashboard exited: {proc.stdout.read()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return f"http://127.0.0.1:{port}/"
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"the dashboard did not start within {timeout:g} s")


@pytest.fixture()
def dashboard(tmp_path):
    """Serve ``seedsweep dashboard`` for a directory; yields a starter."""
    procs = []

    def start(run_dir: Path) -> str:
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "seedsweep", "dashboard", str(run_dir), "--port", str(port),
                                 "--interval", "0.5"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        procs.append(proc)
        return wait_listening(proc, port)

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


ALL_FIGURES = ("progress", "winshares", "distribution", "differences", "sigma", "seed-distribution", "seeds",
               "curves", "problems")
FIGURE_READY = """ids => ids.every(id => { const gd = document.querySelector('#' + CSS.escape(id) + ' .js-plotly-plot');
                                         return gd && gd.data && gd.data.length > 0; })"""


def assert_matches_compare(page: Page, df, choice: str, suffix: str = "", **kwargs) -> None:
    """The plotted win shares, medians and median Δ equal analysis.compare's."""
    by_task = analysis.compare_tasks(df, choice, **kwargs)
    assert all(c.n for c in by_task.values())
    shares = page.figure(f"winshares{suffix}")
    assert shares, "no win-share figure"
    for trace in shares["data"]:
        for task, y in zip(trace["x"], trace["y"]):
            assert y == pytest.approx(by_task[task].shares[trace["name"]], abs=1e-12)
    assert {t["name"] for t in shares["data"]} == set(next(iter(by_task.values())).options)
    dist = page.figure(f"distribution{suffix}")
    boxes = [t for t in dist["data"] if t["meta"]["part"] == "box"]
    assert {t["name"] for t in boxes} == set(next(iter(by_task.values())).options)
    for trace in boxes:                         # each violin's box: the statistics of all its scores
        assert sorted(trace["meta"]["tasks"]) == sorted(by_task)
        for task, median, q1, n in zip(trace["meta"]["tasks"], trace["median"], trace["q1"], trace["meta"]["n"]):
            scores = by_task[task].scores(trace["name"])
            assert (median, q1, n) == (pytest.approx(np.median(scores), abs=1e-12),
                                       pytest.approx(np.quantile(scores, 0.25), abs=1e-12), len(scores))
    for trace in (t for t in dist["data"] if t["meta"]["part"] == "points"):   # a few scores: drawn as well
        assert sorted(trace["y"]) == pytest.approx(sorted(np.concatenate(
            [by_task[t].scores(trace["name"]) for t in by_task])), abs=1e-12)
    diffs = page.figure(f"differences{suffix}")
    medians = [t for t in diffs["data"] if isinstance(t.get("meta"), dict) and "median_delta" in t["meta"]]
    assert medians
    for t in medians:
        c = by_task[t["meta"]["task"]]
        assert t["x"][0] == pytest.approx(c.delta[t["meta"]["median_delta"]], abs=1e-12)


#: No Dash callback in flight.
IDLE = "() => !document.querySelector('[data-dash-is-loading=\"true\"]')"
#: The distribution figure shows n violins (one per option).
VIOLINS = """n => { const gd = document.querySelector('#distribution .js-plotly-plot');
                    return gd && gd.data.filter(t => t.meta && t.meta.part === 'violin').length === n; }"""


def select(page: Page, dropdown: str, value: str) -> None:
    page.page.click(f"#{dropdown}")
    page.page.click(f"[role=option]:has(input[value='{value}'])")
    page.page.keyboard.press("Escape")


@pytest.mark.slow
def test_the_dashboard_shows_the_numbers_of_analysis_and_follows_a_running_study(tmp_path, browser, dashboard):
    out = tmp_path / "run"
    write_synthetic_run(out, STUDY, only=TOTAL - 1)            # one trial still to come
    url = dashboard(out)
    page = Page(browser)
    page.page.goto(url)
    page.wait(FIGURE_READY, list(ALL_FIGURES))
    df = analysis.load(out)
    assert page.figure("progress")["meta"]["stored"] == TOTAL - 1
    assert_matches_compare(page, df, "classifier")
    problems = page.figure("problems")
    assert problems["meta"]["count"] == int((df.status != "ok").sum()) > 0      # clipping=norm diverged
    assert "diverged" in problems["data"][0]["cells"]["values"][1]
    confusion = page.figure("confusion")
    assert confusion["meta"]["empty"] is True                  # the synthetic family classifies nothing

    # the choice selector redraws the comparison figures
    select(page, "choice", "optimizer")
    page.wait(VIOLINS, 3)
    assert [t["name"] for t in page.figure("distribution")["data"] if t["meta"]["part"] == "violin"] \
        == ["adam", "nadam", "sgd"]
    assert_matches_compare(page, df, "optimizer")
    select(page, "choice", "classifier")
    page.wait(VIOLINS, 2)

    # a filter on another hyperparameter narrows the paired configurations
    n_all = page.figure("winshares")["meta"]["n"]
    select(page, "filter-column", "dropout")
    select(page, "filter-values", "none")
    page.wait("n => { const gd = document.querySelector('#winshares .js-plotly-plot');"
              " return gd && gd.layout.meta && gd.layout.meta.n && Object.values(gd.layout.meta.n)[0] < n; }",
              arg=list(n_all.values())[0])
    assert_matches_compare(page, df[df.dropout == "none"], "classifier")

    # a trial stored after the page opened appears without a reload; a figure it leaves as it
    # was (the claims: none are sealed) is not sent and drawn again
    before = page.page.evaluate("performance.getEntriesByType('navigation').length")
    page.page.evaluate("""ids => { window.drawn = {}; for (const id of ids) { window.drawn[id] = 0;
        document.querySelector('#' + id + ' .js-plotly-plot').on('plotly_afterplot', () => { window.drawn[id]++; }); } }""",
                       ["progress", "claims"])
    write_synthetic_run(out, STUDY)
    page.wait("n => document.getElementById('summary').innerText.startsWith(n + ' of ')", arg=TOTAL)
    page.wait(IDLE)
    assert page.figure("progress")["meta"]["stored"] == TOTAL
    new = analysis.load(out)
    assert page.figure("problems")["meta"]["count"] == int((new[new.dropout == "none"].status != "ok").sum())
    assert page.figure("claims")["meta"]["empty"] is True
    drawn = page.page.evaluate("window.drawn")
    assert drawn["progress"] >= 1 and drawn["claims"] == 0, drawn
    assert page.page.evaluate("performance.getEntriesByType('navigation').length") == before
    assert page.errors == []
    page.close()


def test_the_poll_says_nothing_while_a_refresh_is_computed(tmp_path):
    """A new version while callbacks compute would make the page drop their
    answers and ask again (a study storing trials faster than a refresh would
    never be shown); the poll answers nothing until they are done."""
    from seedsweep.analysis.pages.dashboard import create_app

    write_synthetic_run(tmp_path / "run", STUDY)
    app = create_app(tmp_path / "run")
    client = app.server.test_client()
    poll = {"output": "version.data", "outputs": {"id": "version", "property": "data"},
            "inputs": [{"id": "tick", "property": "n_intervals", "value": 1}],
            "state": [{"id": "version", "property": "data", "value": None}], "changedPropIds": ["tick.n_intervals"]}
    version = client.post("/_dash-update-component", json=poll).get_json()["response"]["version"]["data"]
    with app.views.working():
        assert client.post("/_dash-update-component", json=poll).get_json()["response"] == {}
    assert client.post("/_dash-update-component", json=poll).get_json()["response"]["version"]["data"] == version
    app.views.stopped.set()


def test_the_poll_asks_for_the_view_the_watcher_read(tmp_path):
    """While trials land every few milliseconds, the page draws each view the
    watcher read and prepared, whole: the poll names the view the watcher
    holds, not a newer signature on the disk that nobody has read yet (the
    page's callbacks would read and compute it themselves, and the watcher's
    work would be lost)."""
    from seedsweep.analysis.pages.dashboard import create_app
    from seedsweep.analysis.pages.liveview import signature

    out = tmp_path / "run"
    write_synthetic_run(out, STUDY, only=TOTAL - 1)
    app = create_app(out, interval_s=0.2)
    views = app.views
    views.stopped.set()                 # the test reads in the watcher's place
    views.watcher.join(timeout=10)
    assert not views.watcher.is_alive()
    client = app.server.test_client()

    def poll(current):
        body = {"output": "version.data", "outputs": {"id": "version", "property": "data"},
                "inputs": [{"id": "tick", "property": "n_intervals", "value": 1}],
                "state": [{"id": "version", "property": "data", "value": current}],
                "changedPropIds": ["tick.n_intervals"]}
        return client.post("/_dash-update-component", json=body).get_json()["response"].get("version", {}).get("data")

    first = poll(None)
    assert first == views.key == signature(out)
    write_synthetic_run(out, STUDY)                 # the last trial lands; nobody has read it
    assert signature(out) != first and poll(first) is None
    views.get(signature(out))                       # the watcher reads it
    assert poll(first) == views.key == signature(out)
    assert poll(views.key) is None


def test_a_part_the_watcher_cannot_read_is_named_on_the_page_over_the_last_view(tmp_path, capsys):
    """A corrupt trials part while the page is open: the watcher prints the
    store's located message once, the page's poll asks for it and its summary
    shows it, every other figure keeps the last view read; once the file is
    moved away the next trial is read and shown."""
    from seedsweep.analysis.pages.dashboard import create_app
    from seedsweep.analysis.pages.liveview import signature

    out = tmp_path / "run"
    write_synthetic_run(out, STUDY, only=TOTAL - 1)
    app = create_app(out, interval_s=0.2)
    views, client = app.views, app.server.test_client()
    first = views.key

    def ask(output: str, outputs: list, inputs: list, state: list | None = None):
        body = {"output": output, "outputs": outputs, "inputs": inputs, "state": state or [],
                "changedPropIds": [f"{inputs[0]['id']}.{inputs[0]['property']}"]}
        r = client.post("/_dash-update-component", json=body)
        return r.status_code, (r.get_json() or {}).get("response", {})

    def poll(current):
        return ask("version.data", {"id": "version", "property": "data"},
                   [{"id": "tick", "property": "n_intervals", "value": 1}],
                   [{"id": "version", "property": "data", "value": current}])[1].get("version", {}).get("data")

    def summary(version):
        outputs = [{"id": "progress", "property": "figure"}, {"id": "summary", "property": "children"},
                   {"id": "task", "property": "options"}, {"id": "filter-column", "property": "options"}]
        code, response = ask("..progress.figure...summary.children...task.options...filter-column.options..",
                             outputs, [{"id": "version", "property": "data", "value": version}])
        return code, response.get("summary", {}).get("children")

    bad = out / "trials" / "zzzz-bad.parquet"
    bad.write_bytes(b"not parquet")
    deadline = time.monotonic() + 30
    while views.failed is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert views.failed is not None and views.key == first
    version = poll(first)
    assert version == views.failed[0] == signature(out)
    code, text = summary(version)
    assert code == 200 and str(bad) in text and "Move it away" in text
    assert views.get(version).df.shape[0] == TOTAL - 1          # the last view read, for the other figures
    time.sleep(0.5)                                              # the watcher does not read it again
    assert capsys.readouterr().err.count(str(bad)) == 1
    bad.unlink()
    write_synthetic_run(out, STUDY)
    while views.key != signature(out) and time.monotonic() < deadline + 30:
        time.sleep(0.02)
    assert views.failed is None and len(views.view.df) == TOTAL
    new = poll(version)
    assert new == views.key and summary(new)[1].startswith(f"{TOTAL} of ")
    views.stopped.set()


def test_a_trial_stored_while_the_signature_is_taken_gives_no_torn_signature(tmp_path, monkeypatch):
    """A part that appears between the trials folder's ``stat`` and its listing (seen in CI: the
    watcher then kept a signature that no state of the directory has, and the page's poll disagreed
    with it): the signature returned is the directory's state after the part, as taken afterwards."""
    from seedsweep.study.store.rundir import RunDir

    out = tmp_path / "run"
    write_synthetic_run(out, STUDY, only=4)
    rd = RunDir(out)
    os.utime(rd.trials_dir, ns=(10**18, 10**18))       # an older folder time: the new part's is surely another
    listdir, planted = os.listdir, []

    def listing_after_a_part(path):
        if not planted and Path(path) == Path(rd.trials_dir):
            planted.append(Path(path) / "c99999%2Fclassifier%3Dcrf%2Fseed%3D1.parquet")
            planted[0].write_bytes(b"")
        return listdir(path)

    monkeypatch.setattr(os, "listdir", listing_after_a_part)
    during = rd.signature()
    monkeypatch.setattr(os, "listdir", listdir)
    assert planted and during == rd.signature()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")
def test_the_dashboard_process_can_keep_its_freed_memory():
    """After keep_freed_memory, 100 MiB freed and allocated again is served
    from memory the process kept: no page faults. Without it glibc maps a
    block that large on its own and unmaps it when it is freed, and the next
    one faults in again (each in a fresh process)."""
    code = """if 1:
        import resource, sys
        import numpy as np
        from seedsweep.analysis.pages.liveview import keep_freed_memory
        if sys.argv[1] == "keep":
            assert keep_freed_memory() is True
        faults = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        a = np.ones(100 << 17)
        del a
        before = faults()
        b = np.ones(100 << 17)
        print(faults() - before)
    """
    got = {how: int(subprocess.run([sys.executable, "-c", code, how], capture_output=True, text=True, check=True,
                                   cwd=Path(__file__).resolve().parents[1]).stdout)
           for how in ("keep", "default")}
    assert got["keep"] < 10 < got["default"], got


def test_the_dashboard_leaves_its_start_up_objects_out_of_full_collections(tmp_path):
    """freeze_startup takes the objects alive after create_app out of the
    collector's generations (a full pass no longer visits them); a cycle made
    afterwards is still collected (in a fresh process: the freeze is the
    process's)."""
    write_synthetic_run(tmp_path / "run", STUDY)
    code = """if 1:
        import gc, sys
        from seedsweep.analysis.pages.dashboard import create_app
        from seedsweep.analysis.pages.liveview import freeze_startup
        app = create_app(sys.argv[1])
        gc.collect()
        tracked = len(gc.get_objects())
        frozen = freeze_startup()
        left = len(gc.get_objects())
        a = []; a.append(a); del a
        print(tracked, frozen, left, gc.collect())
        app.views.stopped.set()
    """
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "run")], capture_output=True, text=True,
                       check=True, cwd=Path(__file__).resolve().parents[1], env={**os.environ, "RAY_AUTH_MODE": "disabled"})
    tracked, frozen, left, collected = map(int, r.stdout.split()[-4:])
    assert tracked > 50_000 and frozen >= 0.9 * tracked and left < 0.05 * tracked and collected >= 1, r.stdout


def test_the_differences_histograms_count_each_configuration_in_its_bin(tmp_path):
    """The differences figure's bars are counted in Python, not by the browser
    from every value: each bar is the number of paired configurations whose Δ
    (their mean scores over seeds, by pandas here) lies in its bin, counted one
    by one, and a task's bars add up to its paired configurations."""
    from seedsweep.analysis.figures import core as F

    write_synthetic_run(tmp_path / "run", STUDY)
    view = F.load_view(tmp_path / "run")
    spec = view.spec("optimizer")
    by_task = F.compare_view(view, spec)
    fig = F.differences_figure(by_task, spec)
    bars = [t for t in fig.data if isinstance(t.meta, dict) and "histogram" in t.meta]
    c = by_task["synthetic"]
    assert sorted(t.meta["histogram"] for t in bars) == sorted(o for o in c.options if o != c.best)
    ok = view.df[(view.df.status == "ok") & (view.df.choice == "optimizer")]      # the comparison's rows
    means = ok.groupby(["config_id", "optimizer"], observed=True).test_score.mean().unstack().dropna()
    for t in bars:
        o, edges = t.meta["histogram"], t.meta["edges"]
        deltas = (means[o] - means[c.best]).to_numpy()
        assert len(deltas) == c.n and sum(t.y) == c.n
        by_hand = [sum(1 for d in deltas if lo <= d < hi or (j == len(edges) - 2 and d == hi))
                   for j, (lo, hi) in enumerate(zip(edges[:-1], edges[1:]))]
        assert list(t.y) == by_hand and min(deltas) >= edges[0] and max(deltas) <= edges[-1]
        assert list(t.x) == pytest.approx([(lo + hi) / 2 for lo, hi in zip(edges[:-1], edges[1:])])


def test_the_dashboard_refuses_a_folder_that_is_not_a_run_directory(tmp_path):
    r = subprocess.run([sys.executable, "-m", "seedsweep", "dashboard", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 2 and str(tmp_path) in r.stderr and "manifest.json" in r.stderr


def open_report(browser, path: Path) -> Page:
    page = Page(browser, offline=True)
    page.page.goto(path.as_uri())
    page.wait("() => document.querySelectorAll('.js-plotly-plot').length > 0 && "
              "Array.from(document.querySelectorAll('.js-plotly-plot')).every(gd => gd.data)")
    return page


@pytest.mark.slow
def test_the_report_is_one_file_that_opens_offline_with_the_numbers_of_analysis(tmp_path, browser):
    out = tmp_path / "run"
    write_synthetic_run(out, STUDY)
    html = tmp_path / "report.html"
    r = seedsweep_here("report", str(out), "-o", str(html))
    assert r.returncode == 0, r.stderr
    text = html.read_text()
    assert "<script src=" not in text                                    # plotly.js is inlined
    page = open_report(browser, html)
    ids = page.page.evaluate("Array.from(document.querySelectorAll('.js-plotly-plot')).map(gd => gd.id)")
    for fig_id in ("progress", "winshares-classifier", "distribution-classifier", "differences-classifier",
                   "sigma-classifier", "winshares-optimizer", "seeds", "curves", "problems"):
        assert fig_id in ids
        assert page.figure(fig_id)["data"], fig_id
    df = analysis.load(out)
    assert_matches_compare(page, df, "classifier", "-classifier")
    assert "<table" in text and "seed variance" in text                  # the tables of 'seedsweep report'
    assert page.errors == [] and page.refused == []
    page.close()


@pytest.mark.slow
def test_the_report_of_a_transformer_study_shows_its_confusion_matrix(tmp_path, browser):
    from tests.test_transformer import toy_yaml

    out = tmp_path / "run"
    write_synthetic_run(out, toy_yaml(tmp_path, epochs=3, compare="{lr: [0.0, 3.0e-3]}").replace("seeds: 2",
                                                                                                 "seeds: 1"))
    html = tmp_path / "report.html"
    assert seedsweep_here("report", str(out), "-o", str(html)).returncode == 0
    page = open_report(browser, html)
    confusion = page.figure("confusion")
    assert confusion["data"][0]["type"] == "heatmap"
    assert confusion["meta"]["total"] == 90 * len(confusion["meta"]["trials"])   # test texts per trial
    problems = page.figure("problems")
    assert problems["meta"]["count"] >= 1                  # the lr 0 run collapsed and is listed
    assert any(r.startswith("collapsed") for r in problems["data"][0]["cells"]["values"][2])
    seeds = page.figure("seed-distribution-lr")
    assert seeds["data"][0]["type"] == "table"
    assert page.errors == []
    page.close()


def write_imported(tmp_path: Path) -> Path:
    """Someone else's raw results: two tasks, a classifier choice, seeds as repeated rows."""
    rng = np.random.default_rng(0)
    rows = ["task,optimizer,units,classifier,f1"]
    for task in ("chunking", "ner"):
        for opt in ("adam", "nadam"):
            for units in (25, 50, 100):
                for clf, effect in (("softmax", 0.0), ("crf", 0.01)):
                    for _ in range(2):
                        rows.append(f"{task},{opt},{units},{clf},{0.9 + effect + rng.normal(0, 0.003):.5f}")
    csv = tmp_path / "results.csv"
    csv.write_text("\n".join(rows) + "\n")
    return import_csv(csv, tmp_path / "imported", task="task", score="f1", choice="classifier")


@pytest.mark.slow
def test_dashboard_and_report_work_on_an_imported_directory(tmp_path, browser, dashboard):
    out = write_imported(tmp_path)
    df = analysis.load(out)
    url = dashboard(out)
    page = Page(browser)
    page.page.goto(url)
    page.wait(FIGURE_READY, ["progress", "winshares", "distribution", "differences", "seeds", "problems"])
    assert_matches_compare(page, df, "classifier", results=["f1"])    # the source's score column is a result
    assert set(page.figure("winshares")["data"][0]["x"]) == {"chunking", "ner"}
    page.wait("() => { const gd = document.querySelector('#curves .js-plotly-plot');"
              " return gd && gd.layout.meta && gd.layout.meta.id === 'curves'; }")
    assert page.figure("curves")["meta"]["empty"] is True      # imported results have no epochs
    assert page.errors == []
    page.close()
    html = tmp_path / "imported.html"
    assert seedsweep_here("report", str(out), "-o", str(html)).returncode == 0
    page = open_report(browser, html)
    assert_matches_compare(page, df, "classifier", "-classifier", results=["f1"])
    assert page.errors == [] and page.refused == []
    page.close()


@pytest.mark.slow
@pytest.mark.skipif(not RG_CSV.is_file(), reason=f"R&G raw results not found under {DATA} "
                                                  "(set SEEDSWEEP_SHARED_DATA to the shared data folder)")
def test_the_rg2017_report_shows_the_five_tasks_and_the_papers_crf_shares(tmp_path, browser):
    out = import_csv(RG_CSV, tmp_path / "rg")
    html = tmp_path / "rg.html"
    assert seedsweep_here("report", str(out), "-o", str(html)).returncode == 0
    page = open_report(browser, html)
    shares = page.figure("winshares-classifier")
    crf = next(t for t in shares["data"] if t["name"] == "CRF")
    assert len(crf["x"]) == 5
    chunking = dict(zip(crf["x"], crf["y"]))
    assert chunking["Chunking"] == pytest.approx(0.951, abs=0.015)      # the paper: 95.2%
    # every new figure: one importance for the eight comparisons (they share their rows), per-comparison others
    ids = page.page.evaluate("Array.from(document.querySelectorAll('.js-plotly-plot, .lazy-figure')).map(gd => gd.id)")
    page.page.locator("#parallel-classifier").scroll_into_view_if_needed()      # WebGL: drawn when on screen
    page.wait("() => { const gd = document.getElementById('parallel-classifier'); return gd.data && gd.data.length; }")
    for fig in ("evp", "dominance", "parallel"):
        assert f"{fig}-classifier" in ids and f"{fig}-embeddings" in ids
        assert not page.figure(f"{fig}-classifier")["meta"].get("empty")
    importance = page.figure("importance")["meta"]
    assert sorted(importance["importance"]) == ["Chunking", "Entities", "Events", "NER", "POS"]
    assert all(used == 2000 < finished for used, finished in importance["rows"].values())   # subsampled
    assert page.figure("parallel-classifier")["meta"]["axes"][:2] == ["Decoder", "task"]
    text = html.read_text()
    assert "dominance: embeddings" in text and "hyperparameter importance: POS" in text
    assert page.errors == []
    page.close()



@pytest.mark.slow
@pytest.mark.parametrize("fmt, magic", [("png", b"\x89PNG"), ("svg", b"<svg")])
def test_static_images_of_every_report_figure(tmp_path, fmt, magic):
    out = tmp_path / "run"
    write_synthetic_run(out, STUDY)
    folder = tmp_path / "figures"
    r = seedsweep_here("report", str(out), "--images", str(folder), "--image-format", fmt)
    assert r.returncode == 0, r.stderr
    files = sorted(p.name for p in folder.iterdir())
    assert f"winshares-classifier.{fmt}" in files and f"curves.{fmt}" in files and f"problems.{fmt}" in files
    assert not [f for f in files if f.startswith(".tmp-")]
    for f in folder.iterdir():
        assert magic in f.read_bytes()[:200], f.name
    if fmt == "svg":        # images render without MathJax: a TeX string would show as raw text
        raw = [f.name for f in folder.iterdir() if re.search(r"\$[^$<>]+\$", f.read_text())]
        assert raw == [], f"figures with TeX, which --images does not typeset: {raw}"


# ------------------------------------------------- evp, importance, dominance, parallel

KNOWN = """
name: known
family: synthetic
samples: 30
seeds: 2
compare:
  classifier: [softmax, crf]
  optimizer: [adam, sgd]
task:
  effects: {classifier: {crf: 0.01}, optimizer: {sgd: -0.15}}
  noise: 0.003
  spread: 0.02
space:
  dropout: {choice: [none, variational]}
  lr: {loguniform: [1.0e-4, 1.0e-2]}
train: {max_epochs: 4, patience: 2}
"""
STAT_FIGURES = ("evp", "importance", "dominance", "parallel")
_TRACES = """id => { const gd = document.querySelector('#' + CSS.escape(id) + ' .js-plotly-plot')
                        || document.getElementById(id);
                     const plain = v => (ArrayBuffer.isView(v)) ? Array.from(v) : v;
                     return gd.data.map(t => ({x: plain(t.x), y: plain(t.y), z: t.z, meta: t.meta, type: t.type,
                         dimensions: (t.dimensions || []).map(d => ({label: d.label, values: plain(d.values),
                                                                      ticktext: d.ticktext}))})); }"""


def _decoded(v):
    """A trace array as the page holds it: a list, or plotly's typed-array form {dtype, bdata}."""
    import base64

    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"])).tolist()
    return v


def traces(page: "Page", fig_id: str) -> list[dict]:
    """The traces of a figure on the page, arrays as lists."""
    out = page.page.evaluate(_TRACES, fig_id)
    for t in out:
        t["x"], t["y"] = _decoded(t["x"]), _decoded(t["y"])
        for d in t["dimensions"]:
            d["values"] = _decoded(d["values"])
    return out


def assert_stat_figures_match_analysis(page: Page, df, suffix: str = "") -> None:
    """``suffix``: the report's figure ids end in the comparison (``-optimizer``)."""
    """The new figures plot the numbers of analysis's functions, computed here from the trials by hand."""
    from seedsweep.analysis.stats.aso import aso_matrix
    from seedsweep.analysis.stats.evp import expected_selected
    from seedsweep.analysis.stats.importance import fanova
    from seedsweep.analysis.stats.improvement import p_improvement

    ok = df[df.status == "ok"]
    # evp: the optimizer's curves; n = 1 is the mean test score, n = N the best-dev run's test score
    lines = [t for t in traces(page, f"evp{suffix}") if isinstance(t["meta"], dict) and "option" in t["meta"]]
    assert {t["meta"]["option"] for t in lines} == {"adam", "sgd"}
    for t in lines:
        runs = ok[(ok.choice == "optimizer") & (ok.option == t["meta"]["option"])]
        mean, _ = expected_selected(runs.dev_score, runs.test_score, np.array(t["x"], dtype=int))
        assert np.allclose(t["y"], mean, atol=1e-9, rtol=0)
        assert t["x"][0] == 1 and t["x"][-1] == len(runs) == t["meta"]["N"]
        assert t["y"][0] == pytest.approx(runs.test_score.mean(), abs=1e-9)
        assert t["y"][-1] == pytest.approx(runs.test_score.loc[runs.dev_score.idxmax()], abs=1e-9)
    # importance: the injected optimizer effect is the tallest bar of the optimizer comparison's rows
    bars = traces(page, f"importance{suffix}")[0]
    assert bars["x"] == sorted(bars["x"])                    # sorted bars, the tallest on top
    bars = dict(zip(bars["y"], bars["x"]))
    assert max(bars, key=bars.get) == "optimizer"
    rows = df[df.choice == "optimizer"]
    theirs = fanova(rows, list(bars), max_rows=2000, n_trees=32).importance
    assert bars == pytest.approx(theirs, abs=1e-9)
    # dominance: adam dominates sgd (ε_min < 0.2); the cells equal aso_matrix and p_improvement
    table = analysis.compare(df, "optimizer").table
    cells = traces(page, f"dominance{suffix}")
    eps = next(t for t in cells if t["meta"]["stat"] == "eps_min")
    p = next(t for t in cells if t["meta"]["stat"] == "p")
    assert eps["x"] == ["adam", "sgd"] and eps["y"] == ["adam", "sgd"]
    m = aso_matrix([table["adam"], table["sgd"]], num_comparisons=2)
    assert eps["z"][0][1] == pytest.approx(m[0][1].eps_min, abs=1e-9) and eps["z"][0][1] < 0.2
    assert eps["z"][1][0] == pytest.approx(m[1][0].eps_min, abs=1e-9) and eps["z"][1][0] > 0.8
    assert eps["z"][0][0] is None
    assert p["z"][0][1] == pytest.approx(p_improvement(table["adam"], table["sgd"], paired=True).p, abs=1e-9)
    assert p["z"][0][1] == pytest.approx((table["adam"] > table["sgd"]).mean(), abs=1e-9)    # by hand
    # parallel: one line per (paired configuration, option) with its mean score, the choice's axis first
    dims = traces(page, f"parallel{suffix}")[0]["dimensions"]
    assert dims[0]["label"] == "optimizer" and dims[-1]["label"] == "score"
    assert sorted(dims[-1]["values"]) == pytest.approx(sorted(table.to_numpy().ravel()), abs=1e-9)


@pytest.mark.slow
def test_the_statistics_figures_show_the_numbers_of_analysis_in_dashboard_and_report(tmp_path, browser, dashboard):
    out = tmp_path / "run"
    write_synthetic_run(out, KNOWN)
    df = analysis.load(out)
    url = dashboard(out)
    page = Page(browser)
    page.page.goto(url)
    page.wait(FIGURE_READY, list(ALL_FIGURES) + ["evp", "dominance", "parallel"])
    select(page, "choice", "optimizer")
    page.wait("() => { const gd = document.querySelector('#dominance .js-plotly-plot');"
              " return gd && gd.layout.meta && gd.layout.meta.choice === 'optimizer'; }")
    page.wait("() => { const gd = document.querySelector('#importance .js-plotly-plot');"
              " return gd && gd.layout.meta && gd.layout.meta.importance; }")      # drawn once the forests are grown
    assert_stat_figures_match_analysis(page, df)
    # the parallel figure can be coloured by the winning option
    page.page.click("#parallel-color input[value='winner']")
    page.wait("() => document.querySelector('#parallel .js-plotly-plot').layout.meta.color === 'winner'")
    assert page.errors == []
    page.close()

    html = tmp_path / "report.html"
    r = seedsweep_here("report", str(out), "-o", str(html))
    assert r.returncode == 0, r.stderr
    page = open_report(browser, html)
    ids = page.page.evaluate("Array.from(document.querySelectorAll('.js-plotly-plot, .lazy-figure')).map(gd => gd.id)")
    for choice in ("classifier", "optimizer"):
        for fig in ("evp", "dominance", "parallel"):
            assert f"{fig}-{choice}" in ids
    # seedsweep's own layout: each comparison has its own rows, so its own importance figure
    assert {"importance-classifier", "importance-optimizer"} <= set(ids)
    # the report's figures for the optimizer comparison, checked the same way; the parallel
    # coordinates (WebGL) are drawn when scrolled to, and dropped again when scrolled away
    assert page.page.evaluate("document.getElementById('parallel-optimizer').classList.contains('js-plotly-plot')") \
        is False
    page.page.locator("#parallel-optimizer").scroll_into_view_if_needed()
    page.wait("() => { const gd = document.getElementById('parallel-optimizer'); return gd.data && gd.data.length; }")
    assert_stat_figures_match_analysis(page, df, "-optimizer")
    page.page.locator("#problems").scroll_into_view_if_needed()
    page.wait("() => !document.getElementById('parallel-optimizer').data")       # purged off screen
    text = html.read_text()
    assert "dominance: optimizer" in text and "hyperparameter importance" in text
    assert page.errors == [] and page.refused == []
    page.close()


@pytest.mark.slow
def test_the_sealed_claims_and_their_verdicts_are_on_the_dashboard_and_in_the_report(tmp_path, browser, dashboard):
    from seedsweep.analysis.stats.claims import judge
    from seedsweep.study.spec.claimsfile import read_claims
    from seedsweep.analysis.pages.report import comparisons_of
    from tests.test_claims import CLAIMS, STUDY as CLAIMED

    out = tmp_path / "run"
    write_synthetic_run(out, CLAIMED)
    claims = tmp_path / "claims.yaml"
    claims.write_text(CLAIMS)
    r = subprocess.run([sys.executable, "-m", "seedsweep", "claims", "seal", str(claims), str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    specs, results = comparisons_of(out)
    df = analysis.load(out)
    expected = {c.id: judge(c, df, results=results, specs=specs).verdict.verdict for c in read_claims(claims).claims}
    page = Page(browser)
    page.page.goto(dashboard(out))
    page.wait(FIGURE_READY, ["claims", "winshares"])
    meta = page.figure("claims")["meta"]
    assert meta["verdicts"] == expected and meta["outcome"] == "partially reproduced"
    assert expected["softmax-wins"] == "not reproduced" and expected["crf-wins"] == "reproduced"
    assert page.errors == []
    page.close()
    html = tmp_path / "report.html"
    assert seedsweep_here("report", str(out), "-o", str(html)).returncode == 0
    text = html.read_text()
    assert "<caption>claims and verdicts</caption>" in text and "after the results existed" in text


# ------------------------------------------------- off loopback: a token on every request

@pytest.mark.slow
def test_off_loopback_the_dashboard_needs_a_token_on_every_request(tmp_path, browser, capsys, monkeypatch):
    import urllib.error
    import urllib.request

    out = tmp_path / "run"
    write_synthetic_run(out, STUDY, only=24)
    port = free_port()
    cmd = [sys.executable, "-m", "seedsweep", "dashboard", str(out), "--host", "0.0.0.0", "--port", str(port),
           "--interval", "0.5"]
    import seedsweep.analysis.pages.dashboard as dashboard_page
    from seedsweep.cli import main

    def started(*args, **kwargs):
        raise AssertionError("the dashboard started off loopback without a token")

    with monkeypatch.context() as m:                  # in this process; a dashboard that starts fails, not hangs
        m.setattr(dashboard_page, "serve", started)
        assert main(cmd[3:]) == 2
        refused = capsys.readouterr().err
        assert main(cmd[3:] + ["--token", "abc"]) == 2 and "--token" in capsys.readouterr().err
    assert "--host 0.0.0.0" in refused and "--token new" in refused
    with pytest.raises(OSError):                       # nothing was left listening
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()

    proc = subprocess.Popen(cmd + ["--token", "new"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = proc.stdout.readline()
        found = re.search(r"\?token=([\w-]+)", line)
        assert found, line
        token = found.group(1)
        base = wait_listening(proc, port)

        def status(path: str, headers: dict | None = None) -> int:
            try:
                with urllib.request.urlopen(urllib.request.Request(base + path, headers=headers or {})) as r:
                    return r.status
            except urllib.error.HTTPError as err:
                return err.code

        assert status("") == 401 and status("_dash-layout") == 401 and status("_dash-dependencies") == 401
        assert status("_dash-layout", {"Authorization": f"Bearer {token}x"}) == 401
        assert status("_dash-layout", {"Authorization": f"Bearer {token}"}) == 200

        page = Page(browser)
        page.page.goto(base)
        assert "needs the dashboard's token" in page.page.inner_text("body")
        page.page.goto(f"{base}?token={token}")
        assert "token=" not in page.page.url, "the token leaves the address bar"
        page.wait(FIGURE_READY, ["progress"])
        assert page.figure("progress")["data"]
        page.page.goto(base)                                # the cookie carries it from now on
        page.wait(FIGURE_READY, ["progress"])
        page.errors = [e for e in page.errors if "401" not in e]   # the first, tokenless visit
        assert page.errors == []
        page.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


# ------------------------------------------------- an adaptive study: its sequences, live and in the report

def test_an_adaptive_studys_confidence_sequences_are_on_the_dashboard_and_in_the_report(tmp_path, browser,
                                                                                           dashboard):
    from seedsweep.analysis.stats.decisions import track
    from tests.test_adaptive import STUDY as ADAPTIVE

    out = tmp_path / "run"
    write_synthetic_run(out, ADAPTIVE.replace("samples: 4\n", "samples: 12\n").replace("epoch_seconds: 0.4",
                                                                                      "epoch_seconds: 0.0"))
    specs, results = analysis.comparisons_of(out)
    until = load_study(out).until
    expected = track(analysis.load(out), until, specs, results, seeds=1, upto=12)[0]
    assert expected.decision == "B better" and expected.decided_at == 10          # CRF won every configuration
    page = Page(browser)
    page.page.goto(dashboard(out))
    page.wait(FIGURE_READY, ["sequence", "winshares"])
    meta = page.figure("sequence")["meta"]
    assert meta["choice"] == "classifier" and len(meta["sequences"]) == 1
    shown = meta["sequences"][0]
    assert (shown["decision"], shown["decided_at"], shown["n"]) == ("B better", 10, 12)
    assert shown["upper"] == pytest.approx(expected.sequence.upper.tolist())
    assert page.errors == []
    page.close()
    html = tmp_path / "report.html"
    assert seedsweep_here("report", str(out), "-o", str(html)).returncode == 0
    text = html.read_text()
    assert 'id="sequence-classifier"' in text and "<caption>Decisions</caption>" in text
    assert text.index("<caption>Decisions</caption>") < text.index("<caption>classifier</caption>")
