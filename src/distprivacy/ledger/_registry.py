"""Secrets, registered datasets and approved plans: the steward's signed decisions.

A ledger of schema 3 keeps, beside its releases, an append-only table of **events**, each one
a decision of the steward, signed with the steward's Ed25519 key
(:mod:`distprivacy.ledger._steward`) over the ledger's id, its sequence number, its time, its
kind, its subject, its payload and the digest of the event before it (a signed chain):

* ``secret`` — what is protected: a protected property (a predicate, keyed by its canonical
  text over the column's values as declared — never by the values a file happens to hold), the
  population the plans' models must be fitted on (its path and file fingerprint) and the
  budget. Every release under a secret composes with every other, whatever dataset it reads.
* ``dataset`` — a registered file under a secret: where it lives, the SHA-256 of its bytes,
  its number of records, the keyed hashes of its records (stored apart, their digest signed)
  and the number of records it shares with every dataset registered before it under the same
  secret. A release reads the registered file itself and refuses it when its bytes changed; a
  new version of a dataset is registered under the same name.
* ``plan`` — a plan approved for a secret: its digest (the plan itself is stored encrypted
  beside the event). The first approved plan fixes the secret's specification (n, the
  candidate shares, the protected pairs); every later one must have the same.
* ``budget`` — a secret's budget set anew (raised or lowered), with the steward's reason.

Whoever holds the ledger key but not the steward's key (a releaser) cannot add or change any
of these: an event without the steward's signature fails verification and refuses every
release. What such a releaser can still do is documented in docs/ledger.md.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from distprivacy._json import jsonable
from distprivacy.ledger._budget import budget_from_dict
from distprivacy.ledger._entry import LedgerError
from distprivacy.ledger._steward import StewardKey, StewardPublicKey
from distprivacy.targets import Target

#: The kinds of event a steward signs.
EVENT_KINDS = ("secret", "dataset", "plan", "budget")

#: The tables of a schema-3 ledger beside a schema-2 ledger's.
REGISTRY_SCHEMA = (
    "CREATE TABLE events (seq INTEGER PRIMARY KEY, time TEXT NOT NULL, kind TEXT NOT NULL, "
    "subject TEXT NOT NULL, payload TEXT NOT NULL, prev TEXT NOT NULL, signature TEXT NOT NULL)",
    "CREATE TABLE approved_plans (name TEXT PRIMARY KEY, seq INTEGER NOT NULL, plan TEXT NOT NULL)",
    "CREATE TABLE dataset_records (name TEXT NOT NULL, version INTEGER NOT NULL, "
    "hashes BLOB NOT NULL, PRIMARY KEY (name, version))",
)

_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def check_name(name: Any, what: str) -> str:
    """A secret's, dataset's or plan's name: 1–64 letters, digits, ``_``, ``.`` or ``-``,
    starting with a letter or digit."""
    if not isinstance(name, str) or not 1 <= len(name) <= 64:
        raise LedgerError(f"a {what} name is 1 to 64 characters, got {name!r:.80}")
    if not set(name) <= _NAME_CHARS or not name[0].isalnum():
        raise LedgerError(
            f"a {what} name uses letters, digits, '_', '.' and '-' and starts with a letter or "
            f"digit, got {name!r}"
        )
    return name


def canonical_json(x: Any) -> str:
    return json.dumps(jsonable(x), sort_keys=True, separators=(",", ":"), allow_nan=False)


@dataclass(frozen=True)
class Event:
    """One signed decision of the steward (module docstring)."""

    seq: int
    time: str
    kind: str
    subject: str
    payload: Mapping[str, Any]
    prev: str
    signature: str

    def message(self, ledger_id: str) -> bytes:
        """What the signature covers."""
        body = [ledger_id, self.seq, self.time, self.kind, self.subject, self.payload, self.prev]
        return canonical_json(body).encode()

    def digest(self, ledger_id: str) -> str:
        """SHA-256 of the signed message and the signature: the next event's ``prev``."""
        h = hashlib.sha256(self.message(ledger_id) + b"|" + self.signature.encode())
        return h.hexdigest()


def genesis_digest(ledger_id: str, public: StewardPublicKey) -> str:
    """The ``prev`` of the first event: binds the chain to the ledger and its steward."""
    return hashlib.sha256(f"genesis|{ledger_id}|{public.hex}".encode()).hexdigest()


@dataclass(frozen=True)
class Secret:
    """What is protected, and its budget (a ``secret`` event and the ``budget`` events after
    it)."""

    name: str
    property: str
    population: Mapping[str, Any]
    budget: Target
    seq: int
    spec: Mapping[str, Any] | None = None

    @property
    def key(self) -> str:
        """The key of its releases' ``property`` field."""
        return f"secret:{self.name}"


@dataclass(frozen=True)
class RegisteredDataset:
    """One version of a registered dataset (a ``dataset`` event)."""

    name: str
    version: int
    secret: str
    path: str
    fingerprint: str
    rows: int
    records_digest: str
    shared: Mapping[str, int]
    decision: Mapping[str, Any]
    seq: int

    @property
    def key(self) -> str:
        """The key of its releases' ``fingerprint`` field (``dataset:NAME@VERSION``)."""
        return f"dataset:{self.name}@{self.version}"


