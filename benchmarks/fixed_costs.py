"""The fixed costs a test pays before its study does any work: a private Ray's processes and a trial actor's imports.

Two measurements, each in fresh processes, CPU-seconds of the processes themselves (not wall time):

* **A private Ray.** ``ray.init(address="local", num_cpus=1, include_dashboard=False)``, as
  ``seedsweep run`` without ``--address`` starts it, left idle ``--idle`` seconds; then each child
  process's CPU-seconds by its name (GCS, raylet, the dashboard head Ray starts even without the
  dashboard, the autoscaler monitor, the log monitor, the two agents, the prestarted worker).
* **Imports.** What a fresh interpreter spends importing what a trial actor imports before its first
  trial: ``ray`` (every Ray worker), ``ray.tune``'s function trainable (every trial actor), the
  transformer family's torch and ``transformers``, and loading the packaged MiniLM weights (which
  imports the modelling code). Each ``--reps`` times, the median kept.

Run it with nothing else on the machine::

    RAY_AUTH_MODE=disabled .venv/bin/python benchmarks/fixed_costs.py --json benchmarks/results/fixed_costs-DATE.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

RAY_PROBE = """
import json, logging, sys, time
import psutil, ray
ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
time.sleep(float(sys.argv[1]))
out = {}
for p in psutil.Process().children(recursive=True):
    try:
        t = p.cpu_times()
        cmd = " ".join(p.cmdline())
        name = p.name()
        for part in ("dashboard.py", "monitor.py", "log_monitor.py"):
            if part in cmd:
                name = part
        out[name] = out.get(name, 0.0) + t.user + t.system
    except psutil.Error:
        pass
ray.shutdown()
print(json.dumps(out))
"""

IMPORTS = {
    "ray": "import ray",
    "ray.tune function trainable (after ray)": "import ray\nt = time.process_time()\n"
                                               "from ray.tune.trainable import function_trainable",
    "torch": "import torch",
    "transformers (after torch)": "import torch\nt = time.process_time()\n"
                                  "from transformers import AutoConfig, AutoModelForSequenceClassification",
    "MiniLM weights loaded (after torch and transformers)":
        "import torch\nfrom transformers import AutoConfig, AutoModelForSequenceClassification\n"
        "from seedsweep.study.families.transformer.settings import option_source\n"
        "src = option_source('all-minilm-l6-v2')\nt = time.process_time()\n"
        "AutoModelForSequenceClassification.from_pretrained(src, config=AutoConfig.from_pretrained(src, num_labels=5))",
}


def import_cost(code: str) -> float:
    """CPU-seconds of ``code`` in a fresh interpreter, from its last ``t = time.process_time()`` on."""
    script = "import time, sys\nt = time.process_time()\n" + code + "\nprint(time.process_time() - t)\n"
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=HERE,
                       env={**os.environ, "TRANSFORMERS_VERBOSITY": "error"})
    if r.returncode != 0:
        raise SystemExit(r.stderr)
    return float(r.stdout.split()[-1])


def main() -> None:
    """Measure both and print (and with ``--json`` write) the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--idle", type=float, default=8.0, help="seconds the private Ray is left idle")
    parser.add_argument("--json")
    args = parser.parse_args()
    rays = []
    for _ in range(args.reps):
        r = subprocess.run([sys.executable, "-c", RAY_PROBE, str(args.idle)], capture_output=True, text=True,
                           cwd=HERE, env={**os.environ, "RAY_AUTH_MODE": "disabled"})
        if r.returncode != 0:
            raise SystemExit(r.stderr)
        rays.append(json.loads(r.stdout.strip().splitlines()[-1]))
    names = sorted({n for one in rays for n in one})
    ray_cpu = {n: round(statistics.median(one.get(n, 0.0) for one in rays), 2) for n in names}
    ray_cpu["all"] = round(statistics.median(sum(one.values()) for one in rays), 2)
    imports = {label: round(statistics.median(import_cost(code) for _ in range(args.reps)), 2)
               for label, code in IMPORTS.items()}
    result = {"private_ray_processes_cpu_s": ray_cpu, "idle_s": args.idle, "imports_cpu_s": imports,
              "reps": args.reps, "cpus": os.cpu_count(), "command": " ".join(["benchmarks/fixed_costs.py", *sys.argv[1:]])}
    print(json.dumps(result, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
