"""The site's notebook pages: each shipped notebook (``notebooks/``, committed
without outputs) executed from top to bottom and kept with its outputs
under ``docs/notebooks/``, which mkdocs-jupyter renders as it is (the site
build executes nothing). ``tests/test_docs.py`` checks that every page's
code is the shipped notebook's, cell for cell, so a changed notebook fails
the suite until this is run again::

    SEEDSWEEP_SHARED_DATA=../shared/data .venv/bin/python docs/notebooks.py

Every notebook runs at its full size (the suite runs ``encoder_rankings`` at a
quarter of it and ``sst2_robustness`` on two seeds, not three, through
``SEEDSWEEP_NOTEBOOK_SCALE``); a page's first cell says when it ran and how long it took.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import nbformat
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[1]
SOURCE, PAGES = REPO / "notebooks", REPO / "docs" / "notebooks"
#: environment per notebook (none: every one at its full size)
SETTINGS: dict[str, dict[str, str]] = {}


def code_cells(nb) -> list[str]:
    """The source of every code cell, in order (what a page must share with its notebook)."""
    return [c.source for c in nb.cells if c.cell_type == "code"]


def render(path: Path) -> nbformat.NotebookNode:
    """``path`` executed in its folder, with a first cell saying when, where and at what size."""
    nb = nbformat.read(path, as_version=4)
    settings = SETTINGS.get(path.name, {})
    before = {k: os.environ.get(k) for k in settings}
    os.environ.update(settings)
    started = time.perf_counter()
    try:
        NotebookClient(nb, timeout=1800, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    finally:
        for k, v in before.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    size = "".join(f", with {k}={v}" for k, v in settings.items())
    note = (f"*This page is `notebooks/{path.name}` as shipped, executed by `docs/notebooks.py` on "
            f"{datetime.now(timezone.utc):%Y-%m-%d} ({time.perf_counter() - started:.0f} s on this project's "
            f"2-core machine{size}); the outputs below are that run's.*")
    nb.cells.insert(0, nbformat.v4.new_markdown_cell(note))
    return nb


def main() -> None:
    """Execute every shipped notebook (or those named) into ``docs/notebooks/``."""
    PAGES.mkdir(exist_ok=True)
    names = sys.argv[1:] or sorted(p.name for p in SOURCE.glob("*.ipynb"))
    for name in names:
        nb = render(SOURCE / name)
        nbformat.write(nb, PAGES / name)
        print(PAGES / name)


if __name__ == "__main__":
    main()
