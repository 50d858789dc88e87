"""The claims file format (docs/reference/statistics.md, "Claims and verdicts"): reading and
checking a claims file into :class:`Claims`, and each claim's verdict
:class:`Rule`. Sealing (:mod:`study.store.sealing`) checks a file with it before
anything is written; judging a claim on trials is :mod:`analysis.stats.claims`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from ..errors import UserError

__all__ = ["Claim", "Deviation", "Claims", "Rule", "read_claims", "parse_claims", "KINDS", "IMPACTS", "RULE_KINDS",
           "CLAIM_KEYS"]

RULE_KINDS = ("interval", "above", "below", "band", "best")


@dataclass(frozen=True)
class Rule:
    """One of :data:`RULE_KINDS` with its numbers."""

    kind: str
    gate: float | None = None           # interval: the largest half-width that can reproduce
    tolerance: float = 0.0              # interval: the target band's half-width
    band: float | None = None           # band: the allowed |estimate − target|

    @classmethod
    def from_dict(cls, raw: Mapping) -> "Rule":
        """``{interval: true, gate: g[, tolerance: t]}``, ``{above: true}``,
        ``{below: true}``, ``{band: t}`` or ``{best: true}``; ValueError says what is wrong."""
        if not isinstance(raw, Mapping):
            raise ValueError(f"a rule is a mapping such as {{interval: true, gate: 0.01}}, got {raw!r}")
        kinds = [k for k in RULE_KINDS if k in raw and raw[k] is not False]
        if len(kinds) != 1:
            raise ValueError(f"a rule names exactly one of {', '.join(RULE_KINDS)}; got {sorted(raw)}")
        kind = kinds[0]
        allowed = {"interval": {"interval", "gate", "tolerance"}, "band": {"band"}}.get(kind, {kind})
        extra = sorted(set(raw) - allowed)
        if extra:
            raise ValueError(f"the {kind} rule takes {sorted(allowed)}, not {extra}")
        if kind == "interval":
            gate, tol = raw.get("gate"), raw.get("tolerance", 0.0)
            if not _positive(gate):
                raise ValueError("the interval rule needs a precision gate > 0 (gate: the largest half-width "
                                 "of the interval that can say 'reproduced')")
            if not _positive(tol, zero=True):
                raise ValueError(f"tolerance must be a number ≥ 0, got {tol!r}")
            return cls("interval", gate=float(gate), tolerance=float(tol))
        if kind == "band":
            if not _positive(raw["band"], zero=True):
                raise ValueError(f"band must be a number ≥ 0, got {raw['band']!r}")
            return cls("band", band=float(raw["band"]))
        if raw[kind] is not True:
            raise ValueError(f"write {kind}: true")
        return cls(kind)

    def describe(self) -> str:
        """The rule in a few words, e.g. ``interval, gate 0.01``."""
        if self.kind == "interval":
            tol = f", tolerance ±{self.tolerance:g}" if self.tolerance else ""
            return f"interval, gate {self.gate:g}{tol}"
        if self.kind == "band":
            return f"band ±{self.band:g}"
        return self.kind


def _positive(v, zero: bool = False) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and (v >= 0 if zero else v > 0)


KINDS = ("value", "share", "delta", "rank")
IMPACTS = ("none", "minor", "material")
_ID = re.compile(r"^[a-z0-9_-]+$")
CLAIM_KEYS = {"id", "kind", "choice", "option", "other", "where", "statistic", "score", "target", "rule", "blocks",
         "confidence", "note", "unit"}
UNITS = ("configuration", "seed")


@dataclass(frozen=True)
class Deviation:
    what: str
    why: str
    impact: str


@dataclass(frozen=True)
class Claim:
    id: str
    kind: str
    rule: Rule
    target: float | None = None
    choice: str | None = None
    option: str | None = None
    other: str | None = None
    where: dict = field(default_factory=dict)
    statistic: str = "mean"
    score: tuple[str, ...] = ("test_score",)
    blocks: str = "task"
    confidence: float = 0.95
    note: str = ""
    unit: str = "configuration"         # share and delta claims: what is paired (a configuration, or each seed of it)


@dataclass(frozen=True)
class Claims:
    source: str
    confidence: float
    deviations: list[Deviation]
    claims: list[Claim]


def read_claims(path: str | Path) -> Claims:
    """Read and check a claims file; every mistake is a :class:`UserError`
    naming the file and the place."""
    path = Path(path)
    if not path.is_file():
        raise UserError(str(path), "no such claims file.", "Give the path of a claims YAML file (its shape: "
                        "docs/tutorials/claims.md).")
    try:
        raw = yaml.safe_load(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise UserError(str(path), f"is not valid YAML ({str(exc).splitlines()[0]}).",
                        "Fix the syntax; a claims file is a mapping with source, claims and deviations.") from None
    return parse_claims(raw, str(path))


def parse_claims(raw: Any, where: str = "claims") -> Claims:
    """Check the parsed YAML ``raw`` of a claims file; ``where`` names it in messages."""
    if not isinstance(raw, dict):
        raise UserError(where, "a claims file is a mapping (source, confidence, deviations, claims).",
                        "See docs/tutorials/claims.md for the shape.")
    unknown = sorted(set(raw) - {"source", "confidence", "deviations", "claims"})
    if unknown:
        raise UserError(f"{where}: {unknown[0]}", "unknown key.", "Use source, confidence, deviations and claims.")
    source = raw.get("source")
    if not isinstance(source, str) or not source.strip():
        raise UserError(f"{where}: source", "missing: what is being checked (paper and table).",
                        'Write e.g. source: "Reimers & Gurevych 2017, Table 3".')
    confidence = _confidence(raw.get("confidence", 0.95), f"{where}: confidence")
    deviations = []
    for i, d in enumerate(raw.get("deviations") or []):
        place = f"{where}: deviations[{i}]"
        if not isinstance(d, dict) or set(d) != {"what", "why", "impact"}:
            raise UserError(place, "a deviation has exactly what, why and impact.",
                            "Write {what: ..., why: ..., impact: none | minor | material}.")
        if d["impact"] not in IMPACTS:
            raise UserError(f"{place}.impact", f"{d['impact']!r} is not an impact.", "Use none, minor or material.")
        deviations.append(Deviation(str(d["what"]), str(d["why"]), d["impact"]))
    items = raw.get("claims")
    if not isinstance(items, list) or not items:
        raise UserError(f"{where}: claims", "no claims.", "List at least one claim.")
    claims, seen = [], set()
    for i, c in enumerate(items):
        claim = _claim(c, f"{where}: claims[{i}]", confidence)
        if claim.id in seen:
            raise UserError(f"{where}: claims[{i}].id", f"the id {claim.id!r} is used twice.", "Ids are unique.")
        seen.add(claim.id)
        claims.append(claim)
    return Claims(source.strip(), confidence, deviations, claims)


def _confidence(v, place: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.5 <= v < 1:
        raise UserError(place, f"{v!r} is not a confidence level.", "Use a number in [0.5, 1), e.g. 0.95.")
    return float(v)


def _claim(c: Any, place: str, confidence: float) -> Claim:
    if not isinstance(c, dict):
        raise UserError(place, "a claim is a mapping with id, kind, target and rule.", "")
    unknown = sorted(set(c) - CLAIM_KEYS)
    if unknown:
        raise UserError(f"{place}.{unknown[0]}", "unknown key.", f"A claim takes {', '.join(sorted(CLAIM_KEYS))}.")
    cid = c.get("id")
    if not isinstance(cid, str) or not _ID.match(cid):
        raise UserError(f"{place}.id", f"{cid!r} is not an id.", "Use lower-case letters, digits, - and _.")
    kind = c.get("kind")
    if kind not in KINDS:
        raise UserError(f"{place}.kind", f"{kind!r} is not a claim kind.", f"Use one of {', '.join(KINDS)}.")
    try:
        rule = Rule.from_dict(c.get("rule"))
    except ValueError as exc:
        raise UserError(f"{place}.rule", str(exc) + ".", "") from None
    if (kind == "rank") != (rule.kind == "best"):
        raise UserError(f"{place}.rule", f"a {kind} claim cannot use the {rule.kind} rule.",
                        "Rank claims use {best: true}; the others interval, above, below or band.")
    target = c.get("target")
    if kind != "rank" and (isinstance(target, bool) or not isinstance(target, (int, float))):
        raise UserError(f"{place}.target", f"{target!r} is not a number.", "Give the published number as a fraction "
                        "like the scores (e.g. 0.952 for 95.2%).")
    if kind == "share" and not 0.0 <= target <= 1.0:
        raise UserError(f"{place}.target", f"{target!r} is not a share: a win share lies in [0, 1].",
                        "Give the published share as a fraction (e.g. 0.826 for 82.6%).")
    score = c.get("score", "test_score")
    score = tuple(score) if isinstance(score, list) else (score,)
    if not all(isinstance(s, str) for s in score) or len(score) not in (1, 2) or (len(score) == 2) != (
            kind == "delta" and c.get("choice") is None):
        raise UserError(f"{place}.score", f"{c.get('score')!r} does not fit a {kind} claim.",
                        "A score column; a delta claim without a choice takes two: [a, b].")
    for key in ({"share": ("choice", "option"), "rank": ("choice", "option"),
                 "delta": ("choice", "option", "other") if c.get("choice") is not None else ()}.get(kind, ())):
        if c.get(key) is None:
            raise UserError(f"{place}.{key}", "missing.", f"A {kind} claim names its {key}.")
    where = c.get("where") or {}
    if not isinstance(where, dict):
        raise UserError(f"{place}.where", "a row filter is a mapping column: value (or [values]).", "")
    statistics = ("mean", "median", "sd") if kind == "rank" else ("mean", "median")
    if c.get("statistic", "mean") not in statistics:
        raise UserError(f"{place}.statistic", f"{c['statistic']!r} is not a statistic of a {kind} claim.",
                        f"Use {' or '.join(statistics)} (sd: rank claims only, the options ranked by their spread).")
    unit = c.get("unit", "configuration")
    if unit not in UNITS or (unit == "seed" and (kind not in ("share", "delta") or c.get("choice") is None)):
        raise UserError(f"{place}.unit", f"{unit!r} does not fit a {kind} claim.",
                        "Use configuration (the default: the seeds of a configuration averaged) or seed (each seed of "
                        "a configuration paired across options; share and delta claims on a choice only).")
    return Claim(id=cid, kind=kind, rule=rule, unit=unit, target=None if target is None else float(target),
                 choice=c.get("choice"), option=None if c.get("option") is None else str(c["option"]),
                 other=None if c.get("other") is None else str(c["other"]),
                 where={k: (v if isinstance(v, list) else [v]) for k, v in where.items()},
                 statistic=c.get("statistic", "mean"), score=score, blocks=c.get("blocks", "task"),
                 confidence=_confidence(c.get("confidence", confidence), f"{place}.confidence"),
                 note=str(c.get("note", "")))
