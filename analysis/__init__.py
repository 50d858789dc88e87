"""seedsweep's analysis side: run directories -> tables, tests and reports.

It reads the table contract (``study.schema``, ``study.store``) and never
imports training code.
"""

from .load import load, load_epochs
from .paired import Comparison, compare

__all__ = ["load", "load_epochs", "compare", "Comparison"]
