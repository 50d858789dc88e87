"""The ``seedsweep`` command line, above both packages: every command has a
Python function behind it (:mod:`study` runs studies, :mod:`analysis` reads
their results); user errors print one paragraph and exit with code 2.

The engine's modules are imported here at the top; the statistics package
(pandas and SciPy, about 0.8 s) inside the commands that read results (report,
export, import, dashboard, and run's closing tables) only.
"""

from __future__ import annotations

import argparse
import errno
import os
import secrets
import sys

from seedsweep.adaptive import add_replay, run_adaptive
from seedsweep.api import run as run_any
from seedsweep.claims import add_claims
from seedsweep.families import add_families
from seedsweep.ledger import add_ledger
from seedsweep.study import check, compact
from seedsweep.study.errors import EXIT_USER_ERROR, UserError, no_space
from seedsweep.study.store.studies import load_study
from seedsweep.study.families import get_family
from seedsweep.study.files import write_text
from seedsweep.study.spec.sampling import repeated_configurations
from seedsweep.study.store.status import study_status
from seedsweep.study.testbeds import counts, read_testbed, tsv_text, write_tsv

__all__ = ["main"]


def _results(run_dir: str) -> str:
    """The report's tables of every compared choice, options in file order."""
    from seedsweep import analysis         # the statistics stack: only commands that read results load it
    from seedsweep.analysis.reading.opened import snapshot, study_of    # (the same stack)

    run_dir = snapshot(run_dir)            # its manifest read once for the table and the report
    df = analysis.load(run_dir)
    if df.empty:
        return "no trials stored yet"
    space = study_of(run_dir)
    head = f"## {space.name}: {space.task_name} ({len(df)} trials, test score at the best dev epoch)"
    return head + "\n\n" + analysis.report(run_dir, df=df)


def _cmd_check(args) -> int:
    space = check(args.space)               # resolved below, once, for the lines it prints
    print(f"{space.path}: OK -- study '{space.name}' ({space.family}); {space.describe()}")
    repeated = repeated_configurations(space, get_family(space.family))
    if repeated:
        print(f"  warning: {repeated}")
    if space.train.vectorize_seeds:
        n = space.n_trials // len(space.seeds)
        per = space.resources.of_trial(True)
        print(f"  vectorize_seeds: {n} populations of {len(space.seeds)} seeds, one Ray trial each "
              f"({per['cpu']:g} CPU, {per['gpu']:g} GPU)")
    if args.resolve:
        for line in get_family(space.family).resolve(space):
            print(f"  resolved: {line}")
    return 0


def _cmd_run(args) -> int:
    space = load_study(args.space)         # read once: the run and its report use this study
    if space.until is not None or space.tune is not None:
        return run_adaptive(args, space)   # waves: until every comparison is decided, or a tuned study's
    summary = run_any(space, args.out, address=args.address, retry_failed=args.retry_failed,
                  num_cpus=args.num_cpus, command=sys.argv, claims=args.claims, supersede=args.supersede,
                  mlflow=args.mlflow)
    print(summary.line(), file=sys.stderr)
    if not args.quiet:
        print(_results(args.out))
    return 1 if summary.interrupted else 0


def _cmd_testbed(args) -> int:
    bed = read_testbed(args.file)
    rows = bed.sentences()
    out = sys.stdout if args.output else sys.stderr          # without -o the TSV goes to standard output
    print(f"{args.file}: {len(bed.templates)} templates, {len(rows)} sentences (at most {bed.cap} per template)",
          file=out)
    for (phenomenon, split), n in counts(rows).items():
        print(f"  {phenomenon:<16} {split:<5} {n:>6}", file=out)
    if bed.dropped:
        print(f"  ({bed.dropped} train sentences equal to eval sentences were dropped)", file=out)
    if args.output:
        write_tsv(rows, args.output)
        print(f"wrote {args.output}")
    else:
        sys.stdout.write(tsv_text(rows))
    return 0


def _cmd_status(args) -> int:
    print(study_status(args.dir).render())
    return 0