@dataclass(frozen=True)
class ApprovedPlan:
    """A plan approved for a secret (a ``plan`` event)."""

    name: str
    secret: str
    digest: str
    seq: int
    summary: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class Registry:
    """The state the events describe, replayed in order (:meth:`from_events`)."""

    secrets: dict[str, Secret] = field(default_factory=dict)
    datasets: dict[str, list[RegisteredDataset]] = field(default_factory=dict)
    plans: dict[str, ApprovedPlan] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)

    @property
    def head(self) -> int:
        """The number of events."""
        return len(self.events)

    def secret(self, name: str | None) -> Secret:
        """A secret by name; None: the only one (refused when there are several)."""
        if name is None:
            if len(self.secrets) == 1:
                return next(iter(self.secrets.values()))
            if not self.secrets:
                raise LedgerError("this ledger has no secret yet; add one with `ledger secret`")
            raise LedgerError(
                f"this ledger has {len(self.secrets)} secrets ({', '.join(sorted(self.secrets))})"
                ": name one (`secret=NAME`)"
            )
        if name not in self.secrets:
            known = ", ".join(sorted(self.secrets)) or "none"
            raise LedgerError(f"no secret named {name!r} in this ledger (known: {known})")
        return self.secrets[name]

    def dataset(self, name: str) -> RegisteredDataset:
        """The newest version of a registered dataset."""
        if name not in self.datasets:
            known = ", ".join(sorted(self.datasets)) or "none"
            raise LedgerError(
                f"no dataset named {name!r} is registered in this ledger (registered: {known}); "
                "the steward registers one with `distprivacy ledger register`"
            )
        return self.datasets[name][-1]

    def version(self, key: str) -> RegisteredDataset:
        """A dataset version by its key (``dataset:NAME@VERSION``)."""
        for versions in self.datasets.values():
            for d in versions:
                if d.key == key:
                    return d
        raise LedgerError(f"no registered dataset {key!r}")

    def plan(self, name: str) -> ApprovedPlan:
        if name not in self.plans:
            known = ", ".join(sorted(self.plans)) or "none"
            raise LedgerError(
                f"no plan named {name!r} is approved in this ledger (approved: {known}); the "
                "steward approves one with `distprivacy ledger approve`"
            )
        return self.plans[name]

    def versions_of(self, secret: str) -> list[RegisteredDataset]:
        """Every registered version of every dataset under ``secret``, in registration order."""
        out = [d for vs in self.datasets.values() for d in vs if d.secret == secret]
        return sorted(out, key=lambda d: d.seq)

    def shared(self, a: str, b: str) -> int:
        """Records shared by two dataset versions (keys), as measured at registration."""
        if a == b:
            return self.version(a).rows
        da, db = self.version(a), self.version(b)
        later, earlier = (da, db) if da.seq > db.seq else (db, da)
        if earlier.key not in later.shared:
            raise LedgerError(
                f"the ledger holds no measured overlap between {a} and {b} (registered under "
                "different secrets?)"
            )
        return int(later.shared[earlier.key])

    # -- replay ---------------------------------------------------------------------------

    @classmethod
    def from_events(cls, events: Sequence[Event]) -> Registry:
        """Replay the events (each checked against the state before it; one-line
        :class:`LedgerError` naming the event otherwise)."""
        reg = cls()
        for e in events:
            try:
                reg._apply(e)
            except (KeyError, TypeError, ValueError) as exc:
                raise LedgerError(
                    f"event {e.seq} ({e.kind} {e.subject!r}) is malformed "
                    f"({type(exc).__name__}: {exc})"
                ) from None
            reg.events.append(e)
        return reg

    def _apply(self, e: Event) -> None:
        p = e.payload
        if e.kind == "secret":
            if e.subject in self.secrets:
                raise LedgerError(f"event {e.seq}: secret {e.subject!r} declared twice")
            budget = budget_from_dict(p["budget"])
            self.secrets[e.subject] = Secret(
                e.subject, str(p["property"]), dict(p["population"]), budget, e.seq
            )
        elif e.kind == "budget":
            s = self.secret(str(p["secret"]))
            self.secrets[s.name] = _replace(s, budget=budget_from_dict(p["budget"]))
        elif e.kind == "dataset":
            secret = self.secret(str(p["secret"]))
            versions = self.datasets.setdefault(e.subject, [])
            version = int(p["version"])
            if version != len(versions) + 1:
                raise LedgerError(f"event {e.seq}: dataset {e.subject!r} version out of order")
            if versions and versions[-1].secret != secret.name:
                raise LedgerError(
                    f"event {e.seq}: a new version of {e.subject!r} under another secret"
                )
            versions.append(
                RegisteredDataset(
                    name=e.subject,
                    version=version,
                    secret=secret.name,
                    path=str(p["path"]),
                    fingerprint=str(p["fingerprint"]),
                    rows=int(p["rows"]),
                    records_digest=str(p["records_digest"]),
                    shared={str(k): int(v) for k, v in dict(p["shared"]).items()},
                    decision=dict(p.get("decision") or {}),
                    seq=e.seq,
                )
            )
        elif e.kind == "plan":
            secret = self.secret(str(p["secret"]))
            if e.subject in self.plans:
                raise LedgerError(f"event {e.seq}: plan {e.subject!r} approved twice")
            spec = dict(p["spec"])
            if secret.spec is None:
                self.secrets[secret.name] = _replace(secret, spec=spec)
            elif canonical_json(secret.spec) != canonical_json(spec):
                raise LedgerError(
                    f"event {e.seq}: plan {e.subject!r} has another specification than the "
                    f"secret {secret.name!r}"
                )
            self.plans[e.subject] = ApprovedPlan(
                e.subject, secret.name, str(p["digest"]), e.seq, dict(p.get("summary") or {})
            )
        else:
            raise LedgerError(f"event {e.seq} has an unknown kind {e.kind!r}")


