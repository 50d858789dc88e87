"""Where the suite's CPU goes: every process sampled while a command runs,
its CPU-seconds charged to the test that started it and to its kind.

    .venv/bin/python benchmarks/suite_census.py --json census.json -- \\
        .venv/bin/python -m pytest -p no:cacheprovider -n 2 --durations=0

The sampler reads ``/proc`` twice a second (about 0.02 of a core here): each
process's user + system time, its command line (a Ray worker renames itself
``ray::ImplicitFunc.train`` once it holds a trial) and ``PYTEST_CURRENT_TEST``
from the environment it was started with, which every process a test starts
(a ``seedsweep`` subprocess, its private Ray, that Ray's workers) inherits.
The pytest processes themselves, their own Rays' processes (``worker_ray``: the
one that started it, not the test it started in) and their children that carry no
test (Chromium) are charged sample by sample to the test the pytest process runs
then: the suite's conftest writes it to ``SEEDSWEEP_CENSUS_DIR``, which this sets. A process
that lives under half a second may be missed, and one that ends between two
samples is charged the time of its last sample, so the totals are a lower bound
of the machine's busy time (the JSON has both).

``--from RAW`` summarises a saved sample (``--raw`` writes one) without running.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from datetime import datetime, timezone

HZ = os.sysconf("SC_CLK_TCK")
CORES = os.cpu_count() or 1
KINDS = [  # (pattern in the command line, kind), first match wins
    (r"^ray::ImplicitFunc|^ray::_Inner|^ray::.*Trainable", "Ray trial actor"),
    (r"^ray::IDLE|default_worker\.py", "Ray idle worker"),
    (r"^ray::(DashboardAgent|RuntimeEnvAgent)|dashboard/agent\.py|runtime_env/agent", "Ray node agents"),
    (r"gcs_server|/raylet |/raylet$|log_monitor\.py|autoscaler/_private/monitor\.py|dashboard/dashboard\.py",
     "Ray head daemons"),
    (r"^ray::", "Ray other actor"),
    (r"\bray start\b|/bin/ray start", "ray start"),
    (r"-m seedsweep (run|extend)\b|/seedsweep (run|extend)\b", "seedsweep run"),
    (r"-m seedsweep|/bin/seedsweep ", "seedsweep (other commands)"),
    (r"exec\(eval\(sys\.stdin\.readline", "pytest worker"),
    (r"pytest", "pytest"),
    (r"chrom|playwright", "Chromium + Playwright"),
    (r"ipykernel|jupyter|nbclient", "Jupyter kernel"),
    (r"mlflow|gunicorn|uvicorn", "MLflow server"),
    (r"moto", "moto (S3)"),
    (r"python", "other Python"),
]


def kind(cmd: str) -> str:
    """The kind of a process by its command line."""
    for pattern, name in KINDS:
        if re.search(pattern, cmd):
            if name == "seedsweep (other commands)":        # one kind per subcommand: check, report, …
                sub = re.search(r"seedsweep (\w+)", cmd)
                return f"seedsweep {sub.group(1)}" if sub else name
            return name
    return "other" if cmd else "unknown (exited before named)"


def owners(folder: str | None) -> tuple[dict, dict]:
    """What the suite's conftest wrote to ``folder``: (pytest process id -> the test it runs now,
    a pytest worker's own Ray temp folder name -> that worker's process id)."""
    tests: dict = {}
    rays: dict = {}
    for name in os.listdir(folder) if folder else []:
        try:
            with open(os.path.join(folder, name)) as f:
                text = f.read()
            if name.startswith("ray-"):
                rays[name[4:]] = int(text)
            elif name.isdigit():
                tests[int(name)] = text
        except (OSError, ValueError):
            continue
    return tests, rays


def sample(seen: dict, stop: threading.Event, exclude: set[int], folder: str | None = None,
           idle: list | None = None) -> None:
    """Fill ``seen[(pid, start)] = row`` until ``stop``; a row is [cpu, cmd, test, cpu when first seen at the
    start, owner, cpu when first owned, {test: CPU-s while it ran}]. A process is owned by a pytest process
    (``owner``) when it is one, when it belongs to that process's own Ray (its ``RAY_TMPDIR``), or when its
    parent is owned; an owned process's CPU is charged, sample by sample, to the test its owner runs then
    (a module's browser, a test's subprocess). One that is not owned and carries no test takes its parent's.
    ``idle`` gets, per sample, [seconds since the start, the machine's idle core-seconds since the last
    sample, the tests the pytest processes run now]."""
    first = True
    t0 = last = time.monotonic()
    busy_last = machine_busy()
    while not stop.is_set():
        tests, rays = owners(folder)
        if idle is not None:
            now, busy = time.monotonic(), machine_busy()
            idle.append([round(now - t0, 2), round(max(0.0, CORES * (now - last) - (busy - busy_last)), 3),
                         sorted(t.rsplit(" (", 1)[0] for t in tests.values() if t)])
            last, busy_last = now, busy
        parents: dict = {}
        tested: dict = {}
        listed = []
        for x in os.listdir("/proc"):
            if not x.isdigit() or int(x) in exclude:
                continue
            try:
                with open(f"/proc/{x}/stat") as f:
                    raw = f.read()
                listed.append((int(x), raw[raw.rfind(")") + 2:].split()))
            except OSError:
                continue                            # the process ended between two reads
        # oldest first, so that a parent is placed before its children (process ids wrap around)
        for p, fields in sorted(listed, key=lambda pf: int(pf[1][19])):
            try:
                key, cpu = (p, fields[19]), (int(fields[11]) + int(fields[12])) / HZ
                row = seen.get(key)
                if row is None:
                    test, ray = "", ""
                    try:
                        with open(f"/proc/{p}/environ", "rb") as f:
                            env = f.read().split(b"\0")
                        test = next((e[20:].decode() for e in env if e.startswith(b"PYTEST_CURRENT_TEST=")), "")
                        ray = next((os.path.basename(e[11:].decode()) for e in env if e.startswith(b"RAY_TMPDIR=")),
                                   "")
                    except OSError:
                        pass
                    ppid = int(fields[1])
                    owner = rays.get(ray) or parents.get(ppid)
                    if owner is None and not test and ppid in tested:      # Chromium's zygotes clear their env
                        test = tested[ppid]
                    row = seen[key] = [cpu, "", test, cpu if first else 0.0, owner, None, {}]
                tested[p] = row[2]
                if row[4] is None and p in tests:
                    row[4] = p
                if row[4] is not None and row[4] in tests:
                    if row[5] is None:
                        row[5] = cpu
                    else:
                        now = tests[row[4]]
                        row[6][now] = row[6].get(now, 0.0) + cpu - row[0]
                    parents[p] = row[4]
                row[0] = cpu
                if fields[0] != "Z":                # a zombie's command line reads empty
                    with open(f"/proc/{p}/cmdline") as f:
                        cmd = f.read().replace("\0", " ").strip()
                    row[1] = cmd or row[1]
            except (OSError, IndexError, ValueError):
                continue                            # the process ended between two reads
        first = False
        stop.wait(0.5)


def flatten(seen: dict) -> list:
    """The rows the summary reads, [pid, start, cpu, cmd, test, cpu before]: an owned process's CPU
    before it was owned on its own row, then one row per test its owner ran while it did."""
    rows = []
    for (pid, start), (cpu, cmd, test, before, _, owned_at, by_test) in seen.items():
        rows.append([pid, start, cpu if owned_at is None else owned_at, cmd, test, before])
        rows += [[pid, start, own, cmd, t, 0.0] for t, own in by_test.items()]
    return rows


def machine_busy() -> float:
    """CPU-seconds the whole machine has been busy (user, nice, system, irq, softirq, steal)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / HZ


