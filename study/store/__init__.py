"""Where results live: the run directory (:class:`.rundir.RunDir`) over one
storage engine with a local and an object-store backend (:mod:`.storage`,
:mod:`.backends`), its trial parts and shards (:mod:`.shards`), the rows
they hold (:mod:`.rows`), the manifest (:mod:`.manifest`), the sealed claims
and their stamps (:mod:`.sealing`, :mod:`.stamps`), a study's status
read from it (:mod:`.status`), and the study itself read back from its
manifest (:mod:`.studies`).

May import: ``study.spec``, ``study.families`` (its registry) and the
ground floor of ``study``; never ``study.execution``: results are read
without running anything.

Every name below is importable from here (``from seedsweep.study.store import NAME``); it is
imported from its module on first use, so importing one module of the room
loads no other.
"""

from __future__ import annotations

from seedsweep.study.rooms import face

__all__, __getattr__, __dir__ = face(__name__, globals(), {
    "backends": ("LocalStorage", "ObjectStorage", "open_storage"),
    "manifest": ("build_manifest", "imported_manifest", "versions", "packages", "git_state", "compared_options"),
    "rows": ("trial_row", "epoch_rows", "confusion_rows", "outcome_of", "parse_time", "nan_to_none"),
    "rundir": ("RunDir", "SCHEMA_VERSION"),
    "sealing": ("check_claims", "seal", "sealed", "sealed_claims", "SealCheck", "verify", "refuse_broken_seal"),
    "shards": ("FOLD_PARTS", "MAX_SHARDS", "TABLES", "resolve", "fold", "merge", "compact_all", "shard_name",
               "shard_seq", "fold_parts", "read_resolved", "stored_keys", "Cached"),
    "stamps": ("SEAL_KEY", "stamp", "stamps_of", "union"),
    "status": ("StudyStatus", "study_status"),
    "studies": ("load_study", "study_from_manifest", "hours_spent", "span_hours", "journal_path"),
    "storage": ("Storage", "Vanished", "read_part", "read_part_metadata", "read_parts"),
})
