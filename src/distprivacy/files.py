"""Reading the user's JSON and TOML files (models, problems, networks): one place for the
checks and their one-line errors."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from distprivacy.exceptions import DistPrivacyError


def read_mapping_file(path: str | Path, what: str) -> dict[str, Any]:
    """The object / table held by a ``.json`` or ``.toml`` file.

    Parameters
    ----------
    path : str or Path
        The file; its suffix chooses the parser.
    what : str
        What the file is, for the error messages (e.g. ``"model file"``).

    Raises
    ------
    DistPrivacyError
        The file is missing, has another suffix, does not parse, or does not hold an object.
    """
    p = Path(path)
    if not p.is_file():
        raise DistPrivacyError(f"{what} {str(p)!r} not found; give a JSON or TOML file")
    suffix = p.suffix.lower()
    if suffix not in (".json", ".toml"):
        raise DistPrivacyError(f"{what} {p.name!r} must end in .json or .toml")
    try:
        text = p.read_text()
        raw = tomllib.loads(text) if suffix == ".toml" else json.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        msg = str(e).splitlines()[0]
        raise DistPrivacyError(f"{what} {p.name!r} is not valid: {msg}") from None
    if not isinstance(raw, dict):
        raise DistPrivacyError(f"{what} {p.name!r} must hold an object / table")
    return raw
