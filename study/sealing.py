"""Sealing a claims file into a run directory (DESIGN.md, "Claims and verdicts").

The file is checked (:func:`study.claimsfile.read_claims`), copied into the run
directory as ``claims.yaml`` and recorded in the manifest -- its SHA-256, the
time, its source path and whether trial results existed already -- before
the first trial starts. Sealing a file with other content into a directory
that has sealed claims is refused, unless the earlier claims are superseded
with a reason: the earlier file is kept as ``claims-superseded-<n>.yaml`` and
listed in the manifest with the reason, never deleted.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .claimsfile import read_claims
from .errors import UserError
from .files import file_sha256
from .store import RunDir

__all__ = ["check_claims", "seal", "sealed"]


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


def seal(path: str | Path, rd: RunDir, manifest: dict[str, Any], *, supersede: str | None = None,
         results_existed: bool) -> dict[str, Any]:
    """Copy the claims into ``rd`` and record them in ``manifest`` (which the
    caller writes); a no-op when the same file is sealed already."""
    data, digest = check_claims(path, rd, supersede)
    record = dict(manifest.get("claims") or {})
    if record.get("sha256") == digest:
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
