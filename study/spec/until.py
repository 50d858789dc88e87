"""``until:`` -- an adaptive study's stopping settings (docs/reference/statistics.md, "Adaptive studies").

A study file with ``until:`` runs its ``samples`` configurations as a first
wave, then adds waves of configurations from the same sampler stream until
every tracked comparison is decided or the budget is spent. This module
holds the settings and their validation (the engine floor: the statistics
that decide live in :mod:`analysis.stats.sequential`, and the command line joins
the two through :mod:`study.execution.waves`' policy interface).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["Look", "Policy", "Until", "parse_until", "look_schedule", "auto_spending_wave", "UNTIL_KEYS", "FAMILY_RANGES",
           "SPENDING_FUNCTIONS",
           "SPENDING_LOOKS", "NORMAL_METHODS", "NORMAL_FAILURES"]

UNTIL_KEYS = ("decide", "statistic", "delta", "confidence", "method", "range", "budget", "wave", "lever",
              "claims", "spending", "power", "assume_normal")
#: ``until.spending``: the alpha-spending functions of ``method: spending``
SPENDING_FUNCTIONS = ("obf", "pocock")
#: the methods that judge a mean by a normal approximation (refused for ``statistic: mean``
#: unless ``assume_normal: true``) and the false-winner rate each showed on a 5 % collapse
#: null (2,000 studies of 80 configurations; ``tests/test_spending.py`` measures it again)
NORMAL_METHODS = ("asymptotic", "spending")
NORMAL_FAILURES = {"asymptotic": "about 60 %", "spending": "about 50 %"}
#: ``method: spending`` with ``wave: auto`` looks at most this many times (the first wave, then equal waves of the
#: rest rounded up: fewer looks at small budgets, e.g. 22 at a budget of 46 with a first wave of 4)
SPENDING_LOOKS = 40
BUDGET_KEYS = ("samples", "trials", "hours")
#: the bounds of a family's test score (accuracy, F1), the default ``range`` of ``method: exact``
FAMILY_RANGES = {"tagger": (0.0, 1.0), "transformer": (0.0, 1.0), "sentence": (0.0, 1.0)}


@dataclass(frozen=True)
class Until:
    """Validated ``until:`` settings. ``decide`` is the compared choices to
    decide (all by default); ``range`` is None where the method needs none;
    ``wave`` is the configurations per wave (0: auto); budgets of None are unset."""

    decide: tuple[str, ...]
    statistic: str = "share"
    delta: float = 0.05
    confidence: float = 0.95
    method: str = "exact"
    range: tuple[float, float] | None = (0.0, 1.0)
    budget_samples: int | None = None
    budget_trials: int | None = None
    budget_hours: float | None = None
    wave: int = 0
    lever: str = "fixed"
    spending: str = "obf"
    power: float = 0.8
    assume_normal: bool = False
    claims: bool = False                                # wait for the sealed claims' gates too
    claim_bounds: tuple[float, float] | None = None     # the scores' bounds for claims' means (range, else the family's)

    def sample_cap(self, trials_per_config: int) -> int | None:
        """The most configurations the samples and trials budgets allow (None: neither is set).

        >>> Until(decide=("c",), budget_samples=40, budget_trials=100).sample_cap(4)
        25
        """
        caps = [c for c in (self.budget_samples,
                            None if self.budget_trials is None else self.budget_trials // trials_per_config)
                if c is not None]
        return min(caps) if caps else None

    def spending_wave(self, samples: int, trials_per_config: int) -> int:
        """``method: spending``'s configurations per wave: ``wave``, or (auto)
        the budget after the first wave in :data:`SPENDING_LOOKS` − 1 equal
        waves; the same on every machine, so a resume looks where the run did.

        >>> Until(decide=("c",), method="spending", budget_samples=100).spending_wave(13, 4)
        3
        """
        if self.wave:
            return self.wave
        return auto_spending_wave(samples, self.sample_cap(trials_per_config) or samples)

    def looks(self, samples: int, trials_per_config: int) -> list[int]:
        """``method: spending``'s looks: the configurations run at each (:func:`look_schedule`)."""
        cap = self.sample_cap(trials_per_config) or samples
        return look_schedule(samples, self.spending_wave(samples, trials_per_config), cap)

    @property
    def alpha(self) -> float:
        """1 - confidence: the chance of any false decision, over every sequence and look."""
        return 1.0 - self.confidence

    def as_dict(self) -> dict[str, Any]:
        """The settings as the manifest records them."""
        return {"decide": list(self.decide), "statistic": self.statistic, "delta": self.delta,
                "confidence": self.confidence, "method": self.method,
                "range": None if self.range is None else list(self.range),
                "budget": {"samples": self.budget_samples, "trials": self.budget_trials, "hours": self.budget_hours},
                "wave": self.wave or "auto", "lever": self.lever,
                **({"spending": self.spending, "power": self.power} if self.method == "spending" else {}),
                **({"assume_normal": True} if self.assume_normal else {}),
                **({"claims": True} if self.claims else {})}


