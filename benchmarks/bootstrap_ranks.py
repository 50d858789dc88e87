"""The median's bootstrap CI: seedsweep's ranks against two peers, side by side.

For n paired configurations and 1,000 resamples (the dashboard's and the
report's default), three ways to the same percentile CI:

* ``median``: ``np.median`` of every resample (the textbook way; the oracle
  of ``tests/test_analysis_stats.py``), the drawn indices pointing into the
  sorted values as seedsweep's do;
* ``two-kth``: the sorted values indexed by a partial sort of every
  resample's drawn indices at both middle ranks (what seedsweep did until
  2026-12-02);
* ``seedsweep``: :func:`analysis.stats.significance.bootstrap_median`, cold (its
  rank cache emptied first) and cached (a second set of values of the same
  size, as a dashboard redraw after a trial that completes no pair).

Every way must give the same two numbers; the script stops if one does not.

Usage::

    .venv/bin/python benchmarks/bootstrap_ranks.py [--sizes 1000,5000,25000,25001] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from seedsweep.analysis.stats import significance  # noqa: E402

RESAMPLES = 1000
TAIL = (1 - 0.95) / 2          # computed as seedsweep computes it (not exactly 0.025)


def by_median(values: np.ndarray, seed: int) -> tuple[float, float]:
    values = np.sort(values)            # the drawn indices point into the sorted values, as in seedsweep
    n = len(values)
    rng = np.random.default_rng(seed)
    chunk = max(1, min(RESAMPLES, 4_000_000 // n))
    medians = np.concatenate([np.median(values[rng.integers(0, n, size=(min(chunk, RESAMPLES - s), n))], axis=1)
                              for s in range(0, RESAMPLES, chunk)])
    lo, hi = np.quantile(medians, [TAIL, 1 - TAIL])
    return float(lo), float(hi)


def by_two_kth(values: np.ndarray, seed: int) -> tuple[float, float]:
    values = np.sort(values)
    n = len(values)
    rng = np.random.default_rng(seed)
    medians = np.empty(RESAMPLES)
    chunk = max(1, min(RESAMPLES, 4_000_000 // n))
    lo_k, hi_k = (n - 1) // 2, n // 2
    for start in range(0, RESAMPLES, chunk):
        m = min(chunk, RESAMPLES - start)
        middle = np.partition(rng.integers(0, n, size=(m, n)), sorted({lo_k, hi_k}), axis=1)
        medians[start:start + m] = (values[middle[:, lo_k]] + values[middle[:, hi_k]]) / 2
    lo, hi = np.quantile(medians, [TAIL, 1 - TAIL])
    return float(lo), float(hi)


def timed(f, *args, repeats: int = 3) -> tuple[float, tuple]:
    best, out = float("inf"), None
    for _ in range(repeats):
        significance.forget_ranks()
        t0 = time.perf_counter()
        out = f(*args)
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,5000,25000,25001")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows = []
    print(f"{'n':>7} {'median s':>9} {'two-kth s':>10} {'seedsweep s':>12} {'cached s':>9}  "
          f"{'two-kth/seedsweep':>17}")
    for n in map(int, args.sizes.split(",")):
        values = np.random.default_rng(n).normal(size=n)
        other = np.random.default_rng(n + 1).normal(size=n)
        t_median, ci_median = timed(by_median, values, 7, repeats=1)
        t_two, ci_two = timed(by_two_kth, values, 7)
        t_new, ci_new = timed(lambda v: significance.bootstrap_median(v, seed=7), values)
        significance.bootstrap_median(values, seed=7)
        t0 = time.perf_counter()
        ci_cached = significance.bootstrap_median(other, seed=7)
        t_cached = time.perf_counter() - t0
        if not (ci_median == ci_two == ci_new) or ci_cached != by_two_kth(other, 7):
            raise SystemExit(f"n = {n}: the CIs differ: {ci_median} {ci_two} {ci_new} (cached {ci_cached})")
        rows.append({"n": n, "median_s": t_median, "two_kth_s": t_two, "seedsweep_s": t_new,
                     "seedsweep_cached_s": t_cached, "ci": ci_new})
        print(f"{n:>7} {t_median:9.3f} {t_two:10.3f} {t_new:12.3f} {t_cached:9.4f}  {t_two / t_new:16.1f}x")
    if args.json:
        args.json.write_text(json.dumps({"benchmark": "bootstrap_ranks", "resamples": RESAMPLES,
                                         "cpus": os.cpu_count(), "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
