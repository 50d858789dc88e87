"""A value claim pooled over two tasks, judged with anytime-valid intervals: does the interval keep the pooled mean?

Two tasks whose configurations score about 0.95 and 0.80 (a configuration's
level drawn around the task's mean, beta with concentration 200; two runs
per configuration and task around it, beta with concentration 2,000), 150
configurations each, every configuration run on both tasks, as a study with
two tasks runs them. The claim is the mean over every run of both tasks; its
truth is the mean of the two tasks' means. Rows: how often the final
anytime interval leaves that out, how often the running interval ever does,
how often the running intersection is empty, and how often the anytime
verdict differs from the fixed-sample one (rule: interval, gate 0.05, target
the pooled mean) while the fixed-sample verdict says reproduced.
``tests/test_claims_pooled.py`` checks the same with fewer replications::

    .venv/bin/python benchmarks/pooled_claims.py --json benchmarks/results/pooled_claims-2026-12-04.json
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from seedsweep.analysis.stats.claims import claim_sequence, judge  # noqa: E402
from seedsweep.study.spec.claimsfile import parse_claims  # noqa: E402

TASK_MEANS = {"easy": 0.95, "hard": 0.80}
CONFIGURATIONS, RUNS = 150, 2


def study_rows(rng: np.random.Generator, configurations: int = CONFIGURATIONS) -> pd.DataFrame:
    """One simulated study's trials table: every configuration run ``RUNS`` times on each task."""
    parts = []
    for task, mean in TASK_MEANS.items():
        level = rng.beta(mean * 200, (1 - mean) * 200, size=configurations)
        runs = rng.beta(level[:, None] * 2000, (1 - level[:, None]) * 2000, size=(configurations, RUNS))
        parts.append(pd.DataFrame({"task": task, "config_id": np.repeat([f"c{i:05d}" for i in range(configurations)],
                                                                        RUNS),
                                   "test_score": runs.reshape(-1), "status": "ok"}))
    # stored as a study with two tasks stores them: task by task
    return pd.concat(parts, ignore_index=True)


def claim(target: float):
    """A value claim on the pooled mean (rule interval, gate 0.05)."""
    (c,) = parse_claims({"source": "pooled", "claims": [{"id": "pooled", "kind": "value", "target": target,
                                                         "rule": {"interval": True, "gate": 0.05}}]}).claims
    return c


def simulate(reps: int, seed: int = 0, configurations: int = CONFIGURATIONS) -> dict:
    """The rates of the module docstring over ``reps`` simulated studies."""
    rng = np.random.default_rng(seed)
    truth = float(np.mean(list(TASK_MEANS.values())))
    c = claim(truth)
    final_miss = ever_miss = empty = disagree = fixed_reproduced = 0
    for _ in range(reps):
        rows = study_rows(rng, configurations)
        path = claim_sequence(c, rows, bounds=(0.0, 1.0))
        gone = bool(path.empty is not None and path.empty[-1])
        empty += gone
        final_miss += gone or not path.lower[-1] <= truth <= path.upper[-1]
        ever_miss += bool(((path.lower > truth) | (path.upper < truth)).any() or gone)
        fixed = judge(c, rows, n_bootstrap=200).verdict.verdict
        anytime = judge(c, rows, anytime=True, bounds=(0.0, 1.0)).verdict.verdict
        fixed_reproduced += fixed == "reproduced"
        disagree += fixed == "reproduced" and anytime != "reproduced"
    return {"reps": reps, "configurations": configurations, "task_means": TASK_MEANS, "pooled_mean": truth,
            "final_interval_misses": final_miss / reps, "ever_misses": ever_miss / reps, "empty": empty / reps,
            "fixed_reproduced": fixed_reproduced / reps, "anytime_disagrees_with_reproduced": disagree / reps,
            "coverage_final": 1 - final_miss / reps,
            "se_at_95": math.sqrt(0.05 * 0.95 / reps)}


def main() -> None:
    """Simulate; print and optionally write the rates."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    out = simulate(args.reps, args.seed)
    out["python"] = platform.python_version()
    for k, v in out.items():
        print(f"{k:40s} {v}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
