"""Finding a dataset's files, for every family.

A search space names a dataset (``task: {dataset: conll2000}``). Its files
are found in this order:

1. ``task.path`` -- an explicit folder (or, for ``wnut16``, a file);
2. ``$SEEDSWEEP_DATA/<dataset>/`` -- a folder of corpora, e.g. the shared
   ``data`` folder of this project;
3. the download cache ``$SEEDSWEEP_CACHE`` (default ``~/.cache/seedsweep``),
   filled on first use from the dataset's URLs where the machine has internet,
   each file checked against its SHA-256 before it is used.

Training subsets (``task.train_sentences``) are drawn by :func:`subset_rows`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import UserError
from ..files import TMP_PREFIX, file_sha256, note_read

__all__ = ["DatasetInfo", "download", "resolve_files", "subset_rows"]


@dataclass(frozen=True)
class DatasetInfo:
    """A registered dataset: its files, their URLs and digests, and its loader."""

    name: str
    files: dict[str, str]                       # role -> file name in the dataset's folder
    load: Callable[[dict[str, Path], dict], Any]     # the family's loader of the found files
    urls: dict[str, str] = field(default_factory=dict)      # file name -> URL
    sha256: dict[str, str] = field(default_factory=dict)    # file name -> digest
    description: str = ""


def _cache_dir() -> Path:
    return Path(os.environ.get("SEEDSWEEP_CACHE", Path.home() / ".cache" / "seedsweep"))


def download(url: str, target: Path, sha256: str | None) -> Path:
    """Fetch ``url`` into ``target`` (temporary name, checksum, then rename)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, suffix=".partial", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=60) as src:  # noqa: S310
            shutil.copyfileobj(src, out)
        digest = file_sha256(tmp)
        if sha256 and digest != sha256:
            raise UserError(url, f"the downloaded file has SHA-256 {digest}, expected {sha256}.",
                            "Retry later, or place the file yourself and point task.path or SEEDSWEEP_DATA at it.")
        os.replace(tmp, target)
    except OSError as exc:
        raise UserError(url, f"cannot download ({exc}).",
                        "Without internet, point task.path or SEEDSWEEP_DATA at a folder holding the files.") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def _noted(files: dict[str, Path]) -> dict[str, Path]:
    for path in files.values():
        note_read(path)              # the manifest records what a study read (study.files.reads)
    return files


def resolve_files(info: DatasetInfo, path: str | None = None, *, fetch: bool = True) -> dict[str, Path]:
    """The dataset's files, found as the module docstring says."""
    names = list(info.files.values())
    candidates: list[tuple[str, Path]] = []
    if path:
        candidates.append(("task.path", Path(path).expanduser()))
    if os.environ.get("SEEDSWEEP_DATA"):
        candidates.append(("SEEDSWEEP_DATA", Path(os.environ["SEEDSWEEP_DATA"]).expanduser() / info.name))
    cache = _cache_dir() / info.name
    candidates.append(("cache", cache))
    for _, folder in candidates:
        if all((folder / n).is_file() for n in names):
            return _noted({role: folder / n for role, n in info.files.items()})
    if path:
        missing = [n for n in names if not (Path(path).expanduser() / n).is_file()]
        raise UserError(f"task.path {path}", f"the folder lacks {', '.join(missing)} for dataset {info.name}.",
                        f"Give a folder holding {', '.join(names)}.")
    if fetch and info.urls:
        for n in names:
            if not (cache / n).is_file():
                download(info.urls[n], cache / n, info.sha256.get(n))
        return _noted({role: cache / n for role, n in info.files.items()})
    looked = ", ".join(f"{how} ({folder})" for how, folder in candidates)
    raise UserError(f"dataset {info.name}", f"its files ({', '.join(names)}) were not found; looked in {looked}.",
                    "Set SEEDSWEEP_DATA to a folder holding a "
                    f"'{info.name}' folder, or give task.path.")


def subset_rows(total: int, n: int | None, seed: int) -> list[int] | None:
    """Rows of a ``n``-example training subset of ``total`` examples, drawn
    without replacement by a generator seeded with ``seed`` (the task's
    ``subset_seed``), in file order; None when the whole set is used. Tagging
    corpora and sentence datasets draw their subsets here."""
    if n is None or n >= total:
        return None
    import numpy as np

    return np.sort(np.random.default_rng(seed).choice(total, size=n, replace=False)).tolist()
