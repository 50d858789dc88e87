"""The sentence family's settings, limits, parameter counts and validation (no torch)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import UserError
from ...schema import Train, TrialSpec
from ..base import FamilyBase, choice, integer, named_values, number, settings_of
from ..evalsets import describe_eval_sets, eval_columns, phenomena
from ..sentences import SENTENCE_DATASETS, TASK_KEYS, load_sentences

if TYPE_CHECKING:
    from ...space import Space

__all__ = ["FAMILY", "DEFAULTS", "LIMITS", "ARCHITECTURES", "KERNELS", "n_params", "auto_width", "settings"]

ARCHITECTURES = ("fc", "cnn", "lstm", "attention")
KERNELS = (3, 4, 5)                 # the CNN's filter widths
DEFAULTS: dict[str, Any] = {
    "architecture": "lstm", "width": None, "params_target": 40_000, "embeddings": "glove-6b-50d",
    "lr": 1e-3, "batch_size": 32, "dropout": 0.2, "weight_decay": 0.0, "max_length": 64,
    "augment": "none", "augment_factor": 1, "order_seed": None,
}
LIMITS = {
    "architecture": choice(*ARCHITECTURES),
    "width": integer(1, 4096, "Units per layer; leave it out (null) for the width nearest params_target."),
    "params_target": integer(100, 10**8),
    "lr": number(0, 1), "batch_size": integer(1, 65536), "dropout": number(0, 0.99),
    "weight_decay": number(0, 10), "max_length": integer(1, 4096),
    "augment_factor": integer(0, 1000, "How many times a phenomenon's train sentences are added."),
    "order_seed": integer(0, 2**63 - 1, "Leave it out (null): each trial's data order follows its seed."),
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


def settings(space: "Space", hparams: dict[str, Any]) -> dict[str, Any]:
    """Defaults, then ``fixed``, then the trial's hyperparameters (null = unset)."""
    return settings_of(DEFAULTS, space, hparams)


class SentenceFamily(FamilyBase):
    """The sentence family (see the package docstring)."""

    name = "sentence"
    classifies = True
    train_defaults = Train(max_epochs=20, patience=3, metric="accuracy", mode="max", timeout_s=None, retries=1)
    defaults, limits, task_keys, datasets = DEFAULTS, LIMITS, TASK_KEYS, SENTENCE_DATASETS

    def check(self, space: "Space") -> None:
        if space.train.metric != "accuracy" or space.train.mode != "max":
            raise UserError(f"{space.path}: train.metric", "the sentence family scores by accuracy (mode max).",
                            "Leave train.metric and train.mode out.")
        allowed = ["none"] + phenomena(space)
        for where, value in named_values(space, "augment", "none"):
            if value not in allowed:
                raise UserError(f"{space.path}: {where}", f"augment {value!r} is not a phenomenon of the test beds "
                                "in evaluate:.", f"Use one of: {', '.join(allowed)}.")

    def resolve(self, space: "Space") -> list[str]:
        from ..vectors import load_vectors

        data = load_sentences(dict(space.task))
        lines = [f"dataset {data.name}: train {len(data.train)}, dev {len(data.dev)}, test {len(data.test)} "
                 f"texts, {len(data.label_names)} labels"]
        dims = {}
        for where, source in named_values(space, "embeddings", DEFAULTS["embeddings"]):
            words, matrix = load_vectors(source, {"the", "movie"})
            dims[source] = matrix.shape[1]
            lines.append(f"embeddings {source} ({where}): {matrix.shape[1]}-dimensional vectors")
        fixed = settings(space, {})
        for where, arch in named_values(space, "architecture", DEFAULTS["architecture"]):
            for source, dim in dims.items():
                width = fixed["width"] or auto_width(arch, dim, len(data.label_names), int(fixed["params_target"]))
                count = n_params(arch, width, dim, len(data.label_names))
                lines.append(f"architecture {arch} ({where}) over {source}: width {width}, "
                             f"{count:,} trainable parameters")
        return lines + describe_eval_sets(space)

    def result_columns(self, space: "Space") -> dict[str, str]:
        return {"params": "int", "units": "int", **eval_columns(space)}

    def build(self, space: "Space", trial: TrialSpec, *, cache_dir: str | None = None):
        from .model import SentenceModel

        return SentenceModel(space, trial.hparams, trial.seed)

    vectorizes = True           # train.vectorize_seeds: a population as one batched model

    def build_group(self, space: "Space", trials: list[TrialSpec], *, cache_dir: str | None = None):
        from .population import Population

        return Population(space, trials)

    def seed_scope(self, space: "Space") -> dict[str, str]:
        """What a seed varies (the manifest's ``seed_scope``), lone or vectorised alike."""
        orders = {v for _, v in named_values(space, "order_seed", None)}
        order = "seed" if orders == {None} else f"order_seed {', '.join(map(str, sorted(orders, key=str)))} " \
                                                 "(one order shared by every trial that sets it)"
        return {"initialisation": "seed", "dropout masks": "seed", "data order": order,
                "vectorized": "populations (train.vectorize_seeds)" if space.train.vectorize_seeds else "no"}


FAMILY = SentenceFamily()
