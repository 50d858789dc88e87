"""The level of ``method: spending`` on the mean at small budgets: simulated t boundaries against the t-to-z mapping.

Normal null studies (mean difference 0; the spread does not matter to a t
statistic), a first wave of 4 and the automatic looks up to each budget;
the figure is the share that crosses an efficacy boundary at any look (the
futility side is non-binding and only lowers it). Rows: the boundaries the
decisions use now (:func:`analysis.stats.tboundaries.t_boundaries`,
calibrated on their own simulated paths, seed 20261204) and the t-to-normal
mapping used before (each look's t turned into the normal score of the
same tail and compared with the normal boundaries), both on the same
studies (another seed). The ceiling is alpha + 3 SE.
``tests/test_spending.py`` checks a smaller version::

    .venv/bin/python benchmarks/mean_level.py --json benchmarks/results/mean_level-2026-12-04.json
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
from pathlib import Path

import numpy as np
from scipy import stats

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from seedsweep.analysis.stats.groupseq import boundaries  # noqa: E402
from seedsweep.analysis.stats.spending import spending_looks  # noqa: E402
from seedsweep.analysis.stats.tboundaries import MIN_UNITS, t_boundaries  # noqa: E402


def levels(reps: int, budget: int, alpha: float, kind: str, *, first: int = 4, seed: int = 7) -> dict:
    """Both rules' false-declaration rates over ``reps`` normal null studies."""
    looks = spending_looks(first, budget)
    now = np.array(t_boundaries(tuple(looks), budget, alpha, kind))
    z = boundaries([n / budget for n in looks], alpha, kind).z
    before = np.array([float(stats.t.isf(stats.norm.sf(c), n - 1)) if math.isfinite(c) and n >= MIN_UNITS
                       else math.inf for c, n in zip(z, looks)])
    rng = np.random.default_rng(seed)
    hit_now = hit_before = 0
    for start in range(0, reps, 50_000):
        m = min(50_000, reps - start)
        x = rng.standard_normal((m, budget))
        s1, s2 = np.cumsum(x, axis=1), np.cumsum(x * x, axis=1)
        cross_now = np.zeros(m, dtype=bool)
        cross_before = np.zeros(m, dtype=bool)
        for k, n in enumerate(looks):
            if n < MIN_UNITS:
                continue
            mean = s1[:, n - 1] / n
            t = np.abs(mean) / np.sqrt(np.maximum((s2[:, n - 1] - n * mean * mean) / (n - 1), 1e-300) / n)
            cross_now |= t >= now[k]
            cross_before |= t >= before[k]
        hit_now += int(cross_now.sum())
        hit_before += int(cross_before.sum())
    return {"budget": budget, "spending": kind, "alpha": alpha, "reps": reps, "looks": looks,
            "simulated_t": hit_now / reps, "t_to_z": hit_before / reps,
            "ceiling": alpha + 3 * math.sqrt(alpha * (1 - alpha) / reps)}


def main() -> None:
    """Every (budget, spending, alpha); print and optionally write the rates."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=200_000)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    cases = []
    for alpha in (0.05, 0.01):
        for kind in ("obf", "pocock"):
            for budget in (8, 12, 20, 46):
                out = levels(args.reps, budget, alpha, kind)
                cases.append(out)
                print(f"alpha {alpha:.2f} {kind:6} budget {budget:3}: simulated t {out['simulated_t']:.4f}  "
                      f"t-to-z {out['t_to_z']:.4f}  (ceiling {out['ceiling']:.4f})", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"cases": cases, "python": platform.python_version(),
                                         "command": "benchmarks/mean_level.py " + " ".join(sys.argv[1:])},
                                        indent=2) + "\n")


if __name__ == "__main__":
    main()
