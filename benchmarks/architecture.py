"""The house's import graph and docstrings, counted on one or more checkouts side by side.

For each checkout: its modules and imports among them (module level and
inside functions, read by ``tests/test_architecture.py``'s own reader),
the import circles, the imports running back up the floors, the imports
of project modules inside functions (each listed), and the public functions
and methods without a docstring (``inspect.getdoc``: a method inherits its
base's)::

    git worktree add /tmp/before 6784f55
    .venv/bin/python benchmarks/architecture.py /tmp/before . --json benchmarks/results/architecture-2026-12-02.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

def rules():
    """``tests/test_architecture.py`` as a module (its graph reader, floors, circle finder and docstring probe)."""
    spec = importlib.util.spec_from_file_location("architecture_rules", HERE / "tests" / "test_architecture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def measure(repo: Path) -> dict:
    """The counts of one checkout."""
    ta = rules()
    ta.REPO = repo
    ta.PACKAGES = tuple(p for p in ("seedsweep", "study", "analysis") if (repo / p).is_dir())
    imports = ta.project_imports()
    edges: dict[str, set[str]] = defaultdict(set)
    for importer, _, target, _ in imports:
        edges[importer].add(target)
    up = [f"{a}:{line} -> {b}" for a, line, b, _ in imports
          if ta.FLOORS.index(ta.floor_of(b)) < ta.FLOORS.index(ta.floor_of(a))]
    inside = [f"{a}:{line} -> {b}" for a, line, b, inner in imports if inner]
    r = subprocess.run([sys.executable, "-c", ta.DOCSTRING_PROBE], cwd=repo, capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin", "RAY_AUTH_MODE": "disabled"}, timeout=300)
    if r.returncode:
        raise SystemExit(r.stderr[-2000:])
    docs = json.loads(r.stdout.strip().splitlines()[-1])
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True).stdout
    return {"checkout": str(repo), "commit": head.strip(), "modules": len(ta.project_modules()),
            "imports": len(imports), "circles": ta.circles(edges), "imports_up": up,
            "imports_inside_functions": inside, "public_functions_and_methods": docs["public"],
            "without_docstring": docs["missing"]}


def main() -> None:
    """Measure every checkout named and print (and optionally write) the figures side by side."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repos", nargs="+")
    parser.add_argument("--json")
    args = parser.parse_args()
    results = [measure(Path(r).resolve()) for r in args.repos]
    for m in results:
        print(f"{m['commit']}: {m['modules']} modules, {m['imports']} imports, {len(m['circles'])} circles, "
              f"{len(m['imports_up'])} running back up, {len(m['imports_inside_functions'])} inside functions, "
              f"{len(m['without_docstring'])} of {m['public_functions_and_methods']} public functions and methods "
              "without a docstring")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