def auto_spending_wave(first: int, cap: int) -> int:
    """``method: spending``'s automatic wave: the budget after the first wave in :data:`SPENDING_LOOKS` − 1 waves."""
    return max(1, math.ceil((cap - first) / (SPENDING_LOOKS - 1)))


def look_schedule(first: int, wave: int, cap: int) -> list[int]:
    """Configurations run at each look: the first wave, then ``wave`` more at a time, the last at ``cap``.

    >>> look_schedule(4, 3, 12)
    [4, 7, 10, 12]
    """
    looks, n = [], min(first, cap)
    while True:
        looks.append(n)
        if n >= cap:
            return looks
        n = min(n + max(1, wave), cap)


def _positive(v, value: Any, key: str) -> float:
    number = float(v.number(value, key))
    if number <= 0:
        v.fail(key, f"{value!r} is not above 0.", "Give a positive number.")
    return number


def parse_until(v, value: Any, *, family: str, samples: int, compare, trials_per_config: int,
                need_budget: bool = True) -> Until:
    """Validate the ``until:`` mapping ``value`` with the space validator ``v``
    (located errors, exit 2); ``samples`` is the first wave, ``compare`` the
    study's compared choices; ``need_budget`` False for a replay of stored rows."""
    m = v.mapping(value if value is not None else {}, "until")
    v.known_keys(m, "until", UNTIL_KEYS)
    names = [name for name, _ in compare]
    decide = m.get("decide", names)
    if isinstance(decide, str):
        decide = [decide]
    if not isinstance(decide, list) or not decide:
        v.fail("until.decide", f"expected a list of compared choices, got {decide!r}.",
               f"Name one or more of: {', '.join(names)}.")
    for name in decide:
        if name not in names:
            v.fail("until.decide", f"{name!r} is not a compared choice of this study.",
                   f"Name one or more of the choices under compare: {', '.join(names)}.")
    statistic = v.one_of(m.get("statistic", "share"), "until.statistic", ("share", "mean"))
    delta = float(v.number(m.get("delta", 0.05), "until.delta"))
    if delta < 0:
        v.fail("until.delta", f"{delta!r} is negative.", "The equivalence margin is >= 0 (0: never 'equivalent').")
    if statistic == "share" and delta >= 0.5:
        v.fail("until.delta", f"{delta!r} is not below 0.5.", "With statistic: share the margin is around 1/2, "
               "so it must be below 0.5 (0.05 is the default).")
    confidence = float(v.number(m.get("confidence", 0.95), "until.confidence"))
    if not 0 < confidence < 1:
        v.fail("until.confidence", f"{confidence!r} is not inside (0, 1).", "Write it as 0.95, not 95.")
    method = v.one_of(m.get("method", "exact"), "until.method", ("exact", "asymptotic", "spending"))
    spending = v.one_of(m.get("spending", "obf"), "until.spending", SPENDING_FUNCTIONS)
    power = float(v.number(m.get("power", 0.8), "until.power"))
    if not 0.5 <= power < 1:
        v.fail("until.power", f"{power!r} is not inside [0.5, 1).", "Write it as 0.8, not 80.")
    for key in ("spending", "power"):
        if key in m and method != "spending":
            v.fail(f"until.{key}", f"only method: spending reads it (method is {method}).",
                   f"Remove until.{key}, or set until.method: spending.")
    bounds: tuple[float, float] | None = None
    if "range" in m:
        r = m["range"]
        if not isinstance(r, list) or len(r) != 2:
            v.fail("until.range", f"expected [lo, hi], got {r!r}.", "Give the bounds of a score, e.g. [0, 1].")
        lo, hi = float(v.number(r[0], "until.range")), float(v.number(r[1], "until.range"))
        if lo >= hi:
            v.fail("until.range", f"lo {lo!r} is not below hi {hi!r}.", "Write [lo, hi] with lo < hi.")
        bounds = (lo, hi)
    elif method == "exact" and statistic == "mean":
        bounds = FAMILY_RANGES.get(family)
        if bounds is None:
            v.fail("until.range", f"the {family} family's scores have no known bounds, and method: exact "
                   "with statistic: mean needs them.", "Give until.range: [lo, hi], or use statistic: share (or "
                   "method: asymptotic with until.assume_normal: true).")
    budget = v.mapping(m.get("budget", {}) or {}, "until.budget")
    v.known_keys(budget, "until.budget", BUDGET_KEYS)
    b_samples = v.integer(budget["samples"], "until.budget.samples", minimum=1) if "samples" in budget else None
    b_trials = v.integer(budget["trials"], "until.budget.trials", minimum=1) if "trials" in budget else None
    b_hours = _positive(v, budget["hours"], "until.budget.hours") if "hours" in budget else None
    if b_samples is not None and b_samples < samples:
        v.fail("until.budget.samples", f"{b_samples} is below the first wave (samples: {samples}).",
               f"Give a budget of at least {samples} configurations, or fewer samples.")
    if b_trials is not None and b_trials < samples * trials_per_config:
        v.fail("until.budget.trials", f"{b_trials} is below the first wave's {samples * trials_per_config} trials.",
               f"Give at least {samples * trials_per_config} trials, or fewer samples.")
    if need_budget and b_samples is None and b_trials is None and b_hours is None:
        v.fail("until.budget", "no budget is set: an undecided comparison would run for ever.",
               "Give at least one of until.budget.samples, .trials or .hours.")
    assume_normal = m.get("assume_normal", False)
    if not isinstance(assume_normal, bool):
        v.fail("until.assume_normal", f"expected true or false, got {assume_normal!r}.",
               "Write until.assume_normal: true to accept the normal approximation of the mean.")
    if statistic == "mean" and method in NORMAL_METHODS and not assume_normal:
        v.fail("until.method", f"method: {method} with statistic: mean trusts a normal approximation of the "
               "configurations' differences, and skewed differences break it: where one option collapses in 5 % "
               f"of configurations and the mean difference is 0, it declared a false winner in "
               f"{NORMAL_FAILURES[method]} of simulated studies (tests/test_spending.py).",
               "Use method: exact with until.range (valid for any differences), or statistic: share; or, if "
               "your differences are close to normal (no collapses, no long tail), write until.assume_normal: "
               "true.")
    if method == "spending" and need_budget and b_samples is None and b_trials is None:
        v.fail("until.budget", "method: spending spends its level over the budget's configurations, and no "
               "configuration budget is set.", "Give until.budget.samples (or .trials); `seedsweep plan` "
               "recommends one for power 0.8 at the margin.")
    wave = m.get("wave", "auto")
    wave = 0 if wave == "auto" else v.integer(wave, "until.wave", minimum=1)
    lever = v.one_of(m.get("lever", "fixed"), "until.lever", ("fixed", "auto"))
    if lever == "auto":
        v.fail("until.lever", "lever: auto (seeds per configuration chosen each wave) is withdrawn: the variance "
               "a trial buys, (var_config + var_seed / k) * k, is smallest at k = 1 whenever configurations differ, "
               "so new configurations beat new seeds (docs/reference/statistics.md, 'Seeds per configuration').",
               "Use lever: fixed (every configuration gets `seeds`).")
    claims = m.get("claims", False)
    if not isinstance(claims, bool):
        v.fail("until.claims", f"expected true or false, got {claims!r}.",
               "Write until.claims: true to run until every sealed claim's gate is reached (or the budget is spent).")
    return Until(decide=tuple(decide), statistic=statistic, delta=delta, confidence=confidence, method=method,
                 range=bounds, budget_samples=b_samples, budget_trials=b_trials, budget_hours=b_hours, wave=wave,
                 lever=lever, spending=spending, power=power, assume_normal=assume_normal, claims=claims,
                 claim_bounds=bounds or FAMILY_RANGES.get(family))


@dataclass(frozen=True)
class Look:
    """A policy's answer after a wave: stop now (every comparison decided), and why."""

    stop: bool
    why: str
    record: dict | None = None     # what the look decided and with which boundaries (kept in the run directory)


class Policy(Protocol):
    """Asked after each wave with the run directory and the configurations
    run so far (c00000 … c(samples-1)); it must judge only those."""

    def __call__(self, out: str, samples: int, *, final: bool = False) -> Look:
        """Whether to stop after ``samples`` configurations (``final``: the study
        stops after this look whatever it says: its budget is spent)."""
