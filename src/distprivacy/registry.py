"""The names of the mechanisms, without loading one: the built-ins in the order
``distprivacy calibrate`` lists them, and the entry-point group through which another package
registers its own (:data:`ENTRY_POINT_GROUP`).

This module imports nothing heavy (no NumPy, no mechanism): the command line's ``--help`` lists
:func:`mechanism_names` from it, and :mod:`distprivacy.mechanisms` builds its registry in the
same order (loading the plug-ins with
:func:`~distprivacy.mechanisms.load_mechanism_plugins`).

A package registers a mechanism by declaring, in its ``pyproject.toml``::

    [project.entry-points."distprivacy.mechanisms"]
    "MyM-G" = "my_package.mechanisms:MyMechanism"

where ``MyMechanism`` subclasses :class:`~distprivacy.mechanisms.Mechanism` with
``name = "MyM-G"`` (the entry point's name is the shorthand the commands show). An entry point
may also name a module, whose ``@register_mechanism`` classes register when it is imported.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BUILTIN_MECHANISMS", "ENTRY_POINT_GROUP", "mechanism_names", "plugin_entry_points"]

#: The built-in mechanisms in the order ``distprivacy calibrate`` lists them.
BUILTIN_MECHANISMS: tuple[str, ...] = (
    "ExpM-L",
    "DirM-L",
    "ExpM-G",
    "DirM-G",
    "EigM-G",
    "DauM-G",
    "OptM-G",
    "NoNoise",
    "Wasserstein",
    "ApproxWasserstein",
    "ApproxWasserstein-Bounded",
    "GroupDP-L",
    "GroupDP-G",
)

#: The entry-point group of third-party mechanisms.
ENTRY_POINT_GROUP = "distprivacy.mechanisms"


def plugin_entry_points() -> tuple[Any, ...]:
    """The installed entry points of :data:`ENTRY_POINT_GROUP` (read from the packages'
    metadata; nothing is imported), the first of each name only, built-in names left out."""
    from importlib.metadata import entry_points

    seen = set(BUILTIN_MECHANISMS)
    out = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in seen:
            seen.add(ep.name)
            out.append(ep)
    return tuple(out)


def mechanism_names() -> tuple[str, ...]:
    """Every mechanism's shorthand the commands accept: the built-ins, then each plug-in's
    entry-point name (the order of :data:`distprivacy.mechanisms.MECHANISMS`)."""
    return BUILTIN_MECHANISMS + tuple(ep.name for ep in plugin_entry_points())
