"""Template test beds: expansion counts (computed here from the raw YAML), no
placeholder left, labels kept, splits disjoint, byte-identical output, and
located errors from ``seedsweep testbed``."""

from __future__ import annotations

import csv
import io
import itertools
import os
import re
import subprocess
import sys
from math import prod
from pathlib import Path

import pytest
import yaml

from seedsweep.study.errors import UserError
from seedsweep.study.testbeds import read_testbed

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "testbeds" / "sst_phenomena.yaml"
SMALL = """
cap: 6
fillers:
  POSITIVE: {train: [good, nice], eval: [great, superb, lovely]}
  CATEGORY: {train: [film], eval: [movie, story]}
  name: {train: [Anna], eval: [Omar, Lena]}
phenomena:
  negation:
    train:
      - {template: "The @category@ is not @Positive@.", label: negative}
    eval:
      - {template: "This @CATEGORY@ is not @POSITIVE@.", label: negative}
      - {template: "@NAME@ said the @CATEGORY@ was @POSITIVE@, and @name@ lied.", label: negative}
  plain:
    eval:
      - {template: "A fine day.", label: positive}
"""


def expected_counts(path: Path) -> dict[tuple[str, str], int]:
    """Σ over templates of min(cap, Π |fillers|), from the YAML itself: the oracle."""
    raw = yaml.safe_load(path.read_text())
    fillers = {k.upper(): v for k, v in raw["fillers"].items()}
    out: dict[tuple[str, str], int] = {}
    for phenomenon, parts in raw["phenomena"].items():
        for split, templates in parts.items():
            for t in templates:
                names = {m.upper() for m in re.findall(r"@(\w+)@", t["template"])}
                n = prod(len(fillers[name][split]) for name in names)
                out[(phenomenon, split)] = out.get((phenomenon, split), 0) + min(n, raw.get("cap", 64))
    return out


def test_the_shipped_test_bed_has_three_phenomena_of_twelve_templates_and_the_expected_counts():
    bed = read_testbed(SHIPPED)
    rows = bed.sentences()
    got: dict[tuple[str, str], int] = {}
    for r in rows:
        got[(r.phenomenon, r.split)] = got.get((r.phenomenon, r.split), 0) + 1
    assert got == expected_counts(SHIPPED)
    assert bed.phenomena == ["negation", "mixed", "sarcasm"]
    for phenomenon in bed.phenomena:
        assert sum(t.phenomenon == phenomenon for t in bed.templates) >= 12


def test_every_sentence_is_filled_keeps_its_templates_label_and_no_eval_sentence_is_trained_on():
    raw = yaml.safe_load(SHIPPED.read_text())
    label_of = {(p, t["template"]): t["label"] for p, parts in raw["phenomena"].items()
                for templates in parts.values() for t in templates}
    rows = read_testbed(SHIPPED).sentences()
    assert not [r.text for r in rows if "@" in r.text]
    assert all(r.label == label_of[(r.phenomenon, r.template)] for r in rows)
    train = {r.text for r in rows if r.split == "train"}
    evals = {r.text for r in rows if r.split == "eval"}
    assert train and evals and not train & evals
    # every template's sentences are its own fillers' products (that split's part), computed here
    fillers = {k.upper(): v for k, v in raw["fillers"].items()}
    for (phenomenon, text), _ in label_of.items():
        mine = [r for r in rows if (r.phenomenon, r.template) == (phenomenon, text)]
        names = list(dict.fromkeys(m.upper() for m in re.findall(r"@(\w+)@", text)))
        split = mine[0].split
        product = {re.sub(r"@(\w+)@", lambda m: dict(zip(names, combo))[m.group(1).upper()], text)
                   for combo in itertools.product(*(fillers[n][split] for n in names))}
        assert {r.text for r in mine} <= product and len(mine) == min(len(product), raw["cap"])


