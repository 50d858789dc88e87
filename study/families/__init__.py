"""Model families: what a study trains, one subpackage (or module) each.

The registry maps a family name to the module that exports its ``FAMILY``
(a :class:`~study.families.base.Family`); modules are imported lazily, so
validating a space of one family never imports another's heavy dependencies
(torch, transformers). The engine reaches a family only through
:func:`get_family`; the interface is documented in :mod:`study.families.base`.
"""

from __future__ import annotations

import importlib

from ..errors import UserError

__all__ = ["get_family", "FAMILIES"]

#: family name -> module holding its ``FAMILY``.
FAMILIES = {"synthetic": "study.families.synthetic", "tagger": "study.families.tagger",
            "transformer": "study.families.transformer", "encoder": "study.families.encoder",
            "sentence": "study.families.sentence"}


def get_family(name: str, *, where: str = "family"):
    """The family object registered under ``name``; a :class:`UserError` otherwise."""
    if name not in FAMILIES:
        raise UserError(where, f"unknown family {name!r}.",
                        f"Families available in this version: {', '.join(sorted(FAMILIES))}.")
    return importlib.import_module(FAMILIES[name]).FAMILY
