"""The manifest: what a run directory's rows were produced with.

:func:`build_manifest` records one ``seedsweep run`` invocation: the study
file's text and hash, the sampler, git commit and dirty flag, package
versions, platform, resources per trial, and each compared choice with its
options written exactly as the trials table stores them (``compare``), so
readers never re-parse the YAML (see docs/reference/run-directory.md, "manifest.json").
:func:`imported_manifest` is the manifest of a ``seedsweep import``.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from ..families import get_family, optional, result_columns
from .rundir import SCHEMA_VERSION

__all__ = ["build_manifest", "imported_manifest", "versions", "packages", "git_state", "compared_options"]


def compared_options(space) -> list[dict[str, Any]]:
    """Each compared choice with its options as the strings of the trials
    table's ``option`` column, in file order.

    >>> from seedsweep.study.spec.spacefile import parse_space
    >>> compared_options(parse_space("name: s\\nfamily: synthetic\\nsamples: 1\\nseeds: 1\\ncompare: {x: [yes, no]}"))
    [{'choice': 'x', 'options': ['yes', 'no']}]
    """
    return [{"choice": name, "options": [str(o) for o in options]} for name, options in space.compare]


#: the packages a study's numbers depend on, named in the manifest's ``versions``
VERSIONED = ("seedsweep", "ray", "torch", "transformers", "numpy", "pandas", "pyarrow", "scipy", "optuna", "plotly",
             "pydantic", "PyYAML")


def _normal(name: str) -> str:
    """A distribution name as the packaging spec compares them (case, and runs of ``-_.``, folded)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _installed() -> list[tuple[str, str]]:
    """(name, version) of every installed distribution, in ``sys.path`` order, read from the header block of its
    metadata file only (parsing each whole file, description included, took most of an import's time)."""
    found = []
    for dist in metadata.distributions():
        text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
        name = version = None
        for line in text.splitlines():
            if not line.strip():
                break                               # the end of the header block
            if line.startswith("Name:"):
                name = line[5:].strip()
            elif line.startswith("Version:"):
                version = line[8:].strip()
        if name:
            found.append((name, version or dist.version))
    return found


def versions(installed: list[tuple[str, str]] | None = None) -> dict[str, str | None]:
    """Versions of Python and of every package a study's numbers depend on (the first of a name on ``sys.path``,
    the one Python imports)."""
    first: dict[str, str] = {}
    for name, version in installed if installed is not None else _installed():
        first.setdefault(_normal(name), version)
    return {"python": platform.python_version(), **{dist: first.get(_normal(dist)) for dist in VERSIONED}}


def packages(installed: list[tuple[str, str]] | None = None) -> dict[str, str]:
    """Every installed distribution and its version (the full environment, for a reader who reruns it)."""
    out: dict[str, str] = {}
    for name, version in installed if installed is not None else _installed():
        out[name] = version
    return dict(sorted(out.items(), key=lambda kv: kv[0].lower()))


def _environment() -> dict[str, Any]:
    installed = _installed()
    return {"versions": versions(installed), "packages": packages(installed)}


def git_state() -> dict[str, Any]:
    """The commit of the code that runs, and whether tracked files differ from it."""
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=10)
        if commit.returncode != 0:
            return {"commit": None, "dirty": None}
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
        return {"commit": commit.stdout.strip(), "dirty": bool(dirty.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def seed_scope(space) -> dict[str, str]:
    """What a seed varies in this study (docs/reference/run-directory.md, "Populations"): the
    family's answer where it gives one, else everything the seed seeds."""
    scope = optional(get_family(space.family), "seed_scope")(space)
    if scope is not None:
        return scope
    return {"initialisation": "seed", "dropout masks": "seed", "data order": "seed"}


def build_manifest(space, *, accelerators: dict[str, Any], command: list[str]) -> dict[str, Any]:
    """The manifest of one ``seedsweep run`` invocation (docs/reference/run-directory.md, "manifest.json")."""
    return {
        "schema_version": SCHEMA_VERSION,
        "study": space.name,
        "family": space.family,
        "yaml": space.text,
        "yaml_sha256": space.sha256,
        "space_path": space.path,
        "space_base": space.base,
        "sampler": space.sampler,
        "sampler_seed": space.sampler_seed,
        "n_configs": space.samples,
        "n_trials": space.n_trials,
        "compare": compared_options(space),
        "train": {"metric": space.train.metric, "mode": space.train.mode,
                  "vectorize_seeds": space.train.vectorize_seeds},
        "seed_scope": seed_scope(space),
        "results": list(result_columns(space)),
        "evaluate": list(space.evaluate),
        "tau": space.tau,
        "tune": space.tune.as_dict() if space.tune else None,
        "git": git_state(),
        **_environment(),
        "platform": {"system": platform.platform(), "machine": platform.machine(),
                     "cpu_count": os.cpu_count()},
        "cpu_threads_per_trial": space.resources.of_trial(space.train.vectorize_seeds)["cpu"],
        "gpus_per_trial": space.resources.gpu,
        "accelerators": accelerators,
        "command": command,
        "argv0": sys.argv[0],
        "created_at": datetime.now(timezone.utc).isoformat(),
    }


def imported_manifest(*, study: str, imported: dict[str, Any], command: list[str] | None) -> dict[str, Any]:
    """The manifest of a run directory made by ``seedsweep import``."""
    return {
        "schema_version": SCHEMA_VERSION,
        "study": study,
        "imported": imported,
        **_environment(),
        "command": command,
        "created_at": datetime.now(timezone.utc).isoformat(),
    }
