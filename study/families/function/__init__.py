"""The ``function`` family: the user's own Python function as a model
family (:mod:`.family`); the trial object it receives (:mod:`.trialapi`);
finding and checking it (:mod:`.loader`); a Hugging Face ``Trainer``
callback that reports to it (:mod:`.trainer`, imported on demand)."""

from .family import FAMILY, FunctionFamily
from .trialapi import Trial

__all__ = ["FAMILY", "FunctionFamily", "Trial"]
