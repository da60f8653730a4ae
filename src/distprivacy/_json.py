"""The one way the library turns results into JSON (for files, plans and the command line).

Valid JSON always: NumPy scalars and arrays become Python numbers and lists, NaN becomes
``null`` and ±∞ the strings ``"inf"`` / ``"-inf"`` (so that a plan round-trips an infinite μ or
ε); :func:`number` reads them back.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from typing import Any


def jsonable(x: Any) -> Any:
    """Plain JSON data (see the module docstring)."""
    if hasattr(x, "to_dict") and not isinstance(x, type):
        return jsonable(x.to_dict())
    np = sys.modules.get("numpy")  # no NumPy object exists before NumPy is imported
    if np is not None and isinstance(x, np.ndarray):
        return jsonable(x.tolist())
    if isinstance(x, bool) or (np is not None and isinstance(x, np.bool_)):
        return bool(x)
    if np is not None and isinstance(x, np.integer):
        return int(x)
    if isinstance(x, float) or (np is not None and isinstance(x, np.floating)):
        v = float(x)
        if math.isnan(v):
            return None
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v
    if isinstance(x, Mapping):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple | set | frozenset):
        return [jsonable(v) for v in x]
    return x


def number(x: Any) -> Any:
    """Inverse of :func:`jsonable` for one number: ``"inf"``/``"-inf"`` → ±∞, None → NaN."""
    if x is None:
        return math.nan
    if x == "inf":
        return math.inf
    if x == "-inf":
        return -math.inf
    return x


def dumps_json(obj: Any, *, indent: int | None = 2, **kw: Any) -> str:
    """JSON text of ``obj`` (``allow_nan=False``: never the non-standard ``NaN``/``Infinity``);
    anything not plain data is written with ``str``."""
    kw.setdefault("default", str)
    return json.dumps(jsonable(obj), indent=indent, allow_nan=False, **kw)
