"""Which reader an import goes through (``seedsweep import``): a folder is a
Ray Tune experiment, ``--storage`` an Optuna study, ``--tracking-uri`` an
MLflow experiment, a file with W&B's header a W&B runs export and any other
file a CSV/TSV (``--from`` says so outright). Each flag that belongs to
another kind of source is refused, naming the flag."""

from __future__ import annotations

from pathlib import Path

from seedsweep.study.errors import UserError

__all__ = ["import_any", "source_named", "source_kind"]

_OWN = {"csv": ("task", "sep"), "wandb": ("task", "sep"), "tune": ("task",), "optuna": ("task", "storage", "study"),
        "mlflow": ("task", "tracking_uri", "experiment")}


def source_named(source: str | None, *, storage: str | None = None, study: str | None = None,
                 tracking_uri: str | None = None, experiment: str | None = None, **_) -> str:
    """How an import's messages name its source."""
    if storage:
        return f"{storage}" + (f" (study {study})" if study else "")
    if tracking_uri:
        return f"{tracking_uri} (experiment {experiment})"
    return str(source)


def source_kind(source: str | None, kind: str | None, storage: str | None, tracking_uri: str | None) -> str:
    """The kind of source the flags name (see the module docstring), or a located error."""
    given = [name for name, v in (("SOURCE", source), ("--storage", storage), ("--tracking-uri", tracking_uri)) if v]
    if len(given) != 1:
        raise UserError("seedsweep import", f"{'no source' if not given else ' and '.join(given) + ' together'}: "
                        "one source per import.",
                        "Give a file or folder, or --storage URL (an Optuna study), or --tracking-uri URI (an "
                        "MLflow experiment).")
    if storage:
        return "optuna"
    if tracking_uri:
        return "mlflow"
    path = Path(source)
    if kind is not None:
        return kind
    if path.is_dir():
        return "tune"
    if path.is_file():
        from .wandbsource import is_wandb_export   # the header line decides (a file that does not read says so later)

        return "wandb" if is_wandb_export(_header(path)) else "csv"
    return "csv"


def _header(path: Path) -> list[str]:
    """The first line's fields (tab, semicolon or comma separated), or none where it does not read."""
    import csv
    import gzip

    try:
        with (gzip.open if path.suffix == ".gz" else open)(path, "rt", encoding="utf-8", errors="replace") as fh:
            first = fh.readline()
    except (OSError, EOFError):
        return []
    sep = "\t" if "\t" in first else ";" if first.count(";") > first.count(",") else ","
    return next(csv.reader([first], delimiter=sep), [])


def import_any(source: str | None, out: str | Path, *, kind: str | None = None, storage: str | None = None,
               study: str | None = None, tracking_uri: str | None = None, experiment: str | None = None,
               task: str | None = None, sep: str | None = None, **flags) -> Path:
    """Import whatever the flags name (see the module docstring) as the run directory ``out``; returns its path.
    ``flags``: those of :func:`analysis.reading.imported.import_csv` every source shares."""
    kind = source_kind(source, kind, storage, tracking_uri)
    given = {"task": task, "sep": sep, "storage": storage, "study": study, "tracking_uri": tracking_uri,
             "experiment": experiment}
    for name, value in given.items():
        if value and name not in _OWN[kind]:
            raise UserError(f"{source_named(source, **given)}: --{name.replace('_', '-')}",
                            f"is not a flag of {'an' if kind in ('optuna', 'mlflow') else 'a'} {kind} import.",
                            "Leave it out.")
    if kind == "tune":
        from .tunesource import import_tune      # each source's reader loads only for its own import
        return import_tune(source, out, task=task, **flags)
    if kind == "optuna":
        from .optunasource import import_optuna   # (as above)
        return import_optuna(storage, study, out, task=task, **flags)
    if kind == "mlflow":
        from .mlflowsource import import_mlflow   # (as above)
        return import_mlflow(tracking_uri, experiment, out, task=task, **flags)
    if kind == "wandb":
        from .wandbsource import import_wandb     # (as above)
        return import_wandb(source, out, sep=sep, task=task, **flags)
    from .imported import import_csv              # (as above)
    return import_csv(source, out, task=task, sep=sep, **flags)
