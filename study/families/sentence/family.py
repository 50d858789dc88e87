"""The sentence family: its checks of a study file, what it resolves, and its trials' models (no torch here)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import UserError
from ...schema import Train, TrialSpec
from ..base import FamilyBase, named_values
from ..evalsets import describe_eval_sets, eval_columns, phenomena
from ..sentencedata import SENTENCE_DATASETS, TASK_KEYS, load_sentences
from ..vectors import load_vectors
from .model import SentenceModel
from .settings import DEFAULTS, LIMITS, auto_width, n_params, settings_of

if TYPE_CHECKING:
    from ..view import StudyView

__all__ = ["FAMILY"]

class SentenceFamily(FamilyBase):
    """The sentence family (see the package docstring)."""

    name = "sentence"
    classifies = True
    train_defaults = Train(max_epochs=20, patience=3, metric="accuracy", mode="max", timeout_s=None, retries=1)
    defaults, limits, task_keys, datasets = DEFAULTS, LIMITS, TASK_KEYS, SENTENCE_DATASETS

    def check(self, space: "StudyView") -> None:
        if space.train.metric != "accuracy" or space.train.mode != "max":
            raise UserError(f"{space.path}: train.metric", "the sentence family scores by accuracy (mode max).",
                            "Leave train.metric and train.mode out.")
        allowed = ["none"] + phenomena(space)
        for where, value in named_values(space, "augment", "none"):
            if value not in allowed:
                raise UserError(f"{space.path}: {where}", f"augment {value!r} is not a phenomenon of the test beds "
                                "in evaluate:.", f"Use one of: {', '.join(allowed)}.")

    def resolve(self, space: "StudyView") -> list[str]:
        data = load_sentences(dict(space.task))
        lines = [f"dataset {data.name}: train {len(data.train)}, dev {len(data.dev)}, test {len(data.test)} "
                 f"texts, {len(data.label_names)} labels"]
        dims = {}
        for where, source in named_values(space, "embeddings", DEFAULTS["embeddings"]):
            words, matrix = load_vectors(source, {"the", "movie"})
            dims[source] = matrix.shape[1]
            lines.append(f"embeddings {source} ({where}): {matrix.shape[1]}-dimensional vectors")
        fixed = settings_of(space, {})
        for where, arch in named_values(space, "architecture", DEFAULTS["architecture"]):
            for source, dim in dims.items():
                width = fixed["width"] or auto_width(arch, dim, len(data.label_names), int(fixed["params_target"]))
                count = n_params(arch, width, dim, len(data.label_names))
                lines.append(f"architecture {arch} ({where}) over {source}: width {width}, "
                             f"{count:,} trainable parameters")
        return lines + describe_eval_sets(space)

    def result_columns(self, space: "StudyView") -> dict[str, str]:
        return {"params": "int", "units": "int", **eval_columns(space)}

    def build(self, space: "StudyView", trial: TrialSpec, *, cache_dir: str | None = None):
        return SentenceModel(space, trial.hparams, trial.seed)

    vectorizes = True           # train.vectorize_seeds: a population as one batched model

    def build_group(self, space: "StudyView", trials: list[TrialSpec], *, cache_dir: str | None = None):
        """One population: the seeds of one configuration and option trained as one batched model."""
        from .population import Population     # torch at import: only when a population trains

        return Population(space, trials)

    def seed_scope(self, space: "StudyView") -> dict[str, str]:
        """What a seed varies (the manifest's ``seed_scope``), lone or vectorised alike."""
        orders = {v for _, v in named_values(space, "order_seed", None)}
        order = "seed" if orders == {None} else f"order_seed {', '.join(map(str, sorted(orders, key=str)))} " \
                                                 "(one order shared by every trial that sets it)"
        return {"initialisation": "seed", "dropout masks": "seed", "data order": order,
                "vectorized": "populations (train.vectorize_seeds)" if space.train.vectorize_seeds else "no"}


FAMILY = SentenceFamily()
