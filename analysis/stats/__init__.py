"""The statistics: pure functions of arrays and trial tables (paired
comparisons and win shares, seeds, dominance, ASO, expected maxima,
importance, confidence sequences, group-sequential boundaries and decisions, tuned comparisons,
robustness, claims and verdicts, unpaired comparisons of imported searches, anytime-valid claim
intervals), each returning values or a :class:`analysis.tables.Table`.

May import: the ground floor of ``analysis`` (its specs and tables),
``study.spec`` (its types) and the ground floor of ``study``; never
``reading``, ``figures``, ``pages`` or ``study.store``: a statistic reads no
run directory and draws nothing.

Every name below is importable from here (``from seedsweep.analysis.stats import NAME``); it is
imported from its module on first use, so importing one module of the room
loads no other.
"""

from __future__ import annotations

from seedsweep.study.rooms import face

__all__, __getattr__, __dir__ = face(__name__, globals(), {
    "afterstop": ("Adjusted", "stagewise", "share_interval", "mean_of_drift", "DENSITY"),
    "agreement": ("RankAgreement", "rank_agreement"),
    "biasadjust": ("bias_adjusted_mean", "planned_counts", "expected_at_stop", "ADJUST_PATHS", "ADJUST_SEED"),
    "anytime": ("mixture_crossing", "median_interval", "ClaimPath", "claim_path", "PRIOR"),
    "aso": ("aso_matrix", "ASOResult", "violation_ratio", "boot_quantiles", "TAU"),
    "claims": ("ClaimResult", "judge", "claim_sequence", "gated", "GATED_RULES", "EMPTY_WHY"),
    "decisions": ("Tracked", "track", "sequence_for", "decisions_table", "replay_markdown"),
    "extension": ("conditional_error", "stage_two", "extended_decision", "extension_record"),
    "tboundaries": ("t_boundaries", "z_of_t", "t_of_z", "PATHS", "SEED", "MIN_UNITS"),
    "units": ("Units", "units", "worst_score", "upto_configurations"),
    "dominance": ("PairDominance", "Dominance"),
    "evp": ("expected_max", "expected_max_sd", "expected_selected", "log_grid", "prepare_weights", "weights_kept",
            "KEPT_WEIGHTS_BYTES"),
    "groupseq": ("SPENDING", "FUTILITY", "spent", "Boundaries", "boundaries",
                 "crossing_probabilities", "constant_boundary", "ShareBoundaries", "share_boundaries",
                 "futility_boundaries", "design_drift", "size_ratio", "inflation"),
    "importance": ("fanova", "Importance", "NOT_SET", "MAX_LEVELS", "MAX_ROWS"),
    "improvement": ("p_improvement", "Improvement"),
    "insights": ("EVPCurve", "ChoiceStats", "choice_stats", "paired_of", "Computed", "compute", "ImportanceGroup",
                 "importance_groups", "start_importance", "evp_curves", "importance_by_task", "parallel_table",
                 "hyperparameters", "comparison_rows", "IMPORTANCE_ROWS", "IMPORTANCE_TREES", "PARALLEL_CONFIGS"),
    "multiple": ("holm",),
    "paired": ("Comparison", "compare", "compare_tasks", "compare_spec", "mode_of", "ALPHA"),
    "pairing": ("RESULT_COLUMNS", "PairedRows", "paired_rows", "pair_ids", "by_config", "option_strings",
                "finished", "as_text"),
    "planning": ("PlanRow", "MethodPlan", "plan", "plan_table", "fixed_configurations", "cheapest"),
    "methods": ("Outcomes", "simulate", "collapse_null", "lognormal_null", "METHODS"),
    "robustness": ("Robustness", "PopulationRow", "robustness_table", "eval_columns", "population_label",
                   "robustness_of", "MAX_POPULATIONS"),
    "scores": ("finite_scores", "finite_pairs"),
    "seeds": ("seed_variance", "seed_distribution", "seed_distributions", "ks_test", "SeedDistribution",
              "selection_scores"),
    "sequential": ("asymptotic_cs", "betting_cs", "bounded_cs", "Sequence", "decide", "share_units", "split_alpha",
                   "GRID", "MIN_ASYMPTOTIC", "OPTIMISE_AT", "TRUNCATION", "CLAIM_TRUNCATION"),
    "significance": ("win_shares", "bootstrap_median", "median_ranks", "prepare_ranks", "ranks_kept",
                     "forget_ranks", "sign_test", "wilcoxon_signed_rank", "brown_forsythe", "marks"),
    "spending": ("SpendingPath", "spending_path", "look_counts", "design_configurations", "recommend_budget",
                 "Budget", "spending_looks", "FUTILE",
                 "MIN_MEAN_UNITS"),
    "tuned": ("best_so_far", "tuned_outcomes", "TunedComparison", "tuned_comparison", "tuned_table",
              "random_positions", "TPE_STARTUP", "best_positions"),
    "unpaired": ("Coverage", "coverage", "Unpaired", "UnpairedOption", "UnpairedDelta", "unpaired", "unpaired_tables",
                 "banner", "pairing_lines", "needs_pairs", "unpaired_choices", "PAIRED_SHARE", "MIN_PAIRS", "EVP_AT"),
    "verdict": ("Verdict", "outcome", "value_estimate", "ValueEstimate", "mean_ranks", "rank_interval",
                "rank_verdict", "percentile_interval", "REPRODUCED", "NOT_REPRODUCED", "INCONCLUSIVE",
                "BAND_WARNING"),
})
