"""The R&G scale: one study of 50,000 zero-work trials, and every command on its directory.

Reimers & Gurevych trained about 50,000 networks; this measures seedsweep at
that size on this machine, against targets and against bare Ray Tune:

1. **The full study**: ``seedsweep run`` of a synthetic study of
   ``--trials`` zero-work trials (one epoch, no sleep), as its own process:
   trials/s in the first and the last tenth (from the stored ``finished_at``
   times; the last must be >= 0.9 x the first) and the driver's peak RSS
   (``ru_maxrss`` of the driver process itself; target <= 1 GB).
2. **Commands on the finished directory**, each timed as a user runs it:
   ``analysis.load`` (in this process, median of 3; <= 2 s), ``seedsweep
   status`` (<= 2 s) and ``seedsweep report`` (<= 5 s) as commands, and a
   no-op resume (the same ``seedsweep run``, nothing left to run; <= 10 s).
3. **One dashboard refresh after one new trial** (<= 1 s): ``seedsweep
   dashboard`` open in Chromium; the study grows by one configuration and is
   resumed, and the time from the new trials part landing (its mtime) to the
   page's summary showing it, and to every figure redrawn, is measured, in
   ``--rounds`` such rounds one after the other (3; the median round is held
   to the target, and every round is in the JSON). The page polls every 0.2 s, so up to
   0.2 s of it is the poll's wait.
4. **Bare Tune beside seedsweep** on ``--peer`` trials (10,000), in the same
   run, one after the other, each as its own driver process with its own
   local Ray: seedsweep must keep >= 0.9 x bare throughput (trials/s between
   the first and the last finished trial, so Ray's start-up counts for
   neither). The bare loop is a plain ``grid_search`` over the trials, as a
   Tune user would write it; both drivers' peak RSS is reported.

Usage::

    .venv/bin/python benchmarks/scale.py [--trials 50000] [--peer 10000] [--json benchmarks/results/scale-DATE.json]

A run with ``--keep DIR`` leaves the finished study in DIR; a later run with
``--reuse DIR --phases commands,dashboard`` measures on it without the half
hour of running it again (the dashboard phase grows it by one configuration).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SPACE = """
name: scale
family: synthetic
samples: {samples}
seeds: 1
compare:
  classifier: [softmax, crf]
task: {{effects: {{classifier: {{crf: 0.02}}}}, noise: 0.01}}
space:
  lr: {{loguniform: [1.0e-4, 1.0e-2]}}
  optimizer: {{choice: [adam, nadam, sgd]}}
  layers: {{int: [1, 3]}}
