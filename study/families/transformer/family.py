"""The transformer family: its checks of a study file, what it resolves, and its
trials' models (no torch or transformers at import)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import UserError
from ...schema import Train, TrialSpec
from ..base import FamilyBase
from ..evalsets import describe_eval_sets
from ..modelsources import check_model_options, describe_model, resolve_model_options
from ..sentencedata import SENTENCE_DATASETS, TASK_KEYS, load_sentences
from .model import TransformerModel
from .settings import DEFAULTS, LIMITS, option_source

if TYPE_CHECKING:
    from ..view import StudyView

__all__ = ["FAMILY"]

class TransformerFamily(FamilyBase):
    """The transformer family (see the package docstring)."""

    name = "transformer"
    classifies = True
    train_defaults = Train(max_epochs=10, patience=3, metric="accuracy", mode="max", timeout_s=None, retries=1)
    defaults, limits, task_keys, datasets = DEFAULTS, LIMITS, TASK_KEYS, SENTENCE_DATASETS
    names_hint = " The number of epochs is train.max_epochs."

    def check(self, space: "StudyView") -> None:
        if space.train.metric != "accuracy" or space.train.mode != "max":
            raise UserError(f"{space.path}: train.metric", "the transformer family scores by accuracy (mode max).",
                            "Leave train.metric and train.mode out; choose early stopping on dev loss with "
                            "fixed: {stop_on: loss}.")
        check_model_options(space, DEFAULTS["model"])

    def resolve(self, space: "StudyView") -> list[str]:
        data = load_sentences(dict(space.task))
        return [f"dataset {data.name}: train {len(data.train)}, dev {len(data.dev)}, test {len(data.test)} "
                f"texts, {len(data.label_names)} labels"] + \
            resolve_model_options(space, DEFAULTS["model"], lambda name: describe_model(name, option_source(name))) + \
            describe_eval_sets(space)

    def build(self, space: "StudyView", trial: TrialSpec, *, cache_dir: str | None = None):
        return TransformerModel(space, trial.hparams, trial.seed)


FAMILY = TransformerFamily()
