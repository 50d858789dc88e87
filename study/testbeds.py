"""Template test beds: sentences with a known label, grouped by phenomenon.

A test-bed file (YAML) holds filler sets and, per phenomenon, templates::

    cap: 64                      # most sentences one template expands to (default 64)
    fillers:
      POSITIVE: {train: [good, fine], eval: [great, lovely]}
      NAME:     {train: [Anna], eval: [Omar, Lena]}
    phenomena:
      negation:
        train:
          - {template: "The film was not @POSITIVE@.", label: negative}
        eval:
          - {template: "@NAME@ did not think it was @POSITIVE@.", label: negative}

Rules (docs/reference/statistics.md, "Test beds and robustness"):

* A placeholder is ``@NAME@``; it matches the filler set ``NAME``
  case-insensitively (``@positive@`` is ``POSITIVE``). A placeholder used
  twice in one template takes the same filler at both places.
* A template expands to the cartesian product of its placeholders' fillers,
  in file order. When the product exceeds ``cap``, a deterministic sample of
  ``cap`` combinations is kept (NumPy's PCG64 seeded by the SHA-256 of the
  phenomenon, split and template text; listed in product order), so the
  expansion is the same on every machine and run.
* Templates under ``train`` take the fillers' ``train`` part, templates
  under ``eval`` their ``eval`` part: augmentation (training on a
  phenomenon's ``train`` sentences) never sees an evaluation sentence. A
  train sentence that happens to equal an eval sentence is dropped from the
  train part (counted in :attr:`TestBed.dropped`).
* Every template has a ``label``; every placeholder has a filler set with a
  non-empty part for the template's split; a filler set lists no value
  twice. A file that breaks a rule raises :class:`~study.errors.UserError`
  naming the file, the template and the fix.
"""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

from .errors import UserError
from .files import note_read, write_text

__all__ = ["TestBed", "Sentence", "read_testbed", "PLACEHOLDER", "SPLITS", "tsv_text", "counts"]

PLACEHOLDER = re.compile(r"@([A-Za-z_][A-Za-z0-9_]*)@")
SPLITS = ("train", "eval")
DEFAULT_CAP = 64
COLUMNS = ("text", "label", "phenomenon", "template", "split")


@dataclass(frozen=True)
class Sentence:
    text: str
    label: str
    phenomenon: str
    template: str
    split: str


@dataclass(frozen=True)
class Template:
    text: str
    label: str
    phenomenon: str
    split: str
    where: str                                   # its place in the file, for messages

    @property
    def placeholders(self) -> list[str]:
        """Distinct placeholder names (upper case), in order of first appearance."""
        return list(dict.fromkeys(m.upper() for m in PLACEHOLDER.findall(self.text)))


@dataclass
class TestBed:
    """A parsed test bed; :meth:`sentences` expands it."""

    path: str
    cap: int
    fillers: dict[str, dict[str, tuple[str, ...]]]
    templates: list[Template]
    dropped: int = field(default=0)

    __test__ = False                            # not a pytest class

    @property
    def phenomena(self) -> list[str]:
        """The phenomena of the templates, in file order."""
        return list(dict.fromkeys(t.phenomenon for t in self.templates))

    def expand(self, t: Template) -> list[str]:
        """The sentences of one template (see the module docstring)."""
        names = t.placeholders
        pools = [self.fillers[n][t.split] for n in names]
        total = int(np.prod([len(p) for p in pools], dtype=object)) if pools else 1
        if total <= self.cap:
            combos = list(itertools.product(*pools))
        else:
            digest = hashlib.sha256(f"{t.phenomenon}\0{t.split}\0{t.text}".encode()).digest()
            rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
            chosen: set[int] = set()
            while len(chosen) < self.cap:
                chosen.add(int(rng.integers(total)))
            combos = []
            for flat in sorted(chosen):                  # mixed-radix decoding, last placeholder fastest
                combo = []
                for pool in reversed(pools):
                    flat, r = divmod(flat, len(pool))
                    combo.append(pool[r])
                combos.append(tuple(reversed(combo)))
        out = []
        for combo in combos:
            value = dict(zip(names, combo))
            out.append(PLACEHOLDER.sub(lambda m: value[m.group(1).upper()], t.text))
        return out

    def sentences(self, split: str | None = None, phenomenon: str | None = None) -> list[Sentence]:
        """Every sentence (or one split's, one phenomenon's), in file order."""
        rows = [Sentence(s, t.label, t.phenomenon, t.text, t.split) for t in self.templates
                if (split is None or t.split == split) and (phenomenon is None or t.phenomenon == phenomenon)
                for s in self.expand(t)]
        if split == "eval":
            return rows
        evals = {(t.phenomenon, s) for t in self.templates if t.split == "eval" for s in self.expand(t)}
        keep = [r for r in rows if r.split == "eval" or (r.phenomenon, r.text) not in evals]
        self.dropped = sum(r.split == "train" for r in rows) - sum(r.split == "train" for r in keep)
        return keep


