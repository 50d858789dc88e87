"""The study's code on a cluster with nothing shared: Ray's runtime environment.

With ``--address`` a study of the user's own code (the ``function`` and
``command`` families) ships a folder to every node through Ray's runtime
environment (``working_dir``): by default the study file's folder, which
holds the function's file or the command's script in every example;
``task.working_dir`` (relative to the study file) and ``task.excludes``
(Ray's ``.gitignore``-style patterns) say otherwise. ``runs/``, ``.venv/``,
``.git/``, ``__pycache__/`` and the run directory itself never travel.

On a worker the shipped copy is the process's first working directory (Tune
keeps it as ``TUNE_ORIG_WORKING_DIR`` before it moves the trial into its own
folder); :meth:`Shipment.on_worker` gives the study the copy of its folder
there, so the function's file, its sibling modules, a command's relative
program and data files are read from the copy, never from a path that exists
only on the driver's machine.

When seedsweep itself runs as a Ray job with a working directory
(``ray job submit --working-dir . -- seedsweep run study.yaml --address
auto``), the job's runtime environment is already every worker's: nothing is
shipped twice, and the driver's working directory (the job's copy) is the
folder the workers have.

What travels is listed as Ray lists it (its own walk of the folder, its
exclude patterns and ``.gitignore``/``.rayignore`` files) and recorded in the
manifest (``shipped``: each file's SHA-256 and the total size). A folder
larger than Ray's package limit is refused before any trial starts, with its
largest entries named. The size is the uncompressed size (Ray zips the
folder; a folder that large takes minutes to reach every node anyway, and
data belongs on storage every node reads: docs/how-to/cluster.md).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..files import file_sha256, folder_under

__all__ = ["Shipment", "plan_shipment", "shipped_env", "job_runtime_env", "NEVER_SHIPPED"]

#: Patterns that never travel, whatever the study says.
NEVER_SHIPPED = ("runs/", ".venv/", ".git/", "__pycache__/")
_FAMILIES = ("function", "command")


@dataclass(frozen=True)
class Shipment:
    """What travels to the workers: ``folder`` (on the driver), the study's folder relative to it, and how."""

    folder: str
    study_rel: str
    cwd_rel: str | None
    excludes: tuple[str, ...]
    by: str                                          # "seedsweep" (ray.init's runtime_env) or "ray job"
    files: dict[str, str] = field(default_factory=dict, compare=False)     # relative path -> sha256
    size: int = 0

    def runtime_env(self) -> dict[str, Any]:
        """The runtime environment ray.init passes (nothing where the job already ships the folder)."""
        if self.by != "seedsweep":
            return {}
        return {"working_dir": self.folder, "excludes": list(self.excludes)}

    def record(self) -> dict[str, Any]:
        """The manifest's ``shipped`` entry."""
        return {"folder": self.folder, "study_folder": self.study_rel, "by": self.by, "excludes": list(self.excludes),
                "bytes": self.size, "files": dict(sorted(self.files.items()))}

    def code(self) -> dict[str, str]:
        """The shipped Python files, by their path on the driver (a resume refuses a changed one)."""
        return {str(Path(self.folder) / rel): sha for rel, sha in self.files.items() if rel.endswith(".py")}

    def on_worker(self, space):
        """``space`` with its folder moved to the worker's copy, and the folder to run in there."""
        here = Path(os.environ.get("TUNE_ORIG_WORKING_DIR") or os.getcwd())
        base = here / self.study_rel
        cwd = here / self.cwd_rel if self.cwd_rel is not None else base
        return replace(space, base=str(base)), str(cwd if cwd.is_dir() else base)    # (an excluded folder: not there)


def job_runtime_env() -> dict[str, Any]:
    """The runtime environment of the Ray job this process runs as ({} when it is not one)."""
    text = os.environ.get("RAY_JOB_CONFIG_JSON_ENV_VAR")
    if not text:
        return {}
    try:
        return dict(json.loads(text).get("runtime_env") or {})
    except (ValueError, AttributeError):
        return {}


def shipped_env(space, out: Any, address: str | None) -> dict[str, Any] | None:
    """The runtime environment of a Ray session that runs several of the study's
    runs (an adaptive or tuned study's waves): each run joins that session, and
    what a joined run asks for is not applied, so the folder travels with the session."""
    shipment = plan_shipment(space, out, address)
    return shipment.runtime_env() if shipment is not None else None