fixed: {{epoch_seconds: 0}}
train: {{max_epochs: 1, patience: 1}}
"""
DRIVER = ("import resource, sys; from seedsweep.cli import main; rc = main(sys.argv[1:]); "
          "print('PEAK_RSS_KB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, flush=True); sys.exit(rc)")


def seedsweep_cli(*args: str, env: dict | None = None, timeout: float = 7200) -> tuple[float, str]:
    """Run ``seedsweep ARGS`` as a user does; (wall seconds, output)."""
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "seedsweep", *args], cwd=REPO, capture_output=True, text=True,
                       env=env or os.environ.copy(), timeout=timeout)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"seedsweep {' '.join(args)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return wall, r.stdout + r.stderr


def full_study(space: Path, out: Path, cpus: int) -> dict:
    """The whole study as one driver process: wall, peak RSS, trials/s per tenth."""
    import pyarrow.compute as pc

    from seedsweep.study.store.rundir import RunDir

    ray_tmp = tempfile.mkdtemp(prefix="scl-", dir="/tmp")
    env = {**os.environ, "RAY_TMPDIR": ray_tmp}
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", DRIVER, "run", str(space), "--out", str(out), "--num-cpus", str(cpus),
                        "--quiet"], cwd=REPO, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    shutil.rmtree(ray_tmp, ignore_errors=True)
    if r.returncode != 0:
        raise SystemExit(f"the study failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}")
    peak_kb = int(next(line.split()[1] for line in r.stdout.splitlines() if line.startswith("PEAK_RSS_KB")))
    rd = RunDir(out)
    t = rd.read_trials(["finished_at", "status"])
    finished = sorted(x.timestamp() for x in t["finished_at"].to_pylist())
    n = len(finished)
    tenth = n // 10
    rates = []
    for i in range(10):
        chunk = finished[i * tenth:(i + 1) * tenth]
        rates.append(len(chunk) / (chunk[-1] - chunk[0]) if chunk[-1] > chunk[0] else float("inf"))
    ok = pc.sum(pc.equal(t["status"], "ok")).as_py()
    return {"trials": n, "ok": ok, "wall_s": wall, "trials_per_s": n / wall, "peak_rss_mb": peak_kb / 1024,
            "per_tenth_trials_per_s": rates, "last_over_first": rates[-1] / rates[0],
            "shards": len(rd.shards("trials")), "parts_left": len(rd.part_keys(rd.trials_dir))}


def disk_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def commands(space: Path, out: Path, cpus: int) -> dict:
    from seedsweep import analysis

    loads = []
    for _ in range(3):
        t0 = time.perf_counter()
        df = analysis.load(out)
        loads.append(time.perf_counter() - t0)
    status_s, status_out = seedsweep_cli("status", str(out))
    report_s, _ = seedsweep_cli("report", str(out))
    ray_tmp = tempfile.mkdtemp(prefix="scl-", dir="/tmp")
    resume_s, resume_out = seedsweep_cli("run", str(space), "--out", str(out), "--num-cpus", str(cpus),
                                         env={**os.environ, "RAY_TMPDIR": ray_tmp})
    shutil.rmtree(ray_tmp, ignore_errors=True)
    assert "0 to run" in resume_out, resume_out
    return {"rows": len(df), "load_s": statistics.median(loads), "load_runs_s": loads, "status_s": status_s,
            "status_first_line": status_out.splitlines()[0], "report_s": report_s, "noop_resume_s": resume_s,
            "disk_mb": disk_mb(out)}


def dashboard_refresh(space_text: str, samples: int, out: Path, cpus: int, folder: Path, rounds: int = 3) -> dict:
    """Seconds from one new trials part to the open page showing it, in each
    of ``rounds`` growths of the study by one configuration (the page open
    throughout); the targets take the median round."""
    import socket

    from playwright.sync_api import sync_playwright

    from seedsweep.study.store.rundir import RunDir

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        return {"skipped": "Debian's chromium is not installed (apt-get install chromium)"}
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "seedsweep", "dashboard", str(out), "--port", str(port),
                               "--interval", "0.2"], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rd = RunDir(out)
    shown, redrawn, texts = [], [], []
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.2)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            t0 = time.perf_counter()
            page.goto(f"http://127.0.0.1:{port}/")
            page.wait_for_function("() => (document.getElementById('summary') || {}).textContent"
                                   "?.includes(' trials stored')", timeout=600_000)
            page.wait_for_function(IDLE, timeout=600_000)
            first_load = time.perf_counter() - t0
            texts.append(page.inner_text("#summary"))
            for r in range(rounds):
                grown = folder / f"grown-{r + 1}.yaml"
                grown.write_text(space_text.format(samples=samples + r + 1))
                before = set(rd.part_keys(rd.trials_dir))
                start = int(page.inner_text("#summary").split()[0])
                ray_tmp = tempfile.mkdtemp(prefix="scl-", dir="/tmp")
                resume = subprocess.Popen([sys.executable, "-m", "seedsweep", "run", str(grown), "--out", str(out),
                                           "--num-cpus", str(cpus), "--quiet"], cwd=REPO,
                                          env={**os.environ, "RAY_TMPDIR": ray_tmp},
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                landed = None
                while landed is None:           # the first new trials part: when it landed on disk
                    new = [p for k, p in rd.part_keys(rd.trials_dir).items() if k not in before]
                    if new:
                        landed = min(os.stat(p).st_mtime for p in new)
                    elif resume.poll() is not None:
                        raise SystemExit("the resumed study stored no new trial")
                    time.sleep(0.005)
                # the page counts the new trial: its summary's stored count passes the one before. (Other
                # changes -- the resumed driver's manifest and progress file -- change the text earlier.)
                page.wait_for_function("n => parseInt(document.getElementById('summary').textContent) > n",
                                       arg=start, timeout=600_000, polling=5)
                shown.append(time.time() - landed)
                page.wait_for_function(IDLE, timeout=600_000, polling=5)
                redrawn.append(time.time() - landed)
                resume.wait(timeout=600)
                shutil.rmtree(ray_tmp, ignore_errors=True)
                # the next round starts from a page that shows the whole grown study, drawn
                page.wait_for_function("n => parseInt(document.getElementById('summary').textContent) >= n",
                                       arg=2 * (samples + r + 1), timeout=600_000)
                page.wait_for_function(IDLE, timeout=600_000)
                time.sleep(2)
                texts.append(page.inner_text("#summary"))
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    return {"first_load_s": first_load, "summary_s": statistics.median(shown),
            "all_figures_s": statistics.median(redrawn), "rounds": rounds, "summary_s_per_round": shown,
            "all_figures_s_per_round": redrawn, "poll_interval_s": 0.2, "before": texts[0], "after": texts[-1],
            "summaries": texts}


#: No Dash callback in flight: every figure on the page is drawn.
IDLE = "() => !document.querySelector('[data-dash-is-loading=\"true\"]')"


BARE = """
import json, os, resource, sys, tempfile, time
import ray
from ray import tune

