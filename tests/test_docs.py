"""The documentation site: ``mkdocs build --strict`` in the suite, the
generated reference pages checked against the code by another route (the
validator's own key lists found in the source, the argument parser walked,
``analysis.__all__``), a broken site seen to fail the build, the notebook
pages equal to the shipped notebooks, the how-to's DuckDB and polars code
run against ``analysis.compare``, the README's length, and the built site
opened from the disk in Chromium (search, the API page, no console error,
no network request)."""

from __future__ import annotations

import argparse
import ast
import html
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from seedsweep import analysis
from seedsweep.study.rooms import folder_name
from tests.conftest import REPO
from tests.rundirs import write_synthetic_run


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
MKDOCS = [sys.executable, "-m", "mkdocs"]


def build(config: Path, site: Path, env=None) -> tuple[subprocess.CompletedProcess, float]:
    """``mkdocs build --strict`` of ``config`` into ``site``; the process and its seconds."""
    started = time.perf_counter()
    r = subprocess.run([*MKDOCS, "build", "--strict", "-f", str(config), "-d", str(site)], cwd=config.parent,
                       capture_output=True, text=True, timeout=600,
                       env={**os.environ, "NO_MKDOCS_2_WARNING": "1", **(env or {})})
    return r, time.perf_counter() - started


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    r, seconds = build(REPO / "mkdocs.yml", out)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    print(f"mkdocs build --strict: {seconds:.1f} s")
    return out


def text_of(page: Path) -> str:
    """A built page's text (tags removed, entities decoded)."""
    return html.unescape(re.sub(r"<[^>]+>", " ", page.read_text()))


def nav_pages() -> list[str]:
    """Every page the navigation of mkdocs.yml names."""
    text = (REPO / "mkdocs.yml").read_text().split("\nnav:\n", 1)[1]
    return re.findall(r":\s*(\S+\.(?:md|ipynb))\s*$", text, re.M)


def test_the_site_builds_strict_with_every_page_of_the_navigation(site):
    pages = nav_pages()
    assert len(pages) >= 30, pages
    for page in pages:
        assert (site / re.sub(r"\.(md|ipynb)$", ".html", page)).is_file(), page
    built = {p.relative_to(site).as_posix() for p in site.rglob("*.html")} - {"404.html"}
    assert built == {re.sub(r"\.(md|ipynb)$", ".html", p) for p in pages}, "a page outside the navigation"


def _known_keys() -> dict[str, tuple[str, ...]]:
    """Every ``known_keys(mapping, BLOCK, KEYS)`` call of the study file's validators,
    found in the source and evaluated in its module: block -> the keys it accepts."""

    found: dict[str, tuple[str, ...]] = {}
    for path in sorted((REPO / "study" / "spec").glob("*.py")):
        tree = ast.parse(path.read_text())
        module = importlib.import_module("seedsweep.study.spec." + path.stem)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "known_keys":
                block = node.args[1].value if isinstance(node.args[1], ast.Constant) else "space.<name>"
                keys = eval(compile(ast.Expression(node.args[2]), str(path), "eval"), vars(module))
                found[block] = tuple(keys)
    return found


def test_every_study_file_key_is_in_the_generated_reference(site):
    """Each key a validator accepts (found in the source) is a first cell of
    the page's tables, or (task keys, distributions) a code span of it."""
    page = (site / "reference" / "study-file-keys.html").read_text()
    cells = {html.unescape(c) for c in re.findall(r"<tr>\s*<td><code>(.*?)</code>", page, re.S)}
    spans = {html.unescape(c) for c in re.findall(r"<code>(.*?)</code>", page, re.S)}
    blocks = _known_keys()
    assert {"", "train", "resources", "until", "until.budget", "tune"} <= set(blocks), blocks
    missing = []
    for b, keys in blocks.items():
        for k in keys:
            if b.startswith("space"):                   # a parameter's distribution keys
                if k not in spans:
                    missing.append(f"space: {k}")
            elif (f"{b}.{k}" if b else k) not in cells:
                missing.append(f"{b}.{k}" if b else k)
    from seedsweep.study.families import FAMILIES, get_family
    for name in FAMILIES:
        family = get_family(name)
        missing += [f"{name}: task.{k}" for k in sorted(getattr(family, "task_keys", ()) or ())
                    if f"task.{k}" not in spans]
        missing += [f"{name}: {k}" for k in sorted(set(family.defaults or {}) | set(family.limits or {}))
                    if k not in cells]
    for path in sorted((REPO / "study" / "families").rglob("*.py")):        # every family's own task keys
        if re.search(r"^TASK_KEYS = ", path.read_text(), re.M):
            module = importlib.import_module(".".join(path.relative_to(REPO).with_suffix("").parts))
            missing += [f"{path.relative_to(REPO)}: task.{k}" for k in sorted(module.TASK_KEYS)
                        if f"task.{k}" not in spans]
    assert not missing, f"study-file keys missing from the reference: {missing}"


