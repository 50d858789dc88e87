"""The sentence family: small sentence classifiers over frozen word vectors.

The classifiers of the semantic-robustness study (docs/reference/study-file.md,
"The sentence family"): frozen GloVe 6B 50d word vectors (``embeddings``, any source
of :mod:`study.families.vectors`) under one of four ``architecture``\\ s,

* ``fc`` -- the mean of the word vectors, then two ReLU layers of ``width``
  units and the output layer;
* ``cnn`` -- convolutions of widths 3, 4 and 5 with ``width`` filters each,
  ReLU, max over time, then the output layer;
* ``lstm`` -- one bidirectional LSTM of ``width`` units per direction; its
  two final states feed the output layer;
* ``attention`` -- a projection to ``width`` plus fixed sinusoidal positions,
  one self-attention layer (a single head, residual, LayerNorm), attention
  pooling (a learned score per token, softmax over the sentence), then the
  output layer.

``phrases: true`` (or false) trains on every labelled training phrase (or
the root sentences only) whatever ``task.phrases`` says, so a study can
compare the two (``null``, the default, follows ``task.phrases``).

Dropout (``dropout``) comes before the output layer (and between the fc
layers). ``width: null`` (the default) chooses the width whose count of
trainable parameters is closest to ``params_target`` (40,000): fc 175,
cnn 66, lstm 49, attention 93 units for 50d vectors and two labels, each
within 40K ± 10%. Every trial stores its count (``params``) and width
(``units``); ``seedsweep check --resolve`` prints them.

Training: Adam (``lr``, ``weight_decay``), cross-entropy, mini-batches of
``batch_size`` in an order drawn each epoch from the trial's seed, gradient
norm clipped at 5, texts cut at ``max_length`` tokens; early stopping on dev
accuracy, the test accuracy at the best dev epoch (the shared protocol of
:mod:`study.execution.trial`). Texts are lower-cased and split PTB-style (``didn't``
-> ``did n't``, as the SST trees write it); a word GloVe lacks gets a zero
vector.

Data: ``task`` as for the transformer family (:mod:`study.families.sentencedata`:
``sst2``, ``sst5``, ``table``; ``train_sentences`` with ``subset_seed``).
``evaluate:`` sets are scored every epoch and stored at the best dev epoch
(``eval_<name>``); ``augment: <phenomenon>`` with ``augment_factor: k`` adds
that phenomenon's train sentences k times to the training data
(:mod:`study.families.evalsets`); ``augment_factor: 0`` adds none, so a
study can compare the factor with the vanilla population.

**Seeds.** The trial seed seeds the initialisation and the dropout masks
(torch's generator, seeded by :func:`study.execution.trial.seed_everything`) and the
data order (NumPy's generator seeded with the trial seed).

**Collapse.** A finished run whose best dev accuracy is no better than
always answering the dev set's most frequent label is stored as
``diverged`` with that reason.

Modules: ``family`` (settings, limits, parameter counts: no torch),
``network`` (the four architectures), ``model`` (one trial's training).
"""

from .family import FAMILY
from .settings import ARCHITECTURES, DEFAULTS, auto_width, n_params

__all__ = ["FAMILY", "DEFAULTS", "ARCHITECTURES", "n_params", "auto_width"]