def counts(rows: list[Sentence]) -> dict[tuple[str, str], int]:
    """(phenomenon, split) -> number of sentences, in order of appearance."""
    out: dict[tuple[str, str], int] = {}
    for r in rows:
        out[(r.phenomenon, r.split)] = out.get((r.phenomenon, r.split), 0) + 1
    return out


def tsv_text(rows: list[Sentence]) -> str:
    """The sentences as TSV with the columns text, label, phenomenon, template, split."""
    buf = io.StringIO()
    w = csv.writer(buf, delimiter="\t", lineterminator="\n")
    w.writerow(COLUMNS)
    for r in rows:
        w.writerow([r.text, r.label, r.phenomenon, r.template, r.split])
    return buf.getvalue()


def write_tsv(rows: list[Sentence], out: str | Path) -> None:
    """Write the sentences as TSV to ``out``, atomically."""
    write_text(tsv_text(rows), out)


# ------------------------------------------------------------------ reading


def _strings(value, where: str, fix: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) and not isinstance(v, bool)
                                              for v in value):
        raise UserError(where, f"expected a list of words or phrases, got {value!r}.", fix)
    out = tuple(str(v) for v in value)
    twice = [v for v in dict.fromkeys(out) if out.count(v) > 1]
    if twice:
        raise UserError(where, f"the value {twice[0]!r} is listed twice.", "List every filler once.")
    return out


def _fillers(raw, path: str) -> dict[str, dict[str, tuple[str, ...]]]:
    if not isinstance(raw, dict) or not raw:
        raise UserError(f"{path}: fillers", "missing or not a mapping of filler sets.",
                        "Give fillers: {NAME: {train: [...], eval: [...]}, ...}.")
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for name, parts in raw.items():
        where = f"{path}: fillers.{name}"
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise UserError(where, f"{name!r} is not a placeholder name.", "Use letters, digits and '_'.")
        if name.upper() in out:
            raise UserError(where, f"the filler set {name!r} is given twice (names match case-insensitively).",
                            "Keep one of the two.")
        if not isinstance(parts, dict) or set(parts) - set(SPLITS) or not parts:
            raise UserError(where, "expected a mapping with the parts 'train' and 'eval'.",
                            "Split every filler set: {train: [...], eval: [...]} (no value in both).")
        split = {s: _strings(parts.get(s, []), f"{where}.{s}", "Give a list of strings.") for s in SPLITS}
        both = set(split["train"]) & set(split["eval"])
        if both:
            raise UserError(where, f"{sorted(both)[0]!r} is in both the train and the eval part.",
                            "Keep each filler in one part, so that augmentation never sees an eval sentence.")
        out[name.upper()] = split
    return out


