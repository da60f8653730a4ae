"""Names the commands' options show before any library module is imported, so that ``--help``
loads no pandas, SciPy or mechanism. The mechanisms come from :mod:`distprivacy.registry` (the
registry's own order and its plug-ins' entry points); the others are copies of a live registry
or default, and ``tests/test_cli_help_imports.py`` checks every copy against its original."""

from __future__ import annotations

from distprivacy.registry import mechanism_names

#: :data:`distprivacy.mechanisms.MECHANISMS`, in order: the built-ins and each plug-in's
#: entry-point name, read from :mod:`distprivacy.registry` (no mechanism is imported).
MECHANISM_NAMES: tuple[str, ...] = mechanism_names()

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
