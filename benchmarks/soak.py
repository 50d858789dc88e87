"""Soak: long studies under faults, counted trial by trial.

Not a test (it runs for minutes); its counts go to ``benchmarks/results``.

1. **Local** (``--trials``, 2,000): a synthetic study run with the real CLI
   into a real small filesystem (a tmpfs, mounted in a private mount
   namespace: ``unshare``). The driver is SIGKILLed ``--kills`` (5) times, each
   at a random moment after its first trial is stored, and each time the
   same command is run again; then, mid-run, a ballast file fills the disk
   (the study must stop with exit 2 and a located message), the ballast is
   deleted, and the same command completes the study. At the end: every
   planned trial stored exactly once, no temporary file, every Parquet file
   readable, and every trial stored before a fault still there unchanged.
2. **Object store** (``--s3-trials``, 500): the same kind of study with its run
   directory on a loopback S3 server (moto's server mode), every request
   through ``tests/flakyproxy.py`` failing ``--fail`` (5 %) of them; then a
   no-op resume, a compaction and a read back, through the same proxy.

Usage::

    .venv/bin/python benchmarks/soak.py [--trials 2000] [--kills 5] [--s3-trials 500] [--fail 0.05] \\
        [--json benchmarks/results/soak-DATE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

STUDY = """
name: soak
family: synthetic
samples: {samples}
seeds: 2
compare: {{classifier: [softmax, crf]}}
task: {{effects: {{classifier: {{crf: 0.02}}}}, noise: 0.01}}
space:
  lr: {{loguniform: [1.0e-4, 1.0e-2]}}
  optimizer: {{choice: [adam, sgd, nadam]}}
fixed: {{epoch_seconds: {epoch_seconds}}}
train: {{max_epochs: 2, patience: 2}}
"""
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
               "AWS_EC2_METADATA_DISABLED": "true"}


def stored_rows(out) -> dict[str, tuple]:
    """Every stored trial's key -> (status, test score) (duplicates kept as a list under '__dup__')."""
    from seedsweep.study.store.rundir import RunDir

    rd = RunDir(out)
    if not rd.storage.is_file(rd.storage.join("manifest.json")):
        return {}
    table = rd.read_trials(["trial_key", "status", "test_score"]).to_pylist()
    rows: dict = {}
    dup = []
    for r in table:
        if r["trial_key"] in rows:
            dup.append(r["trial_key"])
        rows[r["trial_key"]] = (r["status"], r["test_score"])
    if dup:
        rows["__dup__"] = dup
    return rows


def count(out: Path) -> int:
    """Trials stored in the run directory now (0 before it exists)."""
    from seedsweep.study.store.rundir import RunDir

    if not (out / "manifest.json").is_file():
        return 0
    try:
        return RunDir(out).read_trials(["trial_key"]).num_rows
    except Exception:  # noqa: BLE001 -- a part being folded away while listed: count on the next look
        return 0