def _templates(raw, path: str, fillers) -> list[Template]:
    if not isinstance(raw, dict) or not raw:
        raise UserError(f"{path}: phenomena", "missing or not a mapping of phenomena.",
                        "Give phenomena: {negation: {train: [...], eval: [...]}, ...}.")
    out: list[Template] = []
    seen: dict[str, str] = {}
    for phenomenon, parts in raw.items():
        pwhere = f"{path}: phenomena.{phenomenon}"
        if not isinstance(phenomenon, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", phenomenon):
            raise UserError(pwhere, f"{phenomenon!r} is not a phenomenon name.",
                            "Use lower-case letters, digits and '_' (it becomes the column eval_<name>).")
        if not isinstance(parts, dict) or set(parts) - set(SPLITS) or "eval" not in parts:
            raise UserError(pwhere, "expected a mapping with the template lists 'train' and 'eval'.",
                            "Give {train: [...], eval: [...]}; 'eval' is required.")
        for split in SPLITS:
            items = parts.get(split) or []
            if not isinstance(items, list):
                raise UserError(f"{pwhere}.{split}", "expected a list of templates.",
                                "Give a list of {template: ..., label: ...} entries.")
            if split == "eval" and not items:
                raise UserError(f"{pwhere}.eval", "is empty, so the phenomenon would be scored on no sentence.",
                                "Give at least one eval template, or remove the phenomenon.")
            for i, item in enumerate(items):
                out.append(_template(item, f"{pwhere}.{split}[{i}]", phenomenon, split, fillers, seen))
    return out


def _template(item, where: str, phenomenon: str, split: str, fillers, seen: dict[str, str]) -> Template:
    if not isinstance(item, dict) or not isinstance(item.get("template"), str) or not item["template"].strip():
        raise UserError(where, f"expected {{template: TEXT, label: LABEL}}, got {item!r}.",
                        "Write each template as a mapping with its text and its label.")
    text = item["template"]
    label = item.get("label")
    if not isinstance(label, str) or not label.strip():
        raise UserError(where, f"the template {text!r} has no label.",
                        "Give it a label (e.g. label: negative): templates have a fixed label.")
    extra = set(item) - {"template", "label"}
    if extra:
        raise UserError(where, f"unknown key {sorted(extra)[0]!r} in the template {text!r}.",
                        "A template has only the keys template and label.")
    t = Template(text, label, phenomenon, split, where)
    for name in t.placeholders:
        if name not in fillers:
            raise UserError(where, f"the template {text!r} uses the placeholder @{name}@, which has no filler set.",
                            f"Add fillers.{name} or fix the spelling; filler sets: {', '.join(sorted(fillers))}.")
        if not fillers[name][split]:
            raise UserError(where, f"the template {text!r} uses @{name}@, whose {split} part is empty.",
                            f"Add {split} fillers to fillers.{name}.")
    if "@" in PLACEHOLDER.sub("", text):
        raise UserError(where, f"the template {text!r} holds a stray '@'.",
                        "Write placeholders as @NAME@ (letters, digits, '_').")
    key = f"{phenomenon}\0{text}"
    if key in seen:
        raise UserError(where, f"the template {text!r} is given twice (first at {seen[key]}).",
                        "Give each template once, in one split.")
    seen[key] = where
    return t


def read_testbed(path: str | Path) -> TestBed:
    """Read and check a test-bed file (see the module docstring)."""
    path = Path(path).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(str(path), f"cannot read the test bed ({exc.strerror or exc}).",
                        "Check the path; the shipped test beds are in testbeds/.") from None
    note_read(path)
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}, line {mark.line + 1}" if mark else str(path)
        raise UserError(where, f"this is not valid YAML: {getattr(exc, 'problem', None) or exc}.",
                        "Fix the syntax at that place.") from None
    if not isinstance(raw, dict):
        raise UserError(str(path), "a test bed is a mapping with the keys fillers and phenomena.",
                        "See testbeds/sst_phenomena.yaml for the layout.")
    unknown = set(raw) - {"cap", "fillers", "phenomena", "description"}
    if unknown:
        raise UserError(f"{path}: {sorted(unknown)[0]}", "unknown key.",
                        "A test bed has the keys cap, description, fillers and phenomena.")
    cap = raw.get("cap", DEFAULT_CAP)
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise UserError(f"{path}: cap", f"{cap!r} is not a number of sentences.", "Give a whole number ≥ 1.")
    fillers = _fillers(raw.get("fillers"), str(path))
    return TestBed(str(path), cap, fillers, _templates(raw.get("phenomena"), str(path), fillers))
