"""Reading a program's metrics: ``task.metrics`` and the lines a program prints.

``task.metrics`` maps ``dev`` and ``test`` (required) and ``loss``
(optional) to where each number is found:

* a key of the JSON objects the program prints, one object per epoch, on
  stdout or as lines of the file ``$SEEDSWEEP_METRICS``: a line that parses
  as a JSON object holding the ``dev`` key is one epoch; every other line is
  a log line;
* ``{regex: "dev F1 ([0-9.]+)"}``: a regular expression with one group,
  matched on every output line (for programs that cannot be changed); an
  epoch is complete once ``dev`` and ``test`` were both matched since the
  last one (print ``loss`` before them to count it in the same epoch).

A line that starts with ``{`` and names the dev key but is not valid JSON,
or a metrics object whose values are not numbers, is an error
(:class:`MetricsError`): the trial fails saying which line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ...errors import UserError

__all__ = ["MetricsSpec", "MetricsError", "MetricsReader", "parse_metrics", "METRIC_KEYS"]

#: what task.metrics may map (dev and test required)
METRIC_KEYS = ("dev", "test", "loss")


class MetricsError(RuntimeError):
    """A metrics line the program printed that cannot be read."""


@dataclass(frozen=True)
class MetricsSpec:
    """Where each metric is found: a JSON key, or a compiled regular expression."""

    keys: dict[str, str] = field(default_factory=dict)          # metric -> JSON key
    patterns: dict[str, re.Pattern] = field(default_factory=dict)   # metric -> regex with one group

    def describe(self) -> str:
        """Where the dev score is looked for, in words."""
        if "dev" in self.keys:
            return f"a JSON line with the key {self.keys['dev']!r} on stdout or in $SEEDSWEEP_METRICS"
        return f"a line matching {self.patterns['dev'].pattern!r}"


def parse_metrics(value: Any, where: str) -> MetricsSpec:
    """``task.metrics`` checked and compiled.

    >>> parse_metrics({"dev": "dev_f1", "test": "test_f1"}, "task.metrics").keys
    {'dev': 'dev_f1', 'test': 'test_f1'}
    """
    fix = "Write metrics: {dev: dev_f1, test: test_f1, loss: loss} (JSON keys) or {dev: {regex: 'dev F1 ([0-9.]+)'}, ...}."
    if not isinstance(value, dict):
        raise UserError(where, f"expected a mapping of dev, test (and loss), got {value!r}.", fix)
    keys: dict[str, str] = {}
    patterns: dict[str, re.Pattern] = {}
    for metric, source in value.items():
        at = f"{where}.{metric}"
        if metric not in METRIC_KEYS:
            raise UserError(at, f"unknown metric '{metric}'.", f"Map only {', '.join(METRIC_KEYS)}. {fix}")
        if isinstance(source, str) and source:
            keys[metric] = source
        elif isinstance(source, dict) and set(source) == {"regex"} and isinstance(source["regex"], str):
            try:
                rx = re.compile(source["regex"])
            except re.error as exc:
                raise UserError(f"{at}.regex", f"not a regular expression: {exc}.", "Fix the pattern.") from None
            if rx.groups != 1:
                raise UserError(f"{at}.regex", f"the pattern has {rx.groups} groups; it needs exactly one, around "
                                "the number.", "E.g. 'dev F1 ([0-9.]+)'.")
            patterns[metric] = rx
        else:
            raise UserError(at, f"expected a JSON key or {{regex: PATTERN}}, got {source!r}.", fix)
    for metric in ("dev", "test"):
        if metric not in keys and metric not in patterns:
            raise UserError(where, f"'{metric}' is not mapped.", fix)
    return MetricsSpec(keys, patterns)


def _number(value: Any, name: str, line: int) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MetricsError(f"malformed metrics line {line}: {name} is {value!r}, not a number")
    return float(value)


class MetricsReader:
    """Turns output lines into epochs: ``feed(line)`` returns the epochs
    completed by it, each ``{"dev": .., "test": .., "loss": .. or None}``."""

    def __init__(self, spec: MetricsSpec) -> None:
        self.spec = spec
        self.pending: dict[str, float] = {}
        self.lines = 0
        dev_key = spec.keys.get("dev")
        self._mentions = json.dumps(dev_key) if dev_key else None      # '"dev_f1"' as it appears in JSON

    def feed(self, line: str) -> list[dict[str, float | None]]:
        """The epochs this line completes (usually none or one)."""
        self.lines += 1
        text = line.strip()
        out = []
        if self.spec.keys and text.startswith("{"):
            try:
                obj = json.loads(text)
            except ValueError:
                if self._mentions and self._mentions in text:
                    raise MetricsError(f"malformed metrics line {self.lines}: not valid JSON: {text[:200]}") from None
                obj = None
            if isinstance(obj, dict) and self.spec.keys.get("dev") in obj:
                for metric, key in self.spec.keys.items():
                    if key in obj:
                        self.pending[metric] = _number(obj[key], key, self.lines)
                    elif metric != "loss":
                        raise MetricsError(f"malformed metrics line {self.lines}: the object has "
                                           f"{self.spec.keys['dev']!r} but no {key!r}: {text[:200]}")
                out += self._complete()
        for metric, rx in self.spec.patterns.items():
            m = rx.search(line)
            if m:
                try:
                    self.pending[metric] = float(m.group(1))
                except ValueError:
                    raise MetricsError(f"malformed metrics line {self.lines}: {metric} matched {m.group(1)!r}, "
                                       "not a number") from None
                out += self._complete()
        return out

    def _complete(self) -> list[dict[str, float | None]]:
        if "dev" in self.pending and "test" in self.pending:
            epoch = {"dev": self.pending.pop("dev"), "test": self.pending.pop("test"),
                     "loss": self.pending.pop("loss", None)}
            self.pending.clear()
            return [epoch]
        return []
