"""Shared fixtures: the Adult files in ../shared/data/adult (tests and CI may read them; the
library never does at run time)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _shared_adult_dir() -> Path | None:
    candidates = []
    if os.environ.get("DISTPRIVACY_SHARED"):
        candidates.append(Path(os.environ["DISTPRIVACY_SHARED"]) / "data" / "adult")
    candidates.append(ROOT.parent / "shared" / "data" / "adult")
    for c in candidates:
        if (c / "adult.data").is_file() and (c / "adult.test").is_file():
            return c
    return None


@pytest.fixture(scope="session")
def adult_dir() -> Path:
    d = _shared_adult_dir()
    if d is None:
        pytest.fail("../shared/data/adult not found beside the repository (set DISTPRIVACY_SHARED)")
    return d


@pytest.fixture(scope="session")
def adult(adult_dir):
    from distprivacy.datasets import load_adult

    return load_adult(adult_dir)
