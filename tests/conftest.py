"""Shared fixtures: the Adult files, found by :func:`public_data.adult_dir` (beside the clone,
``$DISTPRIVACY_DATA``, the library's cache, else the library's own fetch into it); tests that
read them skip, naming the command that fetches them, when none works."""

from __future__ import annotations

from pathlib import Path

import public_data
import pytest


@pytest.fixture(scope="session")
def adult_dir() -> Path:
    return public_data.adult_dir_or_skip()


@pytest.fixture(scope="session")
def adult(adult_dir):
    from distprivacy.datasets import load_adult

    return load_adult(adult_dir)
