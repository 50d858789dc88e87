"""The tagger's network: embeddings, casing and character features, stacked
BiLSTM layers with none / naive / variational dropout, Softmax or CRF output
(see the package docstring for every part)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Network", "torch_modules"]


def torch_modules():
    """``(torch, torch.nn)``, imported on first use."""
    import torch
    from torch import nn

    return torch, nn


class Network:
    """Built lazily so that validating a space never imports torch."""

    @staticmethod
    def build(s: dict[str, Any], vectors: np.ndarray, n_chars: int, n_tags: int):
        """The BiLSTM tagger of settings ``s`` (torch is imported here)."""
        torch, nn = torch_modules()
        from .crf import CRF       # torch at import: only when a network is built

        class CharCNN(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(n_chars, 30, padding_idx=0)
                self.conv = nn.Conv1d(30, 30, kernel_size=3, padding=1)
                self.dim = 30

            def forward(self, chars):                      # (N, L) -> (N, 30)
                x = self.conv(self.emb(chars).transpose(1, 2))
                x = x.masked_fill((chars == 0).unsqueeze(1), -1e4)
                return x.max(dim=2).values

        class CharLSTM(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(n_chars, 30, padding_idx=0)
                self.lstm = nn.LSTM(30, 25, batch_first=True, bidirectional=True)
                self.dim = 50

            def forward(self, chars):
                lengths = (chars != 0).sum(1).clamp(min=1)
                packed = nn.utils.rnn.pack_padded_sequence(self.emb(chars), lengths.cpu(), batch_first=True,
                                                           enforce_sorted=False)
                _, (h, _) = self.lstm(packed)
                return torch.cat([h[0], h[1]], dim=1)

        class BiLSTM(nn.Module):
            """One BiLSTM layer (``nn.LSTM``'s parameters). With a recurrent
            dropout rate, training runs the recurrence step by step so that
            h_{t-1} is masked by one mask per sentence and direction, the same
            at every time step; evaluation (and rate 0) uses the fused kernel."""

            def __init__(self, d_in, units, rate):
                super().__init__()
                self.units, self.rate = units, rate
                self.lstm = nn.LSTM(d_in, units, batch_first=True, bidirectional=True)

            def direction(self, x, suffix, mask):
                lstm = self.lstm
                w_ih, w_hh = getattr(lstm, "weight_ih_l0" + suffix), getattr(lstm, "weight_hh_l0" + suffix)
                bias = getattr(lstm, "bias_ih_l0" + suffix) + getattr(lstm, "bias_hh_l0" + suffix)
                xp = nn.functional.linear(x, w_ih, bias)               # (B, T, 4H), gates i, f, g, o
                B, T, _ = xp.shape
                h = xp.new_zeros(B, self.units)
                c = xp.new_zeros(B, self.units)
                outs = []
                for t in range(T):
                    i, f, g, o = (xp[:, t] + nn.functional.linear(h * mask, w_hh)).chunk(4, dim=1)
                    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                    h = torch.sigmoid(o) * torch.tanh(c)
                    outs.append(h)
                return torch.stack(outs, dim=1)

            def forward(self, x):                                     # (B, T, D), equal lengths
                if not self.training or self.rate <= 0:
                    return self.lstm(x)[0]
                keep = 1 - self.rate
                masks = [torch.bernoulli(x.new_full((x.shape[0], self.units), keep)) / keep for _ in range(2)]
                out_f = self.direction(x, "", masks[0])
                out_b = self.direction(x.flip(1), "_reverse", masks[1]).flip(1)
                return torch.cat([out_f, out_b], dim=2)

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.words = nn.Embedding.from_pretrained(torch.tensor(vectors), freeze=not s["train_embeddings"],
                                                          padding_idx=0)
                d = vectors.shape[1]
                self.casing = nn.Embedding(8, 10) if s["casing"] else None
                d += 10 if s["casing"] else 0
                self.chars = {"cnn": CharCNN, "lstm": CharLSTM}.get(s["chars"], lambda: None)()
                d += self.chars.dim if self.chars is not None else 0
                self.dropout, self.p_out = s["dropout"], float(s["dropout_output"])
                rec = float(s["dropout_recurrent"]) if s["dropout"] == "variational" else 0.0
                self.lstms = nn.ModuleList()
                for _ in range(int(s["layers"])):
                    self.lstms.append(BiLSTM(d, int(s["units"]), rec))
                    d = 2 * int(s["units"])
                self.out = nn.Linear(d, n_tags)
                self.crf = CRF(n_tags) if s["classifier"] == "crf" else None

            def mask_outputs(self, h):
                if not self.training or self.dropout == "none" or self.p_out <= 0:
                    return h
                keep = 1 - self.p_out
                if self.dropout == "naive":              # a fresh mask at every time step
                    m = torch.bernoulli(h.new_full(h.shape, keep))
                else:                                    # variational: one mask per sentence
                    m = torch.bernoulli(h.new_full((h.shape[0], 1, h.shape[2]), keep))
                return h * m / keep

            def emissions(self, words, casing, chars):
                parts = [self.words(words)]
                if self.casing is not None:
                    parts.append(self.casing(casing))
                if self.chars is not None:
                    B, T = words.shape
                    parts.append(self.chars(chars.view(B * T, -1)).view(B, T, -1))
                h = torch.cat(parts, dim=2)
                for layer in self.lstms:
                    h = self.mask_outputs(layer(h))
                return self.out(h)

            def loss(self, words, casing, chars, tags):
                e = self.emissions(words, casing, chars)
                if self.crf is not None:
                    return self.crf.nll(e, tags)
                return nn.functional.cross_entropy(e.reshape(-1, e.shape[-1]), tags.reshape(-1))

            @torch.no_grad()
            def predict(self, words, casing, chars):
                e = self.emissions(words, casing, chars)
                if self.crf is not None:
                    return self.crf.decode(e)
                return e.argmax(dim=2).tolist()

        return Net()