def summarise(rows: list, busy: float | None, wall: float | None, top: int) -> dict:
    """CPU-seconds by kind, by test (with its kinds) and by test module."""
    by_kind: dict = defaultdict(float)
    count: dict = defaultdict(int)
    by_test: dict = defaultdict(lambda: defaultdict(float))
    for _, _, cpu, cmd, test, before in rows:
        own = max(0.0, cpu - before)
        if own <= 0:
            continue
        name = kind(cmd)
        by_kind[name] += own
        count[name] += 1
        by_test[test.rsplit(" (", 1)[0] or "(no test: pytest workers, the workers' own Rays)"][name] += own
    actors = [max(0.0, cpu - before) for _, _, cpu, cmd, _, before in rows if kind(cmd) == "Ray trial actor"]
    edges = [0, 1, 2, 3, 5, 10, 30, math.inf]
    histogram = {f"{lo:g}-{hi:g}": {"processes": sum(lo <= c < hi for c in actors),
                                    "cpu_s": round(sum(c for c in actors if lo <= c < hi), 1)}
                 for lo, hi in zip(edges, edges[1:])}
    by_module: dict = defaultdict(float)
    for test, kinds in by_test.items():
        by_module[test.split("::")[0]] += sum(kinds.values())
    tests = sorted(by_test.items(), key=lambda kv: -sum(kv[1].values()))
    return {
        "sampled_cpu_s": round(sum(by_kind.values()), 1), "machine_busy_cpu_s": busy, "wall_s": wall,
        "by_kind": {k: round(v, 1) for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])},
        "processes_by_kind": {k: count[k] for k in sorted(by_kind, key=lambda k: -by_kind[k])},
        "trial_actors_by_cpu_s": histogram,
        "by_module": {k: round(v, 1) for k, v in sorted(by_module.items(), key=lambda kv: -kv[1])},
        "by_test": [{"test": t, "cpu_s": round(sum(k.values()), 1),
                     "kinds": {n: round(v, 1) for n, v in sorted(k.items(), key=lambda kv: -kv[1])}}
                    for t, k in tests[:top]],
    }


