"""A linear-chain conditional random field over emission scores (batched).

For a sentence x of length T with emission scores e_t(y) and tag sequence y,

    score(x, y) = start(y_1) + Σ_t e_t(y_t) + Σ_{t>1} trans(y_{t-1}, y_t) + end(y_T)
    log Z(x)    = log Σ_y exp score(x, y)            (the forward algorithm)
    loss        = log Z(x) − score(x, y_gold)        (negative log-likelihood)

and decoding is Viterbi: argmax_y score(x, y). Sentences of a batch may have
different lengths (``mask``: 1 for real tokens, left-aligned); the tests check
log Z and Viterbi against enumeration of every tag sequence.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["CRF"]


class CRF(nn.Module):
    """Transition, start and end scores of ``num_tags`` tags."""

    def __init__(self, num_tags: int) -> None:
        super().__init__()
        self.num_tags = num_tags
        self.transitions = nn.Parameter(torch.empty(num_tags, num_tags).uniform_(-0.1, 0.1))  # [from, to]
        self.start = nn.Parameter(torch.empty(num_tags).uniform_(-0.1, 0.1))
        self.end = nn.Parameter(torch.empty(num_tags).uniform_(-0.1, 0.1))

    def _mask(self, emissions: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        if mask is None:
            return torch.ones(emissions.shape[:2], dtype=torch.bool, device=emissions.device)
        return mask.bool()

    def score(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """score(x, y) per sentence: (B, T, K) emissions, (B, T) tags -> (B,)."""
        mask = self._mask(emissions, mask)
        B, T, _ = emissions.shape
        m = mask.to(emissions.dtype)
        emit = emissions.gather(2, tags.unsqueeze(2)).squeeze(2)                   # (B, T)
        total = self.start[tags[:, 0]] + (emit * m).sum(1)
        if T > 1:
            trans = self.transitions[tags[:, :-1], tags[:, 1:]]                   # (B, T-1)
            total = total + (trans * m[:, 1:]).sum(1)
        last = tags.gather(1, (mask.sum(1) - 1).clamp(min=0).unsqueeze(1)).squeeze(1)
        return total + self.end[last]

    def log_partition(self, emissions: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """log Z(x) per sentence by the forward algorithm: (B, T, K) -> (B,)."""
        mask = self._mask(emissions, mask)
        alpha = self.start + emissions[:, 0]                                       # (B, K)
        trans = self.transitions.unsqueeze(0)                                      # (1, K, K)
        for t in range(1, emissions.shape[1]):
            nxt = torch.logsumexp(alpha.unsqueeze(2) + trans, dim=1) + emissions[:, t]
            alpha = torch.where(mask[:, t].unsqueeze(1), nxt, alpha)
        return torch.logsumexp(alpha + self.end, dim=1)

    def nll(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Mean negative log-likelihood of the gold tags over the batch."""
        return (self.log_partition(emissions, mask) - self.score(emissions, tags, mask)).mean()

    @torch.no_grad()
    def decode(self, emissions: torch.Tensor, mask: torch.Tensor | None = None) -> list[list[int]]:
        """The Viterbi tag sequence of every sentence (lists of its real length)."""
        mask = self._mask(emissions, mask)
        B, T, K = emissions.shape
        best = self.start + emissions[:, 0]                                        # (B, K)
        pointers = []
        trans = self.transitions.unsqueeze(0)
        for t in range(1, T):
            cand = best.unsqueeze(2) + trans                                       # (B, from, to)
            value, arg = cand.max(dim=1)
            nxt = value + emissions[:, t]
            keep = mask[:, t].unsqueeze(1)
            best = torch.where(keep, nxt, best)
            # past a sentence's end the pointer keeps the tag: identity
            ident = torch.arange(K, device=emissions.device).expand(B, K)
            pointers.append(torch.where(keep, arg, ident))
        final = best + self.end
        last = final.argmax(dim=1)                                                 # (B,)
        lengths = mask.sum(1).tolist()
        path = [last]
        for ptr in reversed(pointers):
            last = ptr.gather(1, last.unsqueeze(1)).squeeze(1)
            path.append(last)
        path.reverse()
        full = torch.stack(path, dim=1).tolist()                                   # (B, T)
        return [row[:n] for row, n in zip(full, lengths)]