def plan_shipment(space, out: Any, address: str | None, *, limit: int | None = None) -> Shipment | None:
    """What this run ships: None without ``--address`` or for the built-in families (installed on every node)."""
    if not address or space.family not in _FAMILIES:
        return None
    study = folder_under(space.base, None)        # task.working_dir and task.excludes were checked with the study file
    job = job_runtime_env()
    if job.get("working_dir"):
        folder, by, excludes = Path(os.getcwd()).resolve(), "ray job", ()
    else:
        folder, by = folder_under(space.base, space.task.get("working_dir")), "seedsweep"
        excludes = list(NEVER_SHIPPED)
        out_path = Path(str(out)).expanduser()
        if "://" not in str(out) and _inside(out_path.resolve(), folder):
            excludes.append("/" + out_path.resolve().relative_to(folder).as_posix() + "/")
        excludes += list(space.task.get("excludes") or [])
    if not _inside(study, folder):
        where, fix = (("task.working_dir", "Give a working_dir that holds the study file's folder (e.g. "
                       "working_dir: ..).") if by == "seedsweep" else
                      ("ray job submit --working-dir", "Submit the job with a --working-dir that holds the study "
                       "file, and name the study file relative to it."))
        raise UserError(f"{space.path}: {where}", f"the study file's folder {study} is not inside the folder "
                        f"that travels ({folder}), so its files would not reach the workers.", fix)
    cwd = Path(os.getcwd()).resolve()
    limit = limit if limit is not None else _ray_limit()
    files, size = _listing(folder, list(excludes), by == "seedsweep", limit)
    if size > limit:
        raise UserError(f"{space.path}: task.working_dir ({folder})",
                        f"{_mib(size)} would travel to every node, over Ray's package limit of {_mib(limit)}; "
                        f"the largest: {', '.join(f'{n} ({_mib(s)})' for n, s in _largest(folder, files))}.",
                        "Add the large folders to task.excludes and put data on storage every node reads "
                        "(SEEDSWEEP_DATA, an object store); or ship a smaller task.working_dir.")
    return Shipment(folder=str(folder), study_rel=study.relative_to(folder).as_posix(),
                    cwd_rel=cwd.relative_to(folder).as_posix() if _inside(cwd, folder) else None,
                    excludes=tuple(excludes), by=by, files=files, size=size)


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _listing(folder: Path, excludes: list[str], own: bool, limit: int) -> tuple[dict[str, str], int]:
    """Every file Ray zips from ``folder`` (its own walk and patterns) -> sha256, and their total size."""
    # Ray's packaging walk, imported where a study ships code: the listing is exactly what Ray zips
    import ray._private.runtime_env.packaging

    found: list[Path] = []

    def take(path: Path) -> None:
        if path.is_file():
            found.append(path)

    gitignore = os.environ.get("RAY_RUNTIME_ENV_IGNORE_GITIGNORE", "0") != "1"
    packaging = ray._private.runtime_env.packaging
    packaging._dir_travel(folder, [packaging._get_excludes(folder, excludes if own else [])], take,
                          include_gitignore=gitignore)
    size = sum(p.stat().st_size for p in found)
    if size > limit:                   # the refusal names the largest; hashing what will not travel is wasted
        return {p.relative_to(folder).as_posix(): "" for p in found}, size
    return {p.relative_to(folder).as_posix(): file_sha256(p) for p in found}, size


def _largest(folder: Path, files: dict[str, str], n: int = 3) -> list[tuple[str, int]]:
    """The ``n`` largest top-level entries of ``folder`` among ``files``, by the size that would travel."""
    sizes: dict[str, int] = {}
    for rel in files:
        top = rel.split("/", 1)[0] + ("/" if "/" in rel else "")
        sizes[top] = sizes.get(top, 0) + (folder / rel).stat().st_size
    return sorted(sizes.items(), key=lambda kv: -kv[1])[:n]


def _ray_limit() -> int:
    # Ray's bound on a package (its gRPC message size), imported only where a study ships code
    from ray._private.runtime_env.packaging import GCS_STORAGE_MAX_SIZE

    return int(GCS_STORAGE_MAX_SIZE)


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"
