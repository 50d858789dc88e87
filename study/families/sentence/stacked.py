"""The four sentence networks batched over a seed axis (used by :mod:`.population`).

:class:`Stacked` computes the logits of k members at once from weights
stacked along a leading seed axis (``weights[name]`` is ``k × …`` for each
of the lone network's trainable parameters, named as in :mod:`.network`),
with each member's dropout drawn from its own generator exactly as the lone
network's ``nn.Dropout`` draws it. The arithmetic per member is the lone
network's op for op: batched matrix products (:func:`torch.baddbmm`) for
the linear maps, one product with every member's rows for a first layer
that reads a shared input, one convolution holding every member's filters
when the members read the same rows (one call per member when each reads
its own: a grouped convolution rounds differently), an LSTM recurrence over
length-sorted rows that computes only the rows still being read (the packed
work of ``nn.LSTM``), one scaled-dot-product attention call over
``k × batch`` sentences.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

from .settings import KERNELS

__all__ = ["Stacked"]

def _linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``x @ w.T + b`` per member: x is ``k × … × in``, w ``k × out × in``, b ``k × out``."""
    k, shape = x.shape[0], x.shape[1:-1]
    y = torch.baddbmm(b.unsqueeze(1), x.reshape(k, -1, x.shape[-1]), w.transpose(1, 2))
    return y.reshape(k, *shape, w.shape[1])


def _shared_linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``x @ w[j].T + b[j]`` for every member j of one shared input ``… × in``:
    a single product with every member's rows (``k × … × out``)."""
    k, out, n_in = w.shape
    shape = x.shape[:-1]
    y = torch.addmm(b.reshape(-1), x.reshape(-1, n_in), w.reshape(k * out, n_in).t())
    return y.reshape(*shape, k, out).movedim(-2, 0)


