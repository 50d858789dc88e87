"""How many trial actors an adaptive study starts, against the trial slots it has.

The waves of an adaptive or tuned study share one ``Tuner.fit``
(``study.execution.fitsession``), so that a finished trial's actor (a Ray
worker that has imported Ray Tune and the family) can run the next wave's
trials. This counts the actors that really ran trials: the same undecidable
adaptive study (zero-work synthetic trials, a first wave of 4 configurations
and more up to a budget of 16, 2 options: 32 trials in 4 waves) run with
``seedsweep run --num-cpus N`` on a private Ray with its own temp dir, for
N = 1, 2 and 4; the actors are the session's worker processes whose log names
the trainable's actor (``:actor_name:ImplicitFunc``). Were every actor kept
from wave to wave, a study would start N of them::

    RAY_AUTH_MODE=disabled .venv/bin/python benchmarks/wave_actors.py --json benchmarks/results/wave_actors-DATE.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

STUDY = """
name: wave-actors
family: synthetic
samples: 4
seeds: 1
compare: {classifier: [softmax, crf]}
space: {units: {choice: [25, 50, 100]}, lr: {loguniform: [1.0e-3, 1.0e-1]}}
task: {noise: 0.01, epoch_noise: 0.0}
fixed: {epoch_seconds: 0.05}
train: {max_epochs: 1, patience: 1}
until: {budget: {samples: 16}, wave: 4}
"""


def trial_actors(ray_tmp: Path) -> int:
    """The worker processes of the session under ``ray_tmp`` that ran the trainable."""
    logs = [p for p in ray_tmp.glob("**/session_2*/logs") if p.is_dir()]
    return sum(":actor_name:ImplicitFunc" in f.read_text(errors="replace")
               for d in logs for f in d.glob("worker-*.out"))


def one(cpus: int) -> dict:
    """Run the study at ``cpus`` slots; its waves, trials and trial actors."""
    work = Path(tempfile.mkdtemp(prefix="swa-", dir="/tmp"))          # short: Ray's socket paths are length-limited
    try:
        (work / "s.yaml").write_text(STUDY)
        env = {**os.environ, "RAY_TMPDIR": str(work / "ray"), "RAY_AUTH_MODE": "disabled"}
        r = subprocess.run([sys.executable, "-m", "seedsweep", "run", str(work / "s.yaml"), "--out", str(work / "run"),
                            "--num-cpus", str(cpus), "--quiet"], cwd=HERE, env=env, capture_output=True, text=True,
                           timeout=600)
        if r.returncode:
            raise SystemExit(r.stderr[-3000:])
        looks = json.loads((work / "run" / "looks.json").read_text())
        trials = len(list((work / "run" / "trials").glob("*.parquet")))
        return {"slots": cpus, "waves": len(looks), "trials": trials, "trial_actors": trial_actors(work / "ray")}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", help="write the counts here")
    args = p.parse_args()
    rows = [one(n) for n in (1, 2, 4)]
    for row in rows:
        print(f"{row['slots']} slot(s): {row['trial_actors']} trial actors over {row['waves']} waves", flush=True)
    if args.json:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=HERE).stdout.strip()
        Path(args.json).write_text(json.dumps({"rows": rows, "study": STUDY, "commit": commit,
                                               "command": "benchmarks/wave_actors.py " + " ".join(sys.argv[1:])},
                                              indent=2) + "\n")


if __name__ == "__main__":
    main()