def test_placeholders_match_case_insensitively_repeat_with_one_value_and_the_cap_samples_the_product(tmp_path):
    path = tmp_path / "bed.yaml"
    path.write_text(SMALL)
    bed = read_testbed(path)
    rows = bed.sentences()
    assert [r.text for r in rows if r.split == "train"] == ["The film is not good.", "The film is not nice."]
    full = {f"This {c} is not {p}." for c, p in itertools.product(["movie", "story"], ["great", "superb", "lovely"])}
    first = [r.text for r in rows if r.template.startswith("This")]
    assert len(first) == 6 and set(first) == full          # 2 × 3 = 6 combinations: all, within the cap
    second = [r.text for r in rows if r.template.startswith("@NAME@")]
    assert len(second) == 6 and len(set(second)) == 6       # 2 × 2 × 3 = 12 combinations, capped at 6
    product = {f"{n} said the {c} was {p}, and {n} lied." for n, c, p in
               itertools.product(["Omar", "Lena"], ["movie", "story"], ["great", "superb", "lovely"])}
    assert set(second) <= product
    assert [r.text for r in rows if r.phenomenon == "plain"] == ["A fine day."]
    assert second == [r.text for r in read_testbed(path).sentences() if r.template.startswith("@NAME@")]


def test_the_testbed_command_writes_byte_identical_tsv_across_runs(tmp_path):
    outs = []
    for hashseed in ("1", "2"):
        out = tmp_path / f"bed{hashseed}.tsv"
        r = subprocess.run([sys.executable, "-m", "seedsweep", "testbed", str(SHIPPED), "-o", str(out)],
                           capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": hashseed})
        assert r.returncode == 0, r.stderr
        assert re.search(r"negation\s+eval\s+512", r.stdout) and re.search(r"sarcasm\s+train\s+192", r.stdout)
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    lines = outs[0].decode().splitlines()
    assert lines[0] == "text\tlabel\tphenomenon\ttemplate\tsplit"
    assert len(lines) - 1 == sum(expected_counts(SHIPPED).values())
    # the file holds the sentences as read back by the csv module, labels included
    table = list(csv.DictReader(io.StringIO(outs[0].decode()), delimiter="\t"))
    rows = read_testbed(SHIPPED).sentences()
    assert [(t["text"], t["label"], t["phenomenon"], t["template"], t["split"]) for t in table] == \
        [(r.text, r.label, r.phenomenon, r.template, r.split) for r in rows]


def test_a_train_sentence_that_equals_an_eval_sentence_is_dropped_from_train(tmp_path):
    # A placeholder-free train template can spell out a sentence an eval template also makes
    # ("The film is not great." below); augmentation must not see it.
    path = tmp_path / "bed.yaml"
    path.write_text(SMALL.replace('- {template: "The @category@ is not @Positive@.", label: negative}',
                                  '- {template: "The @category@ is not @Positive@.", label: negative}\n'
                                  '      - {template: "This movie is not great.", label: negative}'))
    bed = read_testbed(path)
    rows = bed.sentences()
    assert [r.text for r in rows if r.split == "train"] == ["The film is not good.", "The film is not nice."]
    assert "This movie is not great." in [r.text for r in rows if r.split == "eval"]
    assert bed.dropped == 1


@pytest.mark.parametrize("edit, expected", [
    (lambda t: t.replace("is not @POSITIVE@.", "is not @POSITVE@."),
     [r"phenomena\.negation\.eval\[0\]", "This @CATEGORY@ is not @POSITVE@.", "@POSITVE@"]),
    (lambda t: t.replace('- {template: "A fine day.", label: positive}', '- {template: "A fine day."}'),
     [r"phenomena\.plain\.eval\[0\]", "A fine day.", "has no label"]),
    (lambda t: t.replace("eval: [great, superb, lovely]", "eval: [great, good]"),
     [r"fillers\.POSITIVE", "'good' is in both"]),
    (lambda t: t.replace('eval:\n      - {template: "A fine day.", label: positive}', "eval: []"),
     [r"phenomena\.plain\.eval", "is empty"]),
])
def test_a_bad_test_bed_exits_2_naming_the_file_the_template_and_the_placeholder(tmp_path, edit, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(edit(SMALL))
    out = tmp_path / "out.tsv"
    r = subprocess.run([sys.executable, "-m", "seedsweep", "testbed", str(path), "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    assert str(path) in r.stderr
    for pattern in expected:
        assert re.search(pattern if pattern.startswith(("phenomena", "fillers")) else re.escape(pattern), r.stderr), \
            (pattern, r.stderr)
    assert not out.exists()
    with pytest.raises(UserError):
        read_testbed(path)
