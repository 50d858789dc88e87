"""``tune:`` -- a tuned comparison's settings (docs/reference/statistics.md, "Tuned comparisons").

A study file with ``tune:`` does not draw random configurations: every
option of the compared choice is tuned by Optuna, ``replicates`` times, each
search with ``budget`` trials. This module holds the settings, their
validation and the names every part shares (a search's name, a trial's seed
and configuration id); the driver is :mod:`study.execution.tuned`, the statistics
:mod:`analysis.stats.tuned`.

>>> trial_seed(0, 2, 5) == trial_seed(0, 2, 5), trial_seed(0, 2, 5) == trial_seed(0, 2, 6)
(True, False)
>>> search_name("crf", 3), position_id("crf", 3, 12)
('crf@r03', 'crf@r03@p0012')
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Tune", "parse_tune", "TUNE_KEYS", "TUNE_SAMPLERS", "MAX_STARTUP", "LEGACY_STARTUP", "search_name",
           "position_id", "trial_seed",
           "sampler_seed_of"]

TUNE_KEYS = ("sampler", "budget", "replicates", "wave", "startup")
TUNE_SAMPLERS = ("tpe", "qmc", "random")
#: waves per search when ``wave: auto``: a function of the file alone (never
#: of the machine), so the same file proposes the same parameters anywhere
AUTO_WAVES = 8
#: the most random draws a ``tpe`` search makes before it models (Optuna's ``n_startup_trials`` default)
MAX_STARTUP = 10
#: what every ``tpe`` search drew at random before ``tune.startup`` existed (a resume of such a study keeps it)
LEGACY_STARTUP = 10


@dataclass(frozen=True)
class Tune:
    """Validated ``tune:`` settings: the Optuna sampler, trials per search,
    independent searches per option, and trials asked at once per search."""

    sampler: str
    budget: int
    replicates: int
    wave: int
    startup: int = LEGACY_STARTUP

    @property
    def random_positions(self) -> int:
        """How many first positions of each search are random draws: all of a
        ``random`` search; a ``tpe`` search's startup, rounded up to whole
        waves (a wave's trials are all asked before any is told); 0 for ``qmc``.

        >>> Tune("tpe", 32, 2, 4, startup=8).random_positions, Tune("tpe", 12, 2, 4, startup=3).random_positions
        (8, 4)
        """
        if self.sampler == "random":
            return self.budget
        if self.sampler != "tpe":
            return 0
        return min(self.budget, -(-self.startup // self.wave) * self.wave)

    @property
    def waves(self) -> int:
        """Waves per search: ``ceil(budget / wave)``."""
        return math.ceil(self.budget / self.wave)

    def as_dict(self) -> dict[str, Any]:
        """The settings as the manifest records them (``wave`` resolved)."""
        return {"sampler": self.sampler, "budget": self.budget, "replicates": self.replicates, "wave": self.wave,
                "startup": self.startup}


def search_name(option: Any, replicate: int) -> str:
    """The name of the search of ``option``'s replicate ``replicate`` (the ``search`` column)."""
    return f"{option}@r{replicate:02d}"


def position_id(option: Any, replicate: int, position: int) -> str:
    """The ``config_id`` of a tuned trial: its search and its position in it
    (unique per trial: no two options share a configuration in a tuned study)."""
    return f"{search_name(option, replicate)}@p{position:04d}"


def trial_seed(sampler_seed: int, replicate: int, position: int) -> int:
    """The seed of the trial at ``position`` of replicate ``replicate`` (every option's)."""
    return int(np.random.SeedSequence([sampler_seed, 7, replicate, position]).generate_state(1)[0] % (2**31 - 1)) + 1


def sampler_seed_of(sampler_seed: int, replicate: int, position: int) -> int:
    """The Optuna sampler seed for the ask at ``position`` of replicate
    ``replicate``: every option's search of that replicate uses the same one."""
    return int(np.random.SeedSequence([sampler_seed, 11, replicate, position]).generate_state(1)[0])


def parse_tune(v, value: Any, *, mapping: dict, compare, params) -> Tune:
    """Validate the ``tune:`` mapping ``value`` with the space validator ``v``
    (located errors, exit 2); ``mapping`` is the whole file, ``compare`` its
    compared choices, ``params`` its ``space`` parameters."""
    m = v.mapping(value if value is not None else {}, "tune")
    v.known_keys(m, "tune", TUNE_KEYS)
    for key, why in (("samples", "a tuned study's trials are the searches' (replicates x budget per option)"),
                     ("seeds", "each tuned trial's seed is derived from its replicate and position"),
                     ("until", "a tuned study stops at its budget (until: is for random configurations)"),
                     ("sampler", "the Optuna sampler is tune.sampler")):
        if key in mapping:
            v.fail(key, f"'{key}' cannot be given together with tune: {why}.",
                   f"Remove '{key}', or remove tune: to sample random configurations.")
    if len(compare) != 1:
        v.fail("compare", f"a tuned study compares one choice, got {len(compare)}.",
               "Keep one compared choice under compare (tune each other one in its own study).")
    if not params:
        v.fail("space", "a tuned study needs parameters to tune, and space is empty.",
               "Add the hyperparameters to search under space (e.g. lr: {loguniform: [1.0e-4, 1.0e-1]}).")
    sampler = v.one_of(m.get("sampler", "tpe"), "tune.sampler", TUNE_SAMPLERS)
    if "budget" not in m:
        v.fail("tune.budget", "the budget (trials per search) is missing.", "Give tune.budget, e.g. 32.")
    budget = v.integer(m["budget"], "tune.budget", minimum=1)
    replicates = v.integer(m.get("replicates", 10), "tune.replicates", minimum=1)
    if replicates < 2:
        v.fail("tune.replicates", f"{replicates} search per option shows no spread: the tuning itself varies "
               "from search to search, and one search cannot say by how much.",
               "Give at least 2 replicates (10 or more for win shares with a useful interval).")
    wave = m.get("wave", "auto")
    wave = max(1, math.ceil(budget / AUTO_WAVES)) if wave == "auto" else v.integer(wave, "tune.wave", minimum=1)
    if wave > budget:
        v.fail("tune.wave", f"{wave} trials per wave is more than the budget ({budget}).",
               f"Give a wave of at most {budget}, or auto.")
    if m.get("startup", "auto") != "auto":
        startup = v.integer(m["startup"], "tune.startup", minimum=0)
        if startup > budget:
            v.fail("tune.startup", f"{startup} random draws is more than the budget ({budget}).",
                   f"Give at most {budget} (default min({MAX_STARTUP}, budget // 4): TPE models at least half "
                   "of every search).")
        if sampler != "tpe":
            v.fail("tune.startup", f"only sampler: tpe draws at random before it models (sampler is {sampler}).",
                   "Remove tune.startup, or use sampler: tpe.")
    else:
        startup = min(MAX_STARTUP, budget // 4)
    return Tune(sampler=sampler, budget=budget, replicates=replicates, wave=wave, startup=startup)
