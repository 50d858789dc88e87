"""TPE against random search on the synthetic bowl, at full size: the version of
``tests/test_tuned.py::test_tpe_beats_random_search_on_a_smooth_objective``
with 20 replicates per option (the test runs 8 and pools both options' signs).

The bowl (task.optimum {lr: 0.003, units: 150, momentum: 0.8}, curvature 0.3),
2 options x 20 replicates x budget 32, waves of 8, TPE and random search one
after the other on one private Ray (2,560 trials); the tuned outcome is the
best-dev trial's test score at budget 32; the sign test is SciPy's binomtest
over the paired replicates (ties dropped). Seeded: every run gives the same
figures::

    RAY_AUTH_MODE=disabled .venv/bin/python benchmarks/tpe_vs_random.py \\
        --json benchmarks/results/tpe_vs_random-2026-12-05.json
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy.stats import binomtest

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from seedsweep import analysis  # noqa: E402
from seedsweep.analysis.stats.tuned import tuned_outcomes  # noqa: E402
from seedsweep.study.execution.tuned import run_tuned  # noqa: E402
from tests.test_tuned import SMOOTH  # noqa: E402


def compare(replicates: int, folder: Path) -> dict:
    """Run both samplers with ``replicates`` per option; each option's medians, wins and sign test."""
    outcomes = {}
    for sampler in ("tpe", "random"):
        space = folder / f"{sampler}.yaml"
        text = re.sub(r"replicates: \d+", f"replicates: {replicates}", SMOOTH)
        assert f"replicates: {replicates}" in text, "the test's study no longer says how many replicates"
        space.write_text(text.replace("sampler: tpe", f"sampler: {sampler}").replace("name: smooth", f"name: {sampler}"))
        summary = run_tuned(space, folder / sampler, num_cpus=2)
        assert not summary.interrupted, summary
        outcomes[sampler] = tuned_outcomes(analysis.load(folder / sampler), 32)[32]
    out = {}
    for option in ("softmax", "crf"):
        tpe, rnd = outcomes["tpe"].loc[option].to_numpy(), outcomes["random"].loc[option].to_numpy()
        wins, pairs = int((tpe > rnd).sum()), int((tpe != rnd).sum())
        out[option] = {"tpe_median": float(np.median(tpe)), "random_median": float(np.median(rnd)),
                       "tpe_ahead": wins, "pairs": pairs, "sign_test_p": float(binomtest(wins, pairs).pvalue)}
    return out


def main() -> None:
    """Run, print, optionally write the JSON."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--replicates", type=int, default=20)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    import ray                     # noqa: PLC0415 (a private Ray for this run only, after the arguments parse)
    temp = tempfile.mkdtemp(prefix="ssr-", dir="/tmp")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=temp)
    try:
        with tempfile.TemporaryDirectory() as folder:
            out = {"replicates": args.replicates, "options": compare(args.replicates, Path(folder))}
    finally:
        ray.shutdown()
    out.update(python=platform.python_version(), command="benchmarks/tpe_vs_random.py " + " ".join(sys.argv[1:]))
    for option, r in out["options"].items():
        print(f"{option}: TPE median {r['tpe_median']:.4f}, random {r['random_median']:.4f}; TPE ahead in "
              f"{r['tpe_ahead']} of {r['pairs']} paired replicates, sign test p = {r['sign_test_p']:.2g}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
