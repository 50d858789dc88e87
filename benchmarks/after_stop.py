"""After an early stop: the naive estimate's bias against the stagewise median-unbiased one, the
interval's coverage, and the win share's interval against its test.

``method: spending`` on the mean (the efficiency benchmark's setting: a
configuration's difference N(theta, 0.0224), delta 0.01, budget 46, a
first wave of 4 and the automatic looks, O'Brien-Fleming type, power 0.8)
at theta = delta and 2 delta: the mean of the naive estimate at the stop
and of the median-unbiased one (:meth:`SpendingPath.after_stop`) and the
bias-adjusted one (:meth:`SpendingPath.bias_adjusted`, Whitehead 1986), as
a share of delta away from theta, and how often the stagewise interval holds
theta; beside them, the same stagewise estimate had the sd been known (the
normal score and the change of scale from the true sd), which shows how
much of the remaining bias comes from estimating the sd at the stop.
Then 20,000 null-to-2-delta win-share studies (budget 69): the first look
whose repeated interval leaves out ½ is the look the exact test decides
at, in every study. ``tests/test_after_stop.py`` runs smaller
versions::

    .venv/bin/python benchmarks/after_stop.py --json benchmarks/results/after_stop-2026-12-05.json
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

from seedsweep.analysis.stats.afterstop import stagewise  # noqa: E402
from seedsweep.analysis.stats.spending import spending_looks, spending_path  # noqa: E402

SD, DELTA = 0.0224, 0.01


def estimates(reps: int, theta: float, *, budget: int = 46, seed: int = 3) -> dict:
    """Bias of both estimates (share of delta) and the stagewise interval's coverage at ``theta``."""
    rng = np.random.default_rng(seed)
    looks = spending_looks(4, budget)
    naive, adjusted, whitehead, known, covered = [], [], [], [], 0
    for row in theta + SD * rng.standard_normal((reps, budget)):
        path = spending_path(row, looks, budget, statistic="mean", alpha=0.05, delta=DELTA, kind="obf")
        k = path.decided_look if path.decided_look is not None else len(path.counts) - 1
        a = path.after_stop()
        naive.append(path.estimate[k])
        adjusted.append(a.estimate)
        whitehead.append(path.bias_adjusted())
        covered += a.lower <= theta <= a.upper
        # the same stagewise estimate had the sd been known: the normal score from the true sd, its drift
        # turned into the mean's scale by the true sd (where the estimate's remaining bias comes from)
        c = path.counts[k]
        z = float(row[:c].mean()) * math.sqrt(c) / SD
        known.append(stagewise(path.fractions, path.score_bounds, k, z, 0.05).estimate * SD / math.sqrt(budget))
    return {"theta": theta, "reps": reps, "bias_naive_of_delta": (np.mean(naive) - theta) / DELTA,
            "bias_adjusted_of_delta": (np.mean(adjusted) - theta) / DELTA,
            "bias_known_sd_of_delta": (np.mean(known) - theta) / DELTA,
            "bias_whitehead_of_delta": (np.mean(whitehead) - theta) / DELTA,
            "se_whitehead_of_delta": float(np.std(whitehead) / np.sqrt(reps) / DELTA),
            "se_of_delta": float(np.std(adjusted) / np.sqrt(reps) / DELTA), "coverage": covered / reps}


def share_agreement(reps: int, *, budget: int = 69, seed: int = 5) -> dict:
    """Studies in which the share interval's first exclusion of ½ and the test's decision differ."""
    rng = np.random.default_rng(seed)
    looks = spending_looks(4, budget)
    disagree = decided = 0
    shares = rng.uniform(0.5, 0.5 + 0.173 * 2, size=reps)
    for p, row in zip(shares, rng.random((reps, budget))):
        units = np.where(row < p, 1.0, 0.0)
        path = spending_path(units, looks, budget, statistic="share", alpha=0.05, delta=0.17, kind="obf")
        first = next((k for k, (lo, hi) in enumerate(zip(path.lower, path.upper)) if lo > 0.5 or hi < 0.5), None)
        test = path.decided_look if path.decision in ("A better", "B better") else None
        disagree += first != test
        decided += test is not None
    return {"reps": reps, "disagreements": disagree, "decided": decided}


def main() -> None:
    """Run both; print and optionally write the figures."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=2000)
    p.add_argument("--share-reps", type=int, default=20000)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    out = {"mean": [estimates(args.reps, t) for t in (DELTA, 2 * DELTA)], "share": share_agreement(args.share_reps),
           "python": platform.python_version(), "command": "benchmarks/after_stop.py " + " ".join(sys.argv[1:])}
    for row in out["mean"]:
        print(f"theta {row['theta']:.3f}: bias naive {row['bias_naive_of_delta']:+.3f} delta, median-unbiased "
              f"{row['bias_adjusted_of_delta']:+.3f} delta (SE {row['se_of_delta']:.3f}), bias-adjusted "
              f"{row['bias_whitehead_of_delta']:+.3f} delta (SE {row['se_whitehead_of_delta']:.3f}), with the sd known "
              f"{row['bias_known_sd_of_delta']:+.3f} delta; coverage "
              f"{row['coverage']:.3f}")
    print(f"share: {out['share']['disagreements']} of {out['share']['reps']} studies where interval and test "
          f"disagree ({out['share']['decided']} decided)")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2, default=float) + "\n")


if __name__ == "__main__":
    main()
