"""The release service's operations, free of any web framework: who may do what, on the
public :class:`~distprivacy.ledger.Ledger` API (docs/serve.md).

:class:`Service` holds the state directory: the ledger of secrets (``ledger.db``, its key and
anchor), the service's database (:mod:`.store`), the data root (uploaded and registered files)
and the plans awaiting approval. Every operation takes a :class:`Principal` — the user a token
or a session names — and raises :class:`ServiceError` (an HTTP status and one line) when it is
refused. Messages never carry the state directory's or the data root's absolute paths.
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets as _secrets
import stat
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from distprivacy.exceptions import DistPrivacyError
from distprivacy.service import tokens as tk
from distprivacy.service.chain import ChainError
from distprivacy.service.store import KEY_NAME, Store, StoreError, TamperedError, now

#: The default largest upload (a population, a dataset or a plan), in bytes.
MAX_UPLOAD = 64 * 1024 * 1024
#: The largest JSON body of every other request, in bytes.
MAX_JSON = 64 * 1024
#: File types a dataset or population may have (what the library's tables read).
DATA_SUFFIXES = (".csv", ".parquet", ".tsv", ".json")
_NAME = re.compile(r"^[^\x00-\x1f\x7f/\\]{1,64}$")
_USER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
_AAD_KEY = b"distprivacy-serve|steward-signing-key"
_AAD_SESSION = b"distprivacy-serve|session"


def _check_backend(state: Path, database: str | None) -> None:
    """A state directory keeps its ledger and its users where they were made: an SQLite ledger
    or service database is never silently left for an empty PostgreSQL one, nor the other way
    round."""
    sqlite_ledger = (state / "ledger.db").is_file()
    marker = state / "ledger.database"
    if database is not None and sqlite_ledger:
        raise ServiceError(
            400,
            f"--state {str(state)!r} holds an SQLite ledger (ledger.db): start without "
            "--database, or give a new state directory for the PostgreSQL ledger",
        )
    if database is not None and (state / "service.db").exists():
        raise ServiceError(
            400,
            f"--state {str(state)!r} holds the service's users in SQLite (service.db): start "
            "without --database, or give a new state directory for the PostgreSQL service",
        )
    if database is None and not sqlite_ledger and marker.is_file():
        raise ServiceError(
            400,
            f"--state {str(state)!r} belongs to a service whose ledger is in PostgreSQL "
            "(ledger.database says where): start it with --database URL",
        )


def _write_marker(path: Path, text: str) -> None:
    """Where the ledger is (the URL without its password), for the operator: a regular file,
    0600, never written through a link."""
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise ServiceError(400, f"{path.name} in the state directory is not a regular file")
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)


@contextmanager
def _authenticating() -> Iterator[None]:
    """A token or session check: a row failing its MAC is 401; a log failing its chain, 503."""
    try:
        yield
    except TamperedError as e:
        raise ServiceError(401, str(e)) from None
    except ChainError as e:
        raise ServiceError(503, str(e)) from None


class ServiceError(Exception):
    """A refused request: an HTTP ``status`` and a one-line ``message``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = " ".join(str(message).split())


@dataclass(frozen=True)
class Principal:
    """Who a request comes from: a user, their role, the secrets an analyst may use, the token
    (its id) and, for a steward, the key that unlocks the signing key during this request."""

    name: str
    role: str
    secrets: tuple[str, ...]
    token_id: int
    kek: bytes | None = None
    csrf: str | None = None

    def may_see(self, secret: str) -> bool:
        return self.role == "steward" or secret in self.secrets


def check_name(value: Any, what: str) -> str:
    """A name of a secret, dataset or plan: 1 to 64 characters, no control character or slash."""
    if not isinstance(value, str) or not _NAME.match(value) or value != value.strip():
        raise ServiceError(
            400,
            f"{what} must be a name of 1 to 64 characters without control characters, slashes "
            "or surrounding spaces",
        )
    return value


def row_id(value: Any, what: str) -> int:
    """A numeric id from a path (1 … 2⁶²), else a 404 naming ``what``."""
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ServiceError(404, f"no such {what}") from None
    if not 0 < n < 2**62:
        raise ServiceError(404, f"no such {what}")
    return n


def budget_from(raw: Any) -> Any:
    """A typed target from ``{"mu": x}``, ``{"epsilon": e, "delta": d}`` or ``{"accuracy": a}``
    (numbers, or their text from a form)."""
    from distprivacy.targets import GDP, EpsDelta, MaxAttackAccuracy

    if not isinstance(raw, Mapping):
        raise ServiceError(
            400,
            'budget must be an object: {"mu": X}, {"epsilon": E, "delta": D} or {"accuracy": A}',
        )
    given = {k: v for k, v in raw.items() if v not in (None, "")}

    def num(k: str) -> float:
        v = given[k]
        if isinstance(v, bool) or not isinstance(v, int | float | str):
            raise ServiceError(400, f"budget {k} must be a number")
        try:
            x = float(v)
        except ValueError:
            raise ServiceError(400, f"budget {k} must be a number, got {str(v)[:40]!r}") from None
        if not math.isfinite(x):
            raise ServiceError(400, f"budget {k} must be finite")
        return x

    try:
        if set(given) == {"mu"}:
            return GDP(num("mu"))
        if set(given) == {"epsilon", "delta"}:
            return EpsDelta(num("epsilon"), num("delta"))
        if set(given) == {"accuracy"}:
            return MaxAttackAccuracy(num("accuracy"))
    except DistPrivacyError as e:
        raise ServiceError(400, f"budget: {e}") from None
    raise ServiceError(
        400,
        'budget must be exactly one of {"mu": X}, {"epsilon": E, "delta": D} or {"accuracy": A}',
    )


