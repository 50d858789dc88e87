"""The tagger family: its checks of a study file, what it resolves, and its trials' models (no torch here)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import UserError
from ...schema import Train, TrialSpec
from ..base import FamilyBase, named_values
from .corpora import DATASETS, load_corpus
from .embeddings import load_vectors
from .model import TaggerModel
from .settings import DEFAULTS, LIMITS, TASK_KEYS

if TYPE_CHECKING:
    from ..view import StudyView

__all__ = ["FAMILY"]

class TaggerFamily(FamilyBase):
    """The tagger family (see the package docstring)."""

    name = "tagger"
    train_defaults = Train(max_epochs=30, patience=5, metric="f1", mode="max", timeout_s=None, retries=1)
    defaults, limits, task_keys, datasets = DEFAULTS, LIMITS, TASK_KEYS, tuple(DATASETS)

    def resolve(self, space: "StudyView") -> list[str]:

        corpus = load_corpus(dict(space.task))
        out = [f"dataset {corpus.name}: train {len(corpus.train)}, dev {len(corpus.dev)}, test {len(corpus.test)} "
               f"sentences ({corpus.metric})"]
        for where, source in named_values(space, "embeddings", DEFAULTS["embeddings"]):
            try:
                words, matrix = load_vectors(str(source), {"the"})
            except UserError as exc:
                raise UserError(f"{space.path}: {where}", f"the embeddings {source!r} cannot be found ({exc}).",
                                "Install the package, fix the path, or set SEEDSWEEP_EMBEDDINGS.") from None
            out.append(f"embeddings {source}: {matrix.shape[1]} dimensions")
        return out

    def build(self, space: "StudyView", trial: TrialSpec, *, cache_dir: str | None = None):
        return TaggerModel(space, trial.hparams, trial.seed)


FAMILY = TaggerFamily()
