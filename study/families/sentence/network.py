"""The four sentence classifiers over frozen word vectors (see the package docstring).

Every network takes ``ids`` (batch × time, 0 = padding) and ``lengths`` and
returns logits. :func:`build_network` makes one; its trainable parameters
number :func:`~study.families.sentence.settings.n_params` exactly.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .settings import KERNELS

__all__ = ["build_network", "trainable_parameters"]


class _Base(nn.Module):
    def __init__(self, vectors: torch.Tensor) -> None:
        super().__init__()
        self.emb = nn.Embedding.from_pretrained(vectors, freeze=True, padding_idx=0)


class MeanMLP(_Base):
    """``fc``: the mean of the word vectors, two ReLU layers, the output layer."""

    def __init__(self, vectors, width, classes, dropout):
        super().__init__(vectors)
        d = vectors.shape[1]
        self.mlp = nn.Sequential(nn.Linear(d, width), nn.ReLU(), nn.Dropout(dropout), nn.Linear(width, width),
                                 nn.ReLU(), nn.Dropout(dropout), nn.Linear(width, classes))

    def forward(self, ids, lengths):
        mask = (ids != 0).unsqueeze(-1).float()
        mean = (self.emb(ids) * mask).sum(1) / lengths.clamp(min=1).unsqueeze(-1).float()
        return self.mlp(mean)


class ConvMax(_Base):
    """``cnn``: convolutions of widths 3, 4, 5, ReLU, max over the sentence."""

    def __init__(self, vectors, width, classes, dropout):
        super().__init__(vectors)
        d = vectors.shape[1]
        self.convs = nn.ModuleList(nn.Conv1d(d, width, k) for k in KERNELS)
        self.drop = nn.Dropout(dropout)
        self.out = nn.Linear(width * len(KERNELS), classes)

    def forward(self, ids, lengths):
        if ids.shape[1] < max(KERNELS):                       # every window needs max(KERNELS) positions
            ids = nn.functional.pad(ids, (0, max(KERNELS) - ids.shape[1]))
        x = self.emb(ids).transpose(1, 2)
        pooled = []
        for k, conv in zip(KERNELS, self.convs):
            h = torch.relu(conv(x))                           # batch × width × (time − k + 1)
            starts = torch.arange(h.shape[2], device=ids.device)
            valid = starts.unsqueeze(0) < (lengths - k + 1).clamp(min=1).unsqueeze(1)
            pooled.append(h.masked_fill(~valid.unsqueeze(1), float("-inf")).amax(2))
        return self.out(self.drop(torch.cat(pooled, 1)))


class BiLSTM(_Base):
    """``lstm``: a bidirectional LSTM; its final states feed the output layer."""

    def __init__(self, vectors, width, classes, dropout):
        super().__init__(vectors)
        self.lstm = nn.LSTM(vectors.shape[1], width, batch_first=True, bidirectional=True)
        self.drop = nn.Dropout(dropout)
        self.out = nn.Linear(2 * width, classes)

    def forward(self, ids, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.emb(ids), lengths.clamp(min=1).cpu(), batch_first=True,
                                                   enforce_sorted=False)
        _, (h, _) = self.lstm(packed)
        return self.out(self.drop(torch.cat([h[0], h[1]], 1)))


def _positions(n: int, d: int) -> torch.Tensor:
    """Fixed sinusoidal position vectors (Vaswani et al. 2017), ``n × d``."""
    pos = torch.arange(n, dtype=torch.float32).unsqueeze(1)
    freq = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    out = torch.zeros(n, d)
    out[:, 0::2] = torch.sin(pos * freq)
    out[:, 1::2] = torch.cos(pos * freq)[:, : d // 2]
    return out


class SelfAttention(_Base):
    """``attention``: projection plus positions, one self-attention layer, attention pooling."""

    def __init__(self, vectors, width, classes, dropout):
        super().__init__(vectors)
        self.proj = nn.Linear(vectors.shape[1], width)
        self.attn = nn.MultiheadAttention(width, 1, batch_first=True)
        self.norm = nn.LayerNorm(width)
        self.score = nn.Linear(width, 1)
        self.drop = nn.Dropout(dropout)
        self.out = nn.Linear(width, classes)
        self.register_buffer("pos", _positions(4096, width), persistent=False)

    def forward(self, ids, lengths):
        pad = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0) >= lengths.clamp(min=1).unsqueeze(1)
        x = self.proj(self.emb(ids)) + self.pos[: ids.shape[1]]
        a, _ = self.attn(x, x, x, key_padding_mask=pad, need_weights=False)
        z = self.norm(x + self.drop(a))
        w = torch.softmax(self.score(torch.tanh(z)).squeeze(-1).masked_fill(pad, float("-inf")), 1)
        return self.out(self.drop((w.unsqueeze(-1) * z).sum(1)))


NETWORKS = {"fc": MeanMLP, "cnn": ConvMax, "lstm": BiLSTM, "attention": SelfAttention}


def build_network(architecture: str, vectors: torch.Tensor, width: int, classes: int, dropout: float) -> nn.Module:
    """A new network of ``architecture`` over the frozen ``vectors``."""
    return NETWORKS[architecture](vectors, width, classes, dropout)


def trainable_parameters(net: nn.Module) -> int:
    """The number of trainable parameters of ``net`` (frozen vectors excluded)."""
    return sum(p.numel() for p in net.parameters() if p.requires_grad)
