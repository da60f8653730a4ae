"""Fitting a model of f_θ by name (:func:`fit_model`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from distprivacy.checks import check_text
from distprivacy.models._base import Data, FModel, ProgressCallback, check_fit_inputs
from distprivacy.models._exact import ExactModel
from distprivacy.models._monte_carlo import MonteCarloModel
from distprivacy.query import Query
from distprivacy.randomness import RandomState
from distprivacy.spec import ProtectionSpec

if TYPE_CHECKING:
    from distprivacy.engines import Engine


def fit_model(
    data: Data,
    spec: ProtectionSpec,
    query: Query,
    method: str = "auto",
    n_samples: int = 1000,
    random_state: RandomState = None,
    progress: ProgressCallback | None = None,
    engine: str | Engine | None = None,
) -> FModel:
    """Fit a model of f_θ (recording the ``query`` and ``spec`` as ``query_`` and ``spec_``).

    Parameters
    ----------
    data : DataFrame, path, table name or Engine
        The records; a path (CSV/Parquet) is scanned by ``engine`` without loading it.
    method : {"auto", "exact", "monte-carlo"}
        ``"monte-carlo"``: the paper's estimator (Appendix C.1). ``"exact"``: exact moments, no
        samples (the Wasserstein mechanisms are then not applicable). ``"auto"``: exact moments
        when every statistic is linear plus ``n_samples`` Monte-Carlo samples for the
        sample-based mechanisms; Monte-Carlo otherwise.
    n_samples : int
        Monte-Carlo datasets drawn per θ.
    random_state : None, int or Generator
        Seed of the Monte-Carlo subsets (reproducible bit for bit from a seed; None: fresh OS
        entropy, see :func:`distprivacy.randomness.check_random_state`).
    progress : callable (done, total), optional
        Called after each θ's samples.
    engine : {"auto", "pandas", "duckdb", "spark"}, Engine or None
        Where the aggregates are computed (:func:`distprivacy.engines.resolve_engine`; None or
        ``"auto"``: pandas for a DataFrame, DuckDB for a path).

    Returns
    -------
    FModel
        The fitted model (an ``ExactModel`` or a ``MonteCarloModel``): per-θ means and
        covariances of the statistics, and samples where the method draws them.
    """
    check_fit_inputs(spec, query)
    check_text(method, "modelling method", choices=("auto", "exact", "monte-carlo"))
    if method == "exact":
        return ExactModel().fit(data, spec, query, engine=engine)
    if method == "monte-carlo":
        return MonteCarloModel(n_samples, random_state).fit(data, spec, query, progress, engine)
    moments = "exact" if query.is_linear else "sample"
    return MonteCarloModel(n_samples, random_state, moments=moments).fit(
        data, spec, query, progress, engine
    )
