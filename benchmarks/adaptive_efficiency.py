"""Adaptive against fixed: the trials an ``until:`` study spends to decide, beside the fixed design of the same statistic.

A simulation of the synthetic family's paired differences (no training): a
configuration's difference between options A and B is theta + v_c plus the
mean over k seeds of (e_A - e_B), with v_c ~ N(0, sd_config) (how much the
options' gap changes with the other hyperparameters: a few points) and e ~
N(0, sd_seed) per trial (seed noise: about a point). delta is the smallest
effect worth detecting on the mean; on the win share the same effect is
the share Phi(delta / sd_d) - 1/2 above one half.

The study runs as the engine runs it: a first wave of ``--first``
configurations, then waves (``--wave`` for the confidence sequences; for
``method: spending`` its own: the rest of the budget after the first wave in
waves of a 39th, rounded up, so at most 40 looks), and decides only at the end of a wave. Methods:

* share, exact (betting): the default ``until:`` (margin 0.05), budget ``--budget``;
* mean, asymptotic: margin delta, budget ``--budget``;
* share, spending / mean, spending: ``method: spending`` (O'Brien-Fleming-type
  alpha, futility under the alternative of delta), with the budget ``seedsweep
  plan`` recommends for power 0.8 at delta (:func:`recommend_budget`: from the
  normal theory's size up to the first whose simulated power is 0.8; here
  simulated from the model with another seed than the table's).

The fixed designs: a sign test (win share) and a paired t-test (mean), each
sized for power 0.8 at delta, two-sided alpha 0.05. Per true effect 0,
delta/2, delta, 2 delta, 4 delta and method: the median and 90th percentile
trials to a decision (the budget where none), the share of replications
deciding 'A better' (the power; at 0 a false declaration), the share stopped
before the budget, and the median against the fixed design of its statistic::

    .venv/bin/python benchmarks/adaptive_efficiency.py --json benchmarks/results/adaptive_efficiency-2026-12-04.json
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from seedsweep.analysis.stats.methods import simulate  # noqa: E402
from seedsweep.analysis.stats.planning import fixed_configurations as planned  # noqa: E402
from seedsweep.analysis.stats.sequential import share_units  # noqa: E402
from seedsweep.analysis.stats.spending import recommend_budget  # noqa: E402
from seedsweep.study.spec.until import Until  # noqa: E402

ALPHA = 0.05
FACTORS = (0, 0.5, 1, 2, 4)


def fixed_sizes(delta: float, sd_d: float) -> dict[str, int]:
    """The fixed designs' configurations for power 0.8 at delta: a paired t-test on the mean, a sign test on the share."""
    share = stats.norm.cdf(delta / sd_d) - 0.5
    unit = np.array([1.0, -1.0] * 50) * sd_d * math.sqrt(99 / 100)           # a pilot of sd sd_d
    return {"mean": planned(unit, statistic="mean", delta=delta, alpha=ALPHA),
            "share": planned(unit, statistic="share", delta=share, alpha=ALPHA), "share_delta": share}