def _commands(parser: argparse.ArgumentParser, prefix: str):
    yield prefix, parser
    for action in parser._actions:
        if action.nargs == argparse.PARSER:        # a subcommand action: its choices are parsers
            for name, sub in action.choices.items():
                yield from _commands(sub, f"{prefix} {name}")


def test_every_command_and_flag_is_in_the_generated_reference(site):
    """Every command's section lists each of its flags in the table's first
    column (the usage line alone does not count)."""
    from seedsweep.cli import build_parser

    page = (site / "reference" / "command-line.html").read_text()
    sections = {}
    for part in re.split(r"<h2 ", page)[1:]:
        title = html.unescape(re.sub(r"<[^>]+>", "", part.split(">", 1)[1].split("</h2>", 1)[0])).strip(" ¶")
        cells = re.findall(r"<tr>\s*<td><code>(.*?)</code>", part, re.S)
        sections[title] = {token for c in cells for token in html.unescape(c).replace(",", " ").split()}
    missing = []
    commands = list(_commands(build_parser(), "seedsweep"))[1:]
    assert len(commands) >= 15, [c for c, _ in commands]
    for name, parser in commands:
        if name not in sections:
            missing.append(name)
            continue
        for action in parser._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help") and flag not in sections[name]:
                    missing.append(f"{name} {flag}")
    assert not missing, f"missing from the command-line reference: {missing}"


def test_every_exported_analysis_name_is_documented_from_its_docstring(site):
    page = (site / "reference" / "analysis-api.html").read_text()
    missing = []
    for name in analysis.__all__:
        obj = getattr(analysis, name)
        anchor = f'id="{folder_name(obj.__module__)}.{name}"'
        if anchor not in page:
            missing.append(name)
    assert not missing, f"exported by analysis but not rendered on the API page: {missing}"
    # the docstring itself is on the page, not only the name
    first = " ".join(analysis.compare.__doc__.replace("`", "").split()[:8])
    assert first in " ".join(text_of(site / "reference" / "analysis-api.html").split()), first


def test_a_broken_site_fails_the_strict_build(tmp_path):
    """A broken link, a wrong anchor and a page outside the navigation each
    fail ``mkdocs build --strict``, named in its output."""
    shutil.copytree(REPO / "docs", tmp_path / "docs", symlinks=True)
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    index = tmp_path / "docs" / "index.md"
    index.write_text(index.read_text() + "\nSee [nowhere](tutorials/nowhere.md) and "
                     "[a section](tutorials/adaptive.md#no-such-section).\n")
    (tmp_path / "docs" / "orphan.md").write_text("# An orphan\n")
    r, _ = build(tmp_path / "mkdocs.yml", tmp_path / "site", env={"PYTHONPATH": str(REPO)})
    out = r.stdout + r.stderr
    assert r.returncode != 0, out[-3000:]
    assert "tutorials/nowhere.md" in out and "no-such-section" in out and "orphan.md" in out, out[-3000:]


def test_the_notebook_pages_are_the_shipped_notebooks_with_their_outputs():
    sys.path.insert(0, str(REPO / "docs"))
    try:
        from notebooks import code_cells            # docs/notebooks.py
    finally:
        sys.path.remove(str(REPO / "docs"))

    for source in sorted((REPO / "notebooks").glob("*.ipynb")):
        page = REPO / "docs" / "notebooks" / source.name
        assert page.is_file(), f"{source.name} has no page: run python docs/notebooks.py {source.name}"
        shipped, shown = nbformat.read(source, as_version=4), nbformat.read(page, as_version=4)
        assert code_cells(shown) == code_cells(shipped), \
            f"{source.name} changed since its page was executed: run python docs/notebooks.py {source.name}"
        outputs = [o for c in shown.cells if c.cell_type == "code" for o in c.get("outputs", [])]
        assert outputs and not [o for o in outputs if o.output_type == "error"], source.name


