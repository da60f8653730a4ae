"""Exact moments of linear statistics under sampling without replacement (:class:`ExactModel`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from distprivacy.exceptions import DistPrivacyError
from distprivacy.fingerprint import query_columns, source_fingerprint
from distprivacy.models._base import Data, FModel, _on_engine, check_fit_inputs
from distprivacy.query import Query
from distprivacy.spec import ProtectionSpec

if TYPE_CHECKING:
    from distprivacy.engines import Engine


class ExactModel(FModel):
    """Exact mean and covariance of linear statistics (no sampling).

    Under θ_p the dataset is a simple random sample without replacement of k = round(p·n) records
    from the N_A records satisfying the property and of n − k from the N_B others. For the
    per-record values g (rows of :meth:`Query.record_matrix`) and scale s, with population
    mean ḡ_G and population covariance C_G (divisor N_G) of group G:

    E[F] = s ⊙ (k ḡ_A + (n−k) ḡ_B),
    Cov[F] = (s sᵀ) ⊙ (k (N_A−k)/(N_A−1) C_A + (n−k) (N_B−(n−k))/(N_B−1) C_B).
    """

    def fit(
        self, data: Data, spec: ProtectionSpec, query: Query, engine: str | Engine | None = None
    ) -> ExactModel:
        """Compute the moments for every θ of ``spec`` (one pass over the data; on an
        ``engine`` other than pandas, its per-stratum moments, see :mod:`distprivacy.engines`)."""
        check_fit_inputs(spec, query)
        if not query.is_linear:
            raise DistPrivacyError(
                "exact moments need linear statistics (mean, sum, count, proportion); use the "
                "Monte-Carlo model for other statistics"
            )
        eng = _on_engine(data, engine)
        s = query.scales(spec.n)
        parts = [(x.count, x.mean, x.scatter / x.count) for x in eng.strata_moments(spec, query)]
        means, covs = [], []
        for k in spec.counts:
            mean = np.zeros(query.dim)
            cov = np.zeros((query.dim, query.dim))
            for (N, mu, C), take in zip(parts, (k, spec.n - k), strict=True):
                mean += take * mu
                if N > 1:
                    cov += take * (N - take) / (N - 1) * C
            means.append(s * mean)
            covs.append(np.outer(s, s) * cov)
        self.thetas_ = spec.values
        self.means_ = np.array(means)
        self.covariances_ = np.array(covs)
        self.pair_indices_ = spec.pair_indices
        self.statistic_names_ = query.names
        self.samples_ = None
        self.record_sensitivities_ = eng.record_sensitivities(spec, query)
        self.n_ = spec.n
        self.query_, self.spec_ = query, spec
        # In memory only: a file an engine streams is fingerprinted when a plan is saved.
        held = getattr(eng, "data", None)
        self.data_fingerprint_ = source_fingerprint(held, query_columns(query, spec))
        self.method_ = "exact"
        self.check_finite("exact moments")
        return self
