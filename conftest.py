"""Suite-wide settings.

* In CI (``SEEDSWEEP_REQUIRE_ALL=1``, set by ``.ci/run``) a skipped test is a
  failure: every test must run there, the browser and shared-data ones
  included. Elsewhere a skip still says what to install or where to point.
* The order: modules whose longest test takes longest run first, each
  module's tests together (so a module's fixtures are built once per
  worker), its longest first (``tests/durations.txt``). With parallel
  workers (pytest-xdist, ``make test``), the long end-to-end tests then
  start at once instead of ending the run one after another.
* ``slow``: marked by hand, or recorded at :data:`SLOW_SECONDS` or more in
  ``tests/durations.txt``; ``make test-fast`` runs the rest.
* Doctests of ``seedsweep``, ``study`` and ``analysis``, collected here with
  each module imported by its installed name (``study/spec/x.py`` is
  ``seedsweep.study.spec.x``; pytest's ``--doctest-modules`` would import it
  as a second, top-level ``study``): their examples read ``run_dir``, a small synthetic study written here without Ray
  (6 configurations x Softmax/CRF x 2 seeds, CRF's injected effect +0.05).
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest
from _pytest.doctest import DoctestModule   # pytest's doctest collector; only how it imports the module changes

REQUIRE_ALL = os.environ.get("SEEDSWEEP_REQUIRE_ALL") == "1"
#: set by benchmarks/suite_census.py: each pytest process writes the test it runs to CENSUS/<its pid>
CENSUS = os.environ.get("SEEDSWEEP_CENSUS_DIR")


def pytest_runtest_logstart(nodeid, location):
    """Under the census, say which test this process runs now (it charges this process's CPU, and its
    own Ray's, to that test)."""
    if CENSUS:
        Path(CENSUS, str(os.getpid())).write_text(nodeid)


def pytest_runtest_logfinish(nodeid, location):
    """Under the census, say that this process runs no test now (its idle time between tests is nobody's)."""
    if CENSUS:
        Path(CENSUS, str(os.getpid())).write_text("")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if REQUIRE_ALL and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = (f"skipped where every test must run (SEEDSWEEP_REQUIRE_ALL=1): {reason}")

DOCTEST_STUDY = """
name: doctest
family: synthetic
samples: 6
seeds: 2
compare: {classifier: [softmax, crf]}
space: {optimizer: {choice: [adam, nadam]}, layers: {int: [1, 3]}}
task: {effects: {classifier: {crf: 0.05}}, noise: 0.002}
"""


REPO = Path(__file__).resolve().parent
#: folder -> the import name it installs as (pyproject.toml's package-dir)
INSTALLED = {"seedsweep": "seedsweep", "study": "seedsweep.study", "analysis": "seedsweep.analysis"}


class NamespacedDoctests(DoctestModule):
    """A module's docstring examples, the module imported by its installed name."""

    def _getobj(self):
        parts = list(self.path.relative_to(REPO).with_suffix("").parts)
        parts[0] = INSTALLED[parts[0]]
        return importlib.import_module(".".join(parts[:-1] if parts[-1] == "__init__" else parts))


def pytest_collect_file(file_path, parent):
    folder = file_path.relative_to(REPO).parts[0] if file_path.is_relative_to(REPO) else None
    if file_path.suffix == ".py" and folder in INSTALLED and file_path.name != "__main__.py":
        return NamespacedDoctests.from_parent(parent, path=file_path)
    return None


def _durations() -> dict[str, float]:
    path = Path(__file__).parent / "tests" / "durations.txt"
    if not path.is_file():
        return {}
    found = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            seconds, node = line.split(maxsplit=1)
            found[node] = float(seconds)
    return found


#: a test recorded at this many seconds or more in tests/durations.txt is slow (make test-fast leaves it out)
SLOW_SECONDS = 3.0


def pytest_collection_modifyitems(session, config, items):
    """Longest modules first, each module's tests together, its longest first
    (stable: tests without a recorded duration keep their order); a test
    recorded at :data:`SLOW_SECONDS` or more is marked ``slow``."""
    seconds = _durations()
    if not seconds:
        return
    for item in items:
        if seconds.get(item.nodeid, seconds.get(item.nodeid.split("[", 1)[0], 0.0)) >= SLOW_SECONDS:
            item.add_marker(pytest.mark.slow)
    modules: dict[str, float] = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        modules[module] = max(modules.get(module, 0.0), seconds.get(item.nodeid.split("[", 1)[0],
                                                                    seconds.get(item.nodeid, 0.0)))
    first = {m: i for i, m in enumerate(modules)}

    def key(item):
        module = item.nodeid.split("::", 1)[0]
        own = seconds.get(item.nodeid, seconds.get(item.nodeid.split("[", 1)[0], 0.0))
        return -modules[module], first[module], -own

    items[:] = sorted(items, key=key)


def pytest_collectreport(report):
    if REQUIRE_ALL and report.skipped:
        report.outcome = "failed"


@pytest.fixture(scope="session")
def doctest_run_dir(tmp_path_factory):
    from tests.rundirs import write_synthetic_run

    out = tmp_path_factory.mktemp("doctest") / "run"
    write_synthetic_run(out, DOCTEST_STUDY)
    return str(out)


@pytest.fixture(autouse=True)
def _doctest_names(request, doctest_namespace):
    """Names the docstring examples use: ``run_dir`` (built on first use), ``load``, ``np``."""
    if isinstance(request.node, pytest.DoctestItem):
        import numpy as np

        from seedsweep.analysis import load

        doctest_namespace.update(run_dir=request.getfixturevalue("doctest_run_dir"), load=load, np=np)