def _block(path: Path, marker: str) -> str:
    inner = path.read_text().split(f"<!-- {marker}: begin -->", 1)[1].split(f"<!-- {marker}: end -->", 1)[0]
    return re.search(r"```\w*\n(.*?)```", inner, re.S).group(1)


def test_the_duckdb_and_polars_how_to_runs_and_agrees_with_analysis(tmp_path, capfd):
    """The how-to's two code blocks, exactly as written, on a synthetic study
    at ``runs/quickstart``: DuckDB's win shares and polars' median difference
    equal ``analysis.compare``'s (an oracle computed by other code)."""
    page = REPO / "docs" / "how-to" / "read-tables.md"
    out = tmp_path / "runs" / "quickstart"
    write_synthetic_run(out, """
name: quickstart
family: synthetic
samples: 9
seeds: 2
compare: {classifier: [softmax, crf]}
space: {units: {choice: [25, 50, 100]}, lr: {loguniform: [1.0e-3, 1.0e-1]}}
task: {effects: {classifier: {crf: 0.004}}, noise: 0.01}
train: {max_epochs: 3, patience: 2}
""")
    r = subprocess.run([sys.executable, "-m", "seedsweep", "compact", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        duck, polar = {}, {}
        exec(_block(page, "duckdb"), duck)
        exec(_block(page, "polars"), polar)
    finally:
        os.chdir(cwd)
    printed = capfd.readouterr().out
    assert "median_score" in printed and "win_share" in printed and "median of CRF − Softmax" in printed
    c = analysis.compare(analysis.load(out), "classifier")
    shares = duck["shares"].set_index("option")["win_share"]
    assert 0 < c.shares["crf"] < 1, c.shares          # a study where both options win somewhere
    for option in ("crf", "softmax"):
        assert shares[option] == pytest.approx(c.shares[option], abs=1e-12), option
    got = polar["wide"].to_pandas().set_index("config_id")
    assert len(got) == c.n
    median = float((got["crf"] - got["softmax"]).median())
    assert median == pytest.approx(c.median_difference("crf", "softmax"), abs=1e-12)


def test_the_readme_is_short_and_its_example_is_the_shipped_one():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    yaml = re.search(r"```yaml\n(.*?)```", readme, re.S).group(1)
    shipped = "".join(line for line in (REPO / "examples/pytorch/function.yaml").read_text().splitlines(keepends=True)
                      if not line.startswith("#"))
    assert yaml == shipped, "the README's study file is not examples/pytorch/function.yaml"
    fit = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    assert fit in (REPO / "examples/pytorch/function.py").read_text()
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (REPO / link).is_file(), link
    assert _block(REPO / "README.md", "readme-two-commands").count("make ") == 2


def test_the_readmes_docs_commands_run_as_written(tmp_path):
    """``make docs`` builds the site into build/site, and ``make docs-serve``
    answers at http://127.0.0.1:8000 until stopped (after ``make test``'s
    set-up, which both reuse)."""
    import signal
    import urllib.request

    build_line, serve_line = [line.split("#")[0].strip() for line in _block(REPO / "README.md", "readme-docs").splitlines()]
    assert (build_line, serve_line) == ("make docs", "make docs-serve")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    r = subprocess.run(build_line.split(), cwd=REPO, capture_output=True, text=True, timeout=900, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "pip install" not in r.stdout, "make docs reinstalled the environment: the set-up stamp is stale"
    assert (REPO / "build" / "site" / "index.html").is_file()
    serve = subprocess.Popen(serve_line.split(), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True, env=env)
    try:
        deadline, status = time.monotonic() + 120, None
        while time.monotonic() < deadline and serve.poll() is None:
            try:
                with urllib.request.urlopen("http://127.0.0.1:8000/index.html", timeout=2) as answer:
                    status, body = answer.status, answer.read().decode()
                    break
            except OSError:
                time.sleep(0.5)
        assert status == 200 and "seedsweep" in body, (status, serve.poll())
    finally:
        os.killpg(serve.pid, signal.SIGTERM)
        serve.wait(timeout=30)


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed: 'make test' installs it "
                    "(apt-get install chromium)")
def test_the_site_opens_offline_in_chromium_searches_and_lists_the_api(site):
    """Every page of the built site, served by a static server on loopback
    (no network beyond it): no console error, no request leaving the
    server; the search box finds "until"; the API page has every export."""
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):          # noqa: D102 - the server's access log is not the test's output
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html") if p.name != "404.html")
    errors, remote, found = [], [], {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            page.on("console", lambda m: errors.append(f"{page.url}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(f"{page.url}: {e}"))
            page.on("request", lambda r: None if r.url.startswith((base, "data:", "blob:", "about:"))
                    else remote.append(r.url))
            for html_page in pages:
                page.goto(base + html_page)
                page.wait_for_load_state("load")
            page.goto(base + "index.html")
            # the search worker indexes the site (300 KB) after the page loads: on a loaded machine that
            # takes a while, and a query typed before it is ready goes unanswered; so type it until answered
            deadline, found["tries"] = time.monotonic() + 180, 0
            while True:
                found["tries"] += 1
                page.fill("input.md-search__input", "")
                page.type("input.md-search__input", "until")
                try:
                    page.wait_for_selector(".md-search-result__item", timeout=10000)
                    break
                except PlaywrightTimeout:
                    if time.monotonic() > deadline:
                        raise
            found["search"] = page.locator(".md-search-result__item").count()
            found["first"] = page.locator(".md-search-result__item").first.inner_text()[:80]
            found["marked"] = page.locator(".md-search-result mark").count()
            page.goto(base + "reference/analysis-api.html")
            ids = set(page.eval_on_selector_all("[id]", "els => els.map(e => e.id)"))
        finally:
            browser.close()
            server.shutdown()
    print(json.dumps({"pages": len(pages), "console_errors": len(errors), "requests_off_server": len(remote),
                      "search_until_results": found["search"], "highlighted": found["marked"],
                      "search_tries": found["tries"], "first_result": found["first"]}))
    assert len(pages) >= 30
    assert not errors, errors[:5]
    assert not remote, remote[:5]
    assert found["search"] >= 1 and found["marked"] >= 1, found          # results, with "until" highlighted
    missing = [n for n in analysis.__all__ if f"{folder_name(getattr(analysis, n).__module__)}.{n}" not in ids]
    assert not missing, missing


#: a docstring's or comment's citation of a design section: docs/PAGE.md, "Heading" (the quotes may follow a line
#: break, and in YAML a comment's '#')
CITATION = re.compile(r"docs/([\w/.-]+\.md),\s+(?:#\s*)?[\"']([^\"'\n]+)[\"']")


def headings(page: Path) -> set[str]:
    """Every Markdown heading of ``page`` and every paragraph's bold lead (``**A script that tests once.**``),
    code ticks and a closing full stop removed."""
    text = page.read_text()
    found = re.findall(r"^#{1,6} (.+)$", text, re.M) + re.findall(r"^\*\*(.+?)\*\*", text, re.M)
    return {h.replace("`", "").strip().rstrip(".") for h in found}


def test_every_design_citation_names_a_heading_of_a_page_in_the_repository():
    # the design contract is the site's pages (statistics, run directory, layout, study file); the code cites
    # their sections by name, and nothing cites a document outside the repository
    where = [REPO / "README.md"] + [p for d in ("seedsweep", "study", "analysis", "search_spaces", "tests", "benchmarks",
                                                 "docs", "notebooks", "examples")
                                    for p in sorted((REPO / d).rglob("*"))
                                    if p.suffix in (".py", ".md", ".yaml", ".ipynb") and "results" not in p.parts]
    outside, dead, cited = [], [], 0
    for path in where:
        if path == Path(__file__):
            continue
        text = path.read_text()
        if "DESIGN.md" in text:
            outside.append(str(path.relative_to(REPO)))
        for m in CITATION.finditer(text):
            page, name = REPO / "docs" / m.group(1), m.group(2)
            cited += 1
            if not page.is_file() or not any(h == name or h.startswith(name + " (") for h in headings(page)):
                dead.append(f"{path.relative_to(REPO)}: docs/{m.group(1)}, {name!r}")
    assert not outside, f"cite DESIGN.md, which is not in the repository: {outside}"
    assert not dead, f"citations of a page or heading that does not exist: {dead}"
    assert cited >= 25, cited
