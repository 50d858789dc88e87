"""Execute a shipped notebook at its full size and keep what it printed as a record.

The test suite runs some notebooks on smaller inputs (``tests/test_notebooks.py``);
this script runs one as a reader would and writes its outputs, the time it
took and the machine to a Markdown file under ``benchmarks/results/``::

    SEEDSWEEP_SHARED_DATA=../shared/data .venv/bin/python benchmarks/notebook_record.py \\
        notebooks/encoder_rankings.ipynb benchmarks/results/encoder_rankings-2026-12-02.md
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from datetime import datetime, timezone
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def outputs(nb) -> list[str]:
    """The text (stream, plain or Markdown) of every output of every code cell, in order."""
    out = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            out.append(o.get("text") or data.get("text/markdown") or data.get("text/plain") or "")
    return out


def main() -> None:
    """Run the notebook named on the command line and write the record."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook")
    parser.add_argument("record", help="the Markdown file to write")
    args = parser.parse_args()
    path = Path(args.notebook).resolve()
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=1800, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    seconds = time.perf_counter() - start
    scale = os.environ.get("SEEDSWEEP_NOTEBOOK_SCALE", "1")
    head = [f"# `{args.notebook}` at full size (SEEDSWEEP_NOTEBOOK_SCALE={scale})", "",
            f"Executed {datetime.now(timezone.utc).isoformat(timespec='seconds')} on {os.cpu_count()} CPUs "
            f"({platform.platform()}) in {seconds:.0f} s by `python benchmarks/notebook_record.py {args.notebook} "
            f"{args.record}`. What it printed, cell by cell:", ""]
    Path(args.record).write_text("\n".join(head) + "\n" + "\n\n---\n\n".join(t.rstrip() for t in outputs(nb)) + "\n")
    print(f"{args.notebook}: {seconds:.0f} s; wrote {args.record}")


if __name__ == "__main__":
    main()
