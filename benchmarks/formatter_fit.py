"""What adopting a code formatter would do to this repository, measured on
a copy (the repository is not touched): how many tracked Python files it
rewrites, the lines before and after, and which modules of the packages
would then exceed the 350-line cap of ``tests/test_architecture.py``.

    .venv/bin/python benchmarks/formatter_fit.py --json benchmarks/results/formatter_fit-2026-12-05.json

The formatter is ``ruff format`` (the linter's own, from the lock) at the
linter's line length; ``--also-yapf PATH`` measures a yapf executable the same
way (pep8 style at the same length) beside it, for a peer. Issue 52's item 6
asks for a formatter; this is why the repository has the linter only.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CAP = 350
PACKAGES = ("study", "analysis", "seedsweep")


def tracked_python() -> list[str]:
    """The tracked ``.py`` files (what the linter reads, notebooks aside)."""
    out = subprocess.run(["git", "ls-files", "*.py"], cwd=REPO, capture_output=True, text=True, check=True)
    return [line for line in out.stdout.splitlines() if line]


def lines(root: Path, files: list[str]) -> dict[str, int]:
    """Each file's line count under ``root``."""
    return {f: len((root / f).read_text().splitlines()) for f in files}


def measure(name: str, files: list[str], command: list[str], before: dict[str, int]) -> dict:
    """Copy the files, run the formatter over the copy, count what changed."""
    work = Path(tempfile.mkdtemp(prefix=f"fmt-{name}-"))
    try:
        for f in files + ["pyproject.toml"]:
            (work / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / f, work / f)
        if name == "yapf":
            (work / ".style.yapf").write_text("[style]\nbased_on_style = pep8\ncolumn_limit = 125\n")
        subprocess.run(command, cwd=work, capture_output=True, text=True, check=True)
        after = lines(work, files)
        changed = sum((work / f).read_bytes() != (REPO / f).read_bytes() for f in files)
        over = {f: {"before": before[f], "after": after[f]} for f in files
                if f.split("/")[0] in PACKAGES and after[f] > CAP}
        return {"files_rewritten": changed, "files": len(files), "lines_before": sum(before.values()),
                "lines_after": sum(after.values()), "modules_over_cap": over}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    """Measure, print, optionally write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--also-yapf", help="a yapf executable to measure beside ruff")
    args = parser.parse_args()
    files = tracked_python()
    before = lines(REPO, files)
    ruff = str(Path(sys.executable).parent / "ruff")
    version = subprocess.run([ruff, "--version"], capture_output=True, text=True).stdout.strip()
    result = {"cap": CAP, "ruff format": {"version": version,
                                          **measure("ruff", files, [ruff, "format", "--no-cache", "."], before)}}
    if args.also_yapf:
        yapf = subprocess.run([args.also_yapf, "--version"], capture_output=True, text=True).stdout.strip()
        result["yapf"] = {"version": yapf, **measure("yapf", files, [args.also_yapf, "-i", "-r", *PACKAGES,
                                                                    "tests", "benchmarks"], before)}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    result["commit"] = commit.stdout.strip()
    for name in ("ruff format", "yapf"):
        if name in result:
            r = result[name]
            print(f"{name}: rewrites {r['files_rewritten']} of {r['files']} files, {r['lines_before']} -> "
                  f"{r['lines_after']} lines ({r['lines_after'] / r['lines_before'] - 1:+.1%}); "
                  f"{len(r['modules_over_cap'])} modules over {CAP} lines: "
                  + ", ".join(f"{f} {v['before']}->{v['after']}" for f, v in r["modules_over_cap"].items()))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
