"""Adaptive against fixed: the trials an ``until:`` study spends to decide, beside a fixed design.

A simulation of the synthetic family's paired differences (no training): a
configuration's difference between options A and B is theta + v_c plus the
mean over k seeds of (e_A - e_B), with v_c ~ N(0, sd_config) (how much the
options' gap changes with the other hyperparameters: a few points) and e ~
N(0, sd_seed) per trial (seed noise: about a point). The fixed design is the
paired t-test's size for power 0.8 at the smallest effect worth detecting
(delta, two-sided, alpha 0.05); the adaptive study looks after every
configuration from the first and stops at the first decision of
:mod:`analysis.stats.decisions`' rules (alpha 0.05, one sequence). Per true effect
delta, 2 delta, 4 delta and per method: the median trials to a decision, the
share of replications decided within the budget and the share decided
correctly ("A better")::

    .venv/bin/python benchmarks/adaptive_efficiency.py --json benchmarks/results/adaptive_efficiency-2026-12-03.json
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

from analysis.stats.sequential import asymptotic_cs, betting_cs, bounded_cs, decide, share_units  # noqa: E402

METHODS = {   # name -> (sequence of the units, centre, margin)
    "share, exact (betting)": (lambda d, a: betting_cs(share_units(d, np.zeros_like(d)), a), 0.5, 0.05),
    "mean, asymptotic": (lambda d, a: asymptotic_cs(d, a), 0.0, None),
    "mean, exact on [0, 1] scores": (lambda d, a: bounded_cs(d, a, -1.0, 1.0), 0.0, None),
}


def fixed_configurations(delta: float, sd_d: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Paired configurations a t-test needs for ``power`` at ``delta`` (normal approximation, rounded up)."""
    z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
    return math.ceil((z * sd_d / delta) ** 2)


def main() -> None:
    """Simulate every (effect, method) pair; print and optionally write the figures."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--delta", type=float, default=0.01, help="the smallest effect worth detecting (1 point)")
    p.add_argument("--sd-config", type=float, default=0.02)
    p.add_argument("--sd-seed", type=float, default=0.01)
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--budget", type=int, default=1500, help="configurations at most")
    p.add_argument("--reps", type=int, default=200)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    rng = np.random.default_rng(2026)
    alpha, k, per_config = 0.05, args.seeds, 2 * args.seeds
    sd_d = math.sqrt(args.sd_config ** 2 + 2 * args.sd_seed ** 2 / k)
    n_fixed = fixed_configurations(args.delta, sd_d)
    found = {"setting": {**{k_: v for k_, v in vars(args).items() if k_ != "json"}, "alpha": alpha,
                         "sd_of_a_configuration_difference": sd_d},
             "fixed": {"configurations": n_fixed, "trials": n_fixed * per_config},
             "cases": [], "python": platform.python_version(),
             "command": "benchmarks/adaptive_efficiency.py " + " ".join(sys.argv[1:])}
    print(f"fixed design (power 0.8 at {args.delta}): {n_fixed} configurations, {n_fixed * per_config} trials")
    for factor in (1, 2, 4):
        theta = factor * args.delta
        d = (theta + args.sd_config * rng.standard_normal((args.reps, args.budget))
             + args.sd_seed * rng.standard_normal((args.reps, args.budget, k)).mean(axis=2)
             - args.sd_seed * rng.standard_normal((args.reps, args.budget, k)).mean(axis=2))
        for name, (sequence, centre, margin) in METHODS.items():
            spent, right = [], 0
            for row in d:
                cs = sequence(row, alpha)
                steps = [decide(lo, hi, centre=centre, delta=args.delta if margin is None else margin)
                         for lo, hi in zip(cs.lower, cs.upper)]
                at = next((i + 1 for i, s in enumerate(steps) if s != "undecided"), None)
                spent.append(at if at is not None else math.inf)
                right += at is not None and steps[at - 1] == "A better"
            spent_ = np.array(spent)
            decided = np.isfinite(spent_)
            median = float(np.median(spent_)) if decided.mean() > 0.5 else math.inf
            case = {"effect": theta, "effect_in_deltas": factor, "method": name,
                    "median_configurations": median,
                    "median_trials": median * per_config if math.isfinite(median) else None,
                    "decided_within_budget": float(decided.mean()), "decided_correctly": right / args.reps,
                    "against_fixed": (median * per_config) / (n_fixed * per_config) if math.isfinite(median) else None}
            found["cases"].append(case)
            print(f"effect {factor} delta, {name}: median {median} configurations "
                  f"({case['median_trials']} trials; fixed {n_fixed * per_config}), decided {decided.mean():.2f}, "
                  f"correctly {right / args.reps:.2f}")
    if args.json:
        args.json.write_text(json.dumps(found, indent=2, default=lambda x: None) + "\n")


if __name__ == "__main__":
    main()
