"""Reading a program's metrics: ``task.metrics`` and the lines a program prints.

``task.metrics`` maps ``dev`` and ``test`` (required), ``loss`` and
``epoch`` (optional) to where each number is found:

* a key of the JSON objects the program prints, one object per epoch, on
  stdout or as lines of the file ``$SEEDSWEEP_METRICS``: a line that parses
  as a JSON object holding the ``dev`` key is one epoch; every other line is
  a log line (a pretty-printed summary, a progress bar, a warning that
  starts with ``{``);
* ``{regex: "dev F1 ([0-9.]+)"}``: a regular expression with one group,
  matched on every output line (for programs that cannot be changed). The
  dev line forms the epoch: with ``test`` each epoch, an epoch is complete
  once ``dev`` and ``test`` were both matched since the last one; loss
  (and ``epoch``) matched before a dev line belong to its epoch;
* ``{key: NAME}`` is the JSON key written out, so that it can carry ``at``.

``test`` may say **when** it arrives: ``at: epoch`` (the default: a test
score each epoch; seedsweep's best dev epoch selects it) or ``at: end``
(``test: {regex: "test ppl +([0-9.]+)", at: end}``): the program reports
test once, at its end, for the checkpoint it selected itself. Then every
dev line is an epoch row (its test empty), and the trial's test score is the
last test value the program printed. ``epoch`` names the program's own epoch
number (a regex group or JSON key); without it an epoch is the count of dev
lines. Each output line is read in its carriage-return segments (a
progress bar's updates), each segment on its own.

A line that starts with ``{`` and names a metric's key but is not valid
JSON, or a metrics object whose values are not numbers, is an error
(:class:`MetricsError`): the trial fails saying which line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import UserError

__all__ = ["MetricsSpec", "MetricsError", "MetricsReader", "parse_metrics", "METRIC_KEYS", "SOURCE_KEYS", "WHEN",
           "read_new_lines"]

#: what task.metrics may map (dev and test required)
METRIC_KEYS = ("dev", "test", "loss", "epoch")
#: the keys of one metric's mapping form (``{regex: ..}`` or ``{key: ..}``, with ``at`` for test)
SOURCE_KEYS = ("regex", "key", "at")
#: when test arrives (``task.metrics.test.at``)
WHEN = ("epoch", "end")


class MetricsError(RuntimeError):
    """A metrics line the program printed that cannot be read."""


@dataclass(frozen=True)
class MetricsSpec:
    """Where each metric is found: a JSON key, or a compiled regular expression;
    ``test_at_end``: the program reports test once, at its end."""

    keys: dict[str, str] = field(default_factory=dict)          # metric -> JSON key
    patterns: dict[str, re.Pattern] = field(default_factory=dict)   # metric -> regex with one group
    test_at_end: bool = False

    def describe(self) -> str:
        """Where the dev score is looked for, in words."""
        if "dev" in self.keys:
            return f"a JSON line with the key {self.keys['dev']!r} on stdout or in $SEEDSWEEP_METRICS"
        return f"a line matching {self.patterns['dev'].pattern!r}"

    def describe_test(self) -> str:
        """Where the final test score is looked for, in words."""
        if "test" in self.keys:
            return f"a JSON line with the key {self.keys['test']!r}"
        return f"a line matching {self.patterns['test'].pattern!r}"


def _compile(pattern: Any, at: str) -> re.Pattern:
    if not isinstance(pattern, str):
        raise UserError(at, f"expected a regular expression, got {pattern!r}.", "Quote the pattern.")
    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise UserError(at, f"not a regular expression: {exc}.", "Fix the pattern.") from None
    if rx.groups != 1:
        raise UserError(at, f"the pattern has {rx.groups} groups; it needs exactly one, around "
                        "the number.", "E.g. 'dev F1 ([0-9.]+)'.")
    return rx


def parse_metrics(value: Any, where: str) -> MetricsSpec:
    """``task.metrics`` checked and compiled.

    >>> parse_metrics({"dev": "dev_f1", "test": "test_f1"}, "task.metrics").keys
    {'dev': 'dev_f1', 'test': 'test_f1'}
    >>> parse_metrics({"dev": "d", "test": {"key": "t", "at": "end"}}, "task.metrics").test_at_end
    True
    """
    fix = ("Write metrics: {dev: dev_f1, test: test_f1, loss: loss} (JSON keys) or {dev: {regex: 'dev F1 ([0-9.]+)'}, "
           "...}; test: {regex: ..., at: end} when the program reports test once, at its end.")
    if not isinstance(value, dict):
        raise UserError(where, f"expected a mapping of dev, test (and loss, epoch), got {value!r}.", fix)
    keys: dict[str, str] = {}
    patterns: dict[str, re.Pattern] = {}
    at_end = False
    for metric, source in value.items():
        at = f"{where}.{metric}"
        if metric not in METRIC_KEYS:
            raise UserError(at, f"unknown metric '{metric}'.", f"Map only {', '.join(METRIC_KEYS)}. {fix}")
        if isinstance(source, str) and source:
            keys[metric] = source
            continue
        if not isinstance(source, dict) or not source or set(source) - set(SOURCE_KEYS) or \
                ("regex" in source) == ("key" in source):
            raise UserError(at, f"expected a JSON key, {{regex: PATTERN}} or {{key: NAME}}, got {source!r}.", fix)
        if "at" in source:
            if metric != "test":
                raise UserError(f"{at}.at", "only test says when it arrives.", "Remove 'at' here.")
            if source["at"] not in WHEN:
                raise UserError(f"{at}.at", f"expected one of {', '.join(WHEN)}, got {source['at']!r}.",
                                "at: end when the program prints test once, at its end; at: epoch (the default) "
                                "when it prints test every epoch.")
            at_end = source["at"] == "end"
        if "regex" in source:
            patterns[metric] = _compile(source["regex"], f"{at}.regex")
        elif isinstance(source["key"], str) and source["key"]:
            keys[metric] = source["key"]
        else:
            raise UserError(f"{at}.key", f"expected a JSON key, got {source['key']!r}.", fix)
    for metric in ("dev", "test"):
        if metric not in keys and metric not in patterns:
            raise UserError(where, f"'{metric}' is not mapped.", fix)
    return MetricsSpec(keys, patterns, at_end)


def _number(value: Any, name: str, line: int) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MetricsError(f"malformed metrics line {line}: {name} is {value!r}, not a number")
    return float(value)


class MetricsReader:
    """Turns output lines into epochs: ``feed(line)`` returns the epochs
    completed by it, each ``{"dev": .., "test": .. (None with test at the
    end), "loss": .. or None, "epoch": .. or None}``; ``final_test`` is the
    last test score seen when the program reports test at its end."""

    def __init__(self, metrics_spec: MetricsSpec) -> None:
        self.spec = metrics_spec
        self.pending: dict[str, float] = {}
        self.lines = 0
        self.final_test: float | None = None
        # a metric's key as it appears in JSON ('"dev_f1"'): a line naming one must parse
        self._mentions = [json.dumps(k) for k in metrics_spec.keys.values()]

    def feed(self, line: str) -> list[dict[str, float | None]]:
        """The epochs this line completes (usually none or one)."""
        self.lines += 1
        out = []
        for segment in line.split("\r"):          # a progress bar's updates, each on its own
            if segment.strip():
                out += self._segment(segment)
        return out

    def _segment(self, line: str) -> list[dict[str, float | None]]:
        text = line.strip()
        out = []
        keys = self.spec.keys
        if keys and text.startswith("{"):
            try:
                obj = json.loads(text)
            except ValueError:
                if any(m in text for m in self._mentions):
                    raise MetricsError(f"malformed metrics line {self.lines}: not valid JSON: {text[:200]}") from None
                obj = None
            if isinstance(obj, dict):
                out += self._object(obj, text)
        # a line's loss and epoch first: they belong to the epoch its dev (or test) completes
        for metric, rx in sorted(self.spec.patterns.items(), key=lambda kv: kv[0] in ("dev", "test")):
            m = rx.search(line)
            if m:
                try:
                    value = float(m.group(1))
                except ValueError:
                    raise MetricsError(f"malformed metrics line {self.lines}: {metric} matched {m.group(1)!r}, "
                                       "not a number") from None
                out += self._found(metric, value)
        return out

    def _object(self, obj: dict, text: str) -> list[dict[str, float | None]]:
        keys, out = self.spec.keys, []
        if self.spec.test_at_end and "test" in keys and keys["test"] in obj:
            # the program's final line (a one-line summary may repeat the best dev score: not an epoch)
            self.final_test = _number(obj[keys["test"]], keys["test"], self.lines)
            return out
        if keys.get("dev") not in obj:
            return out
        for metric, key in keys.items():
            if key in obj:
                self.pending[metric] = _number(obj[key], key, self.lines)
            elif metric == "dev" or (metric == "test" and not self.spec.test_at_end):
                raise MetricsError(f"malformed metrics line {self.lines}: the object has "
                                   f"{keys['dev']!r} but no {key!r}: {text[:200]}")
        if self.spec.test_at_end:
            self.pending.pop("test", None)
        return out + self._complete()

    def _found(self, metric: str, value: float) -> list[dict[str, float | None]]:
        if metric == "test" and self.spec.test_at_end:
            self.final_test = value
            return []
        self.pending[metric] = value
        return self._complete() if metric in ("dev", "test") else []

    def _complete(self) -> list[dict[str, float | None]]:
        if "dev" in self.pending and ("test" in self.pending or self.spec.test_at_end):
            epoch = {"dev": self.pending.pop("dev"), "test": self.pending.pop("test", None),
                     "loss": self.pending.pop("loss", None), "epoch": self.pending.pop("epoch", None)}
            self.pending.clear()
            return [epoch]
        return []


def read_new_lines(path: Path, offset: int, reader: MetricsReader) -> tuple[int, list[dict]]:
    """Epochs in the complete lines appended to ``path`` since ``offset``."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except OSError:
        return offset, []
    end = data.rfind(b"\n") + 1
    epochs = []
    for line in data[:end].decode("utf-8", "replace").splitlines():
        epochs += reader.feed(line)
    return offset + end, epochs
