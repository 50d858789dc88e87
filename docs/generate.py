"""The documentation site's generated reference pages, and the MkDocs hook
that adds them to every build (``mkdocs.yml``: ``hooks: [docs/generate.py]``).

Three pages are written from the code, never by hand, so they cannot drift
from it (``tests/test_docs.py`` checks that every key, command, flag and
exported name reaches the built site):

* ``reference/study-file-keys.md`` -- every study-file key, from the
  schema's key lists (``study.spec``), and each built-in family's task keys,
  hyperparameters with their defaults and limits, and training defaults;
* ``reference/command-line.md`` -- every command, subcommand and flag, from
  the argument parser (:func:`seedsweep.cli.build_parser`);
* ``reference/analysis-api.md`` -- every name ``analysis`` exports, documented
  by mkdocstrings from its docstring, at the module that defines it.

``python docs/generate.py DIR`` writes the three pages into ``DIR`` (to read them
without building the site).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields
from pathlib import Path

from seedsweep.study.families.usercode import SHIPPING_KEYS
from seedsweep.study.rooms import folder_name

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

#: a line for each top-level key and the keys of its blocks (the schema lists the keys;
#: a key without a line here is still listed, with "see the tutorials")
NOTES = {
    "name": "the study's name (the trials table's `study` column)",
    "family": "the model family: built in, `function`, `command`, or an installed package's",
    "samples": "configurations to draw (an adaptive study's first wave)",
    "seeds": "the seeds every configuration and option is trained with (a list, or a count)",
    "compare": "the design choice(s) under study: `{choice: [option, ...]}`",
    "task": "the family's task: dataset, path, and the family's own keys (below)",
    "sampler_seed": "seeds the configuration draws (configuration i is the same whatever `samples` is)",
    "sampler": "`random` (default) or `qmc` (a scrambled Sobol sequence)",
    "space": "hyperparameters drawn per configuration: `choice`, `uniform`, `loguniform`, `int` (with `when`)",
    "fixed": "hyperparameters held at one value in every configuration",
    "train": "the training protocol (keys below; defaults: the family's)",
    "resources": "CPUs and GPUs per trial (keys below)",
    "evaluate": "extra evaluation sets (test beds) scored after training: result columns `eval_<name>`",
    "tau": "the robustness margin of the test-bed tables (default 0.1)",
    "until": "an adaptive study: waves until every comparison is decided (keys below)",
    "tune": "a tuned comparison: an Optuna search per option (keys below)",
    "tracking.mlflow": "the MLflow tracking URI: `http://HOST:PORT`, `sqlite:///PATH` or a folder",
    "tracking.experiment": "the MLflow experiment (default: the study's name)",
    "tracking.queue": "stored trials waiting for MLflow, at most (default 1000; past it a hand-over is dropped and "
                      "caught up from the store)",
    "tracking": "log every stored trial to MLflow: `{mlflow: URI, experiment: NAME, queue: N}` "
                "(see [Log to MLflow](../how-to/mlflow.md))",
    "train.max_epochs": "most epochs per trial",
    "train.patience": "epochs without a better dev score before stopping",
    "train.metric": "the family's score (e.g. `f1`, `accuracy`)",
    "train.mode": "`max` or `min`: which direction of the score is better",
    "train.timeout_s": "a trial running longer is stopped and stored as failed",
    "train.retries": "how often Ray Tune retries a trial whose worker died",
    "train.vectorize_seeds": "train a configuration's seeds as one batched model (families that can)",
    "resources.cpu": "CPU threads per trial",
    "resources.gpu": "GPUs per trial (fractions pack several trials on one GPU)",
    "resources.per_group": "trials per placement group (vectorised seeds)",
    "until.decide": "the compared choices to decide (default: all)",
    "until.statistic": "`share` (wins against ½, default) or `mean` (the paired difference)",
    "until.delta": "the margin: on the share around ½, or on the mean in score units",
    "until.confidence": "1 − α over every pair, task and look together",
    "until.method": "`exact` (valid at every n), `asymptotic` (as n grows) or `spending` (within the budget)",
    "until.range": "the scores' bounds [lo, hi] (exact sequences on the mean; mean value claims)",
    "until.budget": "at least one of samples, trials, hours",
    "until.budget.samples": "configurations at most",
    "until.budget.trials": "trials at most",
    "until.budget.hours": "training hours at most",
    "until.wave": "configurations per wave (`auto` by default)",
    "until.lever": "`fixed` (every configuration gets `seeds`); `auto` is withdrawn and refused",
    "until.claims": "`true`: also run until every sealed claim's gate is reached",
    "until.spending": "`obf` (O'Brien–Fleming type, default) or `pocock` (method: spending)",
    "until.power": "the power at δ that the futility side keeps (method: spending; default 0.8)",
    "until.assume_normal": "`true` accepts a normal approximation of the mean (asymptotic, spending)",
    "tune.sampler": "`tpe` (default), `qmc` or `random`",
    "tune.budget": "trials per search (per option and replicate)",
    "tune.replicates": "independent searches per option",
    "tune.wave": "trials asked between two tells",
    "tune.startup": "random draws before TPE models (default min(10, budget // 4))",
}


def _keys_table(rows: list[tuple[str, str]]) -> list[str]:
    out = ["| key | what it is |", "|---|---|"]
    out += [f"| `{k}` | {NOTES.get(k, note) or 'see the tutorials'} |" for k, note in rows]
    return out


def study_file_page() -> str:
    """``reference/study-file-keys.md``: every key of a study file and of each built-in family."""
    from seedsweep.study.families import FAMILIES, get_family
    from seedsweep.study.spec.claimsfile import CLAIM_KEYS
    from seedsweep.study.spec.space import (DISTRIBUTIONS, OPTIONAL_KEYS, REQUIRED_KEYS, RESOURCE_KEYS, SAMPLERS,
                                  TRACKING_KEYS, TRAIN_KEYS)
    from seedsweep.study.spec.tuning import TUNE_KEYS, TUNE_SAMPLERS
    from seedsweep.study.spec.until import BUDGET_KEYS, UNTIL_KEYS

    lines = ["# Study-file keys", "",
             "*Generated from the schema and the families (`docs/generate.py`): a key added to the code "
             "appears here without editing a page. The prose reference is [the study file](study-file.md).*", "",
             "## Top level", "",
             *_keys_table([(k, "required") for k in REQUIRED_KEYS] + [(k, "") for k in OPTIONAL_KEYS]), "",
             f"Required: {', '.join(f'`{k}`' for k in REQUIRED_KEYS)} (a tuned study leaves out `samples` and "
             f"`seeds`). `space` distributions: {', '.join(f'`{d}`' for d in DISTRIBUTIONS)}; samplers: "
             f"{', '.join(f'`{s}`' for s in SAMPLERS)}.", ""]
    for block, keys in (("train", TRAIN_KEYS), ("resources", RESOURCE_KEYS), ("until", UNTIL_KEYS),
                        ("until.budget", BUDGET_KEYS), ("tune", TUNE_KEYS), ("tracking", TRACKING_KEYS)):
        lines += [f"## `{block}:`", "", *_keys_table([(f"{block}.{k}", "") for k in keys]), ""]
    lines += [f"`tune.sampler`: {', '.join(f'`{s}`' for s in TUNE_SAMPLERS)}.", "",
              "## Claims files", "", "A claim (a claims file's `claims:` item) takes:", "",
              ", ".join(f"`{k}`" for k in sorted(CLAIM_KEYS)) + ".", "",
              "## Families", ""]
    for name in sorted(FAMILIES):
        family = get_family(name)
        lines += [f"### `{name}`", ""]
        doc = (sys.modules[type(family).__module__].__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        if doc:
            lines += [doc, ""]
        task_keys = sorted(set(getattr(family, "task_keys", ()) or
                               getattr(sys.modules[type(family).__module__], "TASK_KEYS", ()) or ())
                           | (set(SHIPPING_KEYS) if name in ("function", "command") else set()))
        if task_keys:
            lines += ["Task keys: " + ", ".join(f"`task.{k}`" for k in task_keys) + ".", ""]
        for key, values in getattr(sys.modules[type(family).__module__], "TASK_SUBKEYS", {}).items():
            lines += [f"`task.{key}`: " + ", ".join(f"`{v}`" for v in values) + ".", ""]
        train = family.train_defaults
        lines += ["Training defaults: " + ", ".join(f"`{f.name}`: `{getattr(train, f.name)!r}`"
                                                    for f in fields(train)) + ".", ""]
        defaults, limits = dict(family.defaults or {}), dict(family.limits or {})
        if defaults or limits:
            lines += ["| hyperparameter | default | allowed |", "|---|---|---|"]
            for key in sorted(set(defaults) | set(limits)):
                limit = limits.get(key)
                allowed = "any" if limit is None else _limit(limit)
                default = f"`{defaults[key]!r}`" if key in defaults else "–"
                lines.append(f"| `{key}` | {default} | {allowed} |")
            lines.append("")
        else:
            lines += ["Hyperparameters: the user's own (any name the code reads).", ""]
    return "\n".join(lines) + "\n"


def _limit(limit) -> str:
    if limit.kind == "choice":
        return "one of " + ", ".join(f"`{o!r}`" for o in limit.options)
    high = ")" if limit.open_high else "]"
    kind = "an integer" if limit.kind == "int" else "a number"
    return f"{kind} in [{limit.low:g}, {limit.high:g}{high}"


def _commands(parser: argparse.ArgumentParser, prefix: str) -> list[tuple[str, argparse.ArgumentParser]]:
    out = [(prefix, parser)]
    for action in parser._actions:
        if action.nargs == argparse.PARSER:        # a subcommand action: its choices are parsers
            for name, sub in action.choices.items():
                out += _commands(sub, f"{prefix} {name}")
    return out


def command_line_page() -> str:
    """``reference/command-line.md``: every command and flag, from the argument parser."""
    from seedsweep.cli import build_parser

    lines = ["# Command line", "",
             "*Generated from the argument parser (`seedsweep.cli.build_parser`, `docs/generate.py`). What each "
             "command is for, with examples: [commands](commands.md).*", ""]
    for name, parser in _commands(build_parser(), "seedsweep")[1:]:
        lines += [f"## `{name}`", "", "```text", parser.format_usage().strip(), "```", ""]
        if parser.description:
            lines += [parser.description.strip(), ""]
        rows = []
        for action in parser._actions:
            if action.dest == "help" or action.nargs == argparse.PARSER:
                continue
            flag = ", ".join(action.option_strings) or action.dest
            metavar = action.metavar or (action.dest.upper() if action.option_strings and action.nargs != 0 else "")
            shown = f"{flag} {metavar}".strip() if action.option_strings else (action.metavar or action.dest)
            default = "" if action.default in (None, False, argparse.SUPPRESS) else f" (default: `{action.default}`)"
            help_ = (action.help or "").replace("|", "\\|").replace("\n", " ")
            rows.append(f"| `{shown}` | {help_}{default} |")
        if rows:
            lines += ["| argument | what it does |", "|---|---|", *rows, ""]
    return "\n".join(lines) + "\n"


def analysis_api_page() -> str:
    """``reference/analysis-api.md``: every name ``analysis`` exports, by mkdocstrings, at its module."""
    from seedsweep import analysis

    lines = ["# The `analysis` API", "",
             "*Generated: every name `from seedsweep import analysis` exports (`analysis.__all__`), documented from its "
             "docstring at the module that defines it (`docs/generate.py`, mkdocstrings). How they fit "
             "together: [Analysis](api.md).*", ""]
    for name in analysis.__all__:
        obj = getattr(analysis, name)
        module = getattr(obj, "__module__", None) or "seedsweep.analysis"
        lines += [f"## `{name}`", "", f"`from seedsweep.analysis import {name}` (defined in `{module}`)", "",
                  # mkdocstrings (griffe) reads the tree by folder and does not follow pyproject.toml's package-dir
                  f"::: {folder_name(module)}.{name}", "    options:", "      show_root_heading: false", ""]
    return "\n".join(lines) + "\n"


PAGES = {"reference/study-file-keys.md": study_file_page, "reference/command-line.md": command_line_page,
         "reference/analysis-api.md": analysis_api_page}


def on_files(files, config):
    """The MkDocs hook: add the generated pages to the site's files."""
    from mkdocs.structure.files import File

    for uri, make in PAGES.items():
        files.append(File.generated(config, uri, content=make()))
    return files


def main() -> None:
    """Write the generated pages into a folder, to read them without a build."""
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "build/generated-docs")
    for uri, make in PAGES.items():
        path = out / uri
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(make())
        print(path)


if __name__ == "__main__":
    main()
