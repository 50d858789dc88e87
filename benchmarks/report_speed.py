"""How long does the self-contained HTML report of the R&G results take?

Input: the 51,422-row R&G raw results (``$SEEDSWEEP_SHARED_DATA/rg2017/
hyperparameter_results.csv.gz``), imported once with ``seedsweep import``
(five tasks, the paper's eight comparisons).

Timed, alternating, median of ``--repeat`` runs:

* **seedsweep**: ``seedsweep report DIR -o report.html``'s work
  (:func:`analysis.pages.htmlreport.write_html_report`): load the directory, every
  comparison per task (win shares, Δ with a 1,000-resample bootstrap CI,
  Wilcoxon, σ with marks; ASO ε_min and P(A>B) with 1,000-resample CIs for
  every ordered pair of options, Holm-adjusted Wilcoxon; expected validation
  performance curves; parallel coordinates), fANOVA importance per task (a
  32-tree forest on 2,000 rows per task), 7 figures per comparison plus
  progress, importance, seeds and problems, every table, plotly.js inlined,
  one file written;
* **peer**: what a user would write by hand with Plotly Express: read the
  same trials table with pandas and, for each comparison, one violin figure
  of the raw single-task scores by task and option, written into one HTML
  file with plotly.js inlined (no statistics at all).

The issue's target: the seedsweep report in ≤ 10 s on a 2-core machine.

Usage::

    .venv/bin/python benchmarks/report_speed.py [--repeat 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import plotly.express as px
import plotly.io as pio
from plotly.offline import get_plotlyjs

from seedsweep.analysis.pages.htmlreport import write_html_report
from seedsweep.analysis.reading.imported import import_csv, read_import_spec

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ.get("SEEDSWEEP_SHARED_DATA", HERE.parents[1] / "shared" / "data"))


def seedsweep_arm(run_dir: Path, out: Path) -> None:
    write_html_report(run_dir, out)


def peer_arm(run_dir: Path, out: Path) -> None:
    df = pd.read_parquet(run_dir / "trials.parquet")
    spec = read_import_spec(run_dir)
    parts = [f"<html><head><script>{get_plotlyjs()}</script></head><body>"]
    for comp in spec.comparisons:
        sub = df
        for col, allowed in comp.where.items():
            sub = sub[sub[col].astype(str).isin([str(a) for a in allowed])]
        sub = sub[sub[comp.choice].astype(str).isin(comp.options or sub[comp.choice].astype(str).unique())]
        fig = px.violin(sub.assign(option=sub[comp.choice].astype(str)), x="task", y="test_score", color="option",
                        title=comp.name)
        parts.append(pio.to_html(fig, include_plotlyjs=False, full_html=False))
    parts.append("</body></html>")
    out.write_text("\n".join(parts))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", help="also write the figures to this JSON file")
    args = ap.parse_args()
    csv = DATA / "rg2017" / "hyperparameter_results.csv.gz"
    if not csv.is_file():
        raise SystemExit(f"{csv} not found: set SEEDSWEEP_SHARED_DATA to the shared data folder")
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = import_csv(csv, Path(tmp) / "rg")
        times: dict[str, list[float]] = {"seedsweep": [], "peer": []}
        sizes: dict[str, int] = {}
        for _ in range(args.repeat):
            for name, arm in (("seedsweep", seedsweep_arm), ("peer", peer_arm)):
                out = Path(tmp) / f"{name}.html"
                t0 = time.perf_counter()
                arm(run_dir, out)
                times[name].append(time.perf_counter() - t0)
                sizes[name] = out.stat().st_size
        from seedsweep.analysis.figures.core import load_view
        from seedsweep.analysis.stats.insights import importance_groups

        view = load_view(run_dir)
        groups = importance_groups(view.df, view.specs, view.results)
        top3 = {task: [[name, round(value, 4)] for name, value in list(imp.importance.items())[:3]]
                for task, imp in groups[0].by_task.items() if not isinstance(imp, str)}
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"R&G raw results, 51,422 rows, 8 comparisons x 5 tasks; median of {args.repeat} alternating runs")
    print(f"{'':28s}{'seconds':>10s}{'file MB':>10s}")
    print(f"{'seedsweep report -o .html':28s}{med['seedsweep']:10.2f}{sizes['seedsweep'] / 1e6:10.1f}")
    print(f"{'Plotly Express violins':28s}{med['peer']:10.2f}{sizes['peer'] / 1e6:10.1f}")
    print(f"ratio seedsweep / peer: {med['seedsweep'] / med['peer']:.2f}  (target: seedsweep <= 10 s)")
    print("top three hyperparameters by fANOVA importance (the report's importance figure):")
    for task, top in top3.items():
        print(f"  {task:10s}" + ", ".join(f"{name} {100 * v:.1f}%" for name, v in top))
    if args.json:
        Path(args.json).write_text(json.dumps({
            "benchmark": "report_speed", "date": datetime.now(timezone.utc).isoformat(), "repeat": args.repeat,
            "seconds": times, "median_s": med, "bytes": sizes, "cpus": os.cpu_count(),
            "importance_top3": top3}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
