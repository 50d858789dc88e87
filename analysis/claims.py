"""Claims files (DESIGN.md, "Claims and verdicts"): reading them, and judging
each claim on a run directory's trials.

A claim's estimate, by kind (confidence from the claim or the file, 0.95 by
default):

* ``value`` -- ``statistic`` (mean or median) of ``score`` over every run
  matching ``where``, collapsed and diverged runs included when they have a
  score (:func:`analysis.verdict.value_estimate`);
* ``share`` -- ``option``'s win share in the comparison of ``choice`` on the
  rows matching ``where``, with a percentile bootstrap over the paired
  configurations;
* ``delta`` -- with ``score: [a, b]`` the median over runs of a − b (the
  paired difference of two score columns per run); with ``choice``,
  ``option`` and ``other`` the median over paired configurations of
  score(option) − score(other); percentile bootstrap intervals;
* ``rank`` -- per block (``blocks``, default ``task``) the options' mean
  scores ranked, ties averaged; ``option``'s mean rank over blocks as an
  exact fraction, interval by bootstrap over blocks; rule ``best``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from study.errors import UserError

from .paired import compare
from .significance import bootstrap_median
from .specs import rows_where
from .verdict import (Rule, Verdict, mean_ranks, percentile_interval, rank_interval, rank_verdict, value_estimate,
                      verdict)

__all__ = ["Claim", "Deviation", "Claims", "read_claims", "parse_claims", "ClaimResult", "judge", "KINDS", "IMPACTS"]

KINDS = ("value", "share", "delta", "rank")
IMPACTS = ("none", "minor", "material")
_ID = re.compile(r"^[a-z0-9_-]+$")
_KEYS = {"id", "kind", "choice", "option", "other", "where", "statistic", "score", "target", "rule", "blocks",
         "confidence", "note"}


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


@dataclass(frozen=True)
class Claims:
    source: str
    confidence: float
    deviations: list[Deviation]
    claims: list[Claim]


def read_claims(path: str | Path) -> Claims:
    """Read and check a claims file; every mistake is a :class:`UserError`
    naming the file and the place."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise UserError(str(path), "no such claims file.", "Give the path of a claims YAML file (DESIGN.md, "
                        "'Claims and verdicts').")
    try:
        raw = yaml.safe_load(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise UserError(str(path), f"is not valid YAML ({str(exc).splitlines()[0]}).",
                        "Fix the syntax; a claims file is a mapping with source, claims and deviations.") from None
    return parse_claims(raw, str(path))


def parse_claims(raw: Any, where: str = "claims") -> Claims:
    if not isinstance(raw, dict):
        raise UserError(where, "a claims file is a mapping (source, confidence, deviations, claims).",
                        "See DESIGN.md, 'Claims and verdicts', for the shape.")
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
    unknown = sorted(set(c) - _KEYS)
    if unknown:
        raise UserError(f"{place}.{unknown[0]}", "unknown key.", f"A claim takes {', '.join(sorted(_KEYS))}.")
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
    if c.get("statistic", "mean") not in ("mean", "median"):
        raise UserError(f"{place}.statistic", f"{c['statistic']!r} is not a statistic.", "Use mean or median.")
    return Claim(id=cid, kind=kind, rule=rule, target=None if target is None else float(target),
                 choice=c.get("choice"), option=None if c.get("option") is None else str(c["option"]),
                 other=None if c.get("other") is None else str(c["other"]),
                 where={k: (v if isinstance(v, list) else [v]) for k, v in where.items()},
                 statistic=c.get("statistic", "mean"), score=score, blocks=c.get("blocks", "task"),
                 confidence=_confidence(c.get("confidence", confidence), f"{place}.confidence"),
                 note=str(c.get("note", "")))


@dataclass(frozen=True)
class ClaimResult:
    claim: Claim
    verdict: Verdict
    n: int                                  # runs, paired configurations or blocks behind the estimate
    collapsed: int = 0                      # value claims: collapsed or diverged runs with a score, counted in
    without: float = float("nan")           # value claims: the statistic without them
    rank: Fraction | None = None            # rank claims: the exact mean rank
    collapsed_keys: tuple[str, ...] = ()    # value claims: the trial keys of the collapsed or diverged runs


def judge(claim: Claim, df: pd.DataFrame, *, results=(), specs=(), n_bootstrap: int = 2000,
          seed: int = 0) -> ClaimResult:
    """The estimate, interval and verdict of one claim on a trials table.
    ``results`` and ``specs``: the run directory's result columns and
    comparisons (:func:`analysis.load.comparisons_of`); a share or delta
    claim on a choice the directory compares pairs as that comparison does
    (its row filter, ignored columns and options)."""
    spec = next((s for s in specs if s.choice == claim.choice), None)
    rows = rows_where(rows_where(df, spec.where) if spec is not None else df, claim.where)
    c = claim.confidence
    if claim.kind == "value":
        bad = np.zeros(len(rows), dtype=bool)
        if "status" in rows:
            bad = bad | (rows["status"].astype(str) == "diverged").to_numpy(dtype=bool)
        if "reason" in rows:
            bad = bad | rows["reason"].astype(str).str.startswith("collapsed").to_numpy(dtype=bool)
        scores = rows[claim.score[0]].to_numpy(dtype=float)
        v = value_estimate(scores, statistic=claim.statistic, confidence=c, collapsed=bad, n_bootstrap=n_bootstrap,
                           seed=seed)
        keys = tuple(rows["trial_key"].astype(str).to_numpy()[bad & np.isfinite(scores)]) if "trial_key" in rows else ()
        return ClaimResult(claim, verdict(v.estimate, v.interval, claim.target, claim.rule), v.n, v.collapsed,
                           v.without, collapsed_keys=keys)
    if claim.kind == "delta" and claim.choice is None:
        a, b = (rows[s].to_numpy(dtype=float) for s in claim.score)
        d = (a - b)[np.isfinite(a) & np.isfinite(b)]
        e = float(np.median(d)) if len(d) else float("nan")
        lo, hi = bootstrap_median(d, n_bootstrap=n_bootstrap, confidence=c, seed=seed)
        return ClaimResult(claim, verdict(e, (lo, hi), claim.target, claim.rule), len(d))
    if claim.kind in ("share", "delta"):
        cmp = compare(rows, claim.choice, score=claim.score[0], n_bootstrap=n_bootstrap, seed=seed, confidence=c,
                      options=spec.options if spec is not None else None, results=results,
                      ignore=spec.ignore if spec is not None else (), mode=spec.mode if spec is not None else "max")
        table = cmp.table if cmp.table is not None else pd.DataFrame()
        if claim.option not in table or (claim.kind == "delta" and claim.other not in table):
            missing = claim.option if claim.option not in table else claim.other
            raise UserError(f"claim {claim.id}", f"option {missing!r} is not an option of {claim.choice!r} "
                            f"in these rows (options: {', '.join(cmp.options)}).", "Fix the claim's option.")
        if claim.kind == "share":
            values = table.to_numpy(dtype=float) * (1.0 if cmp.mode == "max" else -1.0)
            top = values == values.max(axis=1, keepdims=True)
            wins = (top / top.sum(axis=1, keepdims=True))[:, list(table.columns).index(claim.option)]
            rng = np.random.default_rng(seed)
            boots = wins[rng.integers(0, len(wins), size=(n_bootstrap, len(wins)))].mean(axis=1) if len(wins) else \
                np.array([np.nan])
            return ClaimResult(claim, verdict(cmp.shares[claim.option], percentile_interval(boots, c), claim.target,
                                              claim.rule), cmp.n)
        d = (table[claim.option] - table[claim.other]).to_numpy(dtype=float)
        lo, hi = bootstrap_median(d, n_bootstrap=n_bootstrap, confidence=c, seed=seed)
        return ClaimResult(claim, verdict(float(np.median(d)), (lo, hi), claim.target, claim.rule), len(d))
    # rank
    ok = rows[(rows["status"] == "ok") if "status" in rows else slice(None)]
    column = claim.choice if claim.choice in ok else "option"
    means = ok.assign(_o=ok[column].astype(str)).groupby([claim.blocks, "_o"])[claim.score[0]].mean().unstack("_o")
    if claim.option not in means:
        raise UserError(f"claim {claim.id}", f"option {claim.option!r} has no finished run in these rows.",
                        "Fix the claim's option or its where filter.")
    ranks = mean_ranks(means)
    interval = rank_interval(means, claim.option, confidence=c, n_bootstrap=n_bootstrap, seed=seed)
    return ClaimResult(claim, rank_verdict(ranks, claim.option, interval), len(means.dropna()), rank=ranks[claim.option])
