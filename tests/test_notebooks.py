"""The notebooks execute from top to bottom (nbclient, the venv's own kernel)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.test_analysis_io import RG_CSV, needs_rg


@needs_rg
def test_rg2017_tables_notebook_executes_and_shows_every_table():
    import nbformat
    from nbclient import NotebookClient

    path = REPO / "notebooks" / "rg2017_tables.ipynb"
    nb = nbformat.read(path, as_version=4)
    env_before = os.environ.get("SEEDSWEEP_SHARED_DATA")
    os.environ["SEEDSWEEP_SHARED_DATA"] = str(RG_CSV.parents[1])
    try:
        NotebookClient(nb, timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    finally:
        if env_before is None:
            os.environ.pop("SEEDSWEEP_SHARED_DATA", None)
        else:
            os.environ["SEEDSWEEP_SHARED_DATA"] = env_before
    text = "\n".join(
        out.get("text", "") + "".join(out.get("data", {}).get("text/markdown", ""))
        for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", []))
    assert "51,422 networks imported" in text
    for title in ("classifier (Decoder", "optimizer (Optimizer", "dropout (DropoutType", "character representation",
                  "tagging scheme", "layers (LSTM-Layers", "mini-batch size", "embeddings (Embeddings",
                  "median (max − min)"):
        assert title in text, title
    assert "95.1%†" in text                  # the chunking CRF share, next to the published 95.2%
    assert not any(out.get("output_type") == "error" for cell in nb.cells for out in cell.get("outputs", []))
