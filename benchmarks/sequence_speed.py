"""Three computations of the sequential decisions, each against the way it was
computed before, in one run, on the same inputs (both ways must agree exactly,
else this exits 1):

* ``betting_cs`` -- the exact (betting) confidence sequence of 2,000 null paths
  of 80 units: the product against the direct formula it replaced (numpy's
  ``cumsum`` down the columns, the hedged capital's ``exp`` at every grid point);
* ``conditional error`` -- ``seedsweep extend``'s conditional error over the
  stops of 1,000 null win-share studies (budget 20, O'Brien-Fleming type; the
  simulation of ``benchmarks/extend_level.py``): the boundaries solved once
  per design (the product's cache) against solving them at every call (the
  cache emptied before each, as before);
* ``futility`` -- the futility boundary of every look of 2,000 null mean paths
  (budget 80, the looks of ``method: spending``'s automatic waves): one solve
  of the whole path's looks per rounded drift (the product) against one solve
  per look's prefix of looks (before). Both are cached the same way; a look's
  boundary depends on the looks up to it only, so the two agree exactly.

CPU seconds of this process, best of ``--repeat``::

    .venv/bin/python benchmarks/sequence_speed.py --json benchmarks/results/sequence_speed-DATE.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from functools import lru_cache

import numpy as np

from seedsweep.analysis.stats import extension, groupseq
from seedsweep.analysis.stats.sequential import betting_cs
from seedsweep.analysis.stats.spending import spending_looks, spending_path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.extend_level import simulate  # noqa: E402
from tests.test_sequential import bounds_by_the_formula  # noqa: E402  (the formula as first written)


def timed(fn, repeat: int, before=None):
    """The least CPU seconds of ``repeat`` calls (``before`` run untimed ahead of each), and the last result."""
    times, result = [], None
    for _ in range(repeat):
        if before is not None:
            before()
        t0 = time.process_time()
        result = fn()
        times.append(time.process_time() - t0)
    return min(times), result


def case_betting(repeat: int) -> dict:
    rows = np.random.default_rng(11).lognormal(0.0, 0.6, (2000, 80))
    rows = np.clip(0.5 + (rows - np.exp(0.18)) / 8.0, 0.0, 1.0)          # a skewed null in [0, 1]
    ours_s, ours = timed(lambda: [betting_cs(r, 0.05) for r in rows], repeat)
    peer_s, peer = timed(lambda: [bounds_by_the_formula(r, 0.05) for r in rows], repeat)
    same = all(np.array_equal(a.lower, p[0]) and np.array_equal(a.upper, p[1]) and np.array_equal(a.empty, p[2])
               for a, p in zip(ours, peer))
    return {"paths": len(rows), "units": rows.shape[1], "seedsweep_s": round(ours_s, 3), "peer_s": round(peer_s, 3),
            "ratio": round(ours_s / peer_s, 3), "identical": same}


def case_conditional_error(repeat: int) -> dict:
    run = lambda: simulate(1000, 20, "share", kind="obf", edited_reps=0)   # noqa: E731
    ours_s, ours = timed(run, repeat, before=groupseq.forget_boundaries)
    calls = []
    solve = groupseq.boundaries

    def cold(*args, **kwargs):
        groupseq.forget_boundaries()
        calls.append(1)
        return solve(*args, **kwargs)

    extension.boundaries = cold        # the peer: every call of the extension's solves again
    try:
        peer_s, peer = timed(run, repeat)
    finally:
        extension.boundaries = solve
    return {"studies": 1000, "budget": 20, "seedsweep_s": round(ours_s, 3), "peer_s": round(peer_s, 3),
            "ratio": round(ours_s / peer_s, 3), "identical": ours == peer, "solves_per_run_before": len(calls) // repeat}


def case_futility(repeat: int) -> dict:
    cap, looks = 80, spending_looks(4, 80)
    rng = np.random.default_rng(12)
    asks = []                          # (fractions, upper, drift, look) of every look that can stop for futility
    for _ in range(2000):
        path = spending_path(rng.standard_normal(cap), looks, cap, statistic="mean", alpha=0.05, delta=0.5)
        for k, (z, sd) in enumerate(zip(path.z, path.sds)):
            if math.isfinite(z) and sd > 0:
                asks.append((path.fractions, path.bounds, round(0.5 * math.sqrt(cap) / sd * 20) / 20, k))

    def scheme(prefix: bool):
        solve = lru_cache(maxsize=65536)(lambda f, u, d: groupseq.futility_boundaries(f, u, d, 0.2))
        return [solve(f[:k + 1], u[:k + 1], d)[k] if prefix else solve(f, u, d)[k] for f, u, d, k in asks]

    ours_s, ours = timed(lambda: scheme(False), repeat)
    peer_s, peer = timed(lambda: scheme(True), repeat)
    return {"paths": 2000, "looks_asked": len(asks), "seedsweep_s": round(ours_s, 3), "peer_s": round(peer_s, 3),
            "ratio": round(ours_s / peer_s, 3), "identical": ours == peer}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--json", help="write the figures here")
    args = p.parse_args()
    cases = {"betting_cs": case_betting(args.repeat), "conditional error": case_conditional_error(args.repeat),
             "futility": case_futility(args.repeat)}
    for name, c in cases.items():
        print(f"{name:18} seedsweep {c['seedsweep_s']:8.3f} s   before {c['peer_s']:8.3f} s   "
              f"ratio {c['ratio']:.3f}   identical {c['identical']}", flush=True)
    if args.json:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        with open(args.json, "w") as f:
            json.dump({"cases": cases, "repeat": args.repeat, "cpus": os.cpu_count(), "commit": commit,
                       "command": "benchmarks/sequence_speed.py " + " ".join(sys.argv[1:])}, f, indent=2)
            f.write("\n")
    return 0 if all(c["identical"] for c in cases.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
