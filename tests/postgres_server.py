"""A real PostgreSQL server for the tests of the PostgreSQL ledger and service (never a mock).

:func:`server_or_skip` (conftest's session fixture ``postgres_server``) gives the base URL of a
server where the tests may create databases, the first of:

1. ``$DISTPRIVACY_TEST_POSTGRES`` (:data:`ENV_VAR`), a libpq URL the user names; it must answer
   (a named server that does not is an error, not a skip);
2. a server of our own, started from Debian's binaries (``/usr/lib/postgresql/N/bin``, the
   newest N): ``initdb`` into a fresh temporary directory, trust authentication, listening on a
   free port of 127.0.0.1 only (its Unix socket inside that directory too), stopped
   (``pg_ctl stop -m fast``) and removed at the end of the session. ``initdb`` and ``postgres``
   refuse to run as root: as root they run as the ``postgres`` user, who owns the directory.
   Under pytest-xdist every worker that needs one starts its own (a port taken between picking
   and binding is retried with another);
3. else the tests skip, naming what to install (:data:`INSTALL_SERVER`).

Without the driver ``psycopg`` (version 3) they skip naming the extra (:data:`INSTALL_DRIVER`).

:func:`fresh_database` (the function fixture ``postgres_url``) creates an empty database with a
random name (``dp_test_<hex>``) on that server, yields its URL and drops it after, closing the
connections left on it (``DROP DATABASE … WITH (FORCE)``).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import secrets
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

#: A server the user names (a libpq URL where the tests may create and drop databases).
ENV_VAR = "DISTPRIVACY_TEST_POSTGRES"
#: Where Debian's ``postgresql-N`` packages put their binaries (``N/bin/initdb``).
DEBIAN_ROOT = Path("/usr/lib/postgresql")
#: The skip reason without a server.
INSTALL_SERVER = (
    "PostgreSQL tests need a server: apt-get install postgresql (Debian), "
    f"or set {ENV_VAR}=postgresql://USER@HOST:PORT/postgres"
)
#: The skip reason without the driver.
INSTALL_DRIVER = "PostgreSQL tests need the driver psycopg 3: pip install 'distprivacy[postgres]'"
#: The superuser of the servers we start (trust authentication: no password).
SUPERUSER = "postgres"
#: Seconds to wait for a started server to accept connections.
START_TIMEOUT = 30.0
#: Ports tried before giving up (another process may bind the free port we picked first).
PORT_ATTEMPTS = 5


class PostgresUnavailableError(Exception):
    """No ``psycopg`` 3, or no server and no binaries to start one: the tests skip with this
    message."""


def require_driver() -> None:
    """Raise :class:`PostgresUnavailableError` (:data:`INSTALL_DRIVER`) without ``psycopg`` 3."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise PostgresUnavailableError(INSTALL_DRIVER) from None


def find_binaries(root: Path | None = None) -> Path | None:
    """The ``bin`` directory of the newest ``root/N`` (default :data:`DEBIAN_ROOT`) holding
    ``initdb``, ``pg_ctl`` and ``postgres`` (None when there is none)."""

    def version(d: Path) -> tuple[int, ...]:
        return tuple(int(p) for p in re.findall(r"\d+", d.parent.name)) or (0,)

    found = [
        d
        for d in (DEBIAN_ROOT if root is None else root).glob("*/bin")
        if (d / "initdb").is_file() and (d / "pg_ctl").is_file() and (d / "postgres").is_file()
    ]
    return max(found, key=version) if found else None


def free_port() -> int:
    """A TCP port of 127.0.0.1 that was free a moment ago (bind it soon, retry when taken)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def with_database(url: str, name: str) -> str:
    """``url`` naming database ``name`` instead of its own (user, host, port, options kept)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + name))


def check_server(url: str, timeout: float = 10.0) -> str:
    """The server's ``version()``; raises ``psycopg.OperationalError`` when it does not answer."""
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=max(1, int(timeout))) as conn:
        row = conn.execute("SELECT version()").fetchone()
    return str(row[0]) if row else ""