def _cmd_compact(args) -> int:
    trials, epochs = compact(args.dir)
    print(f"{args.dir}: compacted {trials} trial rows and {epochs} epoch rows into trials.parquet / epochs.parquet")
    return 0


def _cmd_report(args) -> int:
    from seedsweep.analysis.pages.report import report        # the statistics stack (see the module docstring)

    fmt = args.format
    if fmt is None:
        suffix = (args.output or "").rsplit(".", 1)[-1].lower()
        fmt = {"html": "page", "htm": "page", "tex": "latex"}.get(suffix, "markdown")
    if args.images:
        from seedsweep.analysis.pages.htmlreport import write_images     # plotly and Kaleido: the page and images only

        files = write_images(args.dir, args.images, args.image_format, n_bootstrap=args.bootstrap, seed=args.seed)
        print(f"{args.dir}: wrote {len(files)} {args.image_format} figures to {args.images}")
        if not args.output and args.format is None:
            return 0
    if fmt == "page":                   # the self-contained report: figures, tables, plotly.js inlined
        from seedsweep.analysis.pages.htmlreport import html_report      # plotly: the page only

        text = html_report(args.dir, n_bootstrap=args.bootstrap, seed=args.seed)
    else:
        text = report(args.dir, fmt, n_bootstrap=args.bootstrap, seed=args.seed)
    if args.against:
        from seedsweep.analysis.reading.crossstudy import agreement_table  # a second directory only

        table = agreement_table(args.dir, args.against, n_bootstrap=args.bootstrap, seed=args.seed)
        if fmt == "page":
            text = text.replace("</body>", table.html("rank agreement") + "\n</body>", 1)
        else:
            text += "\n" + table.render(fmt, title="rank agreement") + "\n"
    if args.output:
        write_text(text, args.output)
        print(f"{args.dir}: wrote {args.output} ({fmt})")
    else:
        print(text, end="")
    return 0


def _cmd_dashboard(args) -> int:
    # with serve: the statistics stack loads for this command only
    from seedsweep.analysis.pages.dashaccess import is_loopback
    from seedsweep.analysis.pages.dashboard import serve       # the statistics stack (Dash itself loads in serve)

    if not 0 < args.port < 65536:
        raise UserError(f"--port {args.port}", "not a TCP port.", "Give a port between 1 and 65535, e.g. 8050.")
    if args.interval <= 0:
        raise UserError(f"--interval {args.interval}", "must be positive.", "Give seconds, e.g. 2.")
    token = args.token or os.environ.get("SEEDSWEEP_DASHBOARD_TOKEN") or None
    if token == "new":
        token = secrets.token_urlsafe(24)
    elif token is not None and len(token) < 16:
        raise UserError("--token", f"a token of {len(token)} characters is too easy to guess.",
                        "Give 16 characters or more, or --token new for a random one.")
    if token is None and not is_loopback(args.host):
        raise UserError(f"--host {args.host}", "would show every result to anyone who can reach the port, "
                        "and no token is set.",
                        "Add --token new (a random token; the printed address carries it) or set "
                        "SEEDSWEEP_DASHBOARD_TOKEN, or keep the default 127.0.0.1 and reach it through an SSH "
                        "tunnel (ssh -L 8050:127.0.0.1:8050 HEAD).")
    serve(args.dir, host=args.host, port=args.port, interval_s=args.interval, token=token)
    return 0


def _cmd_export(args) -> int:
    from seedsweep.analysis.pages.report import export_csv    # the statistics stack

    text = export_csv(args.dir, args.output)
    if text is not None:
        sys.stdout.write(text)
    else:
        print(f"{args.dir}: wrote {args.output}", file=sys.stderr)
    return 0


def _status_order(status: str) -> tuple[int, str]:
    """ok, diverged, failed, stopped, then any other status, as the import's count line lists them."""
    known = ("ok", "diverged", "failed", "stopped")
    return (known.index(status) if status in known else len(known), status)


def _split(values: list[str] | None) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out += [x.strip() for x in v.split(",") if x.strip()]
    return out


