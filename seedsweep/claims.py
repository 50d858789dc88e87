"""``seedsweep claims seal|verify|check``: seal a claims file into a run
directory before (or after) its results, check that the seal holds, and
validate a claims file (docs/reference/statistics.md, "Claims and verdicts"; :mod:`study.store.sealing`)."""

from __future__ import annotations

import sys

from seedsweep.study.errors import UserError
from seedsweep.study.spec.claimsfile import read_claims
from seedsweep.study.store.rundir import RunDir
from seedsweep.study.store.sealing import seal, verify

__all__ = ["add_claims"]


def _refuse_unpaired(path, rd: RunDir) -> None:
    """An imported run directory: a claim that needs pairs, on a choice judged unpaired, is refused."""
    if rd.read_import_spec() is None:
        return                          # seedsweep's own studies pair by design
    from seedsweep import analysis     # the statistics stack: only to seal claims into an imported directory
    from seedsweep.analysis.stats.unpaired import needs_pairs, unpaired_choices   # (the same stack)

    specs, results = analysis.comparisons_of(rd.path)
    unpaired = unpaired_choices(analysis.load(rd.path), specs, results)
    for i, claim in enumerate(read_claims(path).claims):
        if needs_pairs(claim) and claim.choice in unpaired:
            raise UserError(f"{path}: claims[{i}] ({claim.id})",
                            f"a {claim.kind} claim is taken over paired configurations, but {claim.choice} is judged "
                            f"unpaired in {rd.path} ({unpaired[claim.choice]}).",
                            "Write it as kind: value (an option's mean or median over its runs, with where: "
                            f"{{{claim.choice}: OPTION}}) or kind: rank, which need no pairs; nothing was sealed.")


def _cmd_claims_seal(args) -> int:
    rd = RunDir(args.dir)
    rd.require()
    _refuse_unpaired(args.file, rd)
    with rd.locked():
        manifest = rd.manifest()
        existed = bool(rd.stored_keys()) or rd.read_import_spec() is not None
        record = seal(args.file, rd, manifest, supersede=args.supersede, results_existed=existed)
        rd.write_manifest(manifest)
    when = "after results existed" if record["results_existed"] else "before any result"
    print(f"{args.dir}: claims sealed {when} (sha256 {record['sha256']}, {record['sealed_at']})")
    return 0


def _cmd_claims_verify(args) -> int:
    rd = RunDir(args.dir)
    rd.require()
    check = verify(rd)
    if check.record is None and check.intact:
        raise UserError(str(args.dir), "no claims are sealed into this run directory, so there is nothing to verify.",
                        "Seal a claims file first: seedsweep claims seal FILE DIR (or seedsweep run --claims FILE).")
    if not check.intact:
        print(f"{args.dir}: the seal is BROKEN -- the verdicts of this directory are unsealed:", file=sys.stderr)
        for problem in check.problems:
            print(f"  - {problem}", file=sys.stderr)
        print(check.fix(args.dir), file=sys.stderr)
        return 1
    record = check.record
    files = 1 + len(record.get("superseded") or [])
    stamped = sum(check.stamps.values())
    print(f"{args.dir}: the seal holds -- {files} claims file(s) match the manifest (sha256 {record['sha256']}, "
          f"sealed {record['sealed_at']}); {stamped} trials file(s) carry a stamp, every one the manifest lists")
    return 0


def _cmd_claims_check(args) -> int:
    claims = read_claims(args.file)
    print(f"{args.file}: OK -- {len(claims.claims)} claims on {claims.source}, {len(claims.deviations)} deviations")
    return 0


def add_claims(sub) -> None:
    """The ``claims`` command's parser and its three subcommands."""
    p = sub.add_parser("claims", help="seal a claims file into a run directory, or judge its claims")
    csub = p.add_subparsers(dest="claims_command", required=True)
    q = csub.add_parser("seal", help="seal claims into an existing (or imported) run directory")
    q.add_argument("file")
    q.add_argument("dir")
    q.add_argument("--supersede", metavar="REASON", help="replace claims sealed earlier, keeping them on record")
    q.set_defaults(func=_cmd_claims_seal)
    q = csub.add_parser("verify", help="check that the sealed claims are unchanged (exit 1 when the seal is broken)")
    q.add_argument("dir")
    q.set_defaults(func=_cmd_claims_verify)
    q = csub.add_parser("check", help="validate a claims file (nothing is written)")
    q.add_argument("file")
    q.set_defaults(func=_cmd_claims_check)
