"""Claims judged at every look: how often each interval ever loses the true value, and what validity costs.

A skewed model of scores (a configuration's level lognormal, σ = 1; two
runs per configuration around it, lognormal σ = 0.3; divided by 60 so that
scores lie in [0, 1]); 60 configurations judged after each one, as an
``until.claims: true`` study may. The truth is the median and mean of two
million draws. Rows: the sign-test sequence of a median, the betting
sequence of a mean (on the configurations' means in [0, 1]), and the
fixed-sample t-interval (mean ± 2 SE) looked at after every configuration
from the fifth (the peeking the sequences exist for) and once at 60 only.
Beside them the median widths at 20 and 60 configurations, against the
t-interval's. ``tests/test_until_claims.py`` checks the same rates (seed 11)::

    .venv/bin/python benchmarks/claim_coverage.py --json benchmarks/results/claim_coverage-2026-12-04-truncation.json

(``claim_coverage-2026-12-04.json``: the same run at the truncation of ½ used before.)
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

from seedsweep.analysis.stats.anytime import claim_path, median_interval  # noqa: E402


def main() -> None:
    """Simulate the studies; print and optionally write the rates and widths."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=2000)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    rng = np.random.default_rng(11)
    reps, n, alpha = args.reps, 60, 0.05
    config = rng.lognormal(sigma=1.0, size=(reps, n))
    runs = np.stack([config * rng.lognormal(sigma=0.3, size=(reps, n)) for _ in range(2)], axis=2) / 60
    big = rng.lognormal(sigma=1.0, size=2_000_000) * rng.lognormal(sigma=0.3, size=2_000_000) / 60
    median, mean = float(np.median(big)), float(big.mean())
    clusters = np.repeat(np.arange(n), 2)
    lost = {"median, sign-test sequence": 0, "mean, betting sequence": 0, "mean, t-interval at every look": 0,
            "mean, t-interval at 60 only": 0}
    widths = {k: {20: [], 60: []} for k in ("median, sign-test sequence", "mean, betting sequence", "t-interval")}
    for r in range(reps):
        values = runs[r].reshape(-1)
        out = False
        for i in range(1, n + 1):
            lo, hi = median_interval(values[: 2 * i], clusters[: 2 * i], alpha)
            out = out or not lo <= median <= hi
            if i in (20, 60):
                widths["median, sign-test sequence"][i].append(hi - lo)
        lost["median, sign-test sequence"] += out
        per = runs[r].mean(axis=1).clip(0, 1)
        path = claim_path(per, [f"c{i:05d}" for i in range(n)], statistic="mean", alpha=alpha, bounds=(0.0, 1.0))
        lost["mean, betting sequence"] += bool(((path.lower > mean) | (path.upper < mean)).any())
        m = np.cumsum(per) / np.arange(1, n + 1)
        sd = np.array([per[: i + 1].std(ddof=1) if i else np.inf for i in range(n)])
        half = 2.0 * sd / np.sqrt(np.arange(1, n + 1))
        lost["mean, t-interval at every look"] += bool((np.abs(m - mean)[4:] > half[4:]).any())
        lost["mean, t-interval at 60 only"] += bool(abs(m[-1] - mean) > half[-1])
        for i in (20, 60):
            widths["mean, betting sequence"][i].append(path.upper[i - 1] - path.lower[i - 1])
            widths["t-interval"][i].append(2 * half[i - 1])
    se = math.sqrt(alpha * (1 - alpha) / reps)
    found = {"reps": reps, "configurations": n, "runs_per_configuration": 2, "alpha": alpha,
             "ceiling (alpha + 3 SE)": round(alpha + 3 * se, 4), "true_median": median, "true_mean": mean,
             "ever_lost": {k: v / reps for k, v in lost.items()},
             "median_width": {k: {str(i): float(np.median(v[i])) for i in v} for k, v in widths.items()},
             "python": platform.python_version(),
             "command": "benchmarks/claim_coverage.py " + " ".join(sys.argv[1:])}
    for k, v in found["ever_lost"].items():
        print(f"{k:34s} ever lost the truth in {v:.2%} of {reps} studies")
    for k, v in found["median_width"].items():
        print(f"{k:34s} median width at 20: {v['20']:.4f}, at 60: {v['60']:.4f}")
    if args.json:
        args.json.write_text(json.dumps(found, indent=1) + "\n")


if __name__ == "__main__":
    main()
