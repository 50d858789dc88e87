"""False winners on skewed nulls: every ``until:`` method for ``statistic: mean`` on differences whose mean is 0.

Two nulls from :mod:`analysis.stats.methods`: option A a little ahead but
collapsing in 5 % of configurations (``collapse_null``), and a centred
lognormal (``lognormal_null``). Each study has a budget of 80
configurations, a first wave of 4, then waves of 2 (``method: spending``: its
own waves), alpha 0.05, margin 0.01; the figure is the share of studies that
declared either option better. ``tests/test_spending.py`` checks the same
simulation (seed 3).

The ``stored`` cases run the collapse null as the engine stores it
(:func:`analysis.stats.methods.collapse_trials`: collapsed runs stored
``diverged``, with their score or with none) through the decisions' own
units (:func:`analysis.stats.decisions.units`, every run counted), for the
mean and the win share; beside each, the rate when the collapsed runs are
dropped (what the decisions did before every run counted)::

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

from seedsweep.analysis.stats.methods import collapse_null, collapse_trials, lognormal_null, simulate, stored_units  # noqa: E402,E501
from seedsweep.analysis.stats.units import units  # noqa: E402
from seedsweep.study.spec.until import Until  # noqa: E402


def stored_cases(reps: int, seed: int = 3) -> list[dict]:
    """The collapse null stored as the engine stores it, every run counted and collapsed runs dropped."""
    cases = []
    for statistic, methods in (("mean", ("exact",)), ("share", ("exact", "asymptotic", "spending"))):
        for scored in (True, False):
            df = collapse_trials(np.random.default_rng(seed), reps, 80, statistic=statistic, scored=scored)
            for method in methods:
                until = Until(decide=("c",), statistic=statistic, delta=0.01, method=method, range=(0.0, 1.0),
                              budget_samples=80, assume_normal=True)
                rows, imputed = stored_units(df, until)
                dropped = [u.values for _, u in sorted(units(df[df["status"] == "ok"], "c", "A", "B",
                                                             statistic=statistic).items())]
                short = min(len(v) for v in dropped)      # the configurations left in every study
                counted = simulate(rows, until, first=4, wave=2, cap=80, alpha=0.05)
                old = simulate(np.vstack([v[:short] for v in dropped]), until, first=4, wave=2, cap=short,
                               alpha=0.05)
                case = {"statistic": statistic, "collapsed_runs": "scored" if scored else "no score",
                        "method": method, "false_winners": counted.share("A better", "B better"),
                        "false_winners_dropped": old.share("A better", "B better"),
                        "units_without_a_score_per_study": float(imputed.mean())}
                cases.append(case)
                print(f"stored {statistic:5} {case['collapsed_runs']:9} {method:10} false winners "
                      f"{case['false_winners']:.4f} (collapsed runs dropped: {case['false_winners_dropped']:.4f})")
    return cases


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
    found["stored"] = stored_cases(args.reps)
    if args.json:
        args.json.write_text(json.dumps(found, indent=2) + "\n")


if __name__ == "__main__":
    main()
