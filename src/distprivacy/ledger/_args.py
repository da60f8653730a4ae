"""The argument checks of the :class:`~distprivacy.ledger.Ledger`'s public methods: an
argument of the wrong type is a one-line :class:`~distprivacy.ledger.LedgerTypeError` (a
``LedgerError`` and a ``TypeError``) naming the parameter, what it got and what it expects
(:mod:`distprivacy.checks`), before the ledger is read or written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from distprivacy.checks import (
    check_callable,
    check_instance,
    check_path,
    check_text,
    shown,
)
from distprivacy.guarantee import Guarantee
from distprivacy.ledger._entry import LedgerEntry, LedgerTypeError


def path_arg(path: Any) -> Path:
    """A ledger's path (a non-empty text or ``pathlib.Path``), ``~`` expanded."""
    return check_path(path, "a ledger's path", error=LedgerTypeError)  # type: ignore[return-value]


def database_arg(database: Any) -> str | None:
    """A PostgreSQL URL (``postgresql://…``), or None for a ledger in its SQLite file."""
    from distprivacy.ledger._postgres import is_postgres_url

    if database is None or is_postgres_url(database):
        return database
    raise LedgerTypeError(
        f"database must be None (the ledger's SQLite file) or a PostgreSQL URL such as "
        f"postgresql://user@host:5432/ledger, got {database!r:.80}"
    )


def entry_arg(entry: Any) -> LedgerEntry:
    """``entry`` if it is a :class:`~distprivacy.ledger.LedgerEntry`."""
    return check_instance(entry, "entry", LedgerEntry, "a LedgerEntry (LedgerEntry.from_plan)",
                          error=LedgerTypeError)  # fmt: skip


def compose_arg(compose: Any, *, optional: bool = False) -> Any:
    """``compose`` (a function of the entries, e.g. ``plan_composer()``), wrapped so
    that what it returns is checked: anything but a :class:`~distprivacy.guarantee.Guarantee`
    is a one-line LedgerTypeError, never an AttributeError further on."""
    check_callable(compose, "compose", "a function of the entries, e.g. plan_composer()",
                   optional=optional, error=LedgerTypeError)  # fmt: skip
    if compose is None:
        return None

    def checked(entries: Any) -> Guarantee:
        g = compose(entries)
        if not isinstance(g, Guarantee):
            raise LedgerTypeError(f"compose must return a Guarantee, returned {shown(g)}")
        return g

    return checked


def keys_arg(fingerprint: Any, property: Any, *, optional: bool = False) -> None:
    """A dataset's identity and a property's key, as the ledger stores them (texts)."""
    check_text(fingerprint, "fingerprint", optional=optional, what="a dataset's identity (text)")
    check_text(property, "property", optional=optional, what="a property's key (text)")
