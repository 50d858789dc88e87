"""tests/durations.txt from a run of the suite: reads pytest's output
(``--durations=0``) on standard input and prints each test's seconds (call,
setup and teardown together; 2 s or more), longest first.

    .venv/bin/python -m pytest -n 3 --durations=0 | tee suite.log
    .venv/bin/python benchmarks/suite_durations.py < suite.log > tests/durations.txt

The order of the suite and the slow marker depend on the file (conftest.py); the figures
are wall-clock seconds in a parallel run, so they include waiting for CPU.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from datetime import datetime, timezone

LINE = re.compile(r"^([0-9.]+)s (call|setup|teardown)\s+(\S.*)$")


def main() -> int:
    """Read pytest's durations, print the file."""
    seconds: dict[str, float] = defaultdict(float)
    for line in sys.stdin:
        m = LINE.match(line.rstrip("\n"))
        if m:
            seconds[m.group(3)] += float(m.group(1))
    if not seconds:
        print("no durations in the input: run pytest with --durations=0", file=sys.stderr)
        return 2
    print("# Seconds per test (call + setup + teardown, >= 2 s) in a parallel run of the suite "
          f"(--durations=0, {datetime.now(timezone.utc):%Y-%m-%d}):")
    print("# conftest.py starts the modules with the longest tests first and marks a test of 3 s or more slow")
    print("# (make test-fast leaves it out); regenerate with benchmarks/suite_durations.py after adding a slow test.")
    for node, s in sorted(seconds.items(), key=lambda kv: -kv[1]):
        if s >= 2.0:
            print(f"{s:.1f} {node}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
