"""A plain PyTorch training script: a small MLP on scikit-learn's handwritten
digits (1,797 8x8 images, shipped with scikit-learn, so nothing downloads).

It knows nothing of seedsweep. Run as a program it prints one JSON object
per epoch on stdout (the lines a ``command`` study reads)::

    python digits.py --optimizer adam --lr 0.01 --hidden 32 --seed 1

and :func:`train` is the same loop for a ``function`` study
(``function.py`` beside this file), which passes its own ``report``.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn


def splits(seed_of_split: int = 0):
    """Train / dev / test (60 / 20 / 20), one fixed split for every trial."""
    x, y = load_digits(return_X_y=True)
    order = np.random.default_rng(seed_of_split).permutation(len(y))
    x = torch.tensor(x[order] / 16.0, dtype=torch.float32)
    y = torch.tensor(y[order], dtype=torch.long)
    a, b = int(0.6 * len(y)), int(0.8 * len(y))
    return (x[:a], y[:a]), (x[a:b], y[a:b]), (x[b:], y[b:])


def accuracy(model: nn.Module, data) -> float:
    x, y = data
    with torch.no_grad():
        return float((model(x).argmax(1) == y).float().mean())


def train(optimizer: str, lr: float, hidden: int, epochs: int, seed: int, report) -> None:
    """Train for up to ``epochs`` epochs; after each, ``report(epoch, loss,
    dev, test)``; stop early when it returns True."""
    torch.manual_seed(seed)
    (xt, yt), dev, test = splits()
    model = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))
    opt = {"adam": torch.optim.Adam, "sgd": torch.optim.SGD}[optimizer](model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(1, epochs + 1):
        total = 0.0
        for batch in torch.randperm(len(yt)).split(32):
            opt.zero_grad()
            loss = loss_fn(model(xt[batch]), yt[batch])
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(batch)
        if report(epoch, total / len(yt), accuracy(model, dev), accuracy(model, test)):
            return


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--optimizer", default="adam", choices=["adam", "sgd"])
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--note", default="", help="any text; echoed back (it shows how arguments arrive)")
    args = parser.parse_args(argv)
    print(json.dumps({"argv": argv}), flush=True)       # a log line: it has no dev key

    def report(epoch, loss, dev, test):
        print(json.dumps({"epoch": epoch, "loss": loss, "dev_acc": dev, "test_acc": test}), flush=True)
        return False                                    # a command is stopped by a signal, not by a return value

    train(args.optimizer, args.lr, args.hidden, args.epochs, args.seed, report)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
