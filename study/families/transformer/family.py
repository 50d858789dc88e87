"""The transformer family's settings, limits, validation, and where each model
comes from (no torch or transformers at import)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import UserError
from ...schema import Train, TrialSpec
from ..base import FamilyBase, Limit, integer, number
from ..base import settings_of as merged_settings
from ..models import check_model_options, describe_model, parse_model, resolve_model_options
from ..models import model_source as shared_source
from ..evalsets import describe_eval_sets
from ..sentences import SENTENCE_DATASETS, TASK_KEYS, load_sentences

if TYPE_CHECKING:
    from ...space import Space

__all__ = ["DEFAULTS", "LIMITS", "FAMILY", "TINY", "model_source", "settings_of"]

DEFAULTS: dict[str, Any] = {
    "model": "all-minilm-l6-v2", "lr": 2e-5, "batch_size": 32, "warmup": 0.1, "weight_decay": 0.01,
    "max_length": 128, "classifier_dropout": 0.1, "stop_on": "accuracy", "precision": "fp32", "optimizer": "adamw",
}
#: the values each hyperparameter may take (checked for fixed, sampled and compared values)
LIMITS = {
    "batch_size": integer(1, 65536), "max_length": integer(2, 8192),
    "lr": number(0, 1), "warmup": number(0, 1), "weight_decay": number(0, 10), "classifier_dropout": number(0, 0.99),
    "precision": Limit("choice", options=("fp32", "bf16"),
                       hint="bf16 runs forward passes under torch.autocast in bfloat16 (GPUs since Ampere; CPUs too)."),
    "stop_on": Limit("choice", options=("accuracy", "loss"), hint="Early stopping compares dev accuracy or dev loss."),
    "optimizer": Limit("choice", options=("adamw", "adam"),
                       hint="adamw: decoupled weight decay, linear warm-up and decay; adam: plain Adam at a constant "
                            "learning rate (no warm-up, decay or weight decay), as older protocols trained."),
}
TINY = "tiny-random-bert"


def settings_of(space: "Space", hparams: dict[str, Any]) -> dict[str, Any]:
    """Defaults, then ``fixed``, then the trial's hyperparameters (null = unset)."""
    return merged_settings(DEFAULTS, space, hparams)


def model_source(name: str) -> str:
    """Where the model option ``name`` is loaded from (:mod:`study.families.models`;
    ``tiny-random-bert`` takes MiniLM's tokenizer and vocabulary)."""
    spec = parse_model(name)
    return shared_source("all-minilm-l6-v2" if spec.base == TINY else spec.base)


class TransformerFamily(FamilyBase):
    """The transformer family (see the package docstring)."""

    name = "transformer"
    classifies = True
    train_defaults = Train(max_epochs=10, patience=3, metric="accuracy", mode="max", timeout_s=None, retries=1)
    defaults, limits, task_keys, datasets = DEFAULTS, LIMITS, TASK_KEYS, SENTENCE_DATASETS
    names_hint = " The number of epochs is train.max_epochs."

    def check(self, space: "Space") -> None:
        if space.train.metric != "accuracy" or space.train.mode != "max":
            raise UserError(f"{space.path}: train.metric", "the transformer family scores by accuracy (mode max).",
                            "Leave train.metric and train.mode out; choose early stopping on dev loss with "
                            "fixed: {stop_on: loss}.")
        check_model_options(space, DEFAULTS["model"])

    def resolve(self, space: "Space") -> list[str]:
        data = load_sentences(dict(space.task))
        return [f"dataset {data.name}: train {len(data.train)}, dev {len(data.dev)}, test {len(data.test)} "
                f"texts, {len(data.label_names)} labels"] + \
            resolve_model_options(space, DEFAULTS["model"], lambda name: describe_model(name, model_source(name))) + \
            describe_eval_sets(space)

    def build(self, space: "Space", trial: TrialSpec, *, cache_dir: str | None = None):
        from .model import TransformerModel

        return TransformerModel(space, trial.hparams, trial.seed)


FAMILY = TransformerFamily()