class LocalServer:
    """A PostgreSQL server of our own in a temporary directory (see the module's docstring).

    Parameters
    ----------
    bindir
        The directory holding ``initdb``, ``pg_ctl`` and ``postgres`` (:func:`find_binaries`).
    """

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.root: Path | None = None
        self.port: int | None = None
        self.start_seconds: float | None = None
        self._owner: pwd.struct_passwd | None = None

    @property
    def data(self) -> Path:
        assert self.root is not None
        return self.root / "data"

    @property
    def log(self) -> Path:
        assert self.root is not None
        return self.root / "server.log"

    @property
    def url(self) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"

    def _command(self, *args: str) -> list[str]:
        """``args`` as the server's owner: as root, run by the ``postgres`` user."""
        if self._owner is None:
            return list(args)
        if shutil.which("runuser"):
            return ["runuser", "-u", self._owner.pw_name, "--", *args]
        return ["su", self._owner.pw_name, "-s", "/bin/sh", "-c", shlex.join(args)]

    def _run(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self._command(*args),
            cwd=self.root,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def _log_tail(self, lines: int = 5) -> str:
        try:
            text = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no server log)"
        return " | ".join(text[-lines:])

    def start(self) -> str:
        """initdb, start, wait until it accepts connections; its base URL.

        Raises
        ------
        RuntimeError
            initdb or the start failed, or the server did not accept connections within
            :data:`START_TIMEOUT` seconds (the message quotes the server's log).
        """
        began = time.monotonic()
        if os.geteuid() == 0:
            try:
                self._owner = pwd.getpwnam("postgres")
            except KeyError:
                raise RuntimeError(
                    "PostgreSQL refuses to run as root and there is no 'postgres' user to run "
                    "it as: apt-get install postgresql creates one, or run the tests as another "
                    "user"
                ) from None
        self.root = Path(tempfile.mkdtemp(prefix="dp-pg-"))
        if self._owner is not None:
            os.chown(self.root, self._owner.pw_uid, self._owner.pw_gid)
        done = self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            SUPERUSER,
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",  # the data directory is thrown away; the server itself runs with fsync
        )
        if done.returncode != 0:
            err = (done.stderr or done.stdout).strip().splitlines()
            raise RuntimeError(
                f"initdb ({self.bindir}) failed: {' | '.join(err[-3:])}; check that "
                f"{self.root} is writable by the server's user"
            )
        for _ in range(PORT_ATTEMPTS):
            self.port = free_port()
            options = shlex.join(
                [
                    "-p",
                    str(self.port),
                    "-c",
                    "listen_addresses=127.0.0.1",
                    "-c",
                    f"unix_socket_directories={self.root}",
                    "-c",
                    "fsync=on",
                ]
            )
            self.log.unlink(missing_ok=True)
            done = self._run(
                str(self.bindir / "pg_ctl"),
                "start",
                "-w",
                "-t",
                str(int(START_TIMEOUT)),
                "-D",
                str(self.data),
                "-l",
                str(self.log),
                "-o",
                options,
                timeout=START_TIMEOUT + 10,
            )
            if done.returncode == 0:
                break
            if "already in use" not in self._log_tail(20):
                raise RuntimeError(
                    f"PostgreSQL ({self.bindir}) did not start on 127.0.0.1:{self.port}: "
                    f"{self._log_tail()}"
                )
        else:
            raise RuntimeError(
                f"PostgreSQL found no free port in {PORT_ATTEMPTS} attempts: {self._log_tail()}"
            )
        self._wait_ready(began + START_TIMEOUT)
        self.start_seconds = time.monotonic() - began
        return self.url

    def _wait_ready(self, deadline: float) -> None:
        """Connect until the server answers or ``deadline`` (``time.monotonic``) passes."""
        import psycopg

        while True:
            try:
                check_server(self.url, timeout=2)
                return
            except psycopg.OperationalError as exc:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"PostgreSQL on 127.0.0.1:{self.port} did not accept connections in "
                        f"{START_TIMEOUT:.0f} s: {exc}; server log: {self._log_tail()}"
                    ) from None
                time.sleep(0.1)

    def stop(self) -> None:
        """Stop the server (``pg_ctl stop -m fast``) and remove its directory."""
        if self.root is None:
            return
        try:
            if (self.data / "postmaster.pid").exists():
                self._run(str(self.bindir / "pg_ctl"), "stop", "-m", "fast", "-D", str(self.data))
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None


def locate(env: Mapping[str, str] | None = None, debian_root: Path | None = None) -> str | Path:
    """Where the server comes from: the URL of ``$DISTPRIVACY_TEST_POSTGRES`` (in ``env``,
    default ``os.environ``), else the newest ``bin`` directory of ``debian_root``.

    Raises
    ------
    PostgresUnavailableError
        No ``psycopg`` 3 (:data:`INSTALL_DRIVER`), or neither a named server nor binaries
        (:data:`INSTALL_SERVER`): the skip reasons.
    """
    require_driver()
    named = (os.environ if env is None else env).get(ENV_VAR, "").strip()
    if named:
        return named
    bindir = find_binaries(debian_root)
    if bindir is None:
        raise PostgresUnavailableError(INSTALL_SERVER)
    return bindir


@contextlib.contextmanager
def server(source: str | Path) -> Iterator[str]:
    """The base URL of the server of ``source`` (:func:`locate`): a named URL once it answers,
    else one of our own from the binaries in ``source``, stopped and removed on exit.

    Raises
    ------
    RuntimeError
        The named server does not answer, or ours did not start (an error, not a skip: fail
        closed).
    """
    import psycopg

    if isinstance(source, str):
        if urlsplit(source).scheme not in ("postgresql", "postgres"):
            raise RuntimeError(
                f"{ENV_VAR} must be a URL, postgresql://USER@HOST:PORT/DATABASE (the tests "
                "name their databases in it), not key=value settings"
            )
        try:
            check_server(source)
        except psycopg.OperationalError as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise RuntimeError(
                f"{ENV_VAR} names a server that does not answer ({first}): start it, or unset "
                f"{ENV_VAR} to let the tests start their own"
            ) from None
        yield source
        return
    local = LocalServer(source)
    try:
        yield local.start()
    finally:
        local.stop()


def server_or_skip(
    env: Mapping[str, str] | None = None, debian_root: Path | None = None
) -> contextlib.AbstractContextManager[str]:
    """:func:`server` of :func:`locate` for the tests (conftest's ``postgres_server``): skips
    the test, with the one-line reason, when there is no driver or no server."""
    import pytest

    try:
        source = locate(env, debian_root)
    except PostgresUnavailableError as exc:
        pytest.skip(str(exc))
    return server(source)


@contextlib.contextmanager
def fresh_database(base_url: str) -> Iterator[str]:
    """A new empty database ``dp_test_<hex>`` on the server of ``base_url``: its URL, dropped
    on exit (``WITH (FORCE)``: connections left on it are closed first)."""
    import psycopg
    from psycopg import sql

    name = f"dp_test_{secrets.token_hex(6)}"
    with psycopg.connect(base_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield with_database(base_url, name)
    finally:
        with psycopg.connect(base_url, autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
