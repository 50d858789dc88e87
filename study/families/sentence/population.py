"""A population of the sentence family trained as one model (``train.vectorize_seeds``).

The k seeds of one configuration and option share everything but their
randomness, so their weights are stacked along a leading seed axis and every
step runs the k networks at once (:mod:`.stacked`). The arithmetic per seed
is the lone network's (:mod:`.network`), op for op, so a member follows the
lone trial with its seed to rounding (the equivalence test checks dev and
test scores per epoch within 1e-5).

**What a seed varies** (``seed_scope`` in the manifest). Member i is built
exactly as the lone trial with seed s_i: torch's global generator is seeded
with s_i and the lone network is constructed, so the initial weights are the
lone trial's; the generator's state right after becomes the member's own
dropout generator, so its masks are the lone trial's masks. The data order
follows each seed as well (NumPy's generator seeded with s_i draws the
member's permutation every epoch): each member reads its own mini-batches,
padded to the longest sentence among the k batches of the step. With
``order_seed: n`` every member (and every lone trial) reads the same order
instead. So a seed of a vectorised population means what it means in a
lone trial.

**Early stopping per seed.** :meth:`Population.stop` removes a member from
the stacks (weights, Adam moments, generator, data order); its scores up to
its last epoch are kept, so its best-dev epoch's scores are what the store
receives. A member whose training loss turns non-finite is removed at that
step, before the update, and reported as diverged; the others go on.

**On a GPU** (``resources.gpu`` > 0 and CUDA in the worker) the stacks,
batches and scores live on the device. A member's dropout masks then come
from its own CUDA generator seeded with its seed: they are draws of the
same law as the lone trial's, not its masks (``nn.Dropout`` on CUDA draws
through a fused kernel), so the op-for-op equivalence above is a property
of the CPU.

Adam is the single-tensor update of :class:`torch.optim.Adam` written over
the stacked tensors (the same element-wise operations, L2 weight decay
added to the gradient), and the gradient norm is clipped at 5 per member.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch.nn import functional as F

from ...schema import TrialSpec
from .model import CLIP, Prepared, order_seed
from .stacked import Stacked

if TYPE_CHECKING:
    from ..view import StudyView

__all__ = ["Population"]

BETAS, EPS = (0.9, 0.999), 1e-8         # torch.optim.Adam's defaults, as the lone trial uses them


class Population(Stacked):
    """The seeds ``trials`` of one configuration and option, trained together.

    The group-model interface :func:`study.execution.trial.run_group` drives:
    ``train_epoch(epoch)`` and ``evaluate(epoch)`` return one value per
    member (members that stopped get NaN and None), ``stop(i)``,
    ``collapse_reason(i, best_epoch)`` and ``results(i, best_epoch)``.
    """

    def __init__(self, space: "StudyView", trials: list[TrialSpec]) -> None:
        hparams = trials[0].hparams
        if any(t.hparams != hparams for t in trials):
            raise ValueError("a population shares its configuration and option: these trials differ")
        self.prep = prep = Prepared(space, hparams)
        self.arch, self.p = prep.arch, float(prep.s["dropout"])
        self.lr, self.weight_decay = float(prep.s["lr"]), float(prep.s["weight_decay"])
        self.seeds = [t.seed for t in trials]
        self.device = device = prep.device
        self.vectors = torch.from_numpy(prep.enc.vectors).to(device)
        nets, gens = [], []
        for seed in self.seeds:          # each member exactly as the lone trial with its seed builds it
            torch.manual_seed(seed)
            net, self.params = prep.network()
            if device.type == "cpu":
                gen = torch.Generator()
                gen.set_state(torch.get_rng_state())
            else:                        # the member's own CUDA stream of randomness, seeded with its seed
                gen = torch.Generator(device=device)
                gen.manual_seed(seed)
            nets.append(net)
            gens.append(gen)
        self.names = [n for n, p in nets[0].named_parameters() if p.requires_grad]
        self.weights = {n: torch.stack([dict(net.named_parameters())[n].detach() for net in nets]).to(device)
                        .requires_grad_() for n in self.names}
        if self.arch == "attention":
            self.pos = nets[0].pos.to(device)
        self.m = {n: torch.zeros_like(w) for n, w in self.weights.items()}
        self.v = {n: torch.zeros_like(w) for n, w in self.weights.items()}
        self.step = 0
        self.gens = gens
        self.shared_order = prep.s["order_seed"] is not None  # order_seed: one order for every member (and lone trial)
        self.orders = [np.random.default_rng(order_seed(prep.s, seed)) for seed in
                       (self.seeds[:1] if self.shared_order else self.seeds)]
        self.alive = list(range(len(trials)))       # member index of each position along the seed axis
        self.dev_accuracy: list[dict[int, float]] = [{} for _ in trials]
        self.eval_accuracy: list[dict[int, dict[str, float]]] = [{} for _ in trials]

    # ---------------------------------------------------------------- members
    def _keep(self, positions: list[int]) -> None:
        """Keep only the members at ``positions`` of the seed axis (weights, moments, randomness)."""
        index = torch.tensor(positions, dtype=torch.long, device=self.device)
        for n in self.names:
            w = self.weights[n]
            grad = None if w.grad is None else w.grad.index_select(0, index)
            self.weights[n] = w.detach().index_select(0, index).requires_grad_()
            self.weights[n].grad = grad
            self.m[n], self.v[n] = self.m[n].index_select(0, index), self.v[n].index_select(0, index)
        self.gens = [self.gens[j] for j in positions]
        self.orders = [self.orders[j] for j in positions] if not self.shared_order else self.orders
        self.alive = [self.alive[j] for j in positions]

    def stop(self, member: int) -> None:
        """Freeze ``member``: it leaves the stacks; its recorded scores stay."""
        if member in self.alive:
            self._keep([j for j, i in enumerate(self.alive) if i != member])

    # ---------------------------------------------------------------- network
    def _batches(self, rows: list[np.ndarray]):
        """One training batch per member (its own data order): ids ``k × batch × time``, padded to the longest."""
        parts = [self.prep.batch("train", r) for r in rows]
        t = max(p[0].shape[1] for p in parts)
        ids = torch.stack([F.pad(p[0], (0, t - p[0].shape[1])) for p in parts])
        return ids, torch.stack([p[1] for p in parts]), torch.stack([p[2] for p in parts])

    def train_epoch(self, epoch: int) -> list[float]:
        """Train every member one epoch; the mean training loss of each (NaN for a diverged one)."""
        n = len(self.prep.splits["train"][1])
        size = int(self.prep.s["batch_size"])
        if self.shared_order:
            order = self.orders[0].permutation(n)
        else:
            orders = [o.permutation(n) for o in self.orders]
        totals = {i: 0.0 for i in self.alive}
        losses_out = [float("nan")] * len(self.dev_accuracy)
        for start in range(0, n, size):
            if not self.alive:
                break
            if self.shared_order:
                ids, lengths, y = self.prep.batch("train", order[start:start + size])
                y = y.expand(len(self.alive), -1)
            else:
                ids, lengths, y = self._batches([o[start:start + size] for o in orders])
            logits = self.forward(ids, lengths, training=True)
            k, b, c = logits.shape
            losses = F.cross_entropy(logits.reshape(k * b, c), y.reshape(-1), reduction="none").view(k, b).mean(1)
            values = losses.detach().tolist()          # one transfer per step (a GPU waits here once)
            good = [j for j in range(k) if math.isfinite(values[j])]
            for w in self.weights.values():
                w.grad = None
            if good:
                # every op is per member, so a diverged member's NaN stays in its own slice
                (losses if len(good) == k else losses[good]).sum().backward()
                self._clip()
                self._adam()
            for j in good:
                totals[self.alive[j]] += values[j] * b
            if len(good) < k:          # a diverged member leaves at this step, as a lone trial stops before its update
                for j in set(range(k)) - set(good):
                    totals.pop(self.alive[j])
                if not self.shared_order:
                    orders = [orders[j] for j in good]
                self._keep(good)
        for i, total in totals.items():
            losses_out[i] = total / max(n, 1)
        return losses_out

    def _clip(self) -> None:
        """Each member's gradient norm clipped at :data:`CLIP` (``clip_grad_norm_`` per member)."""
        k = len(self.alive)
        norms = torch.stack([torch.linalg.vector_norm(self.weights[n].grad.reshape(k, -1), 2, dim=1)
                             for n in self.names], 1)
        coef = torch.clamp(CLIP / (torch.linalg.vector_norm(norms, 2, dim=1) + 1e-6), max=1.0)
        for n in self.names:
            g = self.weights[n].grad
            g.mul_(coef.view(-1, *([1] * (g.dim() - 1))))

    @torch.no_grad()
    def _adam(self) -> None:
        """One step of :class:`torch.optim.Adam` (its single-tensor arithmetic) on every member."""
        self.step += 1
        beta1, beta2 = BETAS
        step_size = self.lr / (1 - beta1 ** self.step)
        correction2_sqrt = (1 - beta2 ** self.step) ** 0.5
        for n in self.names:
            w = self.weights[n]
            grad = w.grad if self.weight_decay == 0 else w.grad.add(w, alpha=self.weight_decay)
            self.m[n].lerp_(grad, 1 - beta1)
            self.v[n].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            denom = (self.v[n].sqrt() / correction2_sqrt).add_(EPS)
            w.addcdiv_(self.m[n], denom, value=-step_size)

    # ---------------------------------------------------------------- scores
    @torch.no_grad()
    def accuracy(self, split: str) -> list[float]:
        """Accuracy of every member still training on one split (the lone trial's batches)."""
        correct = torch.zeros(len(self.alive), dtype=torch.long, device=self.device)
        for ids, lengths, y in self.prep.eval_batches(split):
            correct += (self.forward(ids, lengths, training=False).argmax(-1) == y).sum(1)
        return [c / len(self.prep.splits[split][1]) for c in correct.tolist()]

    def evaluate(self, epoch: int) -> list[tuple[float, float] | None]:
        """(dev, test) accuracy of each member still alive, None for the others."""
        out: list[tuple[float, float] | None] = [None] * len(self.dev_accuracy)
        if not self.alive:
            return out
        dev, test = self.accuracy("dev"), self.accuracy("test")
        extra = {name: self.accuracy(f"eval:{name}") for name in self.prep.eval_names}
        for j, i in enumerate(self.alive):
            self.dev_accuracy[i][epoch] = dev[j]
            self.eval_accuracy[i][epoch] = {name: scores[j] for name, scores in extra.items()}
            out[i] = (dev[j], test[j])
        return out

    def collapse_reason(self, member: int, best_epoch: int) -> str | None:
        """Why ``member``'s run counts as collapsed, or None."""
        return self.prep.collapse_reason(self.dev_accuracy[member].get(best_epoch, 0.0))

    def results(self, member: int, best_epoch: int) -> dict[str, Any]:
        """``member``'s result columns at its best dev epoch."""
        return self.prep.results(self.params, self.eval_accuracy[member].get(best_epoch, {}))
