"""Every shipped study file, in every folder under search_spaces/, passes
``seedsweep check``; and ``check --resolve`` finds its data and models where
they are present (the shared data folder, the packaged weights), or names
exactly the resource that is not shipped (hub models, two embedding files
of the R&G study)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import seedsweep_here

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("SEEDSWEEP_SHARED_DATA", REPO.parent / "shared" / "data"))
FILES = sorted(p.relative_to(REPO / "search_spaces").as_posix() for p in (REPO / "search_spaces").rglob("*.yaml"))
#: resources neither shipped nor in the shared data: --resolve must name them
NOT_SHIPPED = {"rg2017/embeddings.yaml": "komninos", "sst5_models.yaml": "bert-base-uncased"}


#: evaluation tables a study reads from the current folder, made from the shared data by a script
GENERATED = {name: ("runs/sst2_test_phrases.tsv", "benchmarks/sst2_test_phrases.py")
             for name in ("sst2_setting.yaml", "sst2_robustness_closest.yaml")}


def seedsweep(*args: str, env: dict | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess:
    """``seedsweep check`` in this process: what it says of each file is the test, not its process start."""
    return seedsweep_here(*args, cwd=cwd, env=env)


def where_to_check(name: str, tmp_path: Path) -> tuple[str, Path]:
    """(the study file's path, the folder to run in): a study that reads a generated table runs in a
    folder where the script made it from the shared data."""
    if name not in GENERATED:
        return f"search_spaces/{name}", REPO
    if not (DATA / "sst5").is_dir():
        pytest.skip(f"{name} reads a table made from the shared data, which is not at {DATA}")
    table, script = GENERATED[name]
    subprocess.run([sys.executable, str(REPO / script), str(DATA / "sst5"), str(tmp_path / table)], check=True,
                   cwd=REPO, capture_output=True)
    (tmp_path / "testbeds").symlink_to(REPO / "testbeds")       # the study's other relative paths
    return str(REPO / "search_spaces" / name), tmp_path


def test_the_files_are_found_in_every_folder():
    assert "rg2017/classifier.yaml" in FILES and "quickstart.yaml" in FILES and len(FILES) >= 18


@pytest.mark.parametrize("name", FILES)
def test_every_shipped_study_file_passes_check(name, tmp_path):
    path, cwd = where_to_check(name, tmp_path)
    r = seedsweep("check", path, cwd=cwd)
    assert r.returncode == 0, r.stderr
    assert "trials" in r.stdout


@pytest.mark.skipif(not (DATA / "conll2000").is_dir(),
                    reason=f"the shared data folder is not at {DATA} (set SEEDSWEEP_SHARED_DATA)")
@pytest.mark.parametrize("name", FILES)
def test_every_shipped_study_file_resolves_or_names_what_is_missing(name, tmp_path):
    env = {**os.environ, "SEEDSWEEP_DATA": str(DATA), "SEEDSWEEP_EMBEDDINGS": str(tmp_path),
           "SEEDSWEEP_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    path, cwd = where_to_check(name, tmp_path)
    r = seedsweep("check", "--resolve", path, env=env, cwd=cwd)
    if name in NOT_SHIPPED:
        assert r.returncode == 2 and NOT_SHIPPED[name] in r.stderr, r.stderr
    else:
        assert r.returncode == 0, r.stderr
