"""How a study runs: the runner and its Ray session (:mod:`.runner`,
:mod:`.session`, :mod:`.raydaemons`), Tune fed in waves (:mod:`.feed`), the
driver's callback that stores each finished trial (:mod:`.callback`,
:mod:`.failures`), a trial inside a worker (:mod:`.trial`), resuming
(:mod:`.resume`), adaptive waves (:mod:`.waves`), tuned comparisons
(:mod:`.tuned`) and the study's code shipped to a cluster's workers (:mod:`.shipping`).

May import: ``study.store``, ``study.spec``, ``study.families`` and the
ground floor of ``study``; nothing imports it but the package's face and
the command line.

The runner's own modules (callback, feed) import Ray when imported and are left out of this face;
so is the Python API (:mod:`.pyapi`: ``study.run``, ``check``, ``status``, ``compact``), reached
through the package's face.

Every name below is importable from here (``from seedsweep.study.execution import NAME``); it is
imported from its module on first use, so importing one module of the room
loads no other.
"""

from __future__ import annotations

from seedsweep.study.rooms import face

__all__, __getattr__, __dir__ = face(__name__, globals(), {
    "failures": ("classify_error", "error_text", "error_kind", "OomKills", "memory_cgroup"),
    "raydaemons": ("records_dir", "record_session", "forget_session", "clear_dead_sessions"),
    "resume": ("check_compatible", "check_code", "plan_resume", "ResumePlan"),
    "runner": ("run", "RunSummary", "plan_study", "populations"),
    "session": ("preflight", "accelerators", "check_fits", "remove_stale_tune_folders", "tune_environment", "ray_session",
                "bound_trainable", "TUNE_PREFIX", "FORWARDED_ENV"),
    "shipping": ("Shipment", "plan_shipment", "job_runtime_env", "NEVER_SHIPPED"),
    "trial": ("seed_everything", "Record", "run_trial", "drive_trial", "NoMetrics", "run_group", "trainable",
              "group_trainable"),
    "tuned": ("run_tuned", "ask_values"),
    "waves": ("WavesSummary", "run_until", "check_claims_to_wait_for", "wave_size"),
})
