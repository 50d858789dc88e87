"""``seedsweep families``: every model family this installation offers, with
where each comes from -- built into seedsweep, the user's own code
(``function``, ``command``), or an installed package's entry point in the
group ``seedsweep.families`` (:func:`study.families.list_families`)."""

from __future__ import annotations

from seedsweep.study.families import list_families

__all__ = ["add_families"]


def _cmd_families(args) -> int:
    infos = list_families()
    width = max(len(i.name) for i in infos)
    for info in infos:
        print(f"{info.name:<{width}}  {info.kind:<20}  {info.source}")
    return 0


def add_families(sub) -> None:
    """The ``families`` command's parser."""
    p = sub.add_parser("families", help="list the model families: built in, your code (function, command), "
                       "installed packages")
    p.set_defaults(func=_cmd_families)
