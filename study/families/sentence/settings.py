"""The sentence family's hyperparameters: defaults, limits, a trial's settings,
and each architecture's parameter count (no torch: the family, the model and
the networks read it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..base import choice, integer, merge_settings, number

if TYPE_CHECKING:
    from ..view import StudyView

__all__ = ["ARCHITECTURES", "KERNELS", "DEFAULTS", "LIMITS", "n_params", "auto_width", "settings_of"]

ARCHITECTURES = ("fc", "cnn", "lstm", "attention")
KERNELS = (3, 4, 5)                 # the CNN's filter widths
DEFAULTS: dict[str, Any] = {
    "architecture": "lstm", "width": None, "params_target": 40_000, "embeddings": "glove-6b-50d",
    "lr": 1e-3, "batch_size": 32, "dropout": 0.2, "weight_decay": 0.0, "max_length": 64,
    "augment": "none", "augment_factor": 1, "order_seed": None, "phrases": None,
}
LIMITS = {
    "architecture": choice(*ARCHITECTURES),
    "width": integer(1, 4096, "Units per layer; leave it out (null) for the width nearest params_target."),
    "params_target": integer(100, 10**8),
    "lr": number(0, 1), "batch_size": integer(1, 65536), "dropout": number(0, 0.99),
    "weight_decay": number(0, 10), "max_length": integer(1, 4096),
    "augment_factor": integer(0, 1000, "How many times a phenomenon's train sentences are added (0: none)."),
    "order_seed": integer(0, 2**63 - 1, "Leave it out (null): each trial's data order follows its seed."),
    "phrases": choice(False, True),     # null: task.phrases decides; a value overrides it (a choice to study)
}


def n_params(architecture: str, width: int, dim: int, classes: int) -> int:
    """Trainable parameters of an architecture (the word vectors are frozen).

    >>> [n_params(a, w, 50, 2) for a, w in (("fc", 175), ("cnn", 66), ("lstm", 49), ("attention", 93))]
    [40077, 40196, 39790, 40179]
    """
    h, d, c = width, dim, classes
    if architecture == "fc":            # d->h, h->h, h->c
        return h * h + (d + 2 + c) * h + c
    if architecture == "cnn":           # one convolution per kernel width, then 3h->c
        return h * (d * sum(KERNELS) + len(KERNELS) + len(KERNELS) * c) + c
    if architecture == "lstm":          # two directions of 4 gates (input, recurrent, two biases), then 2h->c
        return 8 * h * h + (8 * d + 16 + 2 * c) * h + c
    if architecture == "attention":     # projection, q/k/v/out, LayerNorm, pooling score, then h->c
        return 4 * h * h + (d + 1 + 4 + 2 + 1 + c) * h + 1 + c
    raise ValueError(f"unknown architecture {architecture!r}")


def auto_width(architecture: str, dim: int, classes: int, target: int = 40_000) -> int:
    """The width whose parameter count is closest to ``target`` (the smaller on a tie)."""
    return min(range(1, 4097), key=lambda w: (abs(n_params(architecture, w, dim, classes) - target), w))


def settings_of(space: "StudyView", hparams: dict[str, Any]) -> dict[str, Any]:
    """Defaults, then ``fixed``, then the trial's hyperparameters (null = unset)."""
    return merge_settings(DEFAULTS, space, hparams)
