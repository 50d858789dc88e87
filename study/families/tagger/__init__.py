"""The ``tagger`` family: the BiLSTM sequence tagger of Reimers & Gurevych (2017).

Network (every part selectable from a search space; defaults in brackets):

* input per token: the frozen pretrained word vector (``embeddings``
  [glove-6b-50d], :mod:`~study.families.tagger.embeddings`), a trained 10-dim casing vector,
  and optionally a character representation (``chars``: ``none`` | ``cnn`` --
  30-dim characters, 30 filters of width 3, max-pooled (Ma & Hovy 2016) |
  ``lstm`` -- a BiLSTM of 25 units per direction over the characters, final
  states concatenated (Lample et al. 2016)) [none];
* ``layers`` stacked BiLSTM layers [2] of ``units`` units per direction [100];
* ``classifier``: ``softmax`` (per-token cross-entropy) or ``crf`` (a
  linear-chain CRF, :mod:`~study.families.tagger.crf`) [softmax];
* ``dropout`` [variational] with rates ``dropout_output`` [0.25] and
  ``dropout_recurrent`` [0.25] (the paper's grid: 0, 0.05, 0.1, 0.25, 0.5):

  - ``none``: nothing is masked;
  - ``naive``: the output of every BiLSTM layer is multiplied by a fresh
    Bernoulli mask at **every time step** (rate ``dropout_output``);
    the recurrent state is not masked;
  - ``variational``: one mask per sentence, the **same at every time step**,
    on the output of every BiLSTM layer (rate ``dropout_output``) and on the
    recurrent state h_{t−1} fed back into each direction's LSTM (rate
    ``dropout_recurrent``; Gal & Ghahramani 2016).

  Masks scale kept units by 1/(1 − rate); nothing is masked at evaluation.

Training (:class:`~study.families.tagger.model.TaggerModel`): ``optimizer`` sgd | adagrad | adadelta |
rmsprop | adam | nadam [nadam] with the defaults of their papers as Keras
ships them (SGD starts at 0.1 and follows the paper code's schedule: 0.05
from epoch 3, 0.01 from epoch 5); ``clip_value`` (clip every gradient
element to ±v) and ``clip_norm`` (rescale the whole gradient to norm ≤ v,
Pascanu et al. 2013), each 0 (off) or one of 1, 3, 5, 10 [clip_norm 1];
mini-batches of ``batch_size`` [32] sentences **of equal length**, as the
paper's code builds them: sentences are grouped by length, each group is
shuffled and cut into ceil(n / batch) near-equal batches, and the order of
the batches is shuffled every epoch (no padding, no packing); ``scheme`` BIO
| IOB | IOBES [BIO] re-tags the training data of chunk corpora, and
predictions are converted back to BIO before scoring with
:func:`~study.families.tagger.metrics.chunk_prf` (POS: token accuracy). Early stopping, the
test score at the best dev epoch and the ``diverged`` status (a non-finite
loss) come from the shared loop in :mod:`study.execution.trial`.

Modules: ``family`` (settings, limits, validation, resolution: no torch),
``network`` (the BiLSTM and its dropout variants), ``model`` (data encoding,
equal-length batches, optimizers, one epoch, scoring), ``corpora``,
``schemes``, ``metrics``, ``embeddings``, ``crf``.
"""

from .family import FAMILY
from .model import TaggerModel
from .settings import DEFAULTS, settings_of

__all__ = ["FAMILY", "DEFAULTS", "settings_of", "TaggerModel"]

