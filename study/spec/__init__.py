"""What a study is: the study file read and checked (:mod:`.spacefile`,
:mod:`.spacecheck`), the search space and its ``until:`` and ``tune:`` blocks
(:mod:`.space`, :mod:`.until`, :mod:`.tuning`), claims files
(:mod:`.claimsfile`), and the configurations and trials a study holds
(:mod:`.sampling`, :mod:`.grid`).

May import: ``study.families`` (its registry) and the ground floor of
``study`` (errors, files, schema, processes, testbeds); never
``study.store`` or ``study.execution``: a study is defined without running
it or storing anything.

Every name below is importable from here (``from seedsweep.study.spec import NAME``); it is
imported from its module on first use, so importing one module of the room
loads no other.
"""

from __future__ import annotations

from seedsweep.study.rooms import face

__all__, __getattr__, __dir__ = face(__name__, globals(), {
    "claimsfile": ("Claim", "Deviation", "Claims", "Rule", "read_claims", "parse_claims", "KINDS", "IMPACTS",
                   "CLAIM_KEYS", "RULE_KINDS"),
    "grid": ("trial_grid", "effective_params", "hyperparameter_types", "trials_schema_of"),
    "sampling": ("repeated_configurations", "sample_configs", "config_id", "arrow_type", "value_at", "cast_value"),
    "space": ("Param", "Train", "type_name", "common_type", "Resources", "Space", "RESERVED_NAMES"),
    "spacecheck": ("SpaceValidator", "max_trials", "MAX_TRIALS", "LIMIT_ENV"),
    "spacefile": ("load_space", "parse_space", "read_yaml", "read_text"),
    "tuning": ("Tune", "parse_tune", "TUNE_KEYS", "TUNE_SAMPLERS", "MAX_STARTUP", "LEGACY_STARTUP", "search_name",
               "position_id", "trial_seed", "sampler_seed_of"),
    "until": ("Look", "Policy", "Until", "parse_until", "look_schedule", "auto_spending_wave", "UNTIL_KEYS", "FAMILY_RANGES",
              "SPENDING_FUNCTIONS",
              "SPENDING_LOOKS"),
})
