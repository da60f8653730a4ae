"""The :class:`Ledger`: an open ledger of secrets, its public methods, each a short delegation
to the module of its concept (see :mod:`distprivacy.ledger`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from distprivacy.guarantee import Guarantee
from distprivacy.ledger._args import compose_arg, database_arg, keys_arg, path_arg
from distprivacy.ledger._budget import budget_text
from distprivacy.ledger._chain import FIELDS, FIELDS3, LEGACY_SCHEMA, VerifyReport, sql_error
from distprivacy.ledger._entry import Composer, LedgerEntry, LedgerError, LedgerTypeError
from distprivacy.ledger._keys import read_key
from distprivacy.ledger._registry import (
    ApprovedPlan,
    Event,
    RegisteredDataset,
    Registry,
    Secret,
    read_events,
)
from distprivacy.ledger._schema2 import read_budget, read_identity
from distprivacy.ledger._steward import StewardKey, StewardPublicKey
from distprivacy.ledger._store import check_schema, meta, open_store
from distprivacy.targets import Target


class Ledger:
    """An open privacy ledger (:mod:`distprivacy.ledger`). Use :meth:`init` to create one.

    Parameters
    ----------
    path : str or Path
        An existing ledger file (its key ``<path>.key`` beside it); with ``database``, the
        base of the key's and the anchor's files (``<path>.key``, ``<path>.anchor``).
    database : str, optional
        A PostgreSQL URL (``postgresql://user@host:port/name``) holding the ledger's rows
        instead of the file ``path`` (:mod:`distprivacy.ledger._postgres`; the
        ``[postgres]`` extra): several processes or hosts then share one budget.

    Raises
    ------
    LedgerError
        (one line) The file or its key does not exist, is not an SQLite database, is not a
        distprivacy ledger, was written by another schema version, or cannot be opened.
    """

    #: Called as ``on_wait(seconds_waited, seconds_allowed)`` while another process holds the
    #: write lock (the CLI shows a progress bar); None: wait silently.
    on_wait: Any = None

    def __init__(self, path: str | Path, *, database: str | None = None) -> None:
        p = path_arg(path)
        self.path = p
        #: The PostgreSQL URL holding the rows (None: the SQLite file :attr:`path`).
        self.database = database_arg(database)
        self.last_id: int | None = None
        #: The dataset the last release was recorded under.
        self.last_fingerprint: str | None = None
        self.last_warnings: tuple[str, ...] = ()
        #: Decrypted rows by (id, chain value): a row is immutable once its chain verifies.
        self._entries: dict[tuple[Any, Any], LedgerEntry] = {}
        self._con = open_store(p, self.database)
        try:
            self.version = check_schema(self._con, p)
            #: A ledger of schema 2 (before secrets): read and verified, never written.
            self.read_only = self.version == LEGACY_SCHEMA
            self._fields = FIELDS if self.read_only else FIELDS3
            self._columns = ", ".join(self._fields)
            self.key = read_key(p)
            # A commit appends to the WAL without an fsync (none under the write lock); the
            # checkpoint that follows it in record() fsyncs the WAL, then the main file, before
            # anything is revealed (SQLite keeps a WAL consistent across power loss either way).
            self._con.execute("PRAGMA synchronous=NORMAL")
            if self.read_only:
                self._budget = read_budget(self._con, p)
            else:
                self.ledger_id = meta(self._con, p, "ledger_id")
                self.steward = StewardPublicKey(meta(self._con, p, "steward_public_key"))
                self._refresh(self._con)
        except BaseException:
            self._con.close()
            raise

    @classmethod
    def init(
        cls,
        path: str | Path,
        *,
        steward: StewardKey | str | Path | None = None,
        secret: str | None = None,
        protect: str | None = None,
        budget: Target | None = None,
        population: str | Path | None = None,
        database: str | None = None,
        **legacy: Any,
    ) -> Ledger:
        """Create a ledger (mode 0600), its key (``<path>.key``, 0600) and its anchor, with its
        first secret: ``protect`` (a predicate) of ``population`` (a file or directory, or
        None: the verified UCI Adult files) under ``budget`` — a typed target, ``GDP(μ)``,
        ``EpsDelta(ε, δ)`` or ``MaxAttackAccuracy(a)`` (:mod:`distprivacy.targets`; a μ
        budget holds only μ-GDP releases: :mod:`distprivacy.ledger._budget`). The steward's
        key (:class:`StewardKey`, or the path of its file) signs the secret; the ledger keeps
        only its public half. Refuses an existing file. ``database``: a PostgreSQL URL whose
        empty database holds the rows (the key and the anchor are still files beside
        ``path``)."""
        from distprivacy.ledger._backup import refuse_directory_name
        from distprivacy.ledger._decisions import secret_payload
        from distprivacy.ledger._store import create

        given = {"steward": steward, "secret": secret, "protect": protect, "budget": budget}
        missing = [k for k, v in given.items() if v is None]
        if legacy or missing:
            raise LedgerTypeError(
                (f"Ledger.init takes no {', '.join(sorted(legacy))}: " if legacy else
                 f"Ledger.init needs {', '.join(missing)}: ")
                + "a ledger of secrets is made with steward=KEY, secret=NAME, "
                "protect=PREDICATE and budget=GDP(mu) (or EpsDelta, MaxAttackAccuracy), "
                "population=PATH optional"
            )  # fmt: skip
        checked = path_arg(path)  # a wrong type first, then a path naming a directory
        url = database_arg(database)
        refuse_directory_name(path, "the ledger", "ledger.db")
        key = StewardKey.load(steward)  # type: ignore[arg-type]
        first = secret_payload(secret, protect, budget, population)  # type: ignore[arg-type]
        create(Path(checked), key, secret, first, url)  # type: ignore[arg-type]
        return cls(checked, database=url)

    # -- the steward's registry (schema 3) ---------------------------------------------------

    @property
    def budget(self) -> Target:
        """The budget: a schema-2 ledger's one budget, or the only secret's (a ledger of
        several secrets has one per secret: :attr:`registry`)."""
        if self.read_only:
            return self._budget
        return self.registry.secret(None).budget

    @property
    def identity_columns(self) -> tuple[str, ...] | None:
        """A schema-2 ledger's identity columns (:mod:`._schema2`); None for a ledger of
        secrets (its datasets are registered by name)."""
        return read_identity(self._con, self.path)

    def _refresh(self, con: sqlite3.Connection) -> Registry:
        """Read and replay the steward's events (signatures unchecked here: every write and
        :meth:`verify` check them with the chain)."""
        self.registry = Registry.from_events(read_events(con))
        return self.registry

    def _apply(self, event: Event) -> None:
        self.registry = Registry.from_events([*self.registry.events, event])

    def _events_head(self, events: list[Event]) -> str:
        last = events[-1].digest(self.ledger_id) if events else "-"
        return f"{len(events)}:{last}"

    def _refuse_read_only(self) -> None:
        if self.read_only:
            raise LedgerError(
                f"{str(self.path)!r} is a ledger of schema 2 (one budget, datasets recognised by "
                "their values): it opens read-only — show, verify and back it up. To release, "
                "the steward starts a ledger of secrets (`distprivacy ledger init`, Ledger.init) "
                "and registers the datasets (`distprivacy ledger register`, Ledger.register)"
            )

    def add_secret(
        self,
        steward: StewardKey | str | Path,
        name: str,
        protect: str,
        budget: Target,
        *,
        population: str | Path | None = None,
    ) -> Secret:
        """Declare another secret (:func:`._decisions.add_secret`)."""
        from distprivacy.ledger._decisions import add_secret

        return add_secret(self, steward, name, protect, budget, population)

    def register(
        self,
        steward: StewardKey | str | Path,
        name: str,
        path: str | Path,
        *,
        secret: str | None = None,
        same_records_as: str | None = None,
        independent: bool = False,
        confirm_overlap: str | None = None,
    ) -> tuple[RegisteredDataset, tuple[str, ...]]:
        """Register a dataset file under a secret (:func:`._decisions.register_dataset`)."""
        from distprivacy.ledger._decisions import register_dataset

        return register_dataset(
            self, steward, name, path, secret=secret, same_records_as=same_records_as,
            independent=independent, confirm_overlap=confirm_overlap,
        )  # fmt: skip

    def approve(
        self,
        steward: StewardKey | str | Path,
        plan: Any,
        name: str,
        *,
        secret: str | None = None,
    ) -> ApprovedPlan:
        """Approve a plan for a secret under ``name`` (:func:`._decisions.approve_plan`)."""
        from distprivacy.ledger._decisions import approve_plan

        return approve_plan(self, steward, plan, name, secret=secret)

    def set_budget(
        self, steward: StewardKey | str | Path, secret: str | None, budget: Target, reason: str
    ) -> Secret:
        """Set a secret's budget anew, with the reason (:func:`._decisions.set_budget`)."""
        from distprivacy.ledger._decisions import set_budget

        return set_budget(self, steward, secret, budget, reason)

    # -- releasing -----------------------------------------------------------------------------

    def release(
        self,
        plan: str,
        dataset: str,
        *,
        allow_exact: bool = False,
        random_state: Any = None,
    ) -> Any:
        """Release the registered ``dataset`` (a name) with the approved ``plan`` (a name),
        recorded here first (record, then reveal):
        :func:`distprivacy.ledger._release.release_registered`."""
        from distprivacy.ledger._release import release_registered

        return release_registered(
            self, plan, dataset, allow_exact=allow_exact, random_state=random_state
        )

    def record(self, entry: LedgerEntry, compose: Composer) -> Guarantee:
        """Record ``entry`` if the cumulative guarantee stays within its secret's budget
        (:func:`distprivacy.ledger._record.record`: on a snapshot, then under the write lock
        only if nothing changed; made durable before it returns). Reveal the release only
        after this returns.

        Raises
        ------
        BudgetExceededError
            The budget would be exceeded, or ``entry`` is exact (the ledger is unchanged).
        LedgerError
            The ledger fails verification, or cannot be written (one line naming the cause;
            nothing recorded), or — after the commit — the release could not be made durable
            (it is recorded, its budget spent, and must not be revealed).
        DistPrivacyError
            ``compose`` refused (e.g. releases that cannot be composed); the ledger unchanged.
        """
        from distprivacy.ledger._record import record

        return record(self, entry, compose)

    def entry(self, *args: Any, **kwargs: Any) -> LedgerEntry:
        """Refused: a ledger of secrets makes each release's entry itself (:meth:`release`)."""
        self._refuse_read_only()
        raise LedgerError(
            "a ledger of secrets makes each release's entry itself from the registered "
            "dataset and the approved plan: call ledger.release('PLAN', 'DATASET')"
        )

    def seal(self, plan: Any) -> Any:
        """Refused: plans are approved with the steward's own key (:meth:`approve`)."""
        raise LedgerError(
            "plans are no longer sealed with the ledger's key (whoever releases holds it): the "
            "steward approves them with a key of their own: `distprivacy ledger approve` "
            "(Ledger.approve)"
        )

    # -- reading -------------------------------------------------------------------------------

    def _rows(self, con: sqlite3.Connection, where: str = "", args: Sequence[Any] = ()) -> list:
        from distprivacy.ledger._read import rows

        return rows(self, con, where, args)

    def _entry(self, row: Sequence[Any]) -> LedgerEntry:
        """A row as a :class:`LedgerEntry` (:func:`._read.row_entry`), its plan decrypted
        once per row: kept by (id, chain value), which the row's content determines."""
        from distprivacy.ledger._read import row_entry

        key = (row[0], row[len(self._fields)])
        hit = self._entries.get(key)
        if hit is None:
            hit = self._entries[key] = row_entry(self, row)
        return hit

    def releases(
        self, fingerprint: str | None = None, property: str | None = None
    ) -> list[LedgerEntry]:
        """The recorded releases (oldest first), optionally of one fingerprint / property."""
        from distprivacy.ledger._read import select

        keys_arg(fingerprint, property, optional=True)
        return select(self, fingerprint, property, self._con)

    def cumulative(self, fingerprint: str, property: str, compose: Composer) -> Guarantee:
        """The guarantee of every recorded release of (``fingerprint``, ``property``) together
        (nothing is written)."""
        keys_arg(fingerprint, property)
        compose = compose_arg(compose)
        entries = self.releases(fingerprint, property)
        if not entries:
            raise LedgerError(f"no release of {fingerprint} about {property} is recorded")
        return compose(entries)

    def show(self, compose: Composer | None = None) -> dict[str, Any]:
        """Plain data: the budgets, ``releases`` and the cumulative guarantees, recomputed by
        the exact joint accounting (:func:`distprivacy.ledger._show.show_ledger`)."""
        from distprivacy.ledger._show import show_ledger

        return show_ledger(self, compose_arg(compose, optional=True))

    # -- keeping -------------------------------------------------------------------------------

    def _verified(self) -> tuple[VerifyReport, list]:
        """The chain, head and anchor on one snapshot (:func:`._verify.verified`)."""
        from distprivacy.ledger._verify import verified

        return verified(self)

    def _move_head(
        self,
        con: sqlite3.Connection,
        releases: int,
        last: str,
        identity: Sequence[str] | None = None,
    ) -> None:
        """Set the head's MAC to the state in ``con`` (:func:`._record.move_head`)."""
        from distprivacy.ledger._record import move_head

        move_head(self, con, releases, last, identity)

    def verify(self, compose: Composer | None = None) -> VerifyReport:
        """Recompute the chain and the head, then every row's guarantee from its own plan and
        every running total from the rows before it (``compose``, default: the composer each
        release was recorded with). Returns a :class:`VerifyReport` naming the first bad row
        (:func:`distprivacy.ledger._verify.verify_ledger`)."""
        from distprivacy.ledger._verify import verify_ledger

        return verify_ledger(self, compose_arg(compose, optional=True))

    def backup(self, out: str | Path, *, force: bool = False) -> Path:
        """A consistent, verified copy of the live ledger (SQLite's online backup API, WAL
        content included) at ``out``, with its key at ``<out>.key`` and its anchor at
        ``<out>.anchor``, all 0600; refuses existing files; ``force``: copy a ledger that
        fails :meth:`verify`, for forensics, with a warning
        (:func:`distprivacy.ledger._backup.backup_ledger`). Restoring the three together
        rolls the ledger back to the copy; restoring the ledger alone is refused."""
        from distprivacy.ledger._backup import backup_ledger

        return backup_ledger(self, out, force=force)

    def integrity_check(self) -> str:
        """``PRAGMA integrity_check`` (``"ok"`` when the file is sound)."""
        try:
            return "; ".join(r[0] for r in self._con.execute("PRAGMA integrity_check"))
        except sqlite3.Error as e:
            raise sql_error(self.path, e, "read the ledger") from None

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        n = self._con.execute("SELECT COUNT(*) FROM releases").fetchone()[0]
        if self.read_only:
            what = f"schema 2, read-only, budget {budget_text(self.budget)}"
        else:
            what = ", ".join(
                f"secret {s.name}: {budget_text(s.budget)}" for s in self.registry.secrets.values()
            )
        where = repr(str(self.path))
        if self.database is not None:
            from distprivacy.ledger._postgres import redact

            where += f", database={redact(self.database)!r}"
        return f"Ledger({where}, {what}, {n} releases)"


__all__ = ["Ledger"]
