"""Someone else's raw results as a run directory (``seedsweep import``).

The imported directory holds (docs/reference/run-directory.md, "Imported run directories")::

    manifest.json    what was imported: source path, sha256, rows, columns, when
    trials.parquet   the source's columns, unchanged, plus task, test_score,
                     dev_score (when given), status/reason, and the identity
                     columns trial_key ("row-<line>"), config_id, choice,
                     option, seed (empty: others' data pairs by columns)
    import.json      the score columns, the result columns (never pairing
                     keys) and the comparisons to report

With no flags the importer recognises the raw results of Reimers & Gurevych
(2017) (``hyperparameter_results.csv.gz``, tab separated) and presets the
paper's eight comparisons on its single-task rows; every row is imported,
multi-task rows included.

The directory is built in a temporary sibling folder and renamed into place,
so an import that fails leaves nothing behind.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from seedsweep.study.errors import UserError
from seedsweep.study.files import file_sha256
from seedsweep.study.store.manifest import imported_manifest
from seedsweep.study.store.rundir import RunDir

from ..specs import ComparisonSpec
from .opened import opened

__all__ = ["import_csv", "read_delimited", "write_import", "spec_from_flags", "ImportSpec", "read_import_spec",
           "rg2017_spec", "RG2017_TASKS"]


@dataclass(frozen=True)
class ImportSpec:
    score: str = "test_score"                   # always test_score in the run directory
    source_score: str = ""                      # the source column it was copied from
    source_dev_score: str | None = None
    task: str | None = None                     # source column naming the task (None: one task)
    results: list[str] = field(default_factory=list)
    comparisons: list[ComparisonSpec] = field(default_factory=list)
    seed: str | None = None                     # the source column that became the seed column (None: none)


# ------------------------------------------------------------- R&G preset

RG2017_TASKS = {
    "conll2000_chunking.pkl": "Chunking",
    "conll2003_ner.pkl": "NER",
    "ace.pkl": "Entities",
    "tempeval3.pkl": "Events",
    "wsj_pos_500.pkl": "POS",
}
_RG_REQUIRED = {"ID", "Setting", "Dataset", "Decoder", "Optimizer", "DropoutType", "CharEmbeddings",
                "TaggingScheme", "LSTM-Layers", "miniBatchSize", "Embeddings", "Test_F1"}
_RG_RESULTS = ["ID", "Epochs", "OptimalEpoch", "Dev_F1", "Test_F1", "Max_Test_F1"]


def rg2017_spec() -> ImportSpec:
    """The comparisons of the R&G hyperparameter study on single-task rows.

    Every comparison ignores ``Backend``: the study ran under Theano and
    TensorFlow (spelled three ways) and the paper's tables pool them; pairing
    on it splits pairs the paper counts (checked against the published CRF
    shares). Option-specific settings that change with the option are
    ignored too (dropout rates when comparing dropout types, character
    network sizes when comparing character representations, the label column
    when comparing tagging schemes, layer sizes when comparing depths).

    The raw file has two Adam variants: ``Adam_org`` (1,079 rows, run only on
    the optimizer experiment's configurations) and ``Adam`` (22,219 rows, the
    default optimizer of every other experiment, also run on those
    configurations). The paper's Table 7 is the one with ``Adam_org``: on
    chunking Nadam wins 51.6% and ``Adam_org`` 17.2%, where ``Adam`` would
    win 47.9% (``tests/test_analysis_io.py``).
    """
    single = {"Setting": ["SingleTask"]}
    c = [
        ComparisonSpec("classifier", "Decoder", ["Softmax", "CRF"], ["Backend"], single),
        ComparisonSpec("optimizer", "Optimizer", ["Adam_org", "Nadam", "RMSProp", "Adadelta", "Adagrad", "SGD"],
                       ["Backend"], single),
        ComparisonSpec("dropout", "DropoutType", ["No", "Naive", "Variational"],
                       ["Backend", "Dropout", "VariationalDropoutType"], single),
        ComparisonSpec("character representation", "CharEmbeddings", ["False", "CNN", "LSTM"],
                       ["Backend", "CharEmbeddingsSize", "CharFilterSize", "CharFilterLength", "CharLSTMSize"],
                       single),
        ComparisonSpec("tagging scheme", "TaggingScheme", ["BIO", "IOB", "IOBES"], ["Backend", "LabelKey"], single),
        ComparisonSpec("layers", "LSTM-Layers", ["1", "2", "3"], ["Backend", "LSTM-Size", "LSTM-Neurons"], single),
        ComparisonSpec("mini-batch size", "miniBatchSize", ["1", "8", "16", "32", "64"], ["Backend"], single),
        ComparisonSpec("embeddings", "Embeddings",
                       ["glove_6b_100d", "glove_6b_300d", "glove_840b_300d", "google_news", "komninos",
                        "levy_bow", "levy_dep", "fasttext"], ["Backend"], single),
    ]
    return ImportSpec(source_score="Test_F1", source_dev_score="Dev_F1", task="Dataset", results=list(_RG_RESULTS),
                      comparisons=c)


# ------------------------------------------------------------------ reading


def read_delimited(path: Path, sep: str | None) -> pd.DataFrame:
    """The delimited text file ``path`` (plain or .gz; ``sep`` None: guessed from its header line) as a table,
    or a located error."""
    if not path.is_file():
        raise UserError(str(path), "no such file.", "Give the path of a CSV/TSV file (plain or .gz).")
    try:
        if sep is None:
            import gzip

            opener = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
                first = fh.readline()
            sep = "\t" if "\t" in first else ";" if first.count(";") > first.count(",") else ","
        df = pd.read_csv(path, sep=sep, low_memory=False)
    except (pd.errors.ParserError, UnicodeDecodeError, EOFError, OSError, ValueError) as exc:
        raise UserError(str(path), f"cannot be read as a delimited text file ({exc}).",
                        "Check the file (and --sep); a .gz file must be gzip-compressed.") from None
    if df.empty or len(df.columns) < 2:
        raise UserError(str(path), "has no data rows or only one column.",
                        "Give a file with a header line and one row per run (use --sep for other delimiters).")
    return df


def _require_columns(path: Path, df: pd.DataFrame, names: dict[str, str | None]) -> None:
    for flag, col in names.items():
        if col is not None and col not in df.columns:
            raise UserError(f"{path}: {flag} {col}", "no such column in the file.",
                            f"Use one of: {', '.join(map(str, df.columns))}.")


def _numeric(path: Path, df: pd.DataFrame, column: str) -> np.ndarray:
    values = pd.to_numeric(df[column], errors="coerce")
    bad = values.isna() & df[column].notna()
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise UserError(f"{path}: line {row + 2}, column {column}",
                        f"the score {df[column].iloc[row]!r} is not a number.",
                        "Fix the value, or leave the cell empty for a run without a score (imported as failed).")
    return values.to_numpy(dtype=float)


def spec_from_flags(path: Path, df: pd.DataFrame, *, task, score, dev_score, choice, options, ignore,
                    results, mode: str = "max") -> ImportSpec:
    """The import's description from the command line's flags, each named column checked against ``df``."""
    if score is None:
        raise UserError(str(path), "its columns are not the R&G raw-results layout, so the score column is unknown.",
                        "Name it with --score COLUMN (and --task, --choice, --options, --ignore as needed).")
    _require_columns(path, df, {"--score": score, "--dev-score": dev_score, "--task": task, "--choice": choice})
    for col in list(ignore) + list(results):
        _require_columns(path, df, {"--ignore/--result": col})
    comps = []
    if choice is not None:
        opts = list(options) if options else None
        if opts:
            present = set(df[choice].astype(str))
            absent = [o for o in opts if o not in present]
            if absent:
                raise UserError(f"{path}: --options", f"option(s) {absent} never occur in column {choice}.",
                                f"Use values of that column: {sorted(present)[:20]}.")
        comps.append(ComparisonSpec(choice, choice, opts, list(ignore), {}, mode))
    res = list(dict.fromkeys([score] + ([dev_score] if dev_score else []) + list(results)))
    return ImportSpec(source_score=score, source_dev_score=dev_score, task=task, results=res, comparisons=comps)


# ------------------------------------------------------------------ writing

_ADDED = ("task", "test_score", "dev_score", "status", "reason", "trial_key", "config_id", "choice", "option", "seed")


def _to_arrow(df: pd.DataFrame) -> pa.Table:
    clean = df.copy()
    for col in clean.columns:
        if clean[col].dtype == object:          # mixed types: keep the text as written
            clean[col] = clean[col].astype("string")       # str() of each value, missing values kept missing
    return pa.Table.from_pandas(clean, preserve_index=False)


def import_csv(csv: str | Path, out: str | Path, *, task: str | None = None, task_name: str | None = None,
               score: str | None = None, dev_score: str | None = None, choice: str | None = None,
               options: Sequence[str] | None = None, ignore: Sequence[str] = (), results: Sequence[str] = (),
               sep: str | None = None, seed: str | None = None, mode: str = "max",
               command: list[str] | None = None) -> Path:
    """Import ``csv`` as the run directory ``out``; returns its path.
    ``seed``: the column holding each run's random seed (rows equal in every
    other setting are then seeds of one configuration); ``mode``: ``min``
    where a lower score is better.

    For example (the shared R&G file; ``tests/test_analysis_io.py`` runs it)::

        import_csv("../shared/data/rg2017/hyperparameter_results.csv.gz", "runs/rg2017")
    """
    path = Path(csv)
    out = Path(out)
    RunDir.check_import_target(out)
    df = read_delimited(path, sep)
    flags = any(v is not None for v in (task, task_name, score, dev_score, choice, seed)) or bool(ignore or results)
    if not flags and _RG_REQUIRED <= set(df.columns):
        import_spec, preset = rg2017_spec(), "rg2017"
    else:
        import_spec = spec_from_flags(path, df, task=task, score=score, dev_score=dev_score, choice=choice,
                                     options=options, ignore=ignore, results=results, mode=mode)
        preset = None
    task_column = df["Dataset"].map(RG2017_TASKS).fillna(df["Dataset"].astype(str)) if preset == "rg2017" else None
    source = {"source": str(path.resolve()), "sha256": file_sha256(path), "rows": int(len(df)),
              "columns": [str(c) for c in df.columns], "preset": preset}
    return write_import(path, out, df, import_spec, source, keys=[f"row-{i + 2}" for i in range(len(df))],
                        task_column=task_column, task_name=task_name, seed=seed, command=command,
                        study=path.name.split(".")[0])


def write_import(path: Path, out: Path, df: pd.DataFrame, import_spec: ImportSpec, source: dict, *, keys: list[str],
                 task_column: pd.Series | None = None, task_name: str | None = None, seed: str | None = None,
                 reasons: Sequence[str | None] | None = None, statuses: Sequence[str | None] | None = None,
                 epochs: pd.DataFrame | None = None, command: list[str] | None = None, study: str = "imported") -> Path:
    """The run directory ``out`` of source rows ``df`` (one per run, read from
    ``path``) under ``import_spec``: the added columns, then written whole or
    not at all. ``keys``: each row's trial key; ``reasons``: why a row failed
    (None: ok if its score is finite); ``statuses``: a row's status where the source says (``stopped``: ended
    early by a pruner); ``epochs``: per-report rows to keep."""
    _require_columns(path, df, {"--seed": seed})
    sources = (import_spec.source_score, import_spec.source_dev_score, import_spec.task, seed)
    clash = [c for c in _ADDED if c in df.columns and c not in sources]
    if clash:
        raise UserError(f"{path}: column(s) {clash}", "these names are columns seedsweep adds to every run directory.",
                        ("If 'seed' is each run's random seed, say so with --seed seed; otherwise rename"
                         if "seed" in clash else "Rename") + " them in a copy of the source before importing.")
    scores = _numeric(path, df, import_spec.source_score)
    table = df.copy()
    if task_column is not None:
        table["task"] = task_column.astype("string")
    elif import_spec.task is not None:
        table["task"] = table[import_spec.task].astype("string")
    else:
        table["task"] = task_name or ""
    table["test_score"] = scores
    if import_spec.source_dev_score is not None:
        table["dev_score"] = _numeric(path, df, import_spec.source_dev_score)
    finite = np.isfinite(scores)
    given = list(reasons) if reasons is not None else [None] * len(table)
    failed = ~finite | np.array([r is not None for r in given], dtype=bool)
    table["status"] = np.where(failed, "failed", "ok")
    if statuses is not None:
        given_statuses = pd.Series(list(statuses), index=table.index, dtype="object")
        table["status"] = given_statuses.where(given_statuses.notna(), table["status"])
    reason = pd.Series(given, index=table.index, dtype="object")
    table["reason"] = reason.where(reason.notna() | ~finite, None).where(reason.notna() | finite,
                                                                         "no score in the source file")
    table["trial_key"] = keys
    for col in ("config_id", "choice", "option"):
        table[col] = pd.Series([None] * len(table), dtype="string")
    table["seed"] = _seeds(path, df, seed) if seed else pd.Series([None] * len(table), dtype="Int64")
    if seed and seed != "seed":
        table = table.drop(columns=[seed])          # the source's seed column is the run directory's seed
    results_all = list(dict.fromkeys(import_spec.results + [import_spec.source_score]
                                     + ([import_spec.source_dev_score] if import_spec.source_dev_score else [])))
    import_spec = ImportSpec(score="test_score", source_score=import_spec.source_score,
                             source_dev_score=import_spec.source_dev_score, task=import_spec.task, results=results_all,
                             comparisons=import_spec.comparisons, seed=seed)
    manifest = imported_manifest(study=study, imported=source, command=command)
    described = {k: v for k, v in asdict(import_spec).items() if k != "seed" or v is not None}   # as before --seed
    RunDir.create_imported(out, _to_arrow(table), described, manifest,
                           epochs=_to_arrow(epochs) if epochs is not None and len(epochs) else None)
    return out


def _seeds(path: Path, df: pd.DataFrame, column: str) -> pd.Series:
    """The ``--seed`` column as whole numbers (a located error otherwise)."""
    values = pd.to_numeric(df[column], errors="coerce")
    bad = values.notna() & (values != values.round()) | values.isna() & df[column].notna()
    if bad.any():
        raise UserError(f"{path}: --seed {column}", f"holds {df[column][bad].iloc[0]!r}, not a whole number.",
                        "Name the column holding each run's integer random seed.")
    return values.astype("Int64")


def read_import_spec(run_dir) -> ImportSpec | None:
    """The ``import.json`` of an imported run directory (None for a seedsweep run); ``run_dir``: a path, or
    an opened run (:mod:`analysis.reading.opened`)."""
    rd = opened(run_dir)
    raw = rd.read_import_spec()
    if raw is None:
        return None
    try:
        comps = [ComparisonSpec(**c) for c in raw.pop("comparisons", [])]
        return ImportSpec(**raw, comparisons=comps)
    except TypeError as exc:
        raise UserError(str(rd.import_path), f"cannot read the import description ({exc}).",
                        "Restore it, or import the source file again into a new folder.") from None