class Service:
    """The service's state in ``state`` (a directory, 0700), made by :meth:`open`.

    Parameters
    ----------
    state : Path
        The state directory.
    data_root : Path or None
        Where registered files live (default ``state/data``); uploads go to its ``uploads/``.
    max_upload : int
        The largest upload in bytes.
    database : str or None
        A PostgreSQL URL holding the ledger's rows and, in the schema ``distprivacy_service``,
        the service's users, tokens, sessions, plans awaiting review, releases and audit log
        (:mod:`.store`), so that several service processes — on one host or several — share one
        budget and one set of users; the keys (``ledger.db.key``, ``service.key``) and the
        anchor stay in ``state``. None: the SQLite files ``state/ledger.db`` and
        ``state/service.db``.

    Notes
    -----
    The state directory holds, with SQLite: ``ledger.db`` (with ``.key`` and ``.anchor``),
    ``service.db``, ``steward.pub``, ``data/`` and ``pending/``. With PostgreSQL:
    ``ledger.db.key`` and ``ledger.db.anchor`` (no ``ledger.db``), ``service.key`` (the MAC key
    of the users', tokens' and sessions' rows and of the audit log's chain), ``service.anchor``
    (this host's record of the audit log's length and head), ``ledger.database`` (where, without the
    password), ``steward.pub`` (a copy of the database's), ``data/`` and ``pending/``. A
    second host's state directory starts with copies of ``ledger.db.key`` and
    ``service.key`` only.
    """

    def __init__(
        self,
        state: Path,
        data_root: Path | None = None,
        max_upload: int = MAX_UPLOAD,
        database: str | None = None,
    ) -> None:
        self.state = state.resolve()
        self.data_root = (data_root or self.state / "data").resolve()
        self.max_upload = int(max_upload)
        self.ledger_path = self.state / "ledger.db"
        self.database = database
        self.pending_dir = self.state / "pending"
        if database is not None:
            self._check_database()
        try:
            self.store = Store(self.state / "service.db", database, key_file=self.state / KEY_NAME)
        except (StoreError, ChainError) as e:
            raise ServiceError(400, str(e)) from None
        self._locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()
        self._steward_lock = threading.Lock()
        self._ledger_lock = threading.Lock()

    # -- set-up -------------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        state: str | Path,
        data_root: str | Path | None = None,
        max_upload: int = MAX_UPLOAD,
        database: str | None = None,
    ) -> tuple[Service, str | None]:
        """Open (or create, 0700) the state directory; on first start also the steward and
        their signing key: returns the steward's first login token then (else None).
        ``database``: the PostgreSQL URL of the ledger (checked against what the state
        directory already holds)."""
        p = Path(state)
        if p.exists() and not p.is_dir():
            raise ServiceError(400, f"--state {str(state)!r} is not a directory")
        _check_backend(p, database)
        p.mkdir(mode=0o700, parents=True, exist_ok=True)
        root = Path(data_root) if data_root is not None else p / "data"
        for d in (root, root / "uploads", p / "pending"):
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
        svc = cls(p, root, max_upload, database)
        first = svc._first_steward()
        try:
            public = svc.store.steward_public()
        except TamperedError as e:
            raise ServiceError(400, str(e)) from None
        if public is not None:
            _write_marker(p / "steward.pub", public + "\n")
        return svc, first

    def _first_steward(self) -> str | None:
        """The steward and their first token when the service has no user yet (made in one
        transaction under the store's write lock: of several processes starting at once on
        one database, one makes it); the token, or None."""
        if self.store.has_users():
            return None
        token = tk.new_token()
        private, raw = tk.new_signing_key()
        del private
        wrapped = tk.seal(tk.derive(token, "steward-key"), raw, _AAD_KEY)
        key = tk.signing_key(raw)
        made = self.store.first_steward(
            tk.token_hash(token), wrapped, key.public.hex, key.public.fingerprint
        )
        return None if made is None else token

    @property
    def steward_fingerprint(self) -> str:
        from distprivacy.ledger import StewardPublicKey

        try:
            text = (self.state / "steward.pub").read_text(encoding="utf-8").strip()
            return StewardPublicKey(text).fingerprint
        except (OSError, DistPrivacyError):
            return "unknown"

    # -- who is asking --------------------------------------------------------------------------

    def from_token(self, token: str) -> Principal:
        if not isinstance(token, str) or not token or len(token) > 200:
            raise ServiceError(401, "a valid token is required (Authorization: Bearer TOKEN)")
        with _authenticating():
            row = self.store.by_token(tk.token_hash(token))
        if row is None:
            raise ServiceError(401, "the token is unknown or was revoked")
        kek = tk.derive(token, "steward-key") if row["role"] == "steward" else None
        return Principal(row["name"], row["role"], tuple(row["secrets"]), row["token_id"], kek)

    def login(self, token: str) -> tuple[str, Principal]:
        """A new browser session for ``token``: (the cookie's value, who)."""
        p = self.from_token(token)
        sid = _secrets.token_urlsafe(32)
        csrf = _secrets.token_urlsafe(32)
        wrapped = None
        if p.kek is not None:
            wrapped = tk.seal(tk.derive(sid, "session"), p.kek, _AAD_SESSION)
        self.store.add_session(tk.token_hash(sid), p.token_id, csrf, wrapped)
        self.store.audit(p.name, p.role, "login", p.name, "ok")
        return sid, Principal(p.name, p.role, p.secrets, p.token_id, p.kek, csrf)

    def from_session(self, sid: str) -> Principal:
        if not isinstance(sid, str) or not sid or len(sid) > 200:
            raise ServiceError(401, "log in first")
        with _authenticating():
            row = self.store.session(tk.token_hash(sid))
        if row is None:
            raise ServiceError(401, "the session ended or its token was revoked: log in again")
        kek = None
        if row["role"] == "steward" and row["session_wrapped"] is not None:
            kek = tk.unseal(tk.derive(sid, "session"), row["session_wrapped"], _AAD_SESSION)
        return Principal(
            row["name"], row["role"], tuple(row["secrets"]), row["token_id"], kek, row["csrf"]
        )

    def logout(self, sid: str) -> None:
        self.store.end_session(tk.token_hash(sid))

    @staticmethod
    def require(p: Principal, role: str) -> None:
        if p.role != role:
            raise ServiceError(
                403,
                f"this needs the {role}'s token; yours is an {p.role}'s"
                if p.role == "analyst"
                else f"this needs an {role}'s token; yours is the {p.role}'s",
            )

    def _signing_key(self, p: Principal) -> Any:
        self.require(p, "steward")
        raw = None
        if p.kek is not None:
            raw = tk.unseal(p.kek, self.store.token_wrapped(p.token_id) or b"", _AAD_KEY)
        if raw is None:
            raise ServiceError(403, "the steward's signing key does not open with this token")
        return tk.signing_key(raw)

    # -- files ------------------------------------------------------------------------------------

    def scrub(self, message: str) -> str:
        """``message`` without the state directory's or data root's absolute paths (nor any
        other directory part of an absolute path)."""
        text = str(message)
        for root, label in ((self.data_root, ""), (self.state, "")):
            text = text.replace(str(root) + os.sep, label).replace(str(root), "the service")
        return re.sub(r"(?<![\w.])/(?:[^\s'\"(),:/]+/)+", "", text)

    def data_file(self, rel: Any) -> Path:
        """A registered file named relative to the data root: refused outside it, through a
        symlink, or when it is not a regular file."""
        if not isinstance(rel, str) or not rel or len(rel) > 512 or "\x00" in rel:
            raise ServiceError(400, "path must be a file name relative to the data directory")
        if os.path.isabs(rel) or rel.startswith("~"):
            raise ServiceError(400, "path must be relative to the data directory, not absolute")
        if ".." in Path(rel).parts:
            raise ServiceError(400, "path must stay inside the data directory (no '..')")
        candidate = self.data_root / rel
        try:
            st = os.lstat(candidate)
            resolved = candidate.resolve(strict=True)
        except (OSError, RuntimeError):
            raise ServiceError(400, f"no file {rel!r} in the data directory") from None
        if stat.S_ISLNK(st.st_mode) or not resolved.is_relative_to(self.data_root):
            raise ServiceError(400, f"{rel!r} is a symbolic link or leaves the data directory")
        if not stat.S_ISREG(st.st_mode):
            raise ServiceError(400, f"{rel!r} is not a regular file")
        if resolved.suffix.lower() not in DATA_SUFFIXES:
            raise ServiceError(400, f"{rel!r}: a data file is one of {', '.join(DATA_SUFFIXES)}")
        return resolved

    def save_upload(self, filename: Any, data: bytes) -> str:
        """Keep an uploaded data file under a fresh name in ``uploads/`` (0600); returns its
        path relative to the data root."""
        base = os.path.basename(str(filename or "").replace("\\", "/"))
        clean = re.sub(r"[^A-Za-z0-9._-]", "_", base).lstrip(".")[-80:] or "upload.csv"
        if Path(clean).suffix.lower() not in DATA_SUFFIXES:
            raise ServiceError(400, f"an upload is a data file: one of {', '.join(DATA_SUFFIXES)}")
        if len(data) > self.max_upload:
            raise ServiceError(413, f"the upload is larger than {self.max_upload} bytes")
        rel = f"uploads/{_secrets.token_hex(8)}-{clean}"
        fd = os.open(
            self.data_root / rel, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600
        )
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        return rel

    # -- the ledger -------------------------------------------------------------------------------

    @contextmanager
    def _ledger(self) -> Iterator[Any]:
        """The ledger, opened for one operation and closed after it — one at a time in this
        process (:attr:`_ledger_lock`). Opening a ledger reads its file's header with a plain
        open/close, and closing any descriptor of a file drops every POSIX lock this process
        holds on it, the SQLite locks of its other connections included; another process could
        then think itself the last one and remove the WAL under them ("database disk image is
        malformed", seen with two service processes on one state). With one connection at a
        time per process, that close drops nothing."""
        from distprivacy.ledger import Ledger

        with self._ledger_lock:
            if not self.has_ledger():
                raise ServiceError(409, "no secret is declared yet: the steward declares one first")
            led = Ledger(self.ledger_path, database=self.database)
            try:
                yield led
            finally:
                led.close()

    def has_ledger(self) -> bool:
        """Whether the steward declared the first secret: the ledger file exists — or, with
        PostgreSQL, its key (made with the database's tables, removed when they were not)."""
        from distprivacy.ledger import key_path

        if self.database is None:
            return self.ledger_path.exists()
        return key_path(self.ledger_path).exists()

    def _check_database(self) -> None:
        """At start: the database is reachable, and it holds a ledger exactly when the state
        directory holds its key (one line otherwise, before anything is served)."""
        from distprivacy.ledger import Ledger, LedgerError
        from distprivacy.postgres import PostgresConnection, PostgresUnavailableError, redact

        assert self.database is not None
        try:
            with PostgresConnection(self.database, what="the ledger's database", lock_id=0) as con:
                holds = "ledger_meta" in con.tables()
        except PostgresUnavailableError as e:
            raise ServiceError(400, str(e)) from None
        where = redact(self.database)
        if holds and not self.has_ledger():
            raise ServiceError(
                400,
                f"the database {where} holds a ledger whose key is not in the state directory: "
                "copy ledger.db.key, ledger.db.anchor and service.key from the state directory "
                "of a host already serving it, or give an empty database",
            )
        if self.has_ledger() and not holds:
            raise ServiceError(
                400,
                f"the state directory holds a ledger's key but the database {where} holds no "
                "ledger: give the database the ledger was made in",
            )
        if holds:
            try:
                Ledger(self.ledger_path, database=self.database).close()
            except LedgerError as e:
                raise ServiceError(400, self.scrub(str(e))) from None
        _write_marker(self.state / "ledger.database", where + "\n")

    def _lock(self, secret: str) -> threading.Lock:
        with self._locks_lock:
            return self._locks.setdefault(secret, threading.Lock())

    def _refusal(self, e: Exception) -> ServiceError:
        from distprivacy.ledger import BudgetExceededError

        if isinstance(e, ServiceError):
            return e
        if isinstance(e, BudgetExceededError):
            return ServiceError(409, self.scrub(str(e)))
        return ServiceError(400, self.scrub(str(e) or type(e).__name__))

    def _steward_act(
        self, p: Principal, action: str, subject: str, fn: Any, detail: dict[str, Any] | None = None
    ) -> Any:
        """Run a steward decision with the signing key, recorded in the audit log either way."""
        key = self._signing_key(p)
        with self._steward_lock:
            try:
                out = fn(key)
            except (DistPrivacyError, ServiceError) as e:
                err = self._refusal(e)
                self.store.audit(
                    p.name,
                    p.role,
                    action,
                    subject,
                    "refused",
                    {**(detail or {}), "error": err.message},
                )
                raise err from None
        self.store.audit(p.name, p.role, action, subject, "done", detail)
        return out

    def add_secret(
        self, p: Principal, name: Any, protect: Any, population: Any, budget: Any
    ) -> dict[str, Any]:
        name = check_name(name, "secret")
        if not isinstance(protect, str) or not protect.strip() or len(protect) > 200:
            raise ServiceError(400, "protect must be a predicate such as income==>50K")
        self.require(p, "steward")
        pop = self.data_file(population)
        target = budget_from(budget)

        def act(key: Any) -> None:
            from distprivacy.ledger import Ledger

            with self._ledger_lock:
                if not self.has_ledger():
                    Ledger.init(
                        self.ledger_path,
                        database=self.database,
                        steward=key,
                        secret=name,
                        protect=protect,
                        budget=target,
                        population=pop,
                    ).close()
                    return
            with self._ledger() as led:
                led.add_secret(key, name, protect, target, population=pop)

        detail = {"protect": protect, "population": str(population), "budget": _target_text(target)}
        self._steward_act(p, "declare secret", name, act, detail)
        return {"secret": name, "protect": protect, "budget": _target_text(target)}

    def register(
        self,
        p: Principal,
        name: Any,
        secret: Any,
        path: Any,
        *,
        same_records_as: Any = None,
        independent: Any = False,
        confirm_overlap: Any = None,
    ) -> dict[str, Any]:
        name = check_name(name, "dataset")
        secret = check_name(secret, "secret")
        self.require(p, "steward")
        file = self.data_file(path)
        if same_records_as not in (None, ""):
            same_records_as = check_name(same_records_as, "same_records_as")
        else:
            same_records_as = None
        if not isinstance(independent, bool):
            raise ServiceError(400, "independent must be true or false")
        if confirm_overlap in ("",):
            confirm_overlap = None
        if confirm_overlap is not None and (
            not isinstance(confirm_overlap, str) or len(confirm_overlap) > 500
        ):
            raise ServiceError(400, "confirm_overlap must be a reason (text)")

        def act(key: Any) -> Any:
            with self._ledger() as led:
                return led.register(
                    key,
                    name,
                    file,
                    secret=secret,
                    same_records_as=same_records_as,
                    independent=independent,
                    confirm_overlap=confirm_overlap,
                )

        ds, notices = self._steward_act(
            p, "register dataset", name, act, {"secret": secret, "path": str(path)}
        )
        return {
            "dataset": ds.name,
            "version": ds.version,
            "secret": ds.secret,
            "rows": ds.rows,
            "shared": dict(ds.shared),
            "notices": [self.scrub(n) for n in notices],
        }

    def set_budget(self, p: Principal, secret: Any, budget: Any, reason: Any) -> dict[str, Any]:
        secret = check_name(secret, "secret")
        self.require(p, "steward")
        target = budget_from(budget)
        if not isinstance(reason, str) or not reason.strip() or len(reason) > 500:
            raise ServiceError(400, "a budget change needs a reason (text, at most 500 characters)")

        def act(key: Any) -> None:
            with self._ledger() as led:
                led.set_budget(key, secret, target, reason)

        self._steward_act(
            p, "set budget", secret, act, {"budget": _target_text(target), "reason": reason}
        )
        return {"secret": secret, "budget": _target_text(target), "reason": reason}

    def upload_plan(self, p: Principal, secret: Any, raw: Any) -> dict[str, Any]:
        """Keep a plan (a ``calibrate --save`` file) for the steward's review."""
        from distprivacy.mechanisms.plans import Plan

        self.require(p, "steward")
        secret = check_name(secret, "secret")
        if isinstance(raw, bytes | str):
            try:
                raw = json.loads(raw)
            except (ValueError, UnicodeDecodeError):
                raise ServiceError(
                    400, "the plan is not JSON (a `calibrate --save` file)"
                ) from None
        if not isinstance(raw, dict):
            raise ServiceError(400, "the plan must be a JSON object (a `calibrate --save` file)")
        with self._ledger() as led:
            if secret not in led.registry.secrets:
                raise ServiceError(404, f"no secret {secret!r}")
        name = f"{_secrets.token_hex(8)}.json"
        path = self.pending_dir / name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(raw, fh)
        try:
            Plan.load(path)
        except (DistPrivacyError, ValueError, TypeError, KeyError) as e:
            path.unlink(missing_ok=True)
            err = (
                self._refusal(e)
                if isinstance(e, DistPrivacyError)
                else ServiceError(400, f"not a plan: {type(e).__name__}")
            )
            self.store.audit(
                p.name, p.role, "upload plan", secret, "refused", {"error": err.message}
            )
            raise err from None
        pid = self.store.add_pending(secret, name, p.name, json.dumps(raw))
        self.store.audit(p.name, p.role, "upload plan", secret, "awaiting review", {"pending": pid})
        return {"pending": pid, "secret": secret}

    def _pending(self, pid: Any) -> tuple[dict[str, Any], Any]:
        from distprivacy.mechanisms.plans import Plan

        pid = row_id(pid, "plan awaiting review")
        rows = self.store.pending(pid)
        if not rows:
            raise ServiceError(404, "no such plan awaiting review")
        row = rows[0]
        if not row["verified"]:
            raise ServiceError(
                409,
                "this plan's row in the service's database fails its MAC (written outside the "
                "service): upload the plan again",
            )
        path = self.pending_dir / row["file"]
        if (
            not path.exists()
            and row.get("plan")
            and re.fullmatch(r"[0-9a-f]{16}\.json", row["file"])
        ):
            # uploaded on another host: its JSON is in the database
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            except FileExistsError:
                pass
            else:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(row["plan"])
        try:
            plan = Plan.load(path)
        except DistPrivacyError as e:
            raise self._refusal(e) from None
        return row, plan

    def review(self, p: Principal, pid: Any) -> dict[str, Any]:
        """The calibration report of a plan awaiting approval (the steward's review)."""
        self.require(p, "steward")
        row, plan = self._pending(pid)
        d = plan.to_dict()
        cal = d.get("calibration") or {}
        spec = d.get("spec") or {}
        population = None
        with self._ledger() as led:
            s = led.registry.secrets.get(row["secret"])
            if s is not None:
                population = (s.population or {}).get("fingerprint")
        g = plan.guarantee
        return {
            "pending": row["id"],
            "secret": row["secret"],
            "status": row["status"],
            "name": row["name"],
            "uploaded_by": row["uploaded_by"],
            "time": row["time"],
            "digest": plan.digest,
            "mechanism": d.get("mechanism"),
            "statistics": list(d.get("statistics") or cal.get("statistics") or []),
            "property": spec.get("property"),
            "n": spec.get("n"),
            "values": spec.get("values"),
            "guarantee": g.to_dict(),
            "guarantee_text": g.describe(),
            "per_statistic": cal.get("per_statistic") or [],
            "warnings": list(cal.get("warnings") or []),
            "assumptions": list(d.get("assumptions") or []),
            "data_fingerprint": d.get("data_fingerprint"),
            "population_fingerprint": population,
            "fitted_on_population": bool(population) and d.get("data_fingerprint") == population,
            "library_version": d.get("library_version"),
            "created": d.get("created"),
        }

    def approve(self, p: Principal, pid: Any, name: Any) -> dict[str, Any]:
        name = check_name(name, "plan name")
        self.require(p, "steward")
        row, plan = self._pending(pid)
        if row["status"] != "pending":
            raise ServiceError(409, f"this plan was already {row['status']}")

        def act(key: Any) -> Any:
            with self._ledger() as led:
                return led.approve(key, plan, name, secret=row["secret"])

        self._steward_act(
            p,
            "approve plan",
            name,
            act,
            {"pending": row["id"], "secret": row["secret"], "digest": plan.digest},
        )
        self.store.settle_pending(row["id"], "approved", name)
        return {"plan": name, "secret": row["secret"], "digest": plan.digest}

    # -- users ------------------------------------------------------------------------------------

    def add_user(self, p: Principal, name: Any, role: Any, secrets: Any) -> dict[str, Any]:
        """A user and their first token (shown once); a steward's token gets its own copy of
        the signing key, so only a logged-in steward can make one."""
        self.require(p, "steward")
        if not isinstance(name, str) or not _USER.match(name):
            raise ServiceError(
                400, "a user name is 1 to 64 letters, digits or ._@- (first a letter or digit)"
            )
        if role not in ("steward", "analyst"):
            raise ServiceError(400, "role must be 'steward' or 'analyst'")
        if isinstance(secrets, str):
            secrets = [s.strip() for s in secrets.split(",") if s.strip()]
        if not isinstance(secrets, list) or not all(isinstance(s, str) for s in secrets):
            raise ServiceError(400, "secrets must be a list of secret names")
        secrets = [check_name(s, "secret") for s in secrets]
        if role == "analyst" and not secrets:
            raise ServiceError(400, "an analyst is given at least one secret to release under")
        try:
            existing = self.store.user(name)
        except TamperedError as e:
            raise ServiceError(409, str(e)) from None
        if existing is not None and existing["role"] != role:
            raise ServiceError(409, f"user {name!r} exists with role {existing['role']}")
        if existing is not None and role == "analyst" and set(secrets) != set(existing["secrets"]):
            raise ServiceError(
                409,
                f"analyst {name!r} exists with secrets {', '.join(existing['secrets'])}; a new "
                "token has the same scope (make another user for another scope)",
            )
        wrapped, token = None, tk.new_token()
        if role == "steward":
            key = self._signing_key(p)
            from cryptography.hazmat.primitives import serialization

            raw = key._private.private_bytes(
                serialization.Encoding.Raw,
                serialization.PrivateFormat.Raw,
                serialization.NoEncryption(),
            )
            wrapped = tk.seal(tk.derive(token, "steward-key"), raw, _AAD_KEY)
        uid = existing["id"] if existing else self.store.add_user(name, role, secrets)
        tid = self.store.add_token(uid, tk.token_hash(token), wrapped)
        self.store.audit(
            p.name,
            p.role,
            "make token",
            name,
            "done",
            {"role": role, "secrets": secrets, "token": tid},
        )
        return {"user": name, "role": role, "secrets": secrets, "token_id": tid, "token": token}

    def revoke(self, p: Principal, token_id: Any) -> dict[str, Any]:
        self.require(p, "steward")
        tid = row_id(token_id, "token")
        owner = self.store.token_owner(tid)
        if owner is None:
            raise ServiceError(404, "no such token")
        if owner["revoked"] is None and owner["role"] == "steward":
            if self.store.live_steward_tokens() <= 1:
                raise ServiceError(409, "this is the last steward token: make another first")
        self.store.revoke(tid, p.name, p.role, owner["user"])
        return {"token_id": tid, "user": owner["user"], "revoked": True}

    # -- releases ---------------------------------------------------------------------------------

    def release(self, p: Principal, dataset: Any, plan: Any) -> dict[str, Any]:
        """Release a registered dataset with an approved plan: recorded in the ledger (durable)
        before it is returned; serialised per secret."""
        from distprivacy.ledger import BudgetExceededError

        dataset = check_name(dataset, "dataset")
        plan = check_name(plan, "plan")
        self.require(p, "analyst")
        with self._ledger() as led:
            reg = led.registry
            approved = reg.plans.get(plan)
            if approved is None or not p.may_see(approved.secret):
                raise ServiceError(404, f"no approved plan {plan!r} that you may use")
            versions = reg.datasets.get(dataset)
            if not versions or not p.may_see(versions[-1].secret):
                raise ServiceError(404, f"no registered dataset {dataset!r} that you may use")
            secret = approved.secret
        detail = {"dataset": dataset, "plan": plan, "secret": secret}
        with self._lock(secret):
            try:
                with self._ledger() as led:
                    rec = led.release(plan, dataset)
            except (DistPrivacyError, OSError) as e:
                if isinstance(e, DistPrivacyError):
                    # the request named a plan and a dataset that exist: whatever the ledger
                    # refuses (the budget, a changed file, a damaged ledger) is a conflict
                    err = ServiceError(409, self.scrub(str(e) or type(e).__name__))
                else:
                    err = ServiceError(503, "the ledger could not be written; nothing was released")
                outcome = "refused" if isinstance(e, BudgetExceededError) else "failed"
                self.store.audit(
                    p.name, p.role, "release", dataset, outcome, {**detail, "error": err.message}
                )
                raise err from None
            rel = rec.release
            body = {
                "release_id": rec.release_id,
                "time": now(),
                "secret": rec.secret.name,
                "dataset": rec.dataset.name,
                "dataset_version": rec.dataset.version,
                "plan": plan,
                "mechanism": str(getattr(rec.plan.calibration, "mechanism", "") or ""),
                "statistics": {
                    str(k): float(v) for k, v in zip(rel.statistic_names, rel.values, strict=True)
                },
                "guarantee": rel.guarantee.to_dict(),
                "guarantee_text": rel.guarantee.describe(),
                "cumulative": rec.cumulative.to_dict(),
                "cumulative_text": rec.cumulative.describe(),
                "budget": str(rec.secret.budget.describe()),
                "releases_of_secret": rec.releases_of_dataset,
            }
            sid = self.store.add_release(rec.release_id, p.name, secret, dataset, plan, body)
            self.store.audit(
                p.name,
                p.role,
                "release",
                dataset,
                "released",
                {**detail, "release": rec.release_id, "cumulative": rec.cumulative.describe()},
            )
        return {**body, "id": sid, "user": p.name}

    def releases(self, p: Principal) -> list[dict[str, Any]]:
        return self.store.releases(None if p.role == "steward" else p.name)

    def one_release(self, p: Principal, rid: Any) -> dict[str, Any]:
        rid = row_id(rid, "release")
        rows = self.store.releases(None if p.role == "steward" else p.name, rid)
        if not rows:
            raise ServiceError(404, "no such release")
        return rows[0]

    # -- what each role may read ---------------------------------------------------------

    def overview(self, p: Principal) -> dict[str, Any]:
        """Secrets (budget, spent), datasets and approved plans that ``p`` may see."""
        if not self.has_ledger():
            return {
                "secrets": [],
                "datasets": [],
                "plans": [],
                "fingerprint": self.steward_fingerprint,
            }
        with self._ledger() as led:
            shown = led.show()
            reg = led.registry
        secrets = [
            _secret_view(s, p.role == "steward", self.scrub)
            for s in shown.get("secrets", [])
            if p.may_see(s.get("secret", ""))
        ]
        for sv in secrets:
            sv["history"] = _history(shown.get("releases", []), sv)
        datasets = []
        for name, versions in reg.datasets.items():
            d = versions[-1]
            if p.may_see(d.secret):
                row = {"name": name, "secret": d.secret, "version": d.version, "rows": d.rows}
                if p.role == "steward":
                    row["path"] = self.scrub(d.path)
                    row["shared"] = dict(d.shared)
                datasets.append(row)
        plans = []
        for name, a in reg.plans.items():
            if p.may_see(a.secret):
                summary = dict(a.summary or {})
                g = summary.get("guarantee") or {}
                plans.append(
                    {
                        "name": name,
                        "secret": a.secret,
                        "mechanism": summary.get("mechanism"),
                        "statistics": list(summary.get("statistics") or []),
                        "guarantee": {
                            k: g.get(k)
                            for k in (
                                "mu",
                                "epsilon",
                                "delta",
                                "max_attack_accuracy",
                                "verified",
                                "notion",
                            )
                        },
                    }
                )
        return {
            "secrets": secrets,
            "datasets": datasets,
            "plans": plans,
            "fingerprint": self.steward_fingerprint,
        }

    def secret_ledger(self, p: Principal, name: Any) -> dict[str, Any]:
        """One secret's ledger: its budget and spending, its releases; for the steward also
        the released values and the signed events."""
        name = check_name(name, "secret")
        if not p.may_see(name):
            raise ServiceError(404, f"no secret {name!r} that you may read")
        with self._ledger() as led:
            shown = led.show()
        match = [s for s in shown.get("secrets", []) if s.get("secret") == name]
        if not match:
            raise ServiceError(404, f"no secret {name!r} that you may read")
        steward = p.role == "steward"
        key = f"secret:{name}"
        releases = []
        for r in shown.get("releases", []):
            if r.get("property") != key:
                continue
            g = r.get("guarantee") or {}
            c = r.get("cumulative") or {}
            row = {
                "id": r.get("id"),
                "time": r.get("time"),
                "dataset": str(r.get("fingerprint", "")).removeprefix("dataset:"),
                "mechanism": r.get("mechanism"),
                "statistics": r.get("statistics"),
                "mu": g.get("mu"),
                "epsilon": g.get("epsilon"),
                "delta": g.get("delta"),
                "cumulative_mu": c.get("mu") if isinstance(c, dict) else None,
            }
            if steward:
                row["values"] = r.get("values")
            releases.append(row)
        out = {"secret": _secret_view(match[0], steward, self.scrub), "releases": releases}
        if steward:
            out["events"] = shown.get("events", [])
        return out

    def events(self, p: Principal) -> list[dict[str, Any]]:
        self.require(p, "steward")
        return self.store.events()

    def users(self, p: Principal) -> list[dict[str, Any]]:
        self.require(p, "steward")
        return self.store.users()

    def verify_audit(self, p: Principal) -> dict[str, Any]:
        """The whole audit log and the analysts' releases verified now (their chains and this
        host's anchor): ``ok`` and the counts, else a 503 naming the first row that fails."""
        self.require(p, "steward")
        try:
            return self.store.verify()
        except ChainError as e:
            raise ServiceError(503, str(e)) from None

    def audit_state(self, p: Principal) -> dict[str, Any]:
        """What this process has verified of the audit log (cheap: for the dashboard)."""
        self.require(p, "steward")
        try:
            return self.store.audit_state()
        except ChainError as e:
            raise ServiceError(503, str(e)) from None

    def pending(self, p: Principal) -> list[dict[str, Any]]:
        self.require(p, "steward")
        return [
            {k: v for k, v in r.items() if k not in ("file", "plan", "verified")}
            for r in self.store.pending()
        ]


