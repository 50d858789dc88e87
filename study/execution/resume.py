"""Resuming a study: what a changed file may not change, and what is left to run.

:func:`check_compatible` refuses a study file whose change would alter what
stored trials mean (name, family, task, fixed values, the training protocol,
or any stored configuration). :func:`plan_resume` lists the trial keys still
to run, from the keys in the store (the trials parts' names and the
compacted file's key column), reading stored rows only for the keys of this
study.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import UserError
from ..schema import TrialSpec
from ..spec.space import Space
from ..spec.spacefile import parse_space
from ..spec.tuning import LEGACY_STARTUP
from ..store.rundir import RunDir

__all__ = ["check_compatible", "check_code", "plan_resume", "ResumePlan"]

_FROZEN = {"name": lambda s: s.name, "family": lambda s: s.family, "task": lambda s: s.task,
           "fixed": lambda s: dict(s.fixed)}
_FROZEN_TRAIN = ("max_epochs", "patience", "metric", "mode")


def _schema_change(before: pa.Schema, after: pa.Schema) -> str:
    old = {f.name: str(f.type) for f in before}
    new = {f.name: str(f.type) for f in after}
    added = [n for n in new if n not in old]
    removed = [n for n in old if n not in new]
    retyped = [n for n in new if n in old and old[n] != new[n]]
    parts = ([f"added {added}"] if added else []) + ([f"removed {removed}"] if removed else []) + \
            ([f"changed type of {retyped}"] if retyped else [])
    return "; ".join(parts)


#: the fix of every refusal of a changed study file
_CHANGED_FIX = "Run the changed study into a new --out folder, or undo the change."


def _where(rd: RunDir, space: Space) -> str:
    """Where a changed study file is refused: the file against the stored manifest."""
    return f"{space.path} vs {rd.manifest_path}"


def check_same_study(rd: RunDir, space: Space) -> Space:
    """Refuse a changed file whose stored study (the manifest's YAML) differs in what
    the stored trials mean, without the sampled configurations (cheap: an adaptive
    study asks it before it starts Ray); returns the stored study."""
    old_manifest = rd.manifest()
    try:
        old = parse_space(old_manifest["yaml"], f"{rd.manifest_path} (yaml)",
                          base=old_manifest.get("space_base") or None)
    except (KeyError, TypeError):
        raise UserError(str(rd.manifest_path), "the manifest holds no study YAML.",
                        "Restore it, or run the study into a new --out folder.") from None
    fix, where = _CHANGED_FIX, _where(rd, space)
    for key, value in _FROZEN.items():
        if value(old) != value(space):
            raise UserError(where, f"'{key}' changed from {value(old)!r} to {value(space)!r}; "
                            "stored trials were run with the old value.", fix)
    recorded = (old_manifest.get("tune") or {}).get("startup", LEGACY_STARTUP) if old.tune else None
    if space.tune is not None and space.tune.sampler == "tpe" and recorded is not None \
            and recorded != space.tune.startup:
        raise UserError(where, f"tune.startup is {space.tune.startup} now, but the stored searches drew {recorded} "
                        "trials at random before TPE modelled, so the next asks would differ.",
                        f"Write tune.startup: {recorded} to resume the study as it ran, or run it into a new "
                        "--out folder.")
    _check_until(old, space, where)
    for key in _FROZEN_TRAIN:
        a, b = getattr(old.train, key), getattr(space.train, key)
        if a != b:
            raise UserError(where, f"train.{key} changed from {a!r} to {b!r}; stored trials were trained "
                            "with the old value.", fix)
    return old


def check_compatible(rd: RunDir, space: Space, configs: pa.Table) -> None:
    """Refuse a changed file that would change what stored trials mean."""
    check_same_study(rd, space)
    fix, where = _CHANGED_FIX, _where(rd, space)
    old_configs = rd.configs()
    if old_configs is None:
        return
    if old_configs.schema != configs.schema:
        raise UserError(where, "the sampled parameters changed (" + _schema_change(old_configs.schema, configs.schema)
                        + "), so every stored configuration would change.", fix)
    n = min(old_configs.num_rows, configs.num_rows)
    if not old_configs.slice(0, n).equals(configs.slice(0, n)):
        a, b = old_configs.slice(0, n).to_pylist(), configs.slice(0, n).to_pylist()
        for ra, rb in zip(a, b):
            if ra != rb:
                col = next(c for c in ra if ra[c] != rb[c])
                why = ("a search asked other parameters than its stored trial: another Optuna version, or a "
                       "changed space, sampler or sampler_seed" if space.tune else
                       "sampler, sampler_seed, ranges or options changed")
                raise UserError(where, f"configuration {ra['config_id']} would change: {col} was "
                                f"{ra[col]!r}, now {rb[col]!r} ({why}).", fix)


def _until_keys(until) -> dict:
    """An ``until:`` block as flat keys (``budget.samples`` …) for the message of a change."""
    if until is None:
        return {}
    flat = {}
    for key, value in until.as_dict().items():
        if isinstance(value, dict):
            flat.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            flat[key] = value
    return flat


def _check_until(old: Space, space: Space, where: str) -> None:
    """Refuse a changed ``until:``: the looks taken so far decided (and, with
    ``method: spending``, spent alpha) by the old settings, and a resume
    would recompute every one of them with the new ones."""
    a, b = _until_keys(old.until), _until_keys(space.until)
    if a == b:
        return
    changed = [k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k)]
    what = "; ".join(f"until.{k} was {a.get(k)!r}, now {b.get(k)!r}" for k in changed)
    raise UserError(f"{where}: until", f"the stopping rule changed ({what}); the looks taken so far decided by the "
                    "old one, and rerunning them with the new one would spend the level again.",
                    "Undo the change. To give a finished study more configurations, `seedsweep extend DIR --budget "
                    "N` (it spends only the level the study has left); or run the changed study into a new --out "
                    "folder.")


def check_code(rd: RunDir, space: Space, code: dict[str, str]) -> None:
    """Refuse a resume whose user code (``function``/``command`` families:
    path -> SHA-256) differs from the code the stored trials ran."""
    old = rd.manifest().get("code") or {}
    for path, sha in code.items():
        if path in old and old[path] != sha:
            raise UserError(f"{space.path}: task ({path})",
                            f"this file changed since the stored trials ran (sha256 {old[path][:12]}... then, "
                            f"{sha[:12]}... now), so stored and new trials would come from different code.",
                            "Undo the change (e.g. git checkout the file), or run the changed code into a new "
                            "--out folder.")


@dataclass
class ResumePlan:
    """The trials to run now, and what the store already holds of this study."""

    todo: list[TrialSpec]
    rerun: set[str] = field(default_factory=set)              # failed keys to run again
    prior_attempts: dict[str, int] = field(default_factory=dict)
    kept: Counter = field(default_factory=Counter)            # statuses of stored rows that stay

    @property
    def skipped(self) -> int:
        """Trials left alone because a row is stored."""
        return sum(self.kept.values())


def plan_resume(rd: RunDir, grid: list[TrialSpec], *, retry_failed: bool) -> ResumePlan:
    """Trial keys of ``grid`` without a stored row (plus failed ones with ``retry_failed``)."""
    stored = rd.stored_keys()
    keys = {t.key for t in grid}
    plan = ResumePlan(todo=[])
    if stored & keys:
        table = rd.read_trials(["trial_key", "status", "attempt"])
        mine = table.filter(pc.is_in(table["trial_key"], value_set=pa.array(sorted(keys), pa.string())))
        for key, status, attempt in zip(mine["trial_key"].to_pylist(), mine["status"].to_pylist(),
                                        mine["attempt"].to_pylist()):
            if retry_failed and status == "failed":
                plan.rerun.add(key)
                plan.prior_attempts[key] = int(attempt or 0)
            else:
                plan.kept[status] += 1
    plan.todo = [t for t in grid if t.key not in stored or t.key in plan.rerun]
    return plan
