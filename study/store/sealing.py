"""Sealing a claims file into a run directory (docs/reference/statistics.md, "Claims and verdicts").

The file is checked (:func:`study.spec.claimsfile.read_claims`), copied into the run
directory as ``claims.yaml`` and recorded in the manifest -- its SHA-256, the
time, its source path and whether trial results existed already -- before
the first trial starts. Sealing a file with other content into a directory
that has sealed claims is refused, unless the earlier claims are superseded
with a reason: the earlier file is kept as ``claims-superseded-<n>.yaml`` and
listed in the manifest with the reason, never deleted.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..files import file_sha256
from ..spec.claimsfile import Claims, read_claims
from .rundir import RunDir

__all__ = ["check_claims", "seal", "sealed", "sealed_claims", "SealCheck", "verify", "refuse_broken_seal"]


def check_claims(path: str | Path, rd: RunDir, supersede: str | None) -> tuple[bytes, str]:
    """Validate ``path`` for sealing into ``rd`` (nothing is written); returns its bytes and SHA-256."""
    read_claims(path)
    data = Path(path).read_bytes()
    digest = file_sha256(path)
    record = sealed(rd)
    if record and record["sha256"] != digest and not supersede:
        raise UserError(f"{path}", f"differs from the claims sealed into {rd.path} on {record['sealed_at']} "
                        f"(sha256 {record['sha256'][:12]}…, now {digest[:12]}…).",
                        "Claims cannot change once sealed. To replace them, keep the record: pass "
                        "--supersede \"why the claims change\" (the earlier claims stay in the run directory and "
                        "the report).")
    if supersede is not None and not supersede.strip():
        raise UserError("--supersede", "the reason is empty.", "Say why the sealed claims are replaced.")
    return data, digest


def sealed(rd: RunDir) -> dict[str, Any] | None:
    """The manifest's record of the sealed claims (None when there are none)."""
    return rd.manifest().get("claims") if rd.exists() else None


def sealed_claims(rd: RunDir) -> Claims | None:
    """The claims file sealed into ``rd``, read and checked (None when there is none)."""
    return read_claims(rd.claims_path) if rd.storage.is_file(rd.claims_path) else None


def seal(path: str | Path, rd: RunDir, manifest: dict[str, Any], *, supersede: str | None = None,
         results_existed: bool) -> dict[str, Any]:
    """Copy the claims into ``rd`` and record them in ``manifest`` (which the
    caller writes); a no-op when the same file is sealed already."""
    data, digest = check_claims(path, rd, supersede)
    record = dict(manifest.get("claims") or {})
    if record.get("sha256") == digest:
        if not rd.storage.is_file(rd.claims_path) or file_sha256(rd.claims_path) != digest:
            rd.write_claims(data)           # the sealed file itself, sealed again: restores an edited copy
        return record
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    superseded = list(record.get("superseded", []))
    if record:
        name = rd.supersede_claims(len(superseded) + 1)
        superseded.append({"file": name, "sha256": record["sha256"], "sealed_at": record["sealed_at"],
                           "results_existed": record.get("results_existed"), "source": record.get("source"),
                           "superseded_at": now, "reason": supersede})
    rd.write_claims(data)
    record = {"file": rd.claims_path.name, "sha256": digest, "sealed_at": now, "source": str(Path(path).resolve()),
              "results_existed": bool(results_existed), "superseded": superseded}
    manifest["claims"] = record
    return record


@dataclass
class SealCheck:
    """What :func:`verify` found: the manifest's claims record (None when no
    claims are sealed) and each way the seal is broken (none: intact)."""
    record: dict[str, Any] | None
    problems: list[str] = field(default_factory=list)
    stamps: dict[str, int] = field(default_factory=dict)      # hash -> trials files stamped with it

    @property
    def intact(self) -> bool:
        """No problem found."""
        return not self.problems

    def fix(self, run_dir) -> str:
        """What to do about a broken seal of ``run_dir``: the one wording that the
        run's refusal, ``seedsweep claims verify`` and every report give."""
        source = (self.record or {}).get("source")
        again = f" (seedsweep claims seal {source} {run_dir} writes the sealed file back)" if source else ""
        return (f"Restore the sealed files{again} so that 'seedsweep claims verify {run_dir}' passes; "
                "until then every verdict of this directory is unsealed and no new result is stored.")


def _short(digest: str | None) -> str:
    return f"{digest[:16]}…" if digest else "none"


def verify(rd: RunDir) -> SealCheck:
    """Check the sealed claims of ``rd`` three ways: the sealed file against
    the manifest's hash, every superseded file against its recorded hash, and
    the hashes stamped in the trials files (:mod:`study.store.stamps`) against the
    manifest's record -- which catches an edit of the manifest as well, once
    any trial was stored after sealing."""
    record = sealed(rd)
    stamps = rd.seal_stamps() if rd.exists() else {}
    check = SealCheck(record, stamps=stamps)
    s = rd.storage
    if record:
        files = [(record.get("file") or rd.claims_path.name, record.get("sha256"), "sealed")]
        files += [(old.get("file"), old.get("sha256"), "superseded") for old in record.get("superseded") or []]
        for name, digest, what in files:
            path = s.join(str(name))
            if not s.is_file(path):
                check.problems.append(f"{name} ({what} claims) is missing: sealed sha256 {_short(digest)}.")
                continue
            now = file_sha256(path) if not s.remote else hashlib.sha256(s.read_text(path).encode()).hexdigest()
            if now != digest:
                check.problems.append(f"{name} changed after it was sealed: sealed sha256 {_short(digest)}, "
                                      f"now {_short(now)}.")
    known = {record.get("sha256")} | {old.get("sha256") for old in record.get("superseded") or []} if record else set()
    for digest, n in sorted(stamps.items()):
        if digest not in known:
            where = ("the manifest records no sealed claims" if not record else
                     f"the manifest records sha256 {_short(record.get('sha256'))}")
            check.problems.append(f"{n} trials file(s) were written under claims sealed with sha256 "
                                  f"{_short(digest)}, but {where}: manifest.json was edited.")
    return check


def refuse_broken_seal(rd: RunDir) -> None:
    """Raise a :class:`UserError` when the sealed claims of ``rd`` fail :func:`verify`."""
    check = verify(rd)
    if not check.intact:
        raise UserError(str(rd.path), "the sealed claims do not match the record: " + " ".join(check.problems),
                        check.fix(rd.path))
