"""The encoder family: its checks of a study file, what it resolves, and its trials' models (no torch here)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import UserError
from ...schema import Train, TrialSpec
from ..base import FamilyBase
from ..modelsources import check_model_options, describe_model, model_source, parse_model, resolve_model_options
from ..sentencedata import SENTENCE_DATASETS, TASK_KEYS, load_sentences
from ..vectors import load_vectors
from .model import EncoderModel
from .settings import DEFAULTS, LIMITS, vectors_source

if TYPE_CHECKING:
    from ..view import StudyView

__all__ = ["FAMILY"]

def _describe(name: str) -> str:
    source = vectors_source(name)
    if source is None:
        return describe_model(name, model_source(parse_model(name).base))
    _, matrix = load_vectors(source, {"the"})
    return f"model {name}: mean of {matrix.shape[1]}-dimensional word vectors"


class EncoderFamily(FamilyBase):
    """The encoder family (see the package docstring)."""

    name = "encoder"
    draws_per_configuration = True               # each configuration draws its own sentences (config_id)
    train_defaults = Train(max_epochs=1, patience=1, metric="dispersion", mode="min", timeout_s=None, retries=1)
    defaults, limits, task_keys, datasets = DEFAULTS, LIMITS, TASK_KEYS, SENTENCE_DATASETS

    def check(self, space: "StudyView") -> None:
        if space.train.mode != "min" or space.train.max_epochs != 1:
            raise UserError(f"{space.path}: train", "the encoder family trains nothing and scores by the "
                            "dispersion M, where lower is better.",
                            "Leave train.max_epochs and train.mode out (1 and min).")
        check_model_options(space, DEFAULTS["model"], other=lambda name: vectors_source(name) is not None)

    def resolve(self, space: "StudyView") -> list[str]:
        data = load_sentences(dict(space.task))
        return [f"dataset {data.name}: dev {len(data.dev)}, test {len(data.test)} texts, "
                f"{len(data.label_names)} labels"] + resolve_model_options(space, DEFAULTS["model"], _describe)

    def result_columns(self, space: "StudyView") -> dict[str, str]:
        return {"dispersion_A": "float", "dispersion_B": "float", "sigma2": "str", "knn_accuracy": "float",
                "sentences": "int", "embed_seconds": "float", "score_seconds": "float"}

    def build(self, space: "StudyView", trial: TrialSpec, *, cache_dir: str | None = None):
        return EncoderModel(space, trial.hparams, trial.seed, config_id=trial.config_id, cache_dir=cache_dir)


FAMILY = EncoderFamily()