def run_local(args) -> dict:
    """Phase 1, inside a private mount namespace (re-run under ``unshare`` by :func:`main`)."""
    from seedsweep.study.execution.runner import plan_study
    from seedsweep.study.store.studies import load_study
    from tests.conftest import kill_tagged, wait_gone
    from tests.fulldisk import on_disk

    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="soak-", dir="/tmp"))
    disk = work / "disk"
    disk.mkdir()
    study = work / "study.yaml"
    study.write_text(STUDY.format(samples=args.trials // 4, epoch_seconds=0.05))
    grid = sorted(t.key for t in plan_study(load_study(study))[1])
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256m", "tmpfs", str(disk)], check=True)
    out = disk / "run"
    runs, seen = [], {}
    changed = 0
    t0 = time.monotonic()
    try:
        def launch(tag: str, ray_tmp: str) -> subprocess.Popen:
            env = {**os.environ, "RAY_AUTH_MODE": "disabled", "SEEDSWEEP_TEST_TAG": tag, "RAY_TMPDIR": ray_tmp}
            env.pop("RAY_ADDRESS", None)
            cmd = [sys.executable, "-m", "seedsweep", "run", str(study), "--out", str(out), "--num-cpus", "2",
                   "--quiet"]
            return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    text=True)

        def check_kept(rows: dict) -> int:
            """Rows stored earlier that are gone or changed now (must be 0)."""
            return sum(1 for k, v in seen.items() if rows.get(k) != v)

        plan = ["kill"] * args.kills + ["fill", "finish"]
        # each fault lands once the study holds a random number of trials, spread over 5-90 % of it
        marks = sorted(rng.sample(range(len(grid) // 20, len(grid) * 9 // 10), args.kills + 1)) + [len(grid)]
        for i, (event, mark) in enumerate(zip(plan, marks)):
            tag, ray_tmp = f"soak-{os.getpid()}-{i}", tempfile.mkdtemp(prefix="sk-", dir="/tmp")
            before = stored_rows(out)
            proc = launch(tag, ray_tmp)
            record = {"event": event, "stored_before": len(before)}
            if event != "finish":
                record["mark"] = mark
                deadline = time.monotonic() + 900
                while count(out) < mark and proc.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.1)                     # until the study holds `mark` trials
                time.sleep(rng.uniform(0.0, 0.5))
                if event == "kill":
                    proc.kill()
                    record["moment_stored"] = count(out)
                else:
                    ballast = disk / "ballast"
                    with open(ballast, "wb") as f:          # another program fills the disk
                        try:
                            while True:
                                f.write(b"\0" * (1 << 20))
                                f.flush()
                        except OSError:
                            pass
                    record["moment_stored"] = count(out)
            try:
                _, err = proc.communicate(timeout=900)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
            record["code"] = proc.returncode
            left = wait_gone(tag, 120, ray_tmp, orphans=True)
            record["processes_left"] = len(left)
            kill_tagged(tag, ray_tmp)
            shutil.rmtree(ray_tmp, ignore_errors=True)
            if event == "fill":
                lines = [ln for ln in err.splitlines() if ln.startswith("seedsweep: error:")]
                record["message"] = lines[0][:400] if lines else err[-400:]
                (disk / "ballast").unlink()
            found = on_disk(out)
            rows = stored_rows(out)
            changed += check_kept(rows)
            seen.update({k: v for k, v in rows.items() if k != "__dup__"})
            record.update(stored_after=len(found["keys"]), duplicated=len(found["keys"]) - len(set(found["keys"])),
                          temporary=len(found["temporary"]), unreadable=len(found["unreadable"]))
            runs.append(record)
            print(json.dumps(record), flush=True)
        final = on_disk(out)
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
        shutil.rmtree(work, ignore_errors=True)
    keys = Counter(final["keys"])
    return {"trials": len(grid), "runs": runs, "wall_s": round(time.monotonic() - t0, 1),
            "stored": len(keys), "lost": len(set(grid) - set(keys)), "duplicated": sum(v - 1 for v in keys.values()),
            "extra": len(set(keys) - set(grid)), "changed_after_stored": changed,
            "temporary": len(final["temporary"]), "unreadable": len(final["unreadable"]),
            "kills": sum(r["event"] == "kill" for r in runs),
            "fill_exit_code": next(r["code"] for r in runs if r["event"] == "fill")}


def run_s3(args) -> dict:
    """Phase 2: a study on a loopback S3 server behind a fault-injecting proxy."""
    import pyarrow.fs as pafs

    from seedsweep import analysis
    from seedsweep.study.execution.runner import plan_study
    from seedsweep.study.store.studies import load_study
    from seedsweep.study.store.rundir import RunDir
    from tests.flakyproxy import FlakyProxy

    os.environ.update(CREDENTIALS)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    work = Path(tempfile.mkdtemp(prefix="soak3-", dir="/tmp"))
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0 = time.monotonic()
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.3)
        pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{port}", scheme="http",
                          allow_bucket_creation=True).create_dir("soak")
        study = work / "study.yaml"
        study.write_text(STUDY.format(samples=args.s3_trials // 4, epoch_seconds=0.0))
        grid = sorted(t.key for t in plan_study(load_study(study))[1])
        with FlakyProxy(port, fail=args.fail, slow=0.01, seed=args.seed) as proxy:
            uri = f"s3://soak/run?endpoint_override=127.0.0.1:{proxy.port}&scheme=http"
            ray_tmp = tempfile.mkdtemp(prefix="sk3-", dir="/tmp")
            env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_TMPDIR": ray_tmp}
            env.pop("RAY_ADDRESS", None)
            cmd = [sys.executable, "-m", "seedsweep", "run", str(study), "--out", uri, "--num-cpus", "2", "--quiet"]
            first = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=3000)
            again = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
            shutil.rmtree(ray_tmp, ignore_errors=True)
            RunDir(uri).compact()
            df = analysis.load(uri)
            epochs = analysis.load_epochs(uri)
            counts = dict(proxy.counts)
            failed = proxy.failed
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)
    keys = Counter(df["trial_key"])
    tail = [ln for ln in first.stderr.splitlines() if ln.startswith("/") or ln.startswith("seedsweep")][-2:]
    return {"trials": len(grid), "wall_s": round(time.monotonic() - t0, 1), "requests": counts,
            "failed_requests": failed, "failed_share": round(failed / max(1, counts.get("requests", 1)), 4),
            "first_code": first.returncode, "first_tail": tail, "resume_code": again.returncode,
            "resume_line": again.stderr.strip().splitlines()[-1] if again.stderr.strip() else "",
            "stored": len(keys), "lost": len(set(grid) - set(keys)), "duplicated": sum(v - 1 for v in keys.values()),
            "ok": int((df["status"] == "ok").sum()), "epochs": len(epochs),
            "epochs_duplicated": int(epochs.duplicated(["trial_key", "epoch"]).sum())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--s3-trials", type=int, default=500)
    parser.add_argument("--fail", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--phases", default="local,s3")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:                                   # inside the private mount namespace
        print("RESULT " + json.dumps(run_local(args)), flush=True)
        return
    found: dict = {"machine": f"{os.cpu_count()} cores", "command": " ".join(sys.argv)}
    if "local" in args.phases:
        prefix = ["unshare", "--mount", "--propagation", "private"] if os.geteuid() == 0 else \
            ["unshare", "--user", "--map-root-user", "--mount"]
        inner = subprocess.run(prefix + [sys.executable, __file__, "--inner", "--trials", str(args.trials),
                                         "--kills", str(args.kills), "--seed", str(args.seed)],
                               cwd=REPO, stdout=subprocess.PIPE, text=True)
        result = [ln for ln in inner.stdout.splitlines() if ln.startswith("RESULT ")]
        if inner.returncode != 0 or not result:
            raise SystemExit(f"the local phase failed (exit {inner.returncode}):\n{inner.stdout[-3000:]}")
        found["local"] = json.loads(result[-1][len("RESULT "):])
        print(json.dumps(found["local"], indent=1))
    if "s3" in args.phases:
        found["s3"] = run_s3(args)
        print(json.dumps(found["s3"], indent=1))
    if args.json:
        # a run of one phase keeps the other phase's figures already in the file (each with its command)
        kept = json.loads(args.json.read_text()) if args.json.is_file() else {}
        for phase in ("local", "s3"):
            if phase in found:
                found[phase]["command"] = found["command"]
            elif phase in kept:
                found[phase] = kept[phase]
        args.json.write_text(json.dumps(found, indent=2) + "\n")


if __name__ == "__main__":
    main()
