"""seedsweep's analysis side: run directories -> tables, tests and reports.

It reads the table contract (``study.schema``, ``study.store``) and never
imports training code. One idea per module, re-exported here::

    from analysis import load, compare, seed_variance, aso, p_improvement

Statistics are pure functions of DataFrames/arrays; randomness comes from a
``seed`` argument.
"""

from .agreement import RankAgreement, rank_agreement
from .aso import ASOResult, aso, aso_matrix
from .dominance import Dominance, dominance
from .evp import expected_max, expected_max_sd, expected_selected
from .importance import Importance, fanova, importance
from .imported import import_csv
from .improvement import Improvement, p_improvement
from .load import load, load_epochs
from .multiple import holm
from .paired import Comparison, compare, compare_tasks
from .report import export_csv, report
from .seeds import ks_test, seed_distribution, seed_distributions, seed_variance
from .tables import Table, comparison_table, seed_variance_table

__all__ = [
    "load", "load_epochs", "compare", "compare_tasks", "Comparison", "seed_variance", "seed_distribution",
    "seed_distributions", "ks_test", "aso", "ASOResult", "p_improvement", "Improvement", "expected_max",
    "expected_max_sd", "holm", "importance", "comparison_table", "seed_variance_table", "Table", "report",
    "export_csv", "import_csv", "rank_agreement", "RankAgreement", "aso_matrix", "dominance", "Dominance",
    "expected_selected", "fanova", "Importance",
]