def _secret_view(s: Mapping[str, Any], steward: bool, scrub: Any) -> dict[str, Any]:
    """A secret as the pages and the API show it, with the figures of its budget gauge."""
    budget = s.get("budget") or {}
    kind = budget.get("kind") if isinstance(budget, Mapping) else None
    spent, limit, unit = None, None, ""
    if kind == "mu" or (isinstance(budget, Mapping) and budget.get("mu") is not None):
        spent, limit, unit = s.get("mu"), budget.get("mu"), "μ"
    elif isinstance(budget, Mapping) and budget.get("epsilon") is not None:
        spent, limit, unit = s.get("epsilon"), budget.get("epsilon"), "ε"
    out = {
        "name": s.get("secret"),
        "property": s.get("property"),
        "budget": s.get("budget_text") or str(budget),
        "releases": s.get("releases", 0),
        "mu": s.get("mu"),
        "epsilon": s.get("epsilon"),
        "at_delta": s.get("at_delta"),
        "max_attack_accuracy": s.get("max_attack_accuracy"),
        "within_budget": s.get("within_budget"),
        "gauge": {"unit": unit, "spent": spent or 0.0, "limit": limit},
    }
    if steward:
        pop = s.get("population") or {}
        out["population"] = scrub(str(pop.get("path", ""))) if isinstance(pop, Mapping) else ""
    return out