class Finished(tune.Callback):
    def __init__(self):
        self.at = []
    def on_trial_complete(self, iteration, trials, trial, **info):
        self.at.append(time.time())

def trainable(config):
    tune.report({"epoch": 1, "score": 0.5})

n = int(sys.argv[1])
ray.init(address="local", num_cpus=int(sys.argv[2]), include_dashboard=False, log_to_driver=False)
done = Finished()
tune.Tuner(tune.with_resources(trainable, {"cpu": 1}), param_space={"i": tune.grid_search(list(range(n)))},
           tune_config=tune.TuneConfig(reuse_actors=True),
           run_config=tune.RunConfig(storage_path=tempfile.mkdtemp(prefix="bench-bare-"), verbose=0,
                                     callbacks=[done])).fit()
print(json.dumps({"finished_at": done.at, "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def rate(finished: list[float]) -> float:
    """Trials per second between the first and the last finished trial (start-up left out)."""
    finished = sorted(finished)
    return (len(finished) - 1) / (finished[-1] - finished[0])


def peers(n: int, cpus: int, folder: Path) -> dict:
    """Bare Tune and seedsweep on the same ``n`` zero-work trials, one after
    the other, each as its own driver process with its own local Ray."""
    from seedsweep.study.store.rundir import RunDir

    ray_tmp = tempfile.mkdtemp(prefix="scl-", dir="/tmp")
    r = subprocess.run([sys.executable, "-c", BARE, str(n), str(cpus)], capture_output=True, text=True,
                       env={**os.environ, "RAY_TMPDIR": ray_tmp}, cwd=folder)
    shutil.rmtree(ray_tmp, ignore_errors=True)
    if r.returncode != 0:
        raise SystemExit(f"bare Tune failed:\n{r.stderr[-4000:]}")
    bare = json.loads(r.stdout.strip().splitlines()[-1])
    space = folder / "peer.yaml"
    space.write_text(SPACE.format(samples=n // 2))
    ours = full_study(space, folder / "peer-run", cpus)
    finished = [x.timestamp() for x in RunDir(folder / "peer-run").read_trials(["finished_at"])["finished_at"].to_pylist()]
    bare_rate, our_rate = rate(bare["finished_at"]), rate(finished)
    return {"trials": n, "bare_tune_trials_per_s": bare_rate, "seedsweep_trials_per_s": our_rate,
            "ratio": our_rate / bare_rate, "bare_tune_peak_rss_mb": bare["peak_rss_kb"] / 1024,
            "seedsweep_peak_rss_mb": ours["peak_rss_mb"], "bare_tune_trials": len(bare["finished_at"])}


def planning(space: Path) -> dict:
    """What planning the grid costs the driver: seconds, and bytes per trial (tracemalloc)."""
    import tracemalloc

    from seedsweep.study.execution.runner import plan_study
    from seedsweep.study.store.studies import load_study

    t0 = time.perf_counter()
    configs, grid = plan_study(load_study(space))
    seconds = time.perf_counter() - t0
    del configs, grid
    tracemalloc.start()
    configs, grid = plan_study(load_study(space))
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return {"trials": len(grid), "seconds": seconds, "bytes_per_trial": held / len(grid)}


def size_limit(folder: Path) -> dict:
    """``samples: 100000000000`` through ``check`` and ``run``: exit code, seconds, the message."""
    huge = folder / "huge.yaml"
    huge.write_text(SPACE.format(samples=100_000_000_000))
    out = {}
    for command in (["check", str(huge)], ["run", str(huge), "--out", str(folder / "huge-run")]):
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "seedsweep", *command], cwd=REPO, capture_output=True, text=True)
        out[command[0]] = {"exit": r.returncode, "seconds": time.perf_counter() - t0,
                           "message": (r.stderr or r.stdout).strip()[-600:]}
    out["nothing_written"] = not (folder / "huge-run").exists()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=50_000, help="trials of the full study (even)")
    parser.add_argument("--peer", type=int, default=10_000, help="trials of the bare-Tune comparison (even)")
    parser.add_argument("--cpus", type=int, default=os.cpu_count(), help="CPUs of the local Ray (parallel slots)")
    parser.add_argument("--keep", help="keep the full study's run directory here")
    parser.add_argument("--reuse", help="measure on this finished run directory (one an earlier run kept with "
                                        "--keep) instead of running the study again; --trials is then its size")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    parser.add_argument("--rounds", type=int, default=3, help="dashboard refresh rounds (the median is held to the target)")
    parser.add_argument("--phases", default="study,commands,dashboard,peers,limits",
                        help="which measurements to run (the study always runs first when any needs it)")
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    space = folder / "scale.yaml"
    space.write_text(SPACE.format(samples=args.trials // 2))
    out = Path(args.reuse or args.keep or folder / "run")
    figures: dict = {"slots": args.cpus, "machine": f"{os.cpu_count()} cores", "phases": args.phases}
    phases = set(args.phases.split(","))
    targets = []
    if args.reuse:
        from seedsweep.study.store.rundir import RunDir

        planned = RunDir(out).manifest().get("n_trials")
        if not planned:
            raise SystemExit(f"--reuse {out}: not a finished run directory of this benchmark (no n_trials in its "
                             "manifest.json); give the folder an earlier run kept with --keep")
        args.trials = int(planned) - int(planned) % 2
        space.write_text(SPACE.format(samples=args.trials // 2))
        figures["study"] = {"reused": str(out), "trials": int(planned)}
        print(f"reusing {out}: {planned} trials (the study's own figures are those of the run that kept it)")
    else:
        figures["study"] = full_study(space, out, args.cpus)
        s = figures["study"]
        print(f"full study: {s['trials']} trials ({s['ok']} ok) in {s['wall_s']:.0f} s, {s['trials_per_s']:.1f} "
              f"trials/s; per tenth {[round(r, 1) for r in s['per_tenth_trials_per_s']]}; {s['shards']} shards, "
              f"{s['parts_left']} parts left")
        targets += [("trials/s, last tenth / first tenth", s["last_over_first"], ">=", 0.9),
                    ("driver peak RSS, MB", s["peak_rss_mb"], "<=", 1024)]
    if "commands" in phases:
        c = figures["commands"] = commands(space, out, args.cpus)
        print(f"{c['disk_mb']:.1f} MB on disk")
        targets += [("analysis.load, s", c["load_s"], "<=", 2), ("seedsweep status, s", c["status_s"], "<=", 2),
                    ("seedsweep report, s", c["report_s"], "<=", 5), ("no-op resume, s", c["noop_resume_s"], "<=", 10)]
    if "dashboard" in phases:
        d = figures["dashboard"] = dashboard_refresh(SPACE, args.trials // 2, out, args.cpus, folder, args.rounds)
        print(f"dashboard: {d.get('before')} -> {d.get('after')}")
        targets += [("dashboard: new trial to summary, s", d.get("summary_s", float("nan")), "<=", 1),
                    ("dashboard: new trial to every figure, s", d.get("all_figures_s", float("nan")), "<=", 1)]
    if "peers" in phases:
        p = figures["peers"] = peers(args.peer, args.cpus, folder)
        print(f"bare Tune {p['bare_tune_trials_per_s']:.1f} trials/s (driver peak RSS {p['bare_tune_peak_rss_mb']:.0f} "
              f"MB), seedsweep {p['seedsweep_trials_per_s']:.1f} trials/s ({p['seedsweep_peak_rss_mb']:.0f} MB) on "
              f"{p['trials']} trials")
        targets.append((f"seedsweep / bare Tune, {p['trials']} trials", p["ratio"], ">=", 0.9))
    if "limits" in phases:
        figures["size_limit"] = size_limit(folder)
        g = figures["planning"] = planning(space)
        print(f"planning the grid: {g['trials']} trials in {g['seconds']:.1f} s, {g['bytes_per_trial']:.0f} bytes "
              "per trial")
        targets += [(f"samples: 1e11, '{c}' exits 2, s", v["seconds"] if v["exit"] == 2 else float("inf"), "<=", 1)
                    for c, v in figures["size_limit"].items() if c in ("check", "run")]
    figures["targets"] = [{"what": w, "value": v, "target": f"{op} {t}",
                           "met": bool(v >= t if op == ">=" else v <= t)} for w, v, op, t in targets]
    print(f"{'':44}{'value':>10}{'target':>12}")
    for t in figures["targets"]:
        print(f"{t['what']:44}{t['value']:>10.2f}{t['target']:>12}  {'met' if t['met'] else 'NOT MET'}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2, default=str) + "\n")
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
