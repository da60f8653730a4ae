"""The sample-based model of f_θ (Chen & Ohrimenko 2023, Appendix C.1: :class:`MonteCarloModel`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from distprivacy.checks import check_callable, check_int, check_text
from distprivacy.fingerprint import query_columns, source_fingerprint
from distprivacy.models._base import (
    Data,
    FModel,
    ProgressCallback,
    _on_engine,
    check_fit_inputs,
)
from distprivacy.models._exact import ExactModel
from distprivacy.query import Query
from distprivacy.randomness import RandomState, check_random_state
from distprivacy.resources import check_memory
from distprivacy.sampling import (
    sample_statistics_bytes,
)
from distprivacy.spec import ProtectionSpec

if TYPE_CHECKING:
    from distprivacy.engines import Engine


class MonteCarloModel(FModel):
    """Sample-based model of f_θ (Chen & Ohrimenko 2023, Appendix C.1).

    Parameters
    ----------
    n_samples : int
        Subsets drawn per θ (the paper: 1000).
    random_state : None, int or Generator
        Seed for the subset sampling (reproducible bit for bit from a seed; None: fresh OS
        entropy, see :func:`distprivacy.randomness.check_random_state`).
    moments : {"sample", "exact"}
        Where μ_θ and Σ_θ come from: the samples (the paper's estimator, default) or the exact
        finite-population formulas (linear queries only), keeping the samples for the
        sample-based mechanisms (Wasserstein).
    """

    def __init__(
        self,
        n_samples: int = 1000,
        random_state: RandomState = None,
        moments: str = "sample",
    ) -> None:
        self.n_samples = check_int(n_samples, "n_samples", low=2)
        check_text(moments, "moments", choices=("sample", "exact"))
        self.random_state = random_state
        self.moments = moments

    def _fit_on_engine(
        self,
        eng: Engine,
        spec: ProtectionSpec,
        query: Query,
        gen: np.random.Generator,
        progress: ProgressCallback | None,
    ) -> MonteCarloModel:
        """:meth:`fit` on an engine of :mod:`distprivacy.engines` (pandas included): the
        engine draws the subsets and, for ``moments="exact"``, computes the moments."""
        samples = eng.subset_statistics(spec, query, spec.counts, self.n_samples, gen)
        if progress is not None:
            progress(len(spec.counts), len(spec.counts))
        self.samples_ = samples
        if self.moments == "exact":
            ex = ExactModel().fit(eng, spec, query)
            self.means_, self.covariances_ = ex.means_, ex.covariances_
        else:
            m = query.dim
            self.means_ = np.array([x.mean(axis=0) for x in samples])
            self.covariances_ = np.array(
                [np.cov(x, rowvar=False, ddof=1).reshape(m, m) for x in samples]
            )
        self.thetas_ = spec.values
        self.pair_indices_ = spec.pair_indices
        self.statistic_names_ = query.names
        self.record_sensitivities_ = eng.record_sensitivities(spec, query)
        self.n_ = spec.n
        self.query_, self.spec_ = query, spec
        self.method_ = "monte-carlo" if self.moments == "sample" else "monte-carlo+exact"
        self.check_finite("Monte-Carlo model")
        return self

    def fit(
        self,
        data: Data,
        spec: ProtectionSpec,
        query: Query,
        progress: ProgressCallback | None = None,
        engine: str | Engine | None = None,
    ) -> MonteCarloModel:
        """Draw ``n_samples`` subsets per θ and compute F on each (vectorised; on an ``engine``
        pandas included, by the engine, see :mod:`distprivacy.engines`)."""
        check_fit_inputs(spec, query)
        check_callable(progress, "progress", "a function progress(done, total)", optional=True)
        gen = check_random_state(self.random_state, secure=False)
        eng = _on_engine(data, engine)
        T, R = len(spec.counts), self.n_samples
        check_memory(
            sample_statistics_bytes(R, spec.n, query.dim) + 8.0 * T * R * query.dim,
            f"{R} Monte-Carlo samples per θ of datasets of {spec.n} records ({T} values of θ)",
        )
        model = self._fit_on_engine(eng, spec, query, gen, progress)
        held = getattr(eng, "data", None)
        model.data_fingerprint_ = source_fingerprint(held, query_columns(query, spec))
        return model
