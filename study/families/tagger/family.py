"""The tagger family's settings, limits, validation and resolution (no torch here)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import UserError
from ...schema import Train, TrialSpec
from ..base import FamilyBase, choice, integer, named_values, number
from ..base import settings_of as merged_settings
from .corpora import DATASETS

if TYPE_CHECKING:
    from ...space import Space

__all__ = ["FAMILY", "DEFAULTS", "LIMITS", "settings_of"]

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


def settings_of(space: "Space", hparams: dict[str, Any]) -> dict[str, Any]:
    """Defaults, then ``fixed``, then the trial's hyperparameters (null = unset)."""
    return merged_settings(DEFAULTS, space, hparams)


class TaggerFamily(FamilyBase):
    """The tagger family (see the package docstring)."""

    name = "tagger"
    train_defaults = Train(max_epochs=30, patience=5, metric="f1", mode="max", timeout_s=None, retries=1)
    defaults, limits, task_keys, datasets = DEFAULTS, LIMITS, TASK_KEYS, tuple(DATASETS)

    def resolve(self, space: "Space") -> list[str]:
        from .corpora import load_corpus
        from .embeddings import load_vectors

        corpus = load_corpus(dict(space.task))
        out = [f"dataset {corpus.name}: train {len(corpus.train)}, dev {len(corpus.dev)}, test {len(corpus.test)} "
               f"sentences ({corpus.metric})"]
        for where, source in named_values(space, "embeddings", DEFAULTS["embeddings"]):
            try:
                words, matrix = load_vectors(str(source), {"the"})
            except UserError as exc:
                raise UserError(f"{space.path}: {where}", f"the embeddings {source!r} cannot be found ({exc}).",
                                "Install the package, fix the path, or set SEEDSWEEP_EMBEDDINGS.") from None
            out.append(f"embeddings {source}: {matrix.shape[1]} dimensions")
        return out

    def build(self, space: "Space", trial: TrialSpec, *, cache_dir: str | None = None):
        from .model import TaggerModel

        return TaggerModel(space, trial.hparams, trial.seed)


FAMILY = TaggerFamily()
