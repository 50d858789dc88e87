"""The transformer family's settings, limits, validation, and where each model
comes from (no torch or transformers at import)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import UserError
from ...schema import Train, TrialSpec
from ..base import FamilyBase, Limit, check_limits, check_task_and_names, integer, named_values, number
from ..base import settings_of as merged_settings
from ..models import load_failure, parse_model
from ..models import model_source as shared_source
from ..sentences import SENTENCE_DATASETS, TASK_KEYS, load_sentences

if TYPE_CHECKING:
    from ...space import Space

__all__ = ["DEFAULTS", "LIMITS", "FAMILY", "TINY", "model_source", "settings_of"]

DEFAULTS: dict[str, Any] = {
    "model": "all-minilm-l6-v2", "lr": 2e-5, "batch_size": 32, "warmup": 0.1, "weight_decay": 0.01,
    "max_length": 128, "classifier_dropout": 0.1, "stop_on": "accuracy", "precision": "fp32",
}
#: the values each hyperparameter may take (checked for fixed, sampled and compared values)
LIMITS = {
    "batch_size": integer(1, 65536), "max_length": integer(2, 8192),
    "lr": number(0, 1), "warmup": number(0, 1), "weight_decay": number(0, 10), "classifier_dropout": number(0, 0.99),
    "precision": Limit("choice", options=("fp32", "bf16"),
                       hint="bf16 runs forward passes under torch.autocast in bfloat16 (GPUs since Ampere; CPUs too)."),
    "stop_on": Limit("choice", options=("accuracy", "loss"), hint="Early stopping compares dev accuracy or dev loss."),
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

    name: str = "transformer"
    uses_torch: bool = True
    train_defaults: Train = Train(max_epochs=10, patience=3, metric="accuracy", mode="max", timeout_s=None,
                                  retries=1)
    defaults = DEFAULTS
    limits = LIMITS

    def validate(self, space: "Space") -> None:
        check_task_and_names(space, "transformer", TASK_KEYS, SENTENCE_DATASETS, DEFAULTS,
                             " The number of epochs is train.max_epochs.")
        if space.train.metric != "accuracy" or space.train.mode != "max":
            raise UserError(f"{space.path}: train.metric", "the transformer family scores by accuracy (mode max).",
                            "Leave train.metric and train.mode out; choose early stopping on dev loss with "
                            "fixed: {stop_on: loss}.")
        check_limits(space, LIMITS, "transformer")
        if not isinstance(settings_of(space, {}).get("model"), str) or not settings_of(space, {})["model"]:
            raise UserError(f"{space.path}: fixed: model", f"expected a model name or folder, got "
                            f"{settings_of(space, {}).get('model')!r}.",
                            "Use e.g. all-minilm-l6-v2, bert-base-uncased or a path to a Hugging Face folder.")

    def resolve(self, space: "Space") -> list[str]:
        from transformers import AutoConfig

        data = load_sentences(dict(space.task))
        out = [f"dataset {data.name}: train {len(data.train)}, dev {len(data.dev)}, test {len(data.test)} "
               f"texts, {len(data.label_names)} labels"]
        for where, value in named_values(space, "model", DEFAULTS["model"]):
            name = str(value)
            try:
                source = model_source(name)
                AutoConfig.from_pretrained(source)
            except UserError as exc:
                raise UserError(f"{space.path}: {where}: {exc.where}", exc.problem, exc.fix) from None
            except (OSError, ValueError) as exc:
                failure = load_failure(name, exc)
                raise UserError(f"{space.path}: {where}: {failure.where}", failure.problem, failure.fix) from None
            out.append(f"model {name}: {source}")
        return out

    def build(self, space: "Space", trial: TrialSpec, *, cache_dir: str | None = None):
        from .model import TransformerModel

        return TransformerModel(space, trial.hparams, trial.seed)


FAMILY = TransformerFamily()