def _cmd_import(args) -> int:
    from seedsweep import analysis  # the statistics stack: only commands that read results load it
    from seedsweep.analysis.reading import importers   # (the same stack)
    from seedsweep.analysis.reading.opened import snapshot   # (the same stack)
    from seedsweep.analysis.stats.unpaired import pairing_lines   # (the same stack)

    flags = dict(score=args.score, dev_score=args.dev_score, choice=args.choice,
                 options=_split(args.options) or None, ignore=_split(args.ignore), results=_split(args.result),
                 seed=args.seed, mode=args.mode, task_name=args.task_name, command=sys.argv)
    where = dict(kind=args.kind, storage=args.storage, study=args.study, tracking_uri=args.tracking_uri,
                 experiment=args.experiment, task=args.task, sep=args.sep)
    out = importers.import_any(args.source, args.out, **where, **flags)
    run_dir = snapshot(out)                # its manifest and import description read once
    df, (specs, results) = analysis.load(run_dir), analysis.comparisons_of(run_dir)
    counts = df["status"].astype(str).value_counts()
    print(f"{len(df)} trials: " + ", ".join(f"{counts[s]} {s}" for s in sorted(counts.index, key=_status_order)))
    for line in pairing_lines(df, specs, results):
        print(line)
    print(f"{importers.source_named(args.source, **where)}: imported into {out}; 'seedsweep report {out}' prints its tables")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command and flag."""
    parser = argparse.ArgumentParser(prog="seedsweep", description="Design-choice studies over many configurations "
                                     "and seeds, judged by score distributions.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("check", help="validate a search space (schema only)")
    p.add_argument("space", help="search-space YAML file")
    p.add_argument("--resolve", action="store_true", help="also check that data, embeddings and models can be found")
    p.set_defaults(func=_cmd_check)

    p = sub.add_parser("run", help="run or resume a study")
    p.add_argument("space", help="search-space YAML file (or a run directory's manifest.json)")
    p.add_argument("--out", required=True, help="the run directory (created, or resumed if it exists)")
    p.add_argument("--address", help="join this running Ray cluster (e.g. 'auto' or HOST:PORT); default: "
                   "start a private local Ray")
    p.add_argument("--retry-failed", action="store_true", help="rerun trials stored as failed, replacing their rows")
    p.add_argument("--num-cpus", type=int, help="CPUs of the private local Ray (default: all)")
    p.add_argument("--quiet", action="store_true", help="do not print the result tables at the end")
    p.add_argument("--claims", metavar="FILE", help="seal this claims file into the run directory before the "
                   "first trial (docs/reference/statistics.md, 'Claims and verdicts')")
    p.add_argument("--supersede", metavar="REASON", help="replace claims sealed earlier, keeping them on record")
    p.add_argument("--mlflow", metavar="URI", help="log every stored trial to this MLflow tracking URI (a parent run "
                   "per run directory, a child run per trial; over the file's tracking:)")
    p.set_defaults(func=_cmd_run)

    add_claims(sub)

    p = sub.add_parser("testbed", help="expand a template test bed: counts per phenomenon and split, sentences as TSV")
    p.add_argument("file", help="test-bed YAML file (e.g. testbeds/sst_phenomena.yaml)")
    p.add_argument("-o", "--output", help="write the sentences to this TSV file (text, label, phenomenon, template, split); "
                   "default: standard output, the counts on standard error")
    p.set_defaults(func=_cmd_testbed)

    add_replay(sub)
    add_ledger(sub)
    add_families(sub)
    p = sub.add_parser("status", help="summarise a run directory")
    p.add_argument("dir")
    p.set_defaults(func=_cmd_status)

    p = sub.add_parser("compact", help="merge a run directory's parts into one file per table")
    p.add_argument("dir")
    p.set_defaults(func=_cmd_compact)

    p = sub.add_parser("report", help="print the comparison and seed-variance tables of a run directory")
    p.add_argument("dir")
    p.add_argument("against", nargs="?", metavar="OTHER",
                   help="a second run directory: also print how alike the two rank the options of every choice "
                        "both compare (Kendall τ with a bootstrap CI and an exact p, Spearman ρ)")
    p.add_argument("--format", choices=["markdown", "html", "latex", "page"],
                   help="markdown, html or latex: the tables only; page: the self-contained HTML report with "
                        "figures (default: page for -o *.html, latex for *.tex, else markdown)")
    p.add_argument("-o", "--output", help="write to this file instead of printing")
    p.add_argument("--images", metavar="FOLDER",
                   help="also write every figure as FOLDER/<figure id>.png (Kaleido with a local Chromium)")
    p.add_argument("--image-format", choices=["png", "svg"], default="png", help="format of --images (default png)")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the CI of Δ (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("dashboard", help="serve a live dashboard of a run directory (Dash, local by default)")
    p.add_argument("dir")
    p.add_argument("--port", type=int, default=8050, help="TCP port (default 8050)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1: this machine only; any other needs a token)")
    p.add_argument("--token", help="require this token on every request (16+ characters; 'new': a random one, "
                   "printed in the address); default: SEEDSWEEP_DASHBOARD_TOKEN; required off loopback")
    p.add_argument("--interval", type=float, default=2.0,
                   help="seconds between checks for new trial rows (default 2)")
    p.set_defaults(func=_cmd_dashboard)

    p = sub.add_parser("export", help="write the raw per-trial scores as CSV")
    p.add_argument("dir")
    p.add_argument("-o", "--output", help="CSV file to write (default: standard output)")
    p.set_defaults(func=_cmd_export)

    p = sub.add_parser("import", help="turn runs made elsewhere (a CSV/TSV file, a W&B runs export, a Ray Tune "
                       "experiment folder, an Optuna study, an MLflow experiment) into a run directory")
    p.add_argument("source", nargs="?", help="the results: a file with one row per run (.csv, .tsv, optionally .gz; a "
                   "W&B runs export is recognised), or the folder tune.Tuner wrote (<storage_path>/<name>); "
                   "leave out with --storage or --tracking-uri")
    p.add_argument("--from", dest="kind", choices=("csv", "wandb", "tune"), help="read SOURCE as this kind "
                   "(default: recognised from the file or folder)")
    p.add_argument("--storage", help="an Optuna storage: sqlite:///PATH, another database URL, or a journal file")
    p.add_argument("--study", help="the Optuna study in --storage (default: its only one)")
    p.add_argument("--tracking-uri", help="an MLflow tracking store: a file-store folder, sqlite:///PATH or "
                   "http://HOST:PORT")
    p.add_argument("--experiment", help="the MLflow experiment at --tracking-uri")
    p.add_argument("--out", required=True, help="the run directory to create (must not exist or be empty)")
    p.add_argument("--score", help="column (or the metric a Tune trial, Optuna trial or MLflow run reported) of the "
                   "test score (default: recognise the R&G raw-results layout)")
    p.add_argument("--dev-score", help="column (or Tune metric) of the dev score; a Tune trial's scores are then "
                   "those of its best dev report")
    p.add_argument("--mode", choices=("max", "min"), default="max", help="which scores are better (min: a loss)")
    p.add_argument("--seed", help="column (or Tune parameter) holding each run's random seed: runs equal in every "
                   "other setting are seeds of one configuration")
    p.add_argument("--task", help="column naming the task (default: one task)")
    p.add_argument("--task-name", help="name of the single task when there is no task column")
    p.add_argument("--choice", help="column (or Tune parameter, nested ones as outer/inner) holding the option of "
                   "the compared design choice")
    p.add_argument("--options", action="append", help="options to compare, comma separated, in display order")
    p.add_argument("--ignore", action="append", help="columns left out of pairing (comma separated)")
    p.add_argument("--result", action="append", help="further outcome columns, never pairing keys (comma separated)")
    p.add_argument("--sep", help="field separator (default: tab if the header has one, else comma)")
    p.set_defaults(func=_cmd_import)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command ``argv`` names; a user error prints one paragraph and returns 2."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except UserError as err:
        print(f"seedsweep: error: {err}", file=sys.stderr)
        return EXIT_USER_ERROR
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        # a full disk outside the trial store (which says more): files are written whole or not at all
        print(f"seedsweep: error: {no_space(exc, getattr(args, 'out', None))}", file=sys.stderr)
        return EXIT_USER_ERROR


if __name__ == "__main__":
    sys.exit(main())
