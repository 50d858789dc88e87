r"""seedsweep's analysis side: run directories -> tables, tests and reports.

It reads the table contract (``study.schema``, ``study.store``) and never
imports training code. Its rooms, read top-down: :mod:`analysis.pages`
(reports, the dashboard, the ledger page), :mod:`analysis.figures` (Plotly,
from the statistics), :mod:`analysis.reading` (run directories as tables)
and :mod:`analysis.stats` (pure functions of arrays and tables), over its
ground floor (``specs``, ``tables``); a room imports only the rooms below
it. Every name a notebook needs is exported here,
grouped by topic (README, "Analysis"); statistics are pure functions of
DataFrames or arrays, with randomness from a ``seed`` argument. The examples
read ``run_dir``: six configurations x Softmax/CRF x two seeds of the
synthetic family, CRF better by 0.05.

**Reading run directories.** A loaded table carries its study's ``train.mode``
and metric (``df.attrs``); :func:`compare` follows that mode unless told.

>>> df = load(run_dir)
>>> len(df), df.attrs["mode"], [s.choice for s in comparisons_of(run_dir)[0]]
(24, 'max', ['classifier'])

**Paired comparisons and seeds** (the paper's tables).

>>> c = compare(df, "classifier")
>>> c.best, c.n, round(c.shares["crf"], 2)
('crf', 6, 1.0)
>>> round(float(seed_variance(df)["median"].iloc[0]), 4) >= 0
True

**Dominance and improvement** (ASO, P(A > B), Holm).

>>> a, b = c.scores("crf"), c.scores("softmax")
>>> aso(a, b, seed=0).dominant, round(p_improvement(a, b, paired=True).p, 2), holm([0.01, 0.04])[1].tolist()
(True, 1.0, [True, True])

**Tuning budgets** (expected validation performance): drawing every run
without replacement finds the best one.

>>> crf = df[df.option == "crf"].test_score
>>> float(expected_max(crf, n=len(crf), replace=False)[0]) == float(crf.max())
True

**Importance** (fANOVA on a seeded forest): the compared choice explains most here.

>>> imp = importance(df, ["classifier", "optimizer", "layers"])
>>> max(imp, key=imp.get)
'classifier'

**Claims, robustness and agreement across studies**: :func:`judge` a claim
of a claims file (:func:`read_claims`), the sealed claims of a run directory
with their verdicts (:func:`claim_verdicts`, :func:`claim_verdict_tables`), :func:`robustness` over evaluation
sets, :func:`rank_agreement` and :func:`agreement_table` between studies.

>>> import pathlib, tempfile
>>> claims = pathlib.Path(tempfile.mkdtemp()) / "claims.yaml"
>>> _ = claims.write_text("source: a doctest\nclaims:\n- {id: crf-wins, kind: share, choice: classifier, "
...                       "option: crf, target: 0.6, rule: {above: true}}\n")
>>> judge(read_claims(claims).claims[0], df).verdict.verdict
'reproduced'
>>> rank_agreement({"a": 3, "b": 2, "c": 1}, {"a": 0.9, "b": 0.5, "c": 0.1}).tau
1.0

**Tables and reports.**

>>> print(comparison_table(compare_tasks(df, "classifier")).markdown().splitlines()[0])
| Task | # configs |  | crf | softmax |
>>> report(run_dir).startswith("**classifier**")
True
"""

from seedsweep.study.spec.claimsfile import Claims, read_claims

from .figures.robustnessfigure import robustness_figure
from .pages.report import export_csv, report, sections
from .reading.crossstudy import agreement_table, study_agreement
from .reading.imported import import_csv, read_import_spec
from .reading.claimverdicts import ClaimVerdicts, claim_verdicts, claim_verdict_tables
from .reading.load import comparisons_of, load, load_epochs, study_tau
from .specs import ComparisonSpec, rows_where
from .stats.agreement import RankAgreement, rank_agreement
from .stats.aso import ASOResult, aso, aso_matrix
from .stats.claims import ClaimResult, judge
from .stats.dominance import Dominance, dominance
from .stats.evp import expected_max, expected_max_sd, expected_selected
from .stats.importance import Importance, fanova, importance
from .stats.improvement import Improvement, p_improvement
from .stats.multiple import holm
from .stats.paired import Comparison, compare, compare_spec, compare_tasks
from .stats.robustness import Robustness, robustness, robustness_table
from .stats.seeds import ks_test, seed_distribution, seed_distributions, seed_variance
from .tables import Table, comparison_table, dominance_table, importance_table, seed_variance_table

__all__ = [
    # reading run directories
    "load", "load_epochs", "comparisons_of", "ComparisonSpec", "rows_where", "study_tau", "read_import_spec",
    "import_csv", "export_csv",
    # paired comparisons and seeds
    "compare", "compare_tasks", "compare_spec", "Comparison", "seed_variance", "seed_distribution",
    "seed_distributions", "ks_test",
    # dominance and improvement
    "aso", "aso_matrix", "ASOResult", "dominance", "Dominance", "p_improvement", "Improvement", "holm",
    # tuning budgets
    "expected_max", "expected_max_sd", "expected_selected",
    # importance
    "importance", "fanova", "Importance",
    # claims, robustness, agreement
    "read_claims", "Claims", "judge", "ClaimResult", "claim_verdicts", "claim_verdict_tables", "ClaimVerdicts",
    "robustness", "robustness_table", "robustness_figure", "Robustness",
    "rank_agreement", "RankAgreement", "agreement_table", "study_agreement",
    # tables and reports
    "Table", "comparison_table", "seed_variance_table", "dominance_table", "importance_table", "report", "sections",
]
