"""The face of a room (ground floor): a subpackage whose ``__init__`` names
its public names by module and imports each from its module on first use, so
that importing one module of a room loads no other (PEP 562's module
``__getattr__``).

    __all__, __getattr__, __dir__ = face(__name__, globals(), {"space": ("Space", "Param")})
"""

from __future__ import annotations

from importlib import import_module
from typing import Any, Callable

__all__ = ["face", "INSTALLED_FOLDERS", "folder_name"]

#: the repository's folders that install under the ``seedsweep`` namespace (pyproject.toml's package-dir)
INSTALLED_FOLDERS = ("study", "analysis", "search_spaces")


def folder_name(module: str) -> str:
    """A module named by its folder, as the layout rules, the site (mkdocstrings reads the tree by folder) and
    the report-trip benchmark name it.

    >>> folder_name("seedsweep.analysis.stats.paired"), folder_name("seedsweep.cli")
    ('analysis.stats.paired', 'seedsweep.cli')
    """
    head, _, rest = module.partition(".")
    return rest if head == "seedsweep" and rest.split(".")[0] in INSTALLED_FOLDERS else module


def face(package: str, namespace: dict[str, Any], names: dict[str, tuple[str, ...]]
         ) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``__all__``, ``__getattr__`` and ``__dir__`` of the room ``package``
    (its ``globals()`` as ``namespace``) whose modules give ``names``."""
    where = {name: module for module, given in names.items() for name in given}

    def getattr_(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(f"{package}.{where[name]}"), name)

    def dir_() -> list[str]:
        return sorted(set(namespace) | set(where))

    return list(where), getattr_, dir_
