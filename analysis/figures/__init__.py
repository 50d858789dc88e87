"""The figures: Plotly figures drawn from the statistics, shared by the
dashboard and the HTML report (:mod:`.core` holds a run directory's view and
the comparison figures; the others one family of figures each, and
:mod:`.figurekit` their common pieces).

May import: ``analysis.reading``, ``analysis.stats``, the ground floor of
``analysis``, ``study.store`` (the claims figure reads the sealed claims)
and the ground floor of ``study``; never ``pages``.

Every name below is importable from here (``from seedsweep.analysis.figures import NAME``); it is
imported from its module on first use, so importing one module of the room
loads no other.
"""

from __future__ import annotations

from seedsweep.study.rooms import face

__all__, __getattr__, __dir__ = face(__name__, globals(), {
    "budgetfigure": ("budget_figure",),
    "claimsfigure": ("claims_figure",),
    "core": ("FIGURE_IDS", "RunView", "load_view", "compare_view", "progress_figure", "distribution_figure",
             "differences_figure", "winshares_figure", "sigma_figure", "seeds_figure", "seed_distribution_figure",
             "curves_figure", "confusion_figure", "problems_figure", "default_trials", "difference_bins",
             "MAX_BINS"),
    "figurekit": ("COLORS", "TABLE_MARGIN", "option_color", "empty_figure", "table_height"),
    "robustnessfigure": ("robustness_figure",),
    "seqfigure": ("sequence_figure",),
    "statfigures": ("evp_figure", "importance_figure", "dominance_figure", "parallel_figure", "STAT_FIGURE_IDS",
                    "PARALLEL_COLORS"),
    "trialfigures": ("mean_curves", "learning_figure"),
    "violins": ("bandwidth", "box_stats", "density", "violin_traces", "POINTS_UP_TO"),
})
