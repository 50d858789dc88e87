"""The ``encoder`` family: pretrained encoders judged without training.

A trial embeds labelled sentences with a frozen encoder and scores how well
the vectors separate the labels, by the dispersion ratio of
:mod:`~study.families.encoder.dispersion` (docs/reference/statistics.md,
"Encoders and dispersion"): M = A / B, in-class over between-class sums of squares, lower
is better (``train.mode: min``). Nothing is trained: a trial is one
"epoch" that only evaluates.

**Options** (hyperparameters; defaults in brackets):

* ``model`` [all-minilm-l6-v2] -- a model option of :mod:`study.families.modelsources`
  (a package, folder or hub id; ``random:NAME`` for the architecture with
  random weights, drawn once per option from a fixed seed so that every
  seed judges the same encoder; ``NAME@N`` for its first N layers), or
  ``glove-6b-50d`` / ``vectors:SOURCE`` for the mean of word vectors
  (:mod:`study.families.vectors`), the baseline "encoder";
* ``pooling`` [cls] -- ``cls`` (the first token's vector, as the published
  evaluation used) or ``mean`` (the mean over the tokens, padding excluded);
* ``layer`` [-1] -- which hidden state: -1 the last layer, 0 the embedding
  layer's output, i the i-th layer;
* ``pretrained`` [true] -- ``false`` is the same as the ``random:`` prefix;
* ``per_class`` [100] -- sentences drawn per class (all of a smaller class)
  by a generator seeded with the trial's seed and configuration: every
  option of a (configuration, seed) sees the same sentences, so a study's
  configurations and seeds are paired draws (``samples: 10, seeds: 1`` is
  ten draws, and the win shares count the draws each encoder wins);
* ``k`` [10] -- neighbours of the leave-one-out kNN accuracy (cosine);
* ``max_length`` [128], ``batch_size`` [64] -- tokenizer truncation, texts per forward pass.

**Data**: ``task`` as for the transformer family (SST-5 or SST-2 root
sentences, or any (text, label) table, :mod:`study.families.sentencedata`). The
dev score is M on a sample of the dev split, the test score M on a sample of
the test split.

**Result columns**: ``dispersion_A``, ``dispersion_B`` (the test sample's A
and B; M is ``test_score``), ``sigma2`` (JSON: class name -> σ_i²),
``knn_accuracy``, ``sentences`` (the test sample's size), ``embed_seconds``
(encoding, or reading the cache) and ``score_seconds`` (sampling and
scoring).

**Cache**: the vectors of a split are computed once per (model, pooling,
layer, max_length, data) and kept in the run directory's ``cache/`` folder
(``encoder-<digest>.npy``, written whole or not at all), so the seeds of an
option only resample.
"""

from .family import FAMILY
from .settings import DEFAULTS, settings_of

__all__ = ["FAMILY", "DEFAULTS", "settings_of"]
