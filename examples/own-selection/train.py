"""A training script in the shape most research code has: a dev score every
epoch, the best checkpoint kept, test once at the end, a summary at exit.

Written for seedsweep's tests and its how-to (docs/tutorials/your-own-model.md,
"A script that tests once, at its end"); it trains nothing (its numbers are a
deterministic function of its arguments, so the tests know what it printed),
but its output has the shape of a word-level language model's training log:

    | end of epoch   3 | time:  0.01s | valid loss  5.98 | valid ppl   396.45
    | End of training | test loss  5.99 | test ppl   399.42

It catches Ctrl-C (SIGINT) the way the PyTorch examples do -- training stops,
the best checkpoint is still tested -- unless ``--on-interrupt die``.
"""

import argparse
import json
import math
import random
import signal
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd")
p.add_argument("--lr", type=float, default=0.5)
p.add_argument("--epochs", type=int, default=4)
p.add_argument("--seed", type=int, default=1)
p.add_argument("--curve", choices=["u", "worsens"], default="u", help="u: best in the middle; worsens: after epoch 1")
p.add_argument("--sleep", type=float, default=0.0, help="seconds per epoch")
p.add_argument("--start-epoch", type=int, default=1, help="the number of the first epoch it prints")
p.add_argument("--on-interrupt", choices=["test", "die"], default="test", help="die: Ctrl-C ends it untested")
args = p.parse_args()
if args.on_interrupt == "die":
    signal.signal(signal.SIGINT, signal.SIG_DFL)

rng = random.Random(args.seed)
base = 400.0 if args.optimizer == "sgd" else 380.0
turn = 2 if args.lr >= 0.5 else 3                  # the epoch where the dev curve turns


def valid_ppl(epoch: int) -> float:
    if args.curve == "worsens":
        return base + 25.0 * (epoch - 1) + rng.uniform(0, 5)
    return base + 12.0 * (epoch - turn) ** 2 + rng.uniform(0, 5)


best_val, best_epoch = math.inf, 0
history = []
try:
    for epoch in range(1, args.epochs + 1):
        start = time.time()
        for batch in range(0, 300, 100):
            print(f"| epoch {epoch:3d} | {batch:5d}/  300 batches | lr {args.lr:5.2f} | loss {6 - epoch / 10:5.2f}")
        sys.stdout.write("training 50%\rtraining 100%\r")        # a progress bar's carriage returns
        time.sleep(args.sleep)
        val = valid_ppl(epoch)
        history.append(val)
        print("-" * 89)
        print(f"| end of epoch {epoch + args.start_epoch - 1:3d} | time: {time.time() - start:5.2f}s | "
              f"valid loss {math.log(val):5.2f} | "
              f"valid ppl {val:8.2f}")
        print("-" * 89, flush=True)
        if val < best_val:
            best_val, best_epoch = val, epoch          # "torch.save(model, f)": the best checkpoint so far
except KeyboardInterrupt:
    print("-" * 89)
    print("Exiting from training early")

test = best_val * 1.01 + (args.seed % 7)           # the best checkpoint, reloaded and tested
print("=" * 89)
print(f"| End of training | test loss {math.log(test):5.2f} | test ppl {test:8.2f}")
print("=" * 89)
print(json.dumps({"best_epoch": best_epoch, "valid_ppl": best_val, "test_ppl": test, "history": history}, indent=2))
print("{not json: a warning line that starts with a brace")