def _target_text(target: Any) -> str:
    """A budget in words (the target's own ``describe``, when it has one)."""
    describe = getattr(target, "describe", None)
    return str(describe()) if callable(describe) else str(target)


def _history(releases: list[Any], secret: dict[str, Any]) -> dict[str, Any]:
    """The cumulative figure of a secret's gauge after each of its releases, as the points of
    a small server-drawn SVG chart (300 × 80, the budget the top line)."""
    unit = secret["gauge"]["unit"]
    field = {"μ": "mu", "ε": "epsilon"}.get(unit)
    limit = secret["gauge"]["limit"]
    values = []
    for r in releases:
        c = r.get("cumulative") if isinstance(r, Mapping) else None
        if r.get("property") == f"secret:{secret['name']}" and isinstance(c, Mapping) and field:
            v = c.get(field)
            if isinstance(v, int | float) and math.isfinite(v):
                values.append(float(v))
    if not values or not limit:
        return {"values": values, "points": "", "label": ""}
    top = max(float(limit), *values) * 1.05
    n = len(values)
    xs = [10 + 280 * (i + 1) / n for i in range(n)]
    points = " ".join(f"{x:.1f},{75 - 65 * v / top:.1f}" for x, v in zip(xs, values, strict=True))
    label = (
        f"cumulative {unit} after each of {n} release(s): "
        + ", ".join(f"{v:.4g}" for v in values)
        + f"; budget {float(limit):.4g}"
    )
    return {
        "values": values,
        "points": f"10,75 {points}",
        "label": label,
        "budget_y": f"{75 - 65 * float(limit) / top:.1f}",
    }
