"""The simulated t boundaries of a mean spending study (``analysis.stats.tboundaries``):
the look-by-look sums against the full cumulative sums they replaced, in one run,
on the same draws (both must give the same |t| bit for bit, else this exits 1).

    .venv/bin/python benchmarks/t_boundaries.py --json benchmarks/results/t_boundaries-DATE.json

Each case is the |t| of 1,000,000 null paths at the looks of a schedule (what
``t_boundaries`` computes once per schedule; a mean study's every look, and the
level tests of the suite, pay it); best of ``--repeat`` runs, CPU seconds of this
process.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time

import numpy as np

from seedsweep.analysis.stats import tboundaries as tb

CASES = [(10, 20, 35, 50, 80), (5, 12, 30, 44, 61, 80), (3, 4, 40), (32,)]


def cumulative(counts: tuple[int, ...], paths: int, chunk: int = 50_000) -> np.ndarray:
    """The peer: the code before (every unit's cumulative sums, then the looks' columns)."""
    rng = np.random.default_rng(tb.SEED)
    out = np.zeros((len(counts), paths), dtype=np.float64)
    for start in range(0, paths, chunk):
        m = min(chunk, paths - start)
        x = rng.standard_normal((m, counts[-1]))
        s1, s2 = np.cumsum(x, axis=1), np.cumsum(x * x, axis=1)
        for k, c in enumerate(counts):
            if c < tb.MIN_UNITS:
                continue
            mean = s1[:, c - 1] / c
            var = np.maximum((s2[:, c - 1] - c * mean * mean) / (c - 1), 1e-300)
            out[k, start:start + m] = np.abs(mean) / np.sqrt(var / c)
    return out


def best(fn, repeat: int) -> tuple[float, np.ndarray]:
    """The least CPU seconds of ``repeat`` calls, and the last result."""
    times, result = [], None
    for _ in range(repeat):
        t0 = time.process_time()
        result = fn()
        times.append(time.process_time() - t0)
    return min(times), result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--paths", type=int, default=tb.PATHS)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", help="write the figures here")
    args = p.parse_args()
    rows, same = {}, True
    for counts in CASES:
        peer_s, peer = best(lambda: cumulative(counts, args.paths), args.repeat)
        ours_s, ours = best(lambda: tb.null_abs_t(counts, args.paths), args.repeat)
        same &= bool(np.array_equal(peer, ours))
        rows[str(counts)] = {"cumulative_s": round(peer_s, 3), "looks_s": round(ours_s, 3),
                             "ratio": round(ours_s / peer_s, 3), "identical": bool(np.array_equal(peer, ours))}
        print(f"{str(counts):28} cumulative {peer_s:6.3f} s  looks {ours_s:6.3f} s  ratio {ours_s / peer_s:.3f}  "
              f"identical {rows[str(counts)]['identical']}")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    result = {"paths": args.paths, "repeat": args.repeat, "cases": rows, "all_identical": same, "commit": commit,
              "cpus": os.cpu_count()}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