class Stacked:
    """The batched forward pass. A subclass sets ``arch``, ``p`` (dropout),
    ``weights``, ``gens`` (one generator per member), ``alive`` (the members
    along the seed axis), ``vectors`` (the frozen word vectors) and, for
    ``attention``, ``pos`` (the sinusoidal positions)."""

    def _dropout(self, x: torch.Tensor, training: bool, time_major: bool = False) -> torch.Tensor:
        """Each member's dropout mask from its own generator, drawn as the lone
        network's ``nn.Dropout`` draws it: one Bernoulli tensor of the member's
        shape, filled in the lone input's memory order (``time_major``: the
        attention output, a ``batch × time`` view of a ``time × batch`` tensor)."""
        if not training or self.p == 0:
            return x
        shape = x.shape[1:]
        if time_major:
            shape = (shape[1], shape[0], *shape[2:])
        masks = [torch.empty(shape, device=x.device).bernoulli_(1 - self.p, generator=g) for g in self.gens]
        noise = torch.stack([m.transpose(0, 1) if time_major else m for m in masks])
        noise.div_(1 - self.p)
        return x * noise

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor, training: bool) -> torch.Tensor:
        """Logits ``k × batch × classes``. ``ids`` (and ``lengths``) are one batch
        every member reads (``batch × time``), or one per member (``k × batch × time``)."""
        w, drop = self.weights, (lambda x, time_major=False: self._dropout(x, training, time_major))
        k = len(self.alive)
        shared = ids.dim() == 2
        first = _shared_linear if shared else _linear          # the first layer over the word vectors
        if self.arch == "cnn":
            return self._cnn(ids, lengths, drop)
        if self.arch == "lstm":
            return self._lstm(ids, lengths, drop, first)
        x = F.embedding(ids, self.vectors)                      # [k ×] batch × time × d
        if self.arch == "fc":
            mask = (ids != 0).unsqueeze(-1).float()
            mean = (x * mask).sum(-2) / lengths.clamp(min=1).unsqueeze(-1).float()
            h = drop(torch.relu(first(mean, w["mlp.0.weight"], w["mlp.0.bias"])))
            h = drop(torch.relu(_linear(h, w["mlp.3.weight"], w["mlp.3.bias"])))
            return _linear(h, w["mlp.6.weight"], w["mlp.6.bias"])
        per_member = lengths.clamp(min=1).expand(k, -1) if shared else lengths.clamp(min=1)      # k × batch
        return self._attention(x, per_member, drop, first)

    def _cnn(self, ids, lengths, drop):
        w = self.weights
        if ids.shape[-1] < max(KERNELS):
            ids = F.pad(ids, (0, max(KERNELS) - ids.shape[-1]))
        shared = ids.dim() == 2
        if shared:      # one input: every member's filters in one convolution (the lone arithmetic exactly)
            x = F.embedding(ids, self.vectors).transpose(1, 2)                      # batch × d × time
            lengths = lengths.expand(len(self.alive), -1)
        else:           # a grouped convolution would round differently from the lone one: one call per member
            xs = [F.embedding(m, self.vectors).transpose(1, 2) for m in ids]
        b = lengths.shape[1]
        pooled = []
        for j, width in enumerate(KERNELS):
            weight, bias = w[f"convs.{j}.weight"], w[f"convs.{j}.bias"]
            k, units = weight.shape[:2]
            if shared:
                h = F.conv1d(x, weight.reshape(k * units, *weight.shape[2:]), bias.reshape(-1))
                h = h.reshape(b, k, units, -1).transpose(0, 1)                     # k × batch × units × starts
            else:
                h = torch.stack([F.conv1d(xs[m], weight[m], bias[m]) for m in range(k)])
            h = torch.relu(h)
            steps = torch.arange(h.shape[3], device=h.device).view(1, 1, -1)
            valid = steps < (lengths - width + 1).clamp(min=1).unsqueeze(-1)
            pooled.append(h.masked_fill(~valid.unsqueeze(2), float("-inf")).amax(3))
        return _linear(drop(torch.cat(pooled, 2)), w["out.weight"], w["out.bias"])

    def _lstm(self, ids, lengths, drop, first):
        """Both directions over rows sorted by length (longest first), each step
        computing only the rows some member still reads -- the work of a packed
        sequence, as ``nn.LSTM`` does it for the lone trial. A row leaves the
        forward recurrence after its last word and joins the backward one at it."""
        w = self.weights
        k = len(self.alive)
        units = w["lstm.weight_hh_l0"].shape[2]
        lengths = lengths.clamp(min=1)
        shared = ids.dim() == 2
        if shared:              # every member reads the same rows: no masking, every step exactly packed
            order = torch.argsort(lengths, descending=True, stable=True)
            ids, lengths = ids[order], lengths[order]
            per_member = lengths.expand(k, -1)
        else:
            order = torch.argsort(lengths, dim=1, descending=True, stable=True)              # k × batch
            ids = torch.gather(ids, 1, order.unsqueeze(-1).expand(-1, -1, ids.shape[-1]))
            per_member = lengths = torch.gather(lengths, 1, order)
        x = F.embedding(ids, self.vectors)
        t = ids.shape[-1]
        # rows read at each step (one transfer: a GPU would wait once per step otherwise)
        active = (per_member.unsqueeze(-1) > torch.arange(t, device=ids.device)).sum(1).amax(0).tolist()
        finals = []
        for suffix, steps in (("", range(t)), ("_reverse", range(t - 1, -1, -1))):
            gates_in = first(x, w[f"lstm.weight_ih_l0{suffix}"], w[f"lstm.bias_ih_l0{suffix}"])   # k × batch × time × 4u
            # one tensor per step: indexing a step out of the whole would make autograd
            # allocate a gradient of the whole for every step
            per_step = gates_in.unbind(2)
            w_hh, b_hh = w[f"lstm.weight_hh_l0{suffix}"].transpose(1, 2), w[f"lstm.bias_hh_l0{suffix}"].unsqueeze(1)
            h = c = x.new_zeros(k, active[steps[0]], units)
            done: list[torch.Tensor] = []                  # forward: states of rows past their last word
            for step in steps:
                n = active[step]
                if n < h.shape[1]:
                    done.append(h[:, n:])
                    h, c = h[:, :n], c[:, :n]
                elif n > h.shape[1]:                       # backward: rows whose last word this is start
                    fresh = x.new_zeros(k, n - h.shape[1], units)
                    h, c = torch.cat([h, fresh], 1), torch.cat([c, fresh], 1)
                gates = torch.baddbmm(b_hh, h, w_hh) + per_step[step][:, :n]
                i, f, g, o = gates.chunk(4, 2)
                c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                h_new = torch.sigmoid(o) * torch.tanh(c_new)
                if shared:
                    h, c = h_new, c_new
                else:                                      # a member's shorter rows keep their state
                    inside = (step < per_member[:, :n]).unsqueeze(-1)
                    h, c = torch.where(inside, h_new, h), torch.where(inside, c_new, c)
            finals.append(torch.cat([h] + done[::-1], 1))
        final = torch.cat(finals, 2)                        # sorted rows: put them back
        if shared:
            final = final[:, torch.argsort(order)]
        else:
            final = torch.gather(final, 1, torch.argsort(order, dim=1).unsqueeze(-1).expand(-1, -1, 2 * units))
        return _linear(drop(final), w["out.weight"], w["out.bias"])

    def _attention(self, x, lengths, drop, first):
        w = self.weights
        k, b = lengths.shape
        t = x.shape[-2]
        pad = torch.arange(t, device=x.device).view(1, 1, -1) >= lengths.unsqueeze(-1)                # k × batch × time
        x = first(x, w["proj.weight"], w["proj.bias"]) + self.pos[:t]
        units = x.shape[-1]
        q, key, value = _linear(x, w["attn.in_proj_weight"], w["attn.in_proj_bias"]).chunk(3, -1)
        mask = x.new_zeros(k * b, 1, 1, t).masked_fill_(pad.reshape(k * b, 1, 1, t), float("-inf"))
        a = F.scaled_dot_product_attention(*(z.reshape(k * b, 1, t, units) for z in (q, key, value)), mask)
        a = _linear(a.reshape(k, b, t, units), w["attn.out_proj.weight"], w["attn.out_proj.bias"])
        y = x + drop(a, time_major=True)
        z = torch.stack([F.layer_norm(y[j], (units,), w["norm.weight"][j], w["norm.bias"][j]) for j in range(k)])
        score = _linear(torch.tanh(z), w["score.weight"], w["score.bias"]).squeeze(-1)
        weights = torch.softmax(score.masked_fill(pad, float("-inf")), 2)
        return _linear(drop((weights.unsqueeze(-1) * z).sum(2)), w["out.weight"], w["out.bias"])

    # ---------------------------------------------------------------- training
