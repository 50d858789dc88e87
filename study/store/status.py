"""``seedsweep status DIR``: how far a study is, and what went wrong."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .rundir import RunDir

__all__ = ["StudyStatus", "study_status"]


@dataclass
class StudyStatus:
    """Counts of a run directory: planned trials, stored rows by status, by
    option, and the most common failure reasons."""

    study: str
    planned: int
    stored: int
    by_status: dict[str, int]
    by_option: dict[str, dict[str, int]] = field(default_factory=dict)
    reasons: list[tuple[str, int]] = field(default_factory=list)
    last_finished: str | None = None

    def render(self) -> str:
        """The status as ``seedsweep status`` prints it."""
        lines = [f"study {self.study}: {self.stored}/{self.planned} trials stored "
                 f"({self.planned - self.stored if self.planned >= self.stored else 0} missing)"]
        lines.append("  status: " + (", ".join(f"{k} {v}" for k, v in sorted(self.by_status.items())) or "none"))
        for opt, counts in self.by_option.items():
            lines.append(f"  {opt}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        for reason, n in self.reasons:
            lines.append(f"  not ok x{n}: {reason}")
        if self.last_finished:
            lines.append(f"  last trial finished at {self.last_finished}")
        return "\n".join(lines)


def study_status(run_dir: str | Path) -> StudyStatus:
    """Summarise the run directory ``run_dir`` (works while a study is running)."""
    rd = RunDir(run_dir)
    rd.require()
    manifest = rd.manifest()
    table = rd.read_trials(["choice", "option", "status", "reason", "finished_at"])
    if table is None:
        return StudyStatus(manifest.get("study", "?"), manifest.get("n_trials", 0), 0, {})
    imported = manifest.get("imported")
    if imported is not None:            # others' results: every row is stored, nothing is planned
        rows = table.select(["status", "reason"]).to_pylist()
        return StudyStatus(
            study=f"{manifest.get('study', '?')} (imported from {imported.get('source')})",
            planned=len(rows), stored=len(rows), by_status=dict(Counter(r["status"] for r in rows)),
            reasons=Counter(r["reason"] for r in rows if r["status"] != "ok").most_common(5))
    rows = table.select(["choice", "option", "status", "reason", "finished_at"]).to_pylist()
    by_option: dict[str, Counter] = {}
    for r in rows:
        by_option.setdefault(f"{r['choice']}={r['option']}", Counter())[r["status"]] += 1
    reasons = Counter(r["reason"] for r in rows if r["status"] != "ok")
    finished = [r["finished_at"] for r in rows if r["finished_at"] is not None]
    return StudyStatus(
        study=manifest.get("study", "?"), planned=manifest.get("n_trials", 0), stored=len(rows),
        by_status=dict(Counter(r["status"] for r in rows)),
        by_option={k: dict(v) for k, v in by_option.items()},
        reasons=reasons.most_common(5),
        last_finished=max(finished).isoformat() if finished else None,
    )
