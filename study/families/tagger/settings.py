"""The tagger family's hyperparameters: defaults, limits, and a trial's settings
(no torch: both the family and the trainable model read it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..base import choice, integer, merge_settings, number

if TYPE_CHECKING:
    from ..view import StudyView

__all__ = ["DEFAULTS", "LIMITS", "EVAL_BATCH", "TASK_KEYS", "settings_of"]

DEFAULTS: dict[str, Any] = {
    "classifier": "softmax", "optimizer": "nadam", "dropout": "variational", "dropout_output": 0.25,
    "dropout_recurrent": 0.25, "chars": "none", "layers": 2, "units": 100, "scheme": "BIO", "batch_size": 32,
    "clip_value": 0.0, "clip_norm": 1.0, "embeddings": "glove-6b-50d", "train_embeddings": False,
    "casing": True, "min_count": 50, "lr": None,
}
_CLIP = "0 is off; the paper used 1, 3, 5 or 10."
#: the values each hyperparameter may take (checked for fixed, sampled and compared values)
LIMITS = {
    "classifier": choice("softmax", "crf"),
    "optimizer": choice("sgd", "adagrad", "adadelta", "rmsprop", "adam", "nadam"),
    "dropout": choice("none", "naive", "variational"),
    "chars": choice("none", "cnn", "lstm"),
    "scheme": choice("BIO", "IOB", "IOBES"),
    "layers": integer(1, 3, "The paper's network stacks 1 to 3 BiLSTM layers."),
    "units": integer(1, 2048),
    "batch_size": integer(1, 4096),
    "min_count": integer(0, 10**9),
    "dropout_output": number(0, 1, open_high=True, hint="Use a rate such as 0.25."),
    "dropout_recurrent": number(0, 1, open_high=True, hint="Use a rate such as 0.25."),
    "clip_value": number(0, float("inf"), hint=_CLIP),
    "clip_norm": number(0, float("inf"), hint=_CLIP),
    "lr": number(0, float("inf"), hint="A learning rate such as 1.0e-3 (null: the optimizer's default)."),
    "train_embeddings": choice(False, True),
    "casing": choice(False, True),
}
EVAL_BATCH = 256     # sentences per prediction batch (no gradients: larger is faster)
TASK_KEYS = {"dataset", "path", "train_sentences", "subset_seed", "column", "name"}


def settings_of(space: "StudyView", hparams: dict[str, Any]) -> dict[str, Any]:
    """Defaults, then ``fixed``, then the trial's hyperparameters (null = unset)."""
    return merge_settings(DEFAULTS, space, hparams)
