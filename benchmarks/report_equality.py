"""Every report byte-equal before and after a change to how reports read a run.

Makes three run directories with this checkout's code -- the quickstart study
(``seedsweep run search_spaces/quickstart.yaml``, real Ray), the R&G raw
results imported (``seedsweep import``, the paper's eight comparisons), and a
synthetic adaptive study with sealed claims (``tests/test_one_reading.py``'s, no Ray) --
then writes each one's Markdown and HTML report with this checkout and with
an earlier one (``--before``, a ``git worktree``), and compares them byte for
byte (the HTML's "generated <time>" stamp removed). Both checkouts run
``python -m seedsweep report`` from their own root, so each reads the run
with its own code.

    git worktree add /tmp/before <commit>
    SEEDSWEEP_SHARED_DATA=../shared/data .venv/bin/python benchmarks/report_equality.py \\
        --before /tmp/before --json benchmarks/results/report_equality-<date>.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

STAMP = re.compile(r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC")


def make_runs(work: Path, data: Path) -> dict[str, Path]:
    from tests.rundirs import write_sealed_run
    from tests.test_one_reading import CLAIMS, STUDY   # an adaptive synthetic study and a claim on it

    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    runs = {"quickstart": work / "quickstart", "rg2017-import": work / "rg2017", "adaptive-claims": work / "adaptive"}
    subprocess.run([sys.executable, "-m", "seedsweep", "run", "search_spaces/quickstart.yaml", "--out",
                    str(runs["quickstart"]), "--quiet"], cwd=REPO, env=env, check=True, timeout=1800)
    subprocess.run([sys.executable, "-m", "seedsweep", "import", str(data / "rg2017" / "hyperparameter_results.csv.gz"),
                    "--out", str(runs["rg2017-import"])], cwd=REPO, env=env, check=True, timeout=1800,
                   capture_output=True)
    write_sealed_run(runs["adaptive-claims"], STUDY, CLAIMS)
    return runs


def reports(checkout: Path, runs: dict[str, Path], out: Path) -> dict[str, str]:
    """sha256 of each run's Markdown and HTML report written by ``checkout``'s code."""
    out.mkdir(parents=True, exist_ok=True)
    digests = {}
    for name, run in runs.items():
        for suffix in ("md", "html"):
            target = out / f"{name}.{suffix}"
            subprocess.run([sys.executable, "-m", "seedsweep", "report", str(run), "-o", str(target)],
                           cwd=checkout, check=True, timeout=1800, capture_output=True)
            text = STAMP.sub("generated <time>", target.read_text())
            digests[f"{name}.{suffix}"] = hashlib.sha256(text.encode()).hexdigest()
    return digests


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, type=Path, help="an earlier checkout (git worktree)")
    parser.add_argument("--json", type=Path, help="write the comparison here")
    args = parser.parse_args()
    data = Path(os.environ.get("SEEDSWEEP_SHARED_DATA", REPO.parent / "shared" / "data"))
    work = Path(tempfile.mkdtemp(prefix="report-equality-"))
    runs = make_runs(work, data)
    before = reports(args.before.resolve(), runs, work / "before")
    after = reports(REPO, runs, work / "after")
    commit = lambda c: subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=c, capture_output=True,  # noqa: E731
                                      text=True).stdout.strip()
    result = {"before": commit(args.before), "after": commit(REPO), "reports": {
        k: {"before": before[k], "after": after[k], "equal": before[k] == after[k]} for k in sorted(before)},
        "command": "benchmarks/report_equality.py " + " ".join(sys.argv[1:])}
    for k, v in result["reports"].items():
        print(f"{k:28s} {'equal' if v['equal'] else 'DIFFERENT'}  {v['after'][:16]}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0 if all(v["equal"] for v in result["reports"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
