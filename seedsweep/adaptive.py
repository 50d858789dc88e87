"""The command line of studies that run in waves: ``seedsweep run`` of a
study file with ``until:`` (the engine's waves, :mod:`study.execution.waves`, asking
the decisions of :mod:`analysis.stats.decisions` after each) or with ``tune:``
(Optuna's searches, :mod:`study.execution.tuned`), and ``seedsweep replay DIR --until
FILE``, which feeds a finished or imported study's configurations in their
stored order through the same decisions.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from study.errors import UserError
from study.execution.runner import load_study
from study.execution.tuned import run_tuned
from study.execution.waves import run_until
from study.spec.spacecheck import SpaceValidator
from study.spec.spacefile import read_text, read_yaml
from study.spec.until import parse_until
from study.store.rundir import RunDir

__all__ = ["run_adaptive", "add_replay", "read_until"]


def run_adaptive(args) -> int:
    """``seedsweep run`` of an adaptive study (waves until decided) or a tuned one, then the tables."""
    import analysis                          # the statistics stack (pandas, SciPy): only when results are read
    from analysis.reading.rundirs import WavePolicy   # (the same stack)

    space = load_study(args.space)
    if space.tune is not None:               # a tuned comparison: its searches' waves, then the tables
        summary = run_tuned(args.space, args.out, address=args.address, retry_failed=args.retry_failed,
                            num_cpus=args.num_cpus, command=sys.argv, claims=args.claims, supersede=args.supersede)
        print(summary.line(), file=sys.stderr)
        if not args.quiet:
            print(analysis.report(args.out))
        return 1 if summary.interrupted else 0
    policy = WavePolicy(space.until, seeds=len(space.seeds), first=space.samples,
                        trials_per_config=space.trials_per_config)
    waves = run_until(args.space, args.out, policy, address=args.address, retry_failed=args.retry_failed,
                      num_cpus=args.num_cpus, command=sys.argv, claims=args.claims, supersede=args.supersede)
    print(waves.line(), file=sys.stderr)
    if waves.stopped is None:
        return 1
    print(f"[seedsweep] stopped after {waves.samples} configurations: {waves.stopped}", file=sys.stderr)
    if not args.quiet:                     # the report's Decisions section comes first
        print(analysis.report(args.out))
    return 0


def read_until(path: str | Path, options: dict[str, list[str]], family: str):
    """The ``until:`` settings of ``path`` (a study file with ``until:``, or
    the ``until`` mapping alone) for a replay over ``options``; no budget needed."""
    text = read_text(path, "until file", "Give a YAML file holding an until: block (or a study file with one).")
    raw = read_yaml(text, str(path))
    if raw is None:
        raise UserError(str(path), "the file is empty.", "Write an until: block into it, e.g. until: {decide: [CHOICE]}.")
    if isinstance(raw, dict) and "until" in raw:
        raw = raw["until"]
    compare = tuple((c, tuple(o)) for c, o in options.items())
    return parse_until(SpaceValidator(str(path)), raw, family=family, samples=1, compare=compare,
                       trials_per_config=1, need_budget=False)


def _cmd_replay(args) -> int:
    import analysis                          # the statistics stack (pandas, SciPy): only when results are read
    from analysis.stats.decisions import replay_markdown, track   # (the same stack)

    rd = RunDir(args.dir)
    rd.require()
    specs, results = analysis.comparisons_of(args.dir)
    family = str(rd.manifest().get("family") or "imported")
    until = read_until(args.until, {s.choice: list(s.options or []) for s in specs}, family)
    tracked = track(analysis.load(args.dir), until, specs, results, where=str(args.dir))
    print(replay_markdown(tracked, until))
    return 0


def _cmd_plan(args) -> int:
    import analysis                          # the statistics stack (pandas, SciPy): only when results are read
    from analysis.stats.planning import plan, plan_table   # (the same stack)

    space = load_study(args.space)
    if space.until is None:
        raise UserError(str(args.space), "the study file has no until: block, so there is nothing to plan.",
                        "Add an until: block (see the README's 'Adaptive studies').")
    until = replace(space.until, delta=args.delta) if args.delta is not None else space.until
    rd = RunDir(args.pilot)
    rd.require()
    df = analysis.load(args.pilot)
    specs, results = analysis.comparisons_of(args.pilot)
    missing = [c for c in until.decide if c not in {s.choice for s in specs}]
    if missing:
        raise UserError(f"--pilot {args.pilot}", f"the pilot does not compare {', '.join(missing)}.",
                        "Give a pilot run of the same study (its first wave).")
    rows = plan(df, until, specs, results, seeds=len(space.seeds), reps=args.reps, first=space.samples,
                wave=until.wave or 1)
    ok = df[df.status == "ok"]
    seconds = float(ok.train_seconds.mean()) if "train_seconds" in ok and len(ok) else float("nan")
    print(plan_table(rows, trials_per_config=space.trials_per_config, seconds_per_trial=seconds).markdown(
        f"plan: {space.name} from the pilot {args.pilot} (margin {until.delta:g}, {until.confidence:.0%})"))
    return 0


def add_replay(sub) -> None:
    """Register ``seedsweep replay`` and ``seedsweep plan`` on the command line's subparsers."""
    p = sub.add_parser("plan", help="from a pilot run, the configurations a fixed and a sequential design need")
    p.add_argument("space", help="the study file (with an until: block)")
    p.add_argument("--pilot", required=True, metavar="DIR", help="a pilot run directory of the same study")
    p.add_argument("--delta", type=float, help="the margin (default: until.delta)")
    p.add_argument("--reps", type=int, default=200, help="resamples of the pilot for the sequential design")
    p.set_defaults(func=_cmd_plan)
    p = sub.add_parser("replay", help="feed a finished or imported study through an until: block's decisions "
                       "and print where each comparison would have stopped")
    p.add_argument("dir", help="a run directory (run or imported)")
    p.add_argument("--until", required=True, metavar="FILE",
                   help="a YAML file holding an until: block (or a study file with one)")
    p.set_defaults(func=_cmd_replay)
