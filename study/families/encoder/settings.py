"""The encoder family's hyperparameters: defaults, limits, a trial's settings and
which options are word vectors (no torch: the family and the model read it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..base import choice, integer, merge_settings

if TYPE_CHECKING:
    from ..view import StudyView

__all__ = ["GLOVE", "DEFAULTS", "LIMITS", "settings_of", "vectors_source"]

GLOVE = "glove-6b-50d"
DEFAULTS: dict[str, Any] = {
    "model": "all-minilm-l6-v2", "pooling": "cls", "layer": -1, "pretrained": True, "per_class": 100, "k": 10,
    "max_length": 128, "batch_size": 64,
}
LIMITS = {
    "pooling": choice("cls", "mean"),
    "layer": integer(-64, 64, "-1 is the last layer, 0 the embedding layer's output."),
    "pretrained": choice(True, False),
    "per_class": integer(2, 10**6, "Sentences drawn per class, e.g. 100."),
    "k": integer(1, 1000),
    "max_length": integer(2, 8192),
    "batch_size": integer(1, 65536),
}


def settings_of(space: "StudyView", hparams: dict[str, Any]) -> dict[str, Any]:
    """Defaults, then ``fixed``, then the trial's hyperparameters (null = unset)."""
    return merge_settings(DEFAULTS, space, hparams)


def vectors_source(model: str) -> str | None:
    """The word-vector source of a mean-of-vectors "encoder", or None for a model.

    >>> vectors_source("glove-6b-50d"), vectors_source("vectors:komninos"), vectors_source("all-minilm-l6-v2")
    ('glove-6b-50d', 'komninos', None)
    """
    if model == GLOVE:
        return GLOVE
    if model.startswith("vectors:"):
        return model[len("vectors:"):]
    return None
