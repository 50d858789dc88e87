"""Reading run directories: the trials and epochs as tables (:mod:`.load`),
results imported from elsewhere (a CSV file: :mod:`.imported`; a Ray Tune
experiment folder: :mod:`.tunesource`; an Optuna study: :mod:`.optunasource`;
an MLflow experiment: :mod:`.mlflowsource`; a W&B runs export:
:mod:`.wandbsource`; what they share: :mod:`.sources`; which one a command
line names: :mod:`.importers`), the sealed claims judged
(:mod:`.claimverdicts`), what an adaptive or tuned study's directory holds beyond
its trials (:mod:`.rundirs`), and two studies side by side
(:mod:`.crossstudy`).

May import: ``analysis.stats``, the ground floor of ``analysis``,
``study.store``, ``study.spec`` and the ground floor of ``study``; never
``figures`` or ``pages``.

Every name below is importable from here (``from seedsweep.analysis.reading import NAME``); it is
imported from its module on first use, so importing one module of the room
loads no other.
"""

from __future__ import annotations

from seedsweep.study.rooms import face

__all__, __getattr__, __dir__ = face(__name__, globals(), {
    "crossstudy": ("StudyAgreement", "study_agreement", "agreement_table"),
    "imported": ("import_csv", "read_delimited", "write_import", "spec_from_flags", "ImportSpec", "read_import_spec",
                 "rg2017_spec", "RG2017_TASKS"),
    "tunesource": ("import_tune", "read_tune", "is_tune_experiment"),
    "importers": ("import_any", "source_named", "source_kind"),
    "optunasource": ("read_optuna", "import_optuna", "open_optuna_storage"),
    "mlflowsource": ("read_mlflow", "import_mlflow", "mlflow_client"),
    "wandbsource": ("is_wandb_export", "read_wandb", "import_wandb", "WANDB_COLUMNS"),
    "sources": ("SourceTrials", "import_source", "canonical_digest", "finite", "number", "flatten", "require_metric"),
    "claimverdicts": ("ClaimVerdicts", "claim_verdicts", "claim_verdict_tables", "until_of", "judge_claims"),
    "load": ("load_epochs", "trials_frame", "epochs_frame", "comparisons_of", "study_tau", "scoring"),
    "rundirs": ("WavePolicy", "StudyDecisions", "study_decided", "study_tuned", "claims_at"),
})
