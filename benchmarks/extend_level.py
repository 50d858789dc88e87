"""'Double the budget when undecided': the level of seedsweep extend against rerunning with an edited until:.

Null studies (``method: spending``, alpha 0.05, one sequence, first wave 4,
automatic waves, margin delta, power 0.8): win units (1 or 0 with
probability ½) for the share, normal differences for the mean. A study
that ends undecided or futile has its budget doubled:

* **edited** -- what a rerun with ``until.budget.samples`` edited did before
  the stopping rule was frozen: every look recomputed with the new budget's
  boundaries, the decision the new path's;
* **extend** -- ``seedsweep extend``: the conditional error ``A`` of the
  original design's remaining looks (0 after its last look) and one test of
  the new configurations at level ``A`` (:mod:`analysis.stats.extension`).

The figure is the share of null studies that declared either option better
(by the original design or after the extension), for budget 20 (O'Brien-
Fleming type), the study run to its budget or interrupted at its last look
within half of it (as an hours budget stops one: its conditional error is
then most of the level). ``tests/test_extend.py``
runs a smaller version (seed 1)::

    .venv/bin/python benchmarks/extend_level.py --json benchmarks/results/extend_level-2026-12-04.json
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from seedsweep.analysis.stats.extension import conditional_error, stage_two  # noqa: E402
from seedsweep.analysis.stats.spending import spending_looks, spending_path  # noqa: E402

DECLARED = ("A better", "B better")


def one_study(x: np.ndarray, budget: int, statistic: str, alpha: float, delta: float, kind: str,
              first: int = 4, edited: bool = True, stop_at: float | None = None) -> tuple[str, str]:
    """The final decision of one null study under each policy (edited, extend; ``edited`` False: '–');
    ``stop_at``: the study is interrupted (an hours budget) at the last look within this fraction."""
    looks = spending_looks(first, budget)
    looked = looks if stop_at is None else [n for n in looks if n <= stop_at * budget]
    path = spending_path(x[:budget], looked, budget, statistic=statistic, alpha=alpha, delta=delta, kind=kind)
    stop = path.decided_look if path.decided_look is not None else len(path.counts) - 1
    if path.decision in DECLARED:
        return path.decision, path.decision
    wide = 2 * budget
    edited = spending_path(x[:wide], spending_looks(first, wide), wide, statistic=statistic, alpha=alpha,
                           delta=delta, kind=kind).decision if edited else "–"
    taken = list(path.fractions[:stop + 1])
    later = [n / budget for n in looks if n / budget > taken[-1] + 1e-12]
    level = conditional_error(taken + later, alpha, kind, stop, path.z[stop])
    # the extension runs the configurations after the stop up to the new budget, tested on their own at level A
    extended = stage_two(x[looks[stop]:wide], statistic, level)[0] if level > 0 else path.decision
    return edited, extended


def simulate(reps: int, budget: int, statistic: str, *, alpha: float = 0.05, kind: str = "obf", seed: int = 1,
             edited_reps: int | None = None, stop_at: float | None = None) -> dict:
    """False-winner rates of both policies over ``reps`` null studies."""
    rng = np.random.default_rng(seed)
    wide = 2 * budget
    if statistic == "share":
        x, delta = (rng.random((reps, wide)) < 0.5).astype(float), 0.1
    else:
        x, delta = rng.standard_normal((reps, wide)), 0.5
    edited_reps = reps if edited_reps is None else min(edited_reps, reps)
    edited = extended = 0
    for i, row in enumerate(x):
        e, x2 = one_study(row, budget, statistic, alpha, delta, kind, edited=i < edited_reps, stop_at=stop_at)
        edited += i < edited_reps and e in DECLARED
        extended += x2 in DECLARED
    se = math.sqrt(alpha * (1 - alpha) / reps)
    return {"statistic": statistic, "budget": budget, "spending": kind, "alpha": alpha, "reps": reps,
            "interrupted_at": stop_at,
            "edited_reps": edited_reps, "edited": edited / max(edited_reps, 1), "extend": extended / reps,
            "ceiling": alpha + 3 * se}


def main() -> None:
    """Simulate each (statistic, budget, spending); print and optionally write the rates."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=20000)
    p.add_argument("--edited-reps", type=int, default=2000, help="studies of the (slower) edited policy")
    p.add_argument("--case", action="append", choices=["share:budget", "share:half", "mean:budget", "mean:half"],
                   help="run only these cases (repeat the flag; default: all four)")
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    cases = []
    for statistic in ("share", "mean"):
        for stop_at in (None, 0.5):
            if args.case and f"{statistic}:{'half' if stop_at else 'budget'}" not in args.case:
                continue
            out = simulate(args.reps, 20, statistic, kind="obf", edited_reps=args.edited_reps, stop_at=stop_at)
            cases.append(out)
            print(f"{statistic:5} budget 20 obf, {'interrupted at half' if stop_at else 'to the budget':20} edited "
                  f"{out['edited']:.4f} (of {out['edited_reps']})  extend {out['extend']:.4f} (of {out['reps']}; "
                  f"ceiling {out['ceiling']:.4f})", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"cases": cases, "python": platform.python_version(),
                                         "command": "benchmarks/extend_level.py " + " ".join(sys.argv[1:])},
                                        indent=2) + "\n")


if __name__ == "__main__":
    main()
