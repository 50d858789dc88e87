"""The ``command`` family: any program as a model family (:mod:`.family`),
its metrics read from its output (:mod:`.metrics`), run in a process group
that never outlives the study (:mod:`.program`)."""

from .family import FAMILY, CommandFamily

__all__ = ["FAMILY", "CommandFamily"]
