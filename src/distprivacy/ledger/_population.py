"""A secret's population: what a secret records of it (the verified Adult files, or a file's
or directory's fingerprint), reading it back unchanged, its property's canonical text, and the
refit of a union of statistics on it (see :mod:`distprivacy.ledger`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from distprivacy.ledger._entry import LedgerError, LedgerTypeError
from distprivacy.ledger._registry import source_fingerprint

if TYPE_CHECKING:
    import pandas as pd

#: The population named ``adult`` (and the one when none is given): the library's verified
#: UCI Adult files (:func:`distprivacy.datasets.load_adult`), whatever directory they are read
#: from.
ADULT = "adult"


def property_text(predicate: str) -> str:
    """The canonical text of a protected property: the predicate parsed and written back
    (``income == >50K`` and ``income==>50K`` are one property), never keyed by the values a
    file holds."""
    from distprivacy.spec import Predicate

    pred = Predicate.parse(str(predicate))
    return f"{pred.column}{pred.op}{pred.value}"


def population_record(population: str | Path | None) -> dict[str, Any]:
    """What a secret records of its population: ``adult`` (the verified UCI files), or a file
    or directory's resolved path and fingerprint (:func:`._registry.source_fingerprint`)."""
    from distprivacy.checks import check_path

    if population is None or (isinstance(population, str) and population == ADULT):
        return {"name": ADULT, "fingerprint": "adult-uci-sha256-verified"}
    p = check_path(population, "population", error=LedgerTypeError)
    assert p is not None
    if not p.exists():
        raise LedgerError(f"the population {str(p)!r} does not exist")
    p = p.resolve()
    return {"path": str(p), "fingerprint": source_fingerprint(p)}


def load_population(population: Mapping[str, Any]) -> pd.DataFrame:
    """The population a secret names, refused in one line when its files changed since the
    secret was declared."""
    from distprivacy.datasets import load_adult, load_data

    if population.get("name") == ADULT:
        return load_adult()
    path = Path(str(population["path"]))
    if not path.exists() or source_fingerprint(path) != population["fingerprint"]:
        raise LedgerError(
            f"the population {str(path)!r} changed (or is gone) since its secret was declared; "
            "restore it — plans are approved against the population as it was"
        )
    return load_data(path)


# -- secrets and budgets ----------------------------------------------------------------------


def population_refit(plan: Any, secret: Any) -> Any:
    """``fit(query_text)``: exact moments of a union of statistics on the secret's population
    (checked unchanged), under the plan's specification (every plan of a secret shares it)."""

    def fit(text: str) -> Any:
        from distprivacy.models import fit_model
        from distprivacy.query import Query
        from distprivacy.spec import ProtectionSpec

        spec = plan.spec or {}
        pairs = [tuple(p) for p in spec.get("pairs", [])] or None
        protection = ProtectionSpec(spec["property"], spec["n"], spec["values"], pairs=pairs)
        population = load_population(secret.population)
        return fit_model(population, protection, Query.parse(text), method="exact")

    return fit
