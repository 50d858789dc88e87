"""The tagger's parts: CRF against enumeration, tagging schemes, the CoNLL
script's chunk rules, readers on malformed files, dropout masks, embeddings."""

from __future__ import annotations

import gzip
import itertools
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from seedsweep.study.errors import UserError
from seedsweep.study.families.tagger.corpora import load_corpus, read_conll, read_conllu, resolve_files, DATASETS
from seedsweep.study.families.tagger.crf import CRF
from seedsweep.study.families.tagger.embeddings import build_vocabulary, casing, CASINGS, load_vectors, normalize_number
from seedsweep.study.families.tagger.metrics import chunk_prf, token_accuracy
from seedsweep.study.families.tagger.schemes import chunks, convert, is_valid

DATA = Path(os.environ.get("SEEDSWEEP_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
needs_conll = pytest.mark.skipif(not (DATA / "conll2000" / "train.txt").exists(),
                                 reason=f"CoNLL-2000 not found under {DATA} (set SEEDSWEEP_SHARED_DATA)")


# ---------------------------------------------------------------------- CRF


@pytest.mark.parametrize("T,K,seed", [(1, 3, 0), (2, 3, 1), (4, 3, 2), (5, 2, 3), (3, 4, 4)])
def test_crf_log_partition_and_viterbi_equal_enumeration(T, K, seed):
    torch.manual_seed(seed)
    crf = CRF(K)
    with torch.no_grad():
        crf.transitions.normal_()
        crf.start.normal_()
        crf.end.normal_()
    lengths = [T, max(1, T - 1), 1]
    e = torch.randn(len(lengths), T, K)
    mask = torch.tensor([[1] * n + [0] * (T - n) for n in lengths], dtype=torch.bool)
    with torch.no_grad():
        logz = crf.log_partition(e, mask)
    best = crf.decode(e, mask)
    for b, n in enumerate(lengths):
        scores = {}
        for y in itertools.product(range(K), repeat=n):
            tags = torch.tensor([list(y) + [0] * (T - n)])
            with torch.no_grad():
                scores[y] = float(crf.score(e[b:b + 1], tags, mask[b:b + 1]))
        brute = float(torch.logsumexp(torch.tensor(list(scores.values())), 0))
        assert float(logz[b]) == pytest.approx(brute, abs=1e-5)
        assert tuple(best[b]) == max(scores, key=scores.get)
        # the score itself, by hand for the best path
        y = best[b]
        with torch.no_grad():
            by_hand = float(crf.start[y[0]] + sum(e[b, t, y[t]] for t in range(n))
                            + sum(crf.transitions[y[t - 1], y[t]] for t in range(1, n)) + crf.end[y[-1]])
        assert scores[tuple(y)] == pytest.approx(by_hand, abs=1e-5)


def test_crf_nll_is_positive_and_trains():
    torch.manual_seed(0)
    crf = CRF(3)
    e = torch.zeros(2, 4, 3, requires_grad=True)
    gold = torch.tensor([[0, 1, 1, 2], [2, 2, 0, 1]])
    opt = torch.optim.SGD([e, *crf.parameters()], lr=1.0)
    first = float(crf.nll(e, gold).detach())
    for _ in range(50):
        opt.zero_grad()
        loss = crf.nll(e, gold)
        loss.backward()
        opt.step()
    assert first > 0 and float(loss.detach()) < 0.1 * first
    assert crf.decode(e) == gold.tolist()


# ------------------------------------------------------------------ schemes

BIO = [["B-NP", "I-NP", "B-NP", "O", "B-VP", "I-VP", "B-PP", "B-NP"],
       ["O", "B-NP"], ["B-ADJP"], ["B-NP", "B-NP", "B-NP", "I-NP", "O", "O"]]


@pytest.mark.parametrize("sentence", BIO)
@pytest.mark.parametrize("scheme", ["BIO", "IOB", "IOBES"])
def test_scheme_conversions_round_trip(sentence, scheme):
    there = convert(sentence, scheme)
    assert is_valid(there, scheme)
    assert convert(there, "BIO", scheme) == sentence
    assert chunks(there, scheme) == chunks(sentence)
    for other in ("BIO", "IOB", "IOBES"):
        assert convert(convert(there, other, scheme), scheme, other) == there


def test_iob1_only_marks_a_chunk_that_follows_one_of_its_type():
    assert convert(["B-NP", "B-NP", "O", "B-NP", "B-VP"], "IOB") == ["I-NP", "B-NP", "O", "I-NP", "I-VP"]
    assert convert(["B-NP", "I-NP", "B-NP"], "IOBES") == ["B-NP", "E-NP", "S-NP"]


def test_chunk_prf_follows_the_conll_script():
    # an I- after O opens a chunk, as the script counts it
    assert chunks(["O", "I-NP", "I-NP", "O"]) == [("NP", 1, 2)]
    # a type change inside a run ends one chunk and starts another
    assert chunks(["B-NP", "I-VP"]) == [("NP", 0, 0), ("VP", 1, 1)]
    gold = [["B-NP", "I-NP", "O", "B-VP"], ["B-NP", "B-PP", "B-NP", "I-NP"]]
    pred = [["B-NP", "I-NP", "O", "I-VP"], ["B-NP", "B-PP", "I-NP", "I-NP"]]
    # pred chunks: NP(0-1) ✓, VP(3) ✓ (I- after O opens it), NP(0) ✓, PP(1) ✓, NP(2-3) ✓ (I- after PP opens it)
    assert chunk_prf(gold, pred) == (1.0, 1.0, 1.0)
    pred2 = [["B-NP", "B-NP", "O", "O"], ["B-NP", "I-NP", "B-NP", "I-NP"]]
    # predicted: NP(0), NP(1), NP(0-1), NP(2-3) -> correct: NP(2-3) only; gold has 5 chunks
    p, r, f = chunk_prf(gold, pred2)
    assert (p, r) == pytest.approx((1 / 4, 1 / 5))
    assert f == pytest.approx(2 * p * r / (p + r))
    # IOBES predictions are converted to BIO first
    assert chunk_prf([["B-NP", "I-NP", "O"]], [["B-NP", "E-NP", "O"]]) == (1.0, 1.0, 1.0)
    assert chunk_prf([["O"]], [["O"]]) == (0.0, 0.0, 0.0)
    assert token_accuracy([["DT", "NN"]], [["DT", "VB"]]) == 0.5


# ------------------------------------------------------------------ readers


@pytest.mark.parametrize("name,text,kwargs,where", [
    ("missing.txt", "The DT B-NP\ncat NN\n", {"tag_column": 2}, "line 2"),
    ("mixed.txt", "The DT B-NP\ncat\tNN\tI-NP\n", {"tag_column": 2}, "line 2"),
    ("empty.txt", "\n\n   \n", {}, "empty.txt"),
    ("scheme.txt", "The DT B-NP\n\ncat NN Q-NP\n", {"tag_column": 2, "scheme": "BIO"}, "line 3"),
    ("iobes_in_bio.txt", "The DT S-NP\n", {"tag_column": 2, "scheme": "BIO"}, "line 1"),
])
def test_readers_name_the_file_and_line(tmp_path, name, text, kwargs, where):
    (tmp_path / name).write_text(text)
    with pytest.raises(UserError) as err:
        read_conll(tmp_path / name, **kwargs)
    assert str(tmp_path / name) in str(err.value) and where in str(err.value)


def test_conll_reader_handles_docstart_tabs_spaces_gzip_and_columns(tmp_path):
    text = "-DOCSTART- -X- O\n\nThe DT B-NP\ncat NN I-NP\n \nsat VBD B-VP\n"
    (tmp_path / "a.txt").write_text(text)
    with gzip.open(tmp_path / "a.txt.gz", "wt") as fh:
        fh.write(text.replace(" ", "\t").replace("\n\t\n", "\n\n"))
    for p in ("a.txt", "a.txt.gz"):
        sents = read_conll(tmp_path / p, tag_column=2, scheme="BIO")
        assert [s.tokens for s in sents] == [("The", "cat"), ("sat",)]
        assert [s.tags for s in sents] == [("B-NP", "I-NP"), ("B-VP",)]
    assert read_conll(tmp_path / "a.txt", tag_column=1)[0].tags == ("DT", "NN")


def test_conllu_reader_skips_comments_ranges_and_empty_nodes(tmp_path):
    lines = ["# sent_id = 1", "1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_",
             "1\tdo\tdo\tAUX\tVBP\t_\t0\troot\t_\t_", "2\tn't\tnot\tPART\tRB\t_\t1\tadvmod\t_\t_",
             "2.1\tx\tx\tX\tX\t_\t_\t_\t_\t_", "", "1\tHi\thi\tINTJ\tUH\t_\t0\troot\t_\t_", ""]
    (tmp_path / "a.conllu").write_text("\n".join(lines))
    sents = read_conllu(tmp_path / "a.conllu")
    assert [s.tags for s in sents] == [("AUX", "PART"), ("INTJ",)]
    assert read_conllu(tmp_path / "a.conllu", column="xpos")[0].tags == ("VBP", "RB")
    (tmp_path / "b.conllu").write_text("1\tdo\tdo\tAUX\n")
    with pytest.raises(UserError, match="line 1"):
        read_conllu(tmp_path / "b.conllu")


def test_registry_resolution_order_and_checked_download(tmp_path, monkeypatch):
    info = DATASETS["conll2000"]
    explicit = tmp_path / "mine"
    explicit.mkdir()
    for n in ("train.txt", "dev.txt", "test.txt"):
        (explicit / n).write_text("a DT B-NP\n")
    monkeypatch.setenv("SEEDSWEEP_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SEEDSWEEP_DATA", raising=False)
    assert resolve_files(info, str(explicit))["dev"] == explicit / "dev.txt"
    monkeypatch.setenv("SEEDSWEEP_DATA", str(tmp_path))
    (tmp_path / "conll2000").symlink_to(explicit)
    assert resolve_files(info)["train"] == tmp_path / "conll2000" / "train.txt"
    # no local copy: download (here from file:// URLs) into the cache, checking each digest
    monkeypatch.setenv("SEEDSWEEP_DATA", str(tmp_path / "nowhere"))
    import hashlib
    from dataclasses import replace

    urls = {n: (explicit / n).as_uri() for n in ("train.txt", "dev.txt", "test.txt")}
    digest = {n: hashlib.sha256((explicit / n).read_bytes()).hexdigest() for n in urls}
    files = resolve_files(replace(info, urls=urls, sha256=digest))
    assert files["test"] == tmp_path / "cache" / "conll2000" / "test.txt" and files["test"].read_text() == "a DT B-NP\n"
    bad = replace(info, name="other", urls=urls, sha256={n: "0" * 64 for n in urls})
    with pytest.raises(UserError, match="SHA-256"):
        resolve_files(bad)
    assert not any((tmp_path / "cache" / "other").glob("*.txt"))


@needs_conll
def test_registered_corpora_load(monkeypatch):
    monkeypatch.setenv("SEEDSWEEP_DATA", str(DATA))
    c = load_corpus({"dataset": "conll2000"})
    assert (len(c.train), len(c.dev), len(c.test)) == (8936, 1844, 2012) and c.scheme == "BIO"
    sub = load_corpus({"dataset": "conll2000", "train_sentences": 2000})
    assert len(sub.train) == 2000 and set(sub.train) <= set(c.train)
    w = load_corpus({"dataset": "wnut16"})
    assert (len(w.train), len(w.dev), len(w.test)) == (1916, 239, 239)
    ud = load_corpus({"dataset": "ud_english_pos"})
    assert (len(ud.train), len(ud.dev), len(ud.test)) == (500, 1502, 2077) and ud.metric == "accuracy"


# ------------------------------------------------------------------ dropout


def _net(dropout, p_out=0.5, p_rec=0.5):
    from seedsweep.study.families.tagger import DEFAULTS
    from seedsweep.study.families.tagger.network import Network

    s = {**DEFAULTS, "dropout": dropout, "dropout_output": p_out, "dropout_recurrent": p_rec, "layers": 1,
         "units": 8, "chars": "none"}
    return Network.build(s, np.random.default_rng(0).normal(size=(10, 6)).astype(np.float32), 5, 3)


def test_naive_dropout_draws_a_new_mask_at_every_time_step():
    torch.manual_seed(0)
    net = _net("naive").train()
    h = torch.ones(4, 50, 16)
    out = net.mask_outputs(h)
    zeros = out == 0
    assert set(out.unique().tolist()) <= {0.0, 2.0}
    assert 0.3 < zeros.float().mean() < 0.7
    assert (zeros[:, 0] != zeros[:, 1]).any()                 # masks differ between time steps
    assert torch.equal(net.eval().mask_outputs(h), h)         # nothing masked at evaluation


def test_variational_dropout_uses_one_mask_per_sentence_on_outputs_and_recurrent_state():
    torch.manual_seed(0)
    net = _net("variational").train()
    h = torch.ones(4, 50, 16)
    out = net.mask_outputs(h)
    zeros = out == 0
    assert (zeros == zeros[:, :1]).all()                      # the same mask at every time step
    assert (zeros[0] != zeros[1]).any()                       # but a different one per sentence
    # the recurrent state: the layer's step-by-step recurrence sees h_{t-1} * mask with one mask per
    # sentence and direction; with all recurrent weights equal to 1 on one unit, the masked unit's
    # contribution vanishes at every step -> compare with the unmasked fused kernel
    layer = net.lstms[0]
    assert layer.rate == 0.5
    x = torch.randn(3, 7, 16)
    layer.eval()
    fused = layer(x)
    layer.train()
    ones = [torch.ones(3, 8), torch.ones(3, 8)]
    manual = torch.cat([layer.direction(x, "", ones[0]), layer.direction(x.flip(1), "_reverse", ones[1]).flip(1)], 2)
    assert torch.allclose(manual, fused, atol=1e-5)           # the step-by-step recurrence is the LSTM
    torch.manual_seed(1)
    a = layer(x)
    torch.manual_seed(1)
    keep = 0.5
    masks = [torch.bernoulli(x.new_full((3, 8), keep)) / keep for _ in range(2)]
    expected = torch.cat([layer.direction(x, "", masks[0]), layer.direction(x.flip(1), "_reverse", masks[1]).flip(1)], 2)
    assert torch.allclose(a, expected)
    assert not torch.allclose(a, fused)


def test_no_dropout_masks_nothing():
    net = _net("none").train()
    h = torch.ones(2, 5, 16)
    assert torch.equal(net.mask_outputs(h), h)
    assert net.lstms[0].rate == 0


# --------------------------------------------------------------- embeddings


def test_embedding_lookup_order_and_frequent_unknown_words(tmp_path):
    (tmp_path / "vec.txt").write_text("2 3\nthe 1 0 0\nparis 0 1 0\n00.0 0 0 1\n")
    train = ["The", "Paris"] + ["zorp"] * 50 + ["blip"] * 49 + ["12.5"]
    vocab = build_vocabulary(str(tmp_path / "vec.txt"), train, ["paris"], min_count=50, seed=3)
    assert vocab.lookup("The") == vocab.index["the"]                        # lower-cased
    assert vocab.lookup("12.5") == vocab.index["00.0"]                      # digits normalised
    assert vocab.lookup("zorp") == vocab.index["zorp"] and vocab.new == 1   # ≥ 50 times: its own vector
    assert vocab.lookup("blip") == 1                                        # 49 times: UNKNOWN
    assert np.all(np.abs(vocab.vectors[vocab.index["zorp"]]) <= 0.25)
    assert np.all(vocab.vectors[0] == 0)
    assert normalize_number("A1,2") == "a0,0"
    assert CASINGS[casing("Paris")] == "initialUpper" and CASINGS[casing("1999")] == "numeric"
    words, m = load_vectors("glove-6b-50d", {"the", "cat"})
    assert sorted(words) == ["cat", "the"] and m.shape == (2, 50)
