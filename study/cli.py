"""The ``seedsweep`` command line. Every command has a Python function behind it
(:mod:`study`); user errors print one paragraph and exit with code 2."""

from __future__ import annotations

import argparse
import sys

from .errors import EXIT_USER_ERROR, UserError

__all__ = ["main"]


def _results(out: str) -> str:
    """Win shares and median differences of every compared choice, options in file order."""
    import analysis

    from .runner import load_study

    df = analysis.load(out)
    if df.empty:
        return "no trials stored yet"
    space = load_study(out)
    blocks = [f"## {space.name}: {space.task_name} ({len(df)} trials, test score at the best dev epoch)"]
    for choice, options in space.compare:
        blocks.append(analysis.compare(df, choice, options=list(options)).markdown())
    return "\n\n".join(blocks)


def _cmd_check(args) -> int:
    from . import check

    space = check(args.space, resolve=args.resolve)
    opts = ", ".join(f"{c}: {list(o)}" for c, o in space.compare)
    print(f"{space.path}: OK -- study '{space.name}' ({space.family}); {space.samples} configurations x "
          f"[{opts}] x {len(space.seeds)} seeds = {space.n_trials} trials")
    if args.resolve:
        from .families import get_family

        for line in get_family(space.family).resolve(space):
            print(f"  resolved: {line}")
    return 0


def _cmd_run(args) -> int:
    from .runner import run

    summary = run(args.space, args.out, address=args.address, retry_failed=args.retry_failed,
                  num_cpus=args.num_cpus, command=sys.argv)
    print(summary.line(), file=sys.stderr)
    if not args.quiet:
        print(_results(args.out))
    return 1 if summary.interrupted else 0


def _cmd_status(args) -> int:
    from .status import study_status

    print(study_status(args.dir).render())
    return 0


def _cmd_compact(args) -> int:
    from . import compact

    trials, epochs = compact(args.dir)
    print(f"{args.dir}: compacted {trials} trial rows and {epochs} epoch rows into trials.parquet / epochs.parquet")
    return 0


def build_parser() -> argparse.ArgumentParser:
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
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("status", help="summarise a run directory")
    p.add_argument("dir")
    p.set_defaults(func=_cmd_status)

    p = sub.add_parser("compact", help="merge a run directory's parts into one file per table")
    p.add_argument("dir")
    p.set_defaults(func=_cmd_compact)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except UserError as err:
        print(f"seedsweep: error: {err}", file=sys.stderr)
        return EXIT_USER_ERROR


if __name__ == "__main__":
    sys.exit(main())
