"""Training and decoding speed of the tagger family against two peers, on CPU.

All three arms train the same network on CoNLL-2000 (train 8,936 sentences,
test 2,012): frozen GloVe 6B 50d word vectors (no characters, no casing
feature), one BiLSTM layer of 100 units per direction, a CRF output layer,
no dropout, Nadam, mini-batches of 32 sentences, ``torch.set_num_threads``
threads (default 2). Each peer uses its own usual batching:

* **seedsweep** (``study.families.tagger.model.TaggerModel``): batches of sentences of equal
  length (the paper's code's scheme) -- no padding, no packing;
* **plain** PyTorch: ``nn.Embedding`` + ``nn.LSTM`` over padded, packed batches
  in shuffled file order + ``pytorch-crf``'s ``CRF``; decoding is timed in file
  order and length-sorted;
* **flair** 0.15 ``SequenceTagger`` (``use_crf=True``, ``rnn_layers=1``, all
  dropouts 0, ``reproject_embeddings=False``) over ``WordEmbeddings`` loaded
  from a gensim KeyedVectors file written from the same vectors; trained with
  ``forward_loss`` on shuffled batches; decoded with ``predict`` (which sorts
  by length itself).

Figures: training tokens/s over one epoch and decoding tokens/s over the test
set, median of ``--repeat`` runs per arm (arms alternate); ratios against the
faster peer are printed side by side.

The peers are not in seedsweep's lock file. Set up once::

    python3 -m venv .venv-peers
    .venv-peers/bin/pip install torch==2.13.0
    .venv-peers/bin/pip install -r requirements.lock -r benchmarks/requirements-peers.txt
    .venv-peers/bin/pip install --no-deps -e .
    SEEDSWEEP_SHARED_DATA=../shared/data .venv-peers/bin/python benchmarks/tagger_speed.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ.get("SEEDSWEEP_SHARED_DATA", HERE.parents[1] / "shared" / "data"))


def tokens(sentences) -> int:
    return sum(len(s) for s in sentences)


# ------------------------------------------------------------------ seedsweep


def seedsweep_arm(seed: int):
    from seedsweep.study.spec.spacefile import parse_space
    from seedsweep.study.families.tagger import TaggerModel

    os.environ["SEEDSWEEP_DATA"] = str(DATA)
    space = parse_space("""
name: speed
family: tagger
samples: 1
seeds: 1
compare: {classifier: [crf, softmax]}
task: {dataset: conll2000}
fixed: {layers: 1, units: 100, chars: none, casing: false, dropout: none, optimizer: nadam, batch_size: 32,
        clip_norm: 0, embeddings: glove-6b-50d}
