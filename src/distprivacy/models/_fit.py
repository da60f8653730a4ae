"""Fitting a model of f_θ by name (:func:`fit_model`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from distprivacy.exceptions import DistPrivacyError
from distprivacy.models._base import Data, FModel, ProgressCallback
from distprivacy.models._exact import ExactModel
from distprivacy.models._monte_carlo import MonteCarloModel
from distprivacy.query import Query
from distprivacy.spec import ProtectionSpec

if TYPE_CHECKING:
    from distprivacy.engines import Engine


def fit_model(
    data: Data,
    spec: ProtectionSpec,
    query: Query,
    method: str = "auto",
    n_samples: int = 1000,
    random_state: int | np.random.Generator | None = None,
    progress: ProgressCallback | None = None,
    engine: str | Engine | None = None,
) -> FModel:
    """Fit a model of f_θ.

    Parameters
    ----------
    data : DataFrame, path, table name or Engine
        The records; a path (CSV/Parquet) is scanned by ``engine`` without loading it.
    method : {"auto", "exact", "monte-carlo"}
        ``"monte-carlo"``: the paper's estimator (Appendix C.1). ``"exact"``: exact moments, no
        samples (the Wasserstein mechanisms are then not applicable). ``"auto"``: exact moments
        when every statistic is linear plus ``n_samples`` Monte-Carlo samples for the
        sample-based mechanisms; Monte-Carlo otherwise.
    engine : {"auto", "pandas", "duckdb", "spark"}, Engine or None
        Where the aggregates are computed (:func:`distprivacy.engines.resolve_engine`; None or
        ``"auto"``: pandas for a DataFrame, DuckDB for a path).
    """
    if method == "exact":
        return ExactModel().fit(data, spec, query, engine=engine)
    if method == "monte-carlo":
        return MonteCarloModel(n_samples, random_state).fit(data, spec, query, progress, engine)
    if method == "auto":
        moments = "exact" if query.is_linear else "sample"
        return MonteCarloModel(n_samples, random_state, moments=moments).fit(
            data, spec, query, progress, engine
        )
    raise DistPrivacyError(f"unknown modelling method {method!r}; use auto, exact or monte-carlo")
