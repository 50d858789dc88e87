"""The transformer family's hyperparameters: defaults, limits and a trial's
settings (no torch: the family and the model read it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..base import Limit, integer, merge_settings, number
from ..modelsources import model_source, parse_model

if TYPE_CHECKING:
    from ..view import StudyView

__all__ = ["DEFAULTS", "LIMITS", "TINY", "settings_of", "option_source"]

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


def settings_of(space: "StudyView", hparams: dict[str, Any]) -> dict[str, Any]:
    """Defaults, then ``fixed``, then the trial's hyperparameters (null = unset)."""
    return merge_settings(DEFAULTS, space, hparams)


def option_source(name: str) -> str:
    """Where the model option ``name`` is loaded from (:mod:`study.families.modelsources`;
    ``tiny-random-bert`` takes MiniLM's tokenizer and vocabulary)."""
    model_spec = parse_model(name)
    return model_source("all-minilm-l6-v2" if model_spec.base == TINY else model_spec.base)