""")
    torch.manual_seed(seed)
    model = TaggerModel(space, {"classifier": "crf"}, seed)
    n_train, n_test = model.train.tokens, model.test.tokens

    def train():
        model.train_epoch(1)
        return n_train

    def decode():
        model.predict(model.test)
        return n_test

    return train, {"sorted": decode}


# ---------------------------------------------------------------------- plain


def plain_arm(seed: int, corpus, vocab):
    from torch import nn
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
    from torchcrf import CRF

    tags = sorted({t for s in corpus.train for t in s.tags})
    tag_index = {t: i for i, t in enumerate(tags)}

    def encode(sentences):
        return [(torch.tensor([vocab.lookup(w) for w in s.tokens]), torch.tensor([tag_index.get(t, 0) for t in s.tags]))
                for s in sentences]

    train_data, test_data = encode(corpus.train), encode(corpus.test)
    torch.manual_seed(seed)

    class Plain(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding.from_pretrained(torch.tensor(vocab.vectors), freeze=True, padding_idx=0)
            self.lstm = nn.LSTM(vocab.vectors.shape[1], 100, batch_first=True, bidirectional=True)
            self.out = nn.Linear(200, len(tags))
            self.crf = CRF(len(tags), batch_first=True)

        def emissions(self, words, lengths):
            packed = pack_padded_sequence(self.emb(words), lengths, batch_first=True, enforce_sorted=False)
            h, _ = pad_packed_sequence(self.lstm(packed)[0], batch_first=True, total_length=words.shape[1])
            return self.out(h)

    net = Plain()
    opt = torch.optim.NAdam([p for p in net.parameters() if p.requires_grad], lr=0.002)
    rng = np.random.default_rng(seed)

    def batch(items):
        lengths = torch.tensor([len(w) for w, _ in items])
        words = nn.utils.rnn.pad_sequence([w for w, _ in items], batch_first=True)
        gold = nn.utils.rnn.pad_sequence([t for _, t in items], batch_first=True)
        mask = torch.arange(words.shape[1]).unsqueeze(0) < lengths.unsqueeze(1)
        return words, gold, mask, lengths

    def train():
        net.train()
        order = rng.permutation(len(train_data))
        for i in range(0, len(order), 32):
            words, gold, mask, lengths = batch([train_data[j] for j in order[i:i + 32]])
            loss = -net.crf(net.emissions(words, lengths), gold, mask=mask, reduction="mean")
            opt.zero_grad()
            loss.backward()
            opt.step()
        return tokens(corpus.train)

    def decode_order(order):
        net.eval()
        with torch.no_grad():
            for i in range(0, len(order), 32):
                words, _, mask, lengths = batch([test_data[j] for j in order[i:i + 32]])
                paths = net.crf.decode(net.emissions(words, lengths), mask=mask)
                [[tags[k] for k in p] for p in paths]
        return tokens(corpus.test)

    file_order = list(range(len(test_data)))
    by_length = sorted(file_order, key=lambda j: len(test_data[j][0]))
    return train, {"file order": lambda: decode_order(file_order), "sorted": lambda: decode_order(by_length)}


# ---------------------------------------------------------------------- flair


def flair_arm(seed: int, corpus, vocab, tmp: Path):
    import flair
    from flair.datasets import ColumnCorpus
    from flair.embeddings import WordEmbeddings
    from flair.models import SequenceTagger
    from gensim.models import KeyedVectors

    flair.device = torch.device("cpu")
    kv = KeyedVectors(vector_size=vocab.vectors.shape[1])
    words = sorted(vocab.index, key=vocab.index.get)
    kv.add_vectors(words, vocab.vectors[[vocab.index[w] for w in words]])
    kv.save(str(tmp / "glove50.kv"))
    fc = ColumnCorpus(DATA / "conll2000", {0: "text", 2: "np"}, train_file="train.txt", dev_file="dev.txt",
                      test_file="test.txt", comment_symbol=None, in_memory=True)
    labels = fc.make_label_dictionary(label_type="np", add_unk=False)
    torch.manual_seed(seed)
    tagger = SequenceTagger(hidden_size=100, embeddings=WordEmbeddings(str(tmp / "glove50.kv")),
                            tag_dictionary=labels, tag_type="np", use_crf=True, use_rnn=True, rnn_layers=1,
                            dropout=0.0, word_dropout=0.0, locked_dropout=0.0, reproject_embeddings=False)
    opt = torch.optim.NAdam(tagger.parameters(), lr=0.002)
    train_sents = list(fc.train)
    test_sents = list(fc.test)
    rng = np.random.default_rng(seed)

    def train():
        tagger.train()
        order = rng.permutation(len(train_sents))
        for i in range(0, len(order), 32):
            loss, count = tagger.forward_loss([train_sents[j] for j in order[i:i + 32]])
            opt.zero_grad()
            (loss / max(count, 1)).backward()
            opt.step()
        return sum(len(s) for s in train_sents)

    def decode():
        tagger.predict(test_sents, mini_batch_size=32, label_name="predicted")
        return sum(len(s) for s in test_sents)

    return train, {"sorted": decode}


# ----------------------------------------------------------------------- main


def timed(fn) -> float:
    t = time.perf_counter()
    n = fn()
    return n / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if not (DATA / "conll2000" / "train.txt").exists():
        raise SystemExit(f"CoNLL-2000 not found under {DATA}: set SEEDSWEEP_SHARED_DATA to the shared data folder")
    torch.set_num_threads(args.threads)
    os.environ["SEEDSWEEP_DATA"] = str(DATA)
    from seedsweep.study.families.tagger.corpora import load_corpus
    from seedsweep.study.families.tagger.embeddings import build_vocabulary

    corpus = load_corpus({"dataset": "conll2000"})
    vocab = build_vocabulary("glove-6b-50d", (w for s in corpus.train for w in s.tokens),
                             (w for s in corpus.dev + corpus.test for w in s.tokens), seed=1)
    arms = {"seedsweep": seedsweep_arm(1), "plain+pytorch-crf": plain_arm(1, corpus, vocab)}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            arms["flair"] = flair_arm(1, corpus, vocab, Path(tmp))
        except ImportError as exc:
            print(f"flair not installed ({exc}); see the docstring for the peers' environment")
        results: dict[str, dict[str, list[float]]] = {a: {} for a in arms}
        for r in range(args.repeat):
            for name, (train, decoders) in arms.items():
                results[name].setdefault("train", []).append(timed(train))
                for label, dec in decoders.items():
                    results[name].setdefault(f"decode ({label})", []).append(timed(dec))
                print(f"round {r + 1}: {name} done", flush=True)
    med = {a: {k: statistics.median(v) for k, v in m.items()} for a, m in results.items()}
    peers = [a for a in med if a != "seedsweep"]
    print(f"\n{'tokens/s (CPU, %d threads)' % args.threads:<34}" + "".join(f"{a:>20}" for a in med))
    for key in ("train", "decode (file order)", "decode (sorted)"):
        print(f"{key:<34}" + "".join(f"{med[a][key]:>20,.0f}" if key in med[a] else f"{'–':>20}" for a in med))
    faster_train = max(peers, key=lambda a: med[a]["train"])
    ours = med["seedsweep"]
    ratios = {"train vs faster peer (%s)" % faster_train: ours["train"] / med[faster_train]["train"]}
    dec_peer = max(peers, key=lambda a: med[a].get("decode (file order)", med[a]["decode (sorted)"]))
    ref = med[dec_peer]
    ratios[f"decode vs {dec_peer} file order"] = ours["decode (sorted)"] / ref.get("decode (file order)",
                                                                                   ref["decode (sorted)"])
    ratios[f"decode vs {dec_peer} length-sorted"] = ours["decode (sorted)"] / ref["decode (sorted)"]
    print()
    for k, v in ratios.items():
        print(f"{k:<52}{v:>8.2f}")
    print("\n(targets: ≥ 1.5 in training; in decoding ≥ 1.5 against file order and ≥ 1.0 against length-sorted)")
    if args.json:
        args.json.write_text(json.dumps({"date": datetime.now(timezone.utc).isoformat(), "threads": args.threads,
                                         "repeat": args.repeat, "tokens_per_second": med, "ratios": ratios,
                                         "raw": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
