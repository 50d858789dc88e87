"""``seedsweep ledger DIR [DIR ...] [-o FILE] [--format markdown|html]``: the
reproduction ledger over many run directories (:mod:`analysis.pages.reproductions`),
one self-contained page. A folder that is not a run directory, or a set of
run directories none of which holds sealed claims, exits 2 naming them, with
nothing written; a run directory without claims is a "no claims" row.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from seedsweep.study.errors import UserError
from seedsweep.study.files import write_text

__all__ = ["add_ledger"]


def _cmd_ledger(args) -> int:
    # the statistics stack: only here
    from seedsweep.analysis.pages.reproductions import collect, ledger_html, ledger_markdown

    fmt = args.format or ("html" if args.output and Path(args.output).suffix.lower() in (".html", ".htm")
                          else "markdown")
    if args.output and not Path(args.output).parent.is_dir():
        raise UserError(f"-o {args.output}", "its folder does not exist.", "Create the folder or write elsewhere.")
    studies = collect(args.dirs, seed=args.seed)
    command = "seedsweep ledger " + " ".join(shlex.quote(a) for a in sys.argv[2:]) if args.command_line is None \
        else args.command_line
    page = (ledger_html if fmt == "html" else ledger_markdown)(studies, command=command)
    if args.output:
        write_text(page, args.output)
        print(f"{args.output}: the ledger of {len(studies)} run directories", file=sys.stderr)
    else:
        print(page, end="")
    return 0


def add_ledger(sub) -> None:
    """The ``ledger`` command's parser."""
    p = sub.add_parser("ledger", help="one page of every sealed claim of many run directories, judged: "
                       "the reproduction ledger")
    p.add_argument("dirs", nargs="+", metavar="DIR", help="run directories (each with sealed claims, or listed as "
                   "'no claims')")
    p.add_argument("-o", "--output", help="write to this file (default: print)")
    p.add_argument("--format", choices=["markdown", "html"],
                   help="default: html for -o *.html, else markdown")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap intervals (default 0)")
    p.add_argument("--command-line", help="the regenerating command printed on the page (default: this one)")
    p.set_defaults(func=_cmd_ledger)
