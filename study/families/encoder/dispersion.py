"""The dispersion score of labelled sentence vectors (docs/reference/statistics.md, "Encoders and dispersion").

For vectors x_ij of class i (i = 1..N, member j), class centroids g_i and
their mean g = (1/N)·Σ g_i:

* in-class dispersion A = Σ_i Σ_j ‖g_i − x_ij‖² (σ_i² = Σ_j ‖g_i − x_ij‖² per class),
* between-class dispersion B = Σ_i ‖g − g_i‖²,
* **M = A / B**, lower is better.

These are sums of squares, as published (not means), so M grows with the
number of sentences per class; it does not change when every vector is
scaled by the same factor. For random Gaussian vectors with random labels,
c per class, E[A]/E[B] = N·c·(c − 1)/(N − 1).

:func:`knn_accuracy` is the supervised second view: leave-one-out k-nearest
neighbours by cosine similarity.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Dispersion", "dispersion", "knn_accuracy"]


@dataclass(frozen=True)
class Dispersion:
    A: float
    B: float
    M: float
    sigma2: dict[int, float]          # class -> Σ_j ‖g_i − x_ij‖²


def dispersion(vectors: np.ndarray, labels: np.ndarray) -> Dispersion:
    """A, B, M and σ_i² of ``vectors`` (n × d) with class ``labels`` (n).

    >>> d = dispersion(np.array([[0., 0], [2, 0], [10, 0], [12, 0]]), np.array([0, 0, 1, 1]))
    >>> d.A, d.B, d.M
    (4.0, 50.0, 0.08)
    """
    x = np.asarray(vectors, dtype=np.float64)
    y = np.asarray(labels)
    classes = np.unique(y)
    if len(classes) < 2:
        raise ValueError("dispersion needs at least two classes")
    centroids = np.stack([x[y == c].mean(axis=0) for c in classes])
    sigma2 = {int(c): float(((x[y == c] - centroids[i]) ** 2).sum()) for i, c in enumerate(classes)}
    a = float(sum(sigma2.values()))
    b = float(((centroids - centroids.mean(axis=0)) ** 2).sum())
    return Dispersion(A=a, B=b, M=a / b if b > 0 else float("inf"), sigma2=sigma2)


def knn_accuracy(vectors: np.ndarray, labels: np.ndarray, k: int = 10) -> float:
    """Leave-one-out accuracy of a k-nearest-neighbour vote by cosine
    similarity; a tied vote goes to the class whose tied neighbours are most
    similar in sum.

    >>> x = np.array([[1., 0], [0.9, 0.1], [0, 1], [0.1, 0.9]])
    >>> knn_accuracy(x, np.array([0, 0, 1, 1]), k=1)
    1.0
    """
    x = np.asarray(vectors, dtype=np.float64)
    y = np.asarray(labels)
    n = len(y)
    k = min(k, n - 1)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    unit = x / np.where(norms > 0, norms, 1.0)
    sim = unit @ unit.T
    np.fill_diagonal(sim, -np.inf)
    near = np.argpartition(-sim, k - 1, axis=1)[:, :k]
    classes, codes = np.unique(y, return_inverse=True)
    votes = np.zeros((n, len(classes)))
    weight = np.zeros((n, len(classes)))
    rows = np.repeat(np.arange(n), k)
    np.add.at(votes, (rows, codes[near].ravel()), 1.0)
    np.add.at(weight, (rows, codes[near].ravel()), sim[rows, near.ravel()])
    top = votes == votes.max(axis=1, keepdims=True)
    pred = np.where(top, weight, -np.inf).argmax(axis=1)
    return float((pred == codes).mean())