def idle_summary(idle: list, top: int) -> dict:
    """Where the machine's cores sat idle: in all, with no test running, with one test running
    (the other workers between tests or done), and by test (a sample's idle core-seconds shared
    equally by the tests running then); and the busy cores per minute."""
    by_test: dict = defaultdict(float)
    alone = none = 0.0
    minutes: dict = defaultdict(float)
    for t, free, running in idle:
        minutes[int(t // 60)] += free
        if not running:
            none += free
        elif len(running) == 1:
            alone += free
        for test in running:
            by_test[test] += free / len(running)
    tests = sorted(by_test.items(), key=lambda kv: -kv[1])
    return {"idle_core_s": round(sum(f for _, f, _ in idle), 1), "with_no_test_running": round(none, 1),
            "with_one_test_running": round(alone, 1),
            "idle_cores_by_minute": [round(minutes[m] / 60, 2) for m in range(max(minutes, default=-1) + 1)],
            "by_test": [{"test": t, "idle_core_s": round(v, 1)} for t, v in tests[:top]]}


def report(summary: dict) -> None:
    """Print the summary as three short tables."""
    print(f"sampled {summary['sampled_cpu_s']:.0f} CPU-s; machine busy {summary['machine_busy_cpu_s']} CPU-s; "
          f"wall {summary['wall_s']} s")
    print("\nby kind of process:")
    for k, v in summary["by_kind"].items():
        print(f"{v:9.1f}  {summary['processes_by_kind'][k]:5d}  {k}")
    print("\nby test module:")
    for k, v in list(summary["by_module"].items())[:25]:
        print(f"{v:9.1f}  {k}")
    print("\nby test:")
    for t in summary["by_test"][:40]:
        kinds = ", ".join(f"{n} {v:.0f}" for n, v in list(t["kinds"].items())[:3])
        print(f"{t['cpu_s']:9.1f}  {t['test']}  ({kinds})")
    if summary.get("idle"):
        i = summary["idle"]
        print(f"\nidle core-seconds: {i['idle_core_s']} ({i['with_no_test_running']} with no test running, "
              f"{i['with_one_test_running']} with one); idle cores by minute: {i['idle_cores_by_minute']}")
        for t in i["by_test"][:25]:
            print(f"{t['idle_core_s']:9.1f}  {t['test']}")


def main() -> int:
    """Run the command under the sampler (or read a saved sample); print and write the summary."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="write the summary here")
    ap.add_argument("--raw", help="write every sampled process here (to summarise again with --from)")
    ap.add_argument("--from", dest="source", help="summarise this raw sample instead of running a command")
    ap.add_argument("--top", type=int, default=200, help="tests kept in the summary")
    ap.add_argument("command", nargs="*", help="the command to run (after --)")
    args = ap.parse_args()
    if args.source:
        saved = json.load(open(args.source))
        summary = summarise(saved["rows"], saved.get("busy"), saved.get("wall"), args.top)
        if saved.get("idle"):
            summary["idle"] = idle_summary(saved["idle"], args.top)
    else:
        if not args.command:
            ap.error("give the command to run after --, or --from a raw sample")
        seen: dict = {}
        idle: list = []
        stop = threading.Event()
        folder = tempfile.mkdtemp(prefix="census-")       # the suite's conftest writes who runs what here
        sampler = threading.Thread(target=sample, args=(seen, stop, {os.getpid()}, folder, idle),
                                   daemon=True)
        b0, t0 = machine_busy(), time.monotonic()
        sampler.start()
        proc = subprocess.Popen(args.command, env={**os.environ, "SEEDSWEEP_CENSUS_DIR": folder})
        try:
            rc = proc.wait()
        except KeyboardInterrupt:
            proc.send_signal(signal.SIGINT)
            rc = proc.wait()
        stop.set()
        sampler.join()
        busy, wall = round(machine_busy() - b0, 1), round(time.monotonic() - t0, 1)
        rows = flatten(seen)
        shutil.rmtree(folder, ignore_errors=True)
        if args.raw:
            json.dump({"rows": rows, "busy": busy, "wall": wall, "idle": idle}, open(args.raw, "w"))
        summary = summarise(rows, busy, wall, args.top)
        summary["idle"] = idle_summary(idle, args.top)
        summary.update(command=" ".join(args.command), returncode=rc)
    summary["date"] = f"{datetime.now(timezone.utc):%Y-%m-%d}"
    report(summary)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
