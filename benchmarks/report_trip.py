"""One run directory's trip from ``seedsweep report DIR -o x.html`` to the
page: which of seedsweep's modules the calls enter, in order.

    python benchmarks/report_trip.py [--json OUT]

A small synthetic study (written without Ray, ``tests/rundirs.py``) is
reported with the real command line under ``sys.setprofile``; every call
that crosses from one project module into another is recorded. Printed:
the modules entered (first entry order), how many calls came back into a
module the trip had already left, and, where the tree has rooms, each
module's room. Imports (a module's body running) are not part of the trip.
Run it at two commits to compare layouts (the script uses only the command
line and the tests' run-directory writer, which both layouts have).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from seedsweep.study.rooms import folder_name  # noqa: E402 -- the checkout's own, after its root is on the path

PACKAGES = ("seedsweep", "analysis", "study")


def room(module: str) -> str:
    """The module's room (``analysis.stats``), or its package's ground floor."""
    parts = module.split(".")
    if len(parts) > 2 and (REPO / parts[0] / parts[1] / "__init__.py").is_file():
        return ".".join(parts[:2])
    return parts[0]


def trip(run_dir: Path, out: Path) -> list[tuple[str, str]]:
    """(caller's module, callee's module) of every call into a project module
    from another module, in order."""
    from seedsweep.cli import main

    crossings: list[tuple[str, str]] = []

    def profile(frame, event, arg):
        if event != "call" or frame.f_code.co_name == "<module>" or frame.f_back is None \
                or frame.f_back.f_code.co_name == "<module>":
            return                          # an import running a module's body is not part of the trip
        name = folder_name(frame.f_globals.get("__name__", ""))
        caller = folder_name(frame.f_back.f_globals.get("__name__", ""))
        if name.split(".")[0] in PACKAGES and name != caller:
            crossings.append((caller, name))

    sys.setprofile(profile)
    try:
        code = main(["report", str(run_dir), "-o", str(out), "--bootstrap", "50"])
    finally:
        sys.setprofile(None)
    assert code == 0 and out.is_file()
    return crossings


def level(module: str) -> tuple[int, int] | None:
    """(floor, room) of a module where the tree has rooms (docs/layout.py's
    ROOMS, top to bottom; a package's top-level modules below its rooms), None
    where it has none: the command line on top, then analysis, then study."""
    sys.path.insert(0, str(REPO / "docs"))
    try:
        import layout
    finally:
        sys.path.remove(str(REPO / "docs"))
    rooms = getattr(layout, "ROOMS", None)
    if not rooms:
        return None
    parts = module.split(".")
    floor = ("seedsweep", "analysis", "study").index(parts[0])
    inside = rooms.get(parts[0], ())
    return floor, (inside.index(parts[1]) if len(parts) > 2 and parts[1] in inside else len(inside))


def summarise(calls: list[tuple[str, str]]) -> dict:
    """Modules entered (in first-entry order), re-entries, and which way
    each call between project modules goes through the rooms."""
    crossings = [callee for _, callee in calls]
    order = list(dict.fromkeys(crossings))
    moves = Counter()
    for caller, callee in calls:
        la, lb = (level(caller), level(callee)) if caller.split(".")[0] in PACKAGES else (None, None)
        if la is not None and lb is not None:
            moves["down" if lb > la else "up" if lb < la else "within a room"] += 1
    seen: set[str] = set()
    back = 0
    for i, m in enumerate(crossings):
        if m in seen and (i == 0 or crossings[i - 1] != m):
            back += 1
        seen.add(m)
    rooms = Counter(room(m) for m in order)
    return {"modules_entered": len(order), "calls_into_a_module_already_left": back,
            "crossing_calls": len(crossings), "modules": order, "modules_per_room": dict(rooms),
            "moves_between_rooms": dict(moves)}


def main(argv: list[str] | None = None) -> int:
    """Report the synthetic study under the profiler; print (and save) the trip."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args(argv)
    from conftest import DOCTEST_STUDY as STUDY     # the doctests' study: 6 configurations x 2 options x 2 seeds
    from tests.rundirs import write_synthetic_run

    tmp = Path(tempfile.mkdtemp(prefix="trip-"))
    write_synthetic_run(tmp / "run", STUDY)
    from seedsweep import analysis  # noqa: F401 -- loaded before the trip, as the command line has it by then

    found = summarise(trip(tmp / "run", tmp / "x.html"))
    print(f"modules entered: {found['modules_entered']}; calls into a module already left: "
          f"{found['calls_into_a_module_already_left']} of {found['crossing_calls']} crossing calls")
    if found["moves_between_rooms"]:
        print("calls between project modules, by room: " + ", ".join(f"{k} {v}" for k,
                                                                     v in found["moves_between_rooms"].items()))
    for name, n in sorted(found["modules_per_room"].items()):
        print(f"  {name:<20} {n} modules")
    print("in first-entry order: " + ", ".join(found["modules"]))
    if args.json:
        Path(args.json).write_text(json.dumps(found, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
