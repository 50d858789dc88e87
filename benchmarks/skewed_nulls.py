"""False winners on skewed nulls: every ``until:`` method for ``statistic: mean`` on differences whose mean is 0.

Two nulls from :mod:`analysis.stats.methods`: option A a little ahead but
collapsing in 5 % of configurations (``collapse_null``), and a centred
lognormal (``lognormal_null``). Each study has a budget of 80
configurations, a first wave of 4, then waves of 2 (``method: spending``: its
own waves), alpha 0.05, margin 0.01; the figure is the share of studies that
declared either option better. ``tests/test_spending.py`` checks the same
simulation (seed 3)::

    .venv/bin/python benchmarks/skewed_nulls.py --json benchmarks/results/skewed_nulls-2026-12-04.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from analysis.stats.methods import collapse_null, lognormal_null, simulate  # noqa: E402
from study.spec.until import Until  # noqa: E402


def main() -> None:
    """Simulate every (null, method) pair; print and optionally write the rates."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=2000)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    found = {"reps": args.reps, "budget": 80, "first": 4, "wave": 2, "alpha": 0.05, "cases": [],
             "python": platform.python_version(), "command": "benchmarks/skewed_nulls.py " + " ".join(sys.argv[1:])}
    for name, null in (("collapse", collapse_null), ("lognormal", lognormal_null)):
        rows = null(np.random.default_rng(3), args.reps, 80)
        for method in ("exact", "asymptotic", "spending"):
            until = Until(decide=("c",), statistic="mean", delta=0.01, method=method, range=(0.0, 1.0),
                          budget_samples=80, assume_normal=True)
            out = simulate(rows, until, first=4, wave=2, cap=80, alpha=0.05)
            case = {"null": name, "method": method, "false_winners": out.share("A better", "B better"),
                    "a_better": out.share("A better"), "b_better": out.share("B better")}
            found["cases"].append(case)
            print(f"{name:10} {method:10} false winners {case['false_winners']:.4f}")
    if args.json:
        args.json.write_text(json.dumps(found, indent=2) + "\n")


if __name__ == "__main__":
    main()
