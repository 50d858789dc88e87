"""Model families: what a study trains, one subpackage (or module) each.

The registry maps a family name to the module that exports its ``FAMILY``
(a :class:`~study.families.base.Family`); modules are imported lazily, so
validating a space of one family never imports another's heavy dependencies
(torch, transformers). The engine reaches a family only through
:func:`get_family`; the interface is documented in :mod:`study.families.base`.

Three ways bring the user's own model without touching this package: the
``function`` family (a Python function), the ``command`` family (any
program), and an installed package that declares an entry point in the group
``seedsweep.families`` (``NAME = "package.module:FAMILY"``, or a module that
exports ``FAMILY``). A built-in name wins over an installed one.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata

from ..errors import UserError
from .view import once

__all__ = ["get_family", "FAMILIES", "USER_CODE", "ENTRY_POINT_GROUP", "FamilyInfo", "list_families", "OPTIONAL",
           "optional", "MODEL_OPTIONAL", "model_part", "result_columns"]

#: family name -> module holding its ``FAMILY``.
FAMILIES = {"synthetic": "seedsweep.study.families.synthetic", "tagger": "seedsweep.study.families.tagger",
            "transformer": "seedsweep.study.families.transformer", "encoder": "seedsweep.study.families.encoder",
            "sentence": "seedsweep.study.families.sentence", "function": "seedsweep.study.families.function",
            "command": "seedsweep.study.families.command"}
#: the built-in families that run the user's own code
USER_CODE = ("function", "command")
#: the entry-point group an installed family package declares
ENTRY_POINT_GROUP = "seedsweep.families"
#: what every family must provide (study.families.base)
REQUIRED = ("name", "uses_torch", "train_defaults", "defaults", "limits", "validate", "resolve", "build",
            "result_columns")
#: the optional parts of a family with their defaults (declared so on study.families.base.FamilyBase); a family
#: that implements only the Family protocol gets these, through :func:`optional`, the engine's one way to ask
OPTIONAL = {"draws_per_configuration": False, "vectorizes": False, "wants_work_dir": False,
            "code_files": lambda space: [], "seed_scope": lambda space: None}


def optional(family, name: str):
    """The family's optional part ``name`` (:data:`OPTIONAL`), or its default."""
    return getattr(family, name, OPTIONAL[name])


#: the optional parts of a trial's model with their defaults (declared so on study.families.base.ModelBase):
#: the per-epoch hooks, and what a model that runs its own loop (``drive``, the user's code) says of its end
MODEL_OPTIONAL = {"details": lambda epoch: {}, "collapse_reason": lambda best_epoch: None,
                  "results": lambda best_epoch: {}, "drive": None, "test_at_end": False, "final_test": None,
                  "ended_reason": None, "silent_reason": "reported no metrics",
                  "no_test_reason": "no test score reported"}


def model_part(model, name: str):
    """The model's optional part ``name`` (:data:`MODEL_OPTIONAL`), or its default."""
    return getattr(model, name, MODEL_OPTIONAL[name])


def result_columns(space) -> dict[str, str]:
    """The columns the study's family adds to the trials table, asked of the family once per study."""
    return once(space, "result_columns", lambda: get_family(space.family).result_columns(space))


@dataclass(frozen=True)
class FamilyInfo:
    """One family as ``seedsweep families`` lists it: its name, kind
    (``built in``, ``your code`` or ``installed``) and where it comes from."""

    name: str
    kind: str
    source: str


@lru_cache(maxsize=1)
def _installed() -> dict[str, metadata.EntryPoint]:
    found: dict[str, metadata.EntryPoint] = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep)
    return found


def _where(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    package = f"{dist.name} {dist.version}" if dist is not None else "an installed package"
    return f"{package} (entry point {ep.value})"


@lru_cache(maxsize=None)
def _load_installed(name: str):
    ep = _installed()[name]
    where = _where(ep)
    try:
        obj = ep.load()
    except Exception as exc:  # noqa: BLE001 - any import error of someone else's package, named
        raise UserError(where, f"loading it raised {type(exc).__name__}: {exc}.",
                        "Fix or reinstall that package (pip install -e ...).") from None
    family = getattr(obj, "FAMILY", obj)
    missing = [a for a in REQUIRED if not hasattr(family, a)]
    if missing:
        raise UserError(where, f"{type(family).__name__} does not provide the Family interface: "
                        f"missing {', '.join(missing)}.",
                        "Export an object with the attributes of study.families.base.Family (e.g. a subclass of "
                        "FamilyBase) as the entry point, or a module whose FAMILY is one.")
    if family.name != name:
        raise UserError(where, f"the family calls itself {family.name!r}, but the entry point is named {name!r}.",
                        "Give the entry point the family's name.")
    return family


def get_family(name: str, *, where: str = "family"):
    """The family object registered under ``name`` (built in, or installed
    through the ``seedsweep.families`` entry points); a :class:`UserError` otherwise."""
    if name in FAMILIES:
        return importlib.import_module(FAMILIES[name]).FAMILY
    if name in _installed():
        try:
            return _load_installed(name)
        except UserError as err:        # located at the study file's key, then the package
            raise UserError(f"{where} {name!r} from {err.where}", err.problem, err.fix) from None
    names = sorted(set(FAMILIES) | set(_installed()))
    raise UserError(where, f"unknown family {name!r}.",
                    f"Families available here: {', '.join(names)} ('seedsweep families' says where each comes "
                    "from). For your own model use family: function (a Python function) or family: command "
                    "(any program), or install a package that declares it in the entry-point group "
                    f"{ENTRY_POINT_GROUP}.")


def list_families() -> list[FamilyInfo]:
    """Every family this installation offers: built in, the user's-code
    families, and installed packages' entry points."""
    out = [FamilyInfo(n, "your code" if n in USER_CODE else "built in",
                      {"function": "task.function: FILE.py:NAME or module:NAME, called once per trial",
                       "command": "task.command: an argv list run once per trial; metrics from its output"}
                      .get(n, f"seedsweep ({FAMILIES[n]})")) for n in sorted(FAMILIES)]
    for name, ep in sorted(_installed().items()):
        if name in FAMILIES:
            out.append(FamilyInfo(name, "installed (shadowed)", _where(ep) + f": the built-in {name} wins"))
        else:
            out.append(FamilyInfo(name, "installed", _where(ep)))
    return out
