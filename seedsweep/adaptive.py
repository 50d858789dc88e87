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

from seedsweep.study.errors import UserError
from seedsweep.study.store.studies import load_study
from seedsweep.api import run
from seedsweep.study.execution.waves import run_until
from seedsweep.study.spec.spacecheck import SpaceValidator
from seedsweep.study.spec.spacefile import read_text, read_yaml
from seedsweep.study.spec.until import parse_until
from seedsweep.study.store.rundir import RunDir

__all__ = ["run_adaptive", "add_replay", "read_until", "extend"]


def run_adaptive(args, space) -> int:
    """``seedsweep run`` of an adaptive study (waves until decided) or a tuned one, then the tables."""
    from seedsweep import analysis  # the statistics stack (pandas, SciPy): only when results are read

    result = run(space, args.out, address=args.address, retry_failed=args.retry_failed, num_cpus=args.num_cpus,
                 command=sys.argv, claims=args.claims, supersede=args.supersede, mlflow=args.mlflow)
    print(result.line(), file=sys.stderr)
    if space.tune is not None:               # a tuned comparison: its searches' waves, then the tables
        if not args.quiet:
            print(analysis.report(args.out))
        return 1 if result.interrupted else 0
    if result.stopped is None:
        return 1
    print(f"[seedsweep] stopped after {result.samples} configurations: {result.stopped}", file=sys.stderr)
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
    from seedsweep import analysis  # the statistics stack (pandas, SciPy): only when results are read
    from seedsweep.analysis.stats.decisions import replay_markdown, track   # (the same stack)

    rd = RunDir(args.dir)
    rd.require()
    specs, results = analysis.comparisons_of(args.dir)
    family = str(rd.manifest().get("family") or "imported")
    until = read_until(args.until, {s.choice: list(s.options or []) for s in specs}, family)
    df = analysis.load(args.dir)
    if rd.read_import_spec() is not None:       # an import: a choice nothing pairs in has no sequence to replay
        from seedsweep.analysis.stats.unpaired import unpaired_choices   # (the same stack)

        unpaired = unpaired_choices(df, [s for s in specs if s.choice in until.decide], results)
        if unpaired:
            choice, cover = next(iter(unpaired.items()))
            raise UserError(f"--until {args.until}: decide: {choice}",
                            f"{choice} is judged unpaired in {args.dir} ({cover}), and a replay's decisions are "
                            "taken over paired configurations, one at a time.",
                            "Replay a comparison whose configurations pair; the report judges this one unpaired "
                            "(seedsweep report DIR).")
    tracked = track(df, until, specs, results, where=str(args.dir))
    print(replay_markdown(tracked, until))
    return 0


def _cmd_plan(args) -> int:
    from seedsweep import analysis  # the statistics stack (pandas, SciPy): only when results are read
    from seedsweep.analysis.stats.planning import plan, plan_table   # (the same stack)

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


def extend(args) -> int:
    """``seedsweep extend DIR --budget N``: raise a finished (or stopped)
    adaptive study's configuration budget by a valid rule, record it in the
    run directory, then run the new configurations (:mod:`analysis.stats.extension`)."""
    from seedsweep import analysis  # the statistics stack (pandas, SciPy): only when results are read
    from seedsweep.analysis.reading.rundirs import WavePolicy, study_decided   # (the same stack)
    from seedsweep.analysis.stats.extension import extension_record          # (the same stack)

    rd = RunDir(args.dir)
    rd.require()
    manifest = str(rd.manifest_path)
    space = load_study(manifest)
    where = f"{args.dir}: extend --budget {args.budget}"
    if space.until is None:
        raise UserError(where, "this study has no until: block, so it has no budget to extend.",
                        "Give a run directory of an adaptive study (until: in its study file).")
    before = rd.read_extension()
    if before is not None:
        raise UserError(str(rd.extension_path), f"the study was extended to {before['budget']} configurations "
                        "already, and a second extension would spend its level again.",
                        "Resume the extension with `seedsweep run` of its study file, or start a new study.")
    cap = space.until.sample_cap(space.trials_per_config)
    configs = rd.configs()
    samples = configs.num_rows if configs is not None else 0
    if cap is None or args.budget <= max(cap, samples):
        raise UserError(where, f"the new budget must exceed the study's {cap or samples} configurations.",
                        f"Give --budget above {max(cap or 0, samples)}.")
    decided = study_decided(args.dir, analysis.load(args.dir))
    if space.until.method == "spending":
        planned = space.until.looks(space.samples, space.trials_per_config)
        record = extension_record(decided.tracked, space.until, args.budget, planned, cap, samples)
        open_ = [e for e in record["sequences"] if e["decision_before"] not in ("A better", "B better")]
        if not open_:
            raise UserError(where, "every comparison is decided already; there is nothing to extend.",
                            "Report the study as it is.")
        if not any(e["conditional_error"] > 1e-12 for e in open_):
            raise UserError(where, "the design has no level left: it took its last planned look "
                            f"({cap} configurations) and spent its whole alpha there, so a larger budget could only "
                            "spend it again (a false winner more often than the study's confidence allows).",
                            "Report the study as it ended ('undecided at budget'); for more configurations, run a "
                            "new study into a new --out folder and report it as a new study, or next time extend "
                            "before the last look.")
    else:                                    # confidence sequences hold at any stop: the budget may simply grow
        record = {"budget": int(args.budget), "from_budget": int(cap), "method": space.until.method,
                  "sequences": []}
    rd.write_extension(record)
    for e in record["sequences"]:
        print(f"[seedsweep] extend: {e['choice']} {e['a']} vs {e['b']} ({e['task']}): "
              f"{e['decision_before']} at {e['units']} configurations; the new configurations are tested at the "
              f"level left, {e['conditional_error']:.4g}", file=sys.stderr)
    policy = WavePolicy(space.until, seeds=len(space.seeds), first=space.samples,
                        trials_per_config=space.trials_per_config)
    waves = run_until(manifest, args.dir, policy, address=args.address, num_cpus=args.num_cpus,
                      command=sys.argv)
    print(waves.line(), file=sys.stderr)
    if waves.stopped is None:
        return 1
    print(f"[seedsweep] stopped after {waves.samples} configurations: {waves.stopped}", file=sys.stderr)
    if not args.quiet:
        print(analysis.report(args.dir))
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
    p = sub.add_parser("extend", help="give a finished adaptive study a larger configuration budget, spending only "
                       "the level it has left, and run the new configurations")
    p.add_argument("dir", help="the study's run directory")
    p.add_argument("--budget", type=int, required=True, metavar="N", help="the new budget, in configurations")
    p.add_argument("--address", help="join this running Ray cluster (default: a private local Ray)")
    p.add_argument("--num-cpus", type=int, help="CPUs of the private local Ray (default: all)")
    p.add_argument("--quiet", action="store_true", help="do not print the result tables at the end")
    p.set_defaults(func=extend)
