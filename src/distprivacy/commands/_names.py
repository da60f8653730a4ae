"""Names the commands' options show before any library module is imported, so that ``--help``
loads no pandas, SciPy or mechanism. The mechanisms come from :mod:`distprivacy.registry` (the
registry's own order and its plug-ins' entry points); the others are copies of a live registry
or default, and ``tests/test_cli_help_imports.py`` checks every copy against its original."""

from __future__ import annotations

from typing import Any

from distprivacy.registry import mechanism_names

#: :data:`distprivacy.engines.ENGINES`, in order.
ENGINE_NAMES: tuple[str, ...] = ("auto", "pandas", "duckdb", "spark")

#: :data:`distprivacy.query.ADULT_DEFAULT_STATISTICS`.
ADULT_DEFAULT_STATISTICS = (
    "mean:age,mean:education_num,count:marital_status==Never-married,count:sex==Female,"
    "mean:hours_per_week"
)

#: :data:`distprivacy.mechanism_audit.ATTACKS` and
#: :data:`distprivacy.mechanism_audit.DEFAULT_ATTACKS`.
AUDIT_ATTACKS: tuple[str, ...] = ("likelihood-ratio", "logistic", "boosting", "knn")
DEFAULT_AUDIT_ATTACKS: tuple[str, ...] = ("likelihood-ratio", "logistic", "boosting")


def __getattr__(name: str) -> Any:
    """``MECHANISM_NAMES``: :data:`distprivacy.mechanisms.MECHANISMS`, in order — the built-ins
    and each plug-in's entry-point name, read from :mod:`distprivacy.registry` (no mechanism is
    imported). Computed when asked for: reading the installed packages' metadata costs
    ~30 ms, which the commands that import this module for other names do not pay."""
    if name == "MECHANISM_NAMES":
        return mechanism_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
