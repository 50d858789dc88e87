"""The pages: Markdown, HTML and LaTeX reports (:mod:`.report`,
:mod:`.htmlreport`), the live dashboard (:mod:`.dashboard`,
:mod:`.liveview`, :mod:`.dashaccess`) and the reproduction ledger's page
(:mod:`.reproductions`).

May import: ``analysis.figures``, ``analysis.reading``, ``analysis.stats``,
the ground floor of ``analysis``, ``study.store`` and the ground floor of
``study``; only the package's face and the command line import it.

Every name below is importable from here (``from seedsweep.analysis.pages import NAME``); it is
imported from its module on first use, so importing one module of the room
loads no other.
"""

from __future__ import annotations

from seedsweep.study.rooms import face

__all__, __getattr__, __dir__ = face(__name__, globals(), {
    "dashaccess": ("TOKEN_COOKIE", "is_loopback", "require_token"),
    "dashboard": ("create_app", "serve", "signature", "Views", "trial_options", "only_changed"),
    "htmlreport": ("html_report", "write_html_report", "report_figures", "slug", "write_images"),
    "liveview": ("keep_freed_memory", "freeze_startup", "REFIT_S", "SEED", "RANKS_AFTER_S"),
    "report": ("export_csv", "ReportSection", "sections", "RunJudgement", "judge_run"),
    "reproductions": ("Study", "collect", "sources", "source_outcome", "ledger_markdown", "ledger_html"),
})