def _replace(obj: Any, **changes: Any) -> Any:
    import dataclasses

    return dataclasses.replace(obj, **changes)


# -- storage ----------------------------------------------------------------------------------


def read_events(con: sqlite3.Connection) -> list[Event]:
    rows = con.execute(
        "SELECT seq, time, kind, subject, payload, prev, signature FROM events ORDER BY seq"
    ).fetchall()
    out = []
    for seq, time, kind, subject, payload, prev, sig in rows:
        try:
            body = json.loads(payload)
            if not isinstance(body, dict):
                raise ValueError("not an object")
        except (ValueError, TypeError):
            raise LedgerError(f"event {seq} has a malformed payload") from None
        out.append(Event(int(seq), str(time), str(kind), str(subject), body, str(prev), str(sig)))
    return out


def check_events(events: Sequence[Event], ledger_id: str, public: StewardPublicKey) -> str | None:
    """None when the events form the steward's signed chain (contiguous sequence numbers, each
    ``prev`` the digest of the one before, each signature the steward's); else why not."""
    prev = genesis_digest(ledger_id, public)
    for k, e in enumerate(events, start=1):
        if e.seq != k:
            return f"event {e.seq} is out of sequence (expected {k}): events were removed"
        if e.prev != prev:
            return f"event {e.seq} does not follow the event before it: the chain was edited"
        if e.kind not in EVENT_KINDS:
            return f"event {e.seq} has an unknown kind {e.kind!r}"
        if not public.verify(e.signature, e.message(ledger_id)):
            return (
                f"event {e.seq} ({e.kind} {e.subject!r}) is not signed by the ledger's steward: "
                "it was added or edited without the steward's key"
            )
        prev = e.digest(ledger_id)
    return None


def append_event(
    con: sqlite3.Connection,
    steward: StewardKey,
    ledger_id: str,
    public: StewardPublicKey,
    kind: str,
    subject: str,
    payload: Mapping[str, Any],
) -> Event:
    """Sign and insert the next event (inside the caller's write transaction)."""
    if steward.public != public:
        raise LedgerError(
            f"this steward key ({steward.public.fingerprint}) is not the ledger's steward "
            f"({public.fingerprint}): only the steward who created the ledger can sign its "
            "decisions"
        )
    events = read_events(con)
    prev = events[-1].digest(ledger_id) if events else genesis_digest(ledger_id, public)
    time = datetime.now(UTC).isoformat(timespec="microseconds")
    body = json.loads(canonical_json(payload))
    unsigned = Event(len(events) + 1, time, kind, subject, body, prev, "")
    event = _replace(unsigned, signature=steward.sign(unsigned.message(ledger_id)))
    con.execute(
        "INSERT INTO events (seq, time, kind, subject, payload, prev, signature) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            event.seq,
            event.time,
            event.kind,
            event.subject,
            canonical_json(event.payload),
            event.prev,
            event.signature,
        ),
    )
    return event


def source_fingerprint(path: str | Path) -> str:
    """``file-sha256:`` of a file's bytes, or, for a directory (Adult's two files), of the
    names and bytes of its regular files in name order (``dir-sha256:``)."""
    p = Path(path)
    if p.is_file():
        return file_fingerprint(p)
    if p.is_dir():
        h = hashlib.sha256()
        for f in sorted(x for x in p.iterdir() if x.is_file()):
            h.update(f"{len(f.name)}:{f.name}|".encode())
            h.update(file_fingerprint(f).encode() + b"\n")
        return "dir-sha256:" + h.hexdigest()
    raise LedgerError(f"{str(p)!r} is neither a regular file nor a directory")


def file_fingerprint(path: str | Path) -> str:
    """:func:`distprivacy.fingerprint.file_fingerprint` (``file-sha256:`` of the bytes, read
    in 1 MiB blocks), without loading pandas as that module does: ``ledger init`` and
    ``ledger secret`` fingerprint a population file (tests/ledger check the two agree)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return "file-sha256:" + h.hexdigest()
