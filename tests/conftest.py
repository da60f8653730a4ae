"""Shared fixtures: the Adult files, found by :func:`public_data.adult_dir` (beside the clone,
``$DISTPRIVACY_DATA``, the library's cache, else the library's own fetch into it); tests that
read them skip, naming the command that fetches them, when none works.

A real PostgreSQL server (:mod:`postgres_server`): ``postgres_server``, its base URL, once per
test process (``$DISTPRIVACY_TEST_POSTGRES``, else one started from Debian's binaries; skips
naming what to install without either or without psycopg); ``postgres_url``, a fresh empty
database on it for each test, dropped after."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import postgres_server as pg
import public_data
import pytest


@pytest.fixture(scope="session")
def adult_dir() -> Path:
    return public_data.adult_dir_or_skip()


@pytest.fixture(scope="session")
def adult(adult_dir):
    from distprivacy.datasets import load_adult

    return load_adult(adult_dir)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The base URL of a real PostgreSQL server where tests may create databases."""
    with pg.server_or_skip() as url:
        yield url


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """``postgresql://USER@HOST:PORT/dp_test_<hex>``: a fresh empty database, dropped after."""
    with pg.fresh_database(postgres_server) as url:
        yield url
