"""The R&G replay: where would an adaptive study have stopped on each of the paper's comparisons?

Imports the raw results of Reimers & Gurevych (2017) from the shared data
(``SEEDSWEEP_SHARED_DATA``, default ``../shared/data``) and feeds each
compared choice's configurations, in the order the file stores them, through
the decisions of an ``until:`` block (win shares, the exact betting sequence
at 95 % over every pair of that choice's options and every task, margin
0.05): ``seedsweep replay`` per choice. It prints, per pair and task, the
configurations that decided it against those the paper trained::

    .venv/bin/python benchmarks/rg_replay.py --out benchmarks/results/rg_replay-2026-12-03.md

``--method spending`` replays ``until: {method: spending}`` instead: each
sequence's budget is the configurations the paper stored for it, spent over
SPENDING_LOOKS (40) equally spaced looks (O'Brien-Fleming-type alpha, the exact sign test,
futility under the alternative of the margin)::

    .venv/bin/python benchmarks/rg_replay.py --method spending --out benchmarks/results/rg_replay-spending-2026-12-04.md
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from seedsweep import analysis  # noqa: E402
from seedsweep.analysis.stats.decisions import replay_markdown, track  # noqa: E402
from seedsweep.adaptive import read_until  # noqa: E402
from seedsweep.study.spec.until import SPENDING_LOOKS  # noqa: E402


def main() -> None:
    """Replay every compared choice of the R&G results; write the tables as Markdown."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the Markdown here (default: print it)")
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--method", choices=("exact", "spending"), default="exact")
    args = parser.parse_args()
    block = f"decide: [CHOICE], confidence: {args.confidence}" + (", method: spending" if args.method == "spending"
                                                                   else "")
    how = ("the exact betting confidence sequence" if args.method == "exact" else
           "group-sequential spending (O'Brien-Fleming type) over each sequence's stored configurations as its "
           f"budget, {SPENDING_LOOKS} equally spaced looks, the exact sign test, futility under the alternative "
           "of the margin")
    data = Path(os.environ.get("SEEDSWEEP_SHARED_DATA", HERE.parent / "shared" / "data"))
    csv = data / "rg2017" / "hyperparameter_results.csv.gz"
    with tempfile.TemporaryDirectory() as tmp:
        out = analysis.import_csv(csv, Path(tmp) / "rg")
        specs, results = analysis.comparisons_of(out)
        df = analysis.load(out)
        parts = [f"# The R&G replay\n\n`python benchmarks/rg_replay.py` on {csv.name} ({len(df)} networks); "
                 f"each choice replayed on its own (`seedsweep replay DIR --until FILE` with `until: {{{block}}}`): "
                 f"win shares, {how}, over every pair of the choice's options and every task, margin 0.05. "
                 "'decided after': "
                 "the paired configurations, in the file's order, that decided the pair; 'configurations stored': "
                 "those the paper trained for it.\n"]
        summary = ["| choice | sequences | decided | of them better / futile | configurations to decide them all "
                   "| stored (sum) | decided ones: needed / stored |", "|---|---:|---:|---:|---:|---:|---:|"]
        for spec in specs:
            until_file = Path(tmp) / f"{spec.choice}.yaml"
            until_file.write_text("until: {" + block.replace("CHOICE", spec.choice) + "}\n")
            until = read_until(until_file, {s.choice: list(s.options or []) for s in specs}, "imported")
            tracked = track(df, until, specs, results, where=str(out))
            parts.append(f"## {spec.choice}\n\n" + replay_markdown(tracked, until) + "\n")
            decided = [t for t in tracked if t.decided_at is not None]
            need = sum(t.decided_at for t in decided)
            have = sum(t.n for t in decided)
            worst = max((t.decided_at for t in decided), default=0) if len(decided) == len(tracked) else "–"
            futile = sum(t.decision == "futile" for t in decided)
            summary.append(f"| {spec.choice} | {len(tracked)} | {len(decided)} | {len(decided) - futile} / {futile} "
                           f"| {worst} | "
                           f"{sum(t.n for t in tracked)} | {need} / {have} ({need / max(have, 1):.0%}) |")
        text = "\n".join(parts[:1] + ["## Summary\n", *summary, ""] + parts[1:])
    if args.out:
        args.out.write_text(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