def main() -> None:
    """Simulate every (effect, method) pair; print and optionally write the figures."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--delta", type=float, default=0.01, help="the smallest effect worth detecting (1 point)")
    p.add_argument("--sd-config", type=float, default=0.02)
    p.add_argument("--sd-seed", type=float, default=0.01)
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--first", type=int, default=4, help="the first wave's configurations")
    p.add_argument("--wave", type=int, default=2, help="configurations per later wave (the sequences)")
    p.add_argument("--budget", type=int, default=1500, help="configurations at most (the sequences)")
    p.add_argument("--reps", type=int, default=400)
    p.add_argument("--only", help="run only the methods whose names contain this (e.g. spending)")
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    rng = np.random.default_rng(2026)
    k, per_config = args.seeds, 2 * args.seeds
    sd_d = math.sqrt(args.sd_config ** 2 + 2 * args.sd_seed ** 2 / k)
    fixed = fixed_sizes(args.delta, sd_d)
    def model(theta: float):
        """Draws of configurations' differences at effect ``theta`` (reps x n)."""
        def draw(rng, reps: int, n: int) -> np.ndarray:
            return (theta + args.sd_config * rng.standard_normal((reps, n))
                    + args.sd_seed * rng.standard_normal((reps, n, k)).mean(axis=2)
                    - args.sd_seed * rng.standard_normal((reps, n, k)).mean(axis=2))
        return draw

    def as_share(draw):
        return lambda rng, reps, n: share_units(draw(rng, reps, n), 0.0)

    recommended = {"mean": recommend_budget(model(args.delta), fixed["mean"], first=args.first, statistic="mean",
                                            alpha=ALPHA, delta=args.delta, seed=1),
                   "share": recommend_budget(as_share(model(args.delta)), fixed["share"], first=args.first,
                                             statistic="share", alpha=ALPHA, delta=fixed["share_delta"], seed=1)}
    budgets = {s: b.configurations for s, b in recommended.items()}
    def until(stat: str, method: str, delta: float) -> Until:
        return Until(decide=("c",), statistic=stat, delta=delta, method=method, range=None, assume_normal=True)

    methods = {   # name -> (the until: block, budget)
        "share, exact (betting)": (until("share", "exact", 0.05), args.budget),
        "mean, asymptotic": (until("mean", "asymptotic", args.delta), args.budget),
        "share, spending": (until("share", "spending", fixed["share_delta"]), budgets["share"]),
        "mean, spending": (until("mean", "spending", args.delta), budgets["mean"]),
    }
    methods = {name: m for name, m in methods.items() if not args.only or args.only in name}
    found = {"setting": {**{k_: v for k_, v in vars(args).items() if k_ != "json"}, "alpha": ALPHA,
                         "sd_of_a_configuration_difference": sd_d, "share_delta": fixed["share_delta"]},
             "fixed": {s: {"configurations": fixed[s], "trials": fixed[s] * per_config} for s in ("share", "mean")},
             "spending_budget": {s: {"configurations": budgets[s], "trials": budgets[s] * per_config,
                                     "against_fixed": budgets[s] / fixed[s],
                                     "power_when_recommended": recommended[s].power} for s in budgets},
             "cases": [], "python": platform.python_version(),
             "command": "benchmarks/adaptive_efficiency.py " + " ".join(sys.argv[1:])}
    print(f"sd of a configuration's difference {sd_d:.4f}; delta {args.delta} on the mean = "
          f"{fixed['share_delta']:.3f} on the win share")
    for s in ("share", "mean"):
        print(f"fixed {s} design (power 0.8 at delta): {fixed[s]} configurations, {fixed[s] * per_config} trials; "
              f"spending budget {budgets[s]} ({budgets[s] / fixed[s]:.3f}x)")
    header = (f"{'method':24} {'effect':>7} {'median trials':>13} {'p90 trials':>10} {'x fixed':>8} "
              f"{'A better':>8} {'early':>6}")
    print(header)
    started = time.perf_counter()
    for factor in FACTORS:
        theta = factor * args.delta
        most = max(args.budget, *budgets.values())
        d = model(theta)(rng, args.reps, most)
        for name, (block, cap) in methods.items():
            stat = block.statistic
            rows = share_units(d[:, :cap], 0.0) if stat == "share" else d[:, :cap]
            out = simulate(rows, block, first=args.first, wave=args.wave, cap=cap, alpha=ALPHA)
            sizes, better = out.sizes, round(out.share("A better") * args.reps)
            sizes_ = np.array(sizes, dtype=float)
            median, p90 = float(np.median(sizes_)), float(np.percentile(sizes_, 90))
            case = {"effect": theta, "effect_in_deltas": factor, "method": name, "budget_configurations": cap,
                    "median_trials": median * per_config, "p90_trials": p90 * per_config,
                    "median_against_fixed": median / fixed[stat], "p90_against_fixed": p90 / fixed[stat],
                    "a_better": better / args.reps, "stopped_before_budget": float((sizes_ < cap).mean())}
            found["cases"].append(case)
            print(f"{name:24} {factor:>6g}δ {case['median_trials']:>13g} {case['p90_trials']:>10g} "
                  f"{case['median_against_fixed']:>8.2f} {case['a_better']:>8.3f} {case['stopped_before_budget']:>6.2f}")
    found["seconds"] = round(time.perf_counter() - started, 1)
    if args.json:
        args.json.write_text(json.dumps(found, indent=2, default=lambda x: None) + "\n")


if __name__ == "__main__":
    main()
