"""The pandas engine: a DataFrame in memory (the library's original path, unchanged results)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from distprivacy.engines._base import Engine, StratumMoments
from distprivacy.exceptions import DistPrivacyError
from distprivacy.query import Query
from distprivacy.randomness import RandomState, check_random_state
from distprivacy.spec import ProtectionSpec


class PandasEngine(Engine):
    """Computes the aggregates with NumPy on a DataFrame held in memory.

    Parameters
    ----------
    data : DataFrame
        The records (e.g. from :func:`distprivacy.datasets.load_data`).
    """

    name = "pandas"

    def __init__(self, data: pd.DataFrame) -> None:
        if not isinstance(data, pd.DataFrame):
            raise DistPrivacyError(f"the pandas engine needs a DataFrame, got {type(data)}")
        self.data = data

    @property
    def source(self) -> str:
        return "DataFrame"

    def validate(self, query: Query, spec: ProtectionSpec | None = None) -> None:
        query.validate(self.data)
        if spec is not None:
            spec.predicate.evaluate(self.data)

    def strata_moments(
        self, spec: ProtectionSpec, query: Query
    ) -> tuple[StratumMoments, StratumMoments]:
        pos, neg = spec.groups(self.data)
        G = query.record_matrix(self.data)
        out = []
        for idx in (pos, neg):
            g = G[idx]
            mu = g.mean(axis=0)
            c = g - mu
            out.append(StratumMoments(len(idx), mu, c.T @ c, g.min(axis=0), g.max(axis=0)))
        return out[0], out[1]

    def subset_statistics(
        self,
        spec: ProtectionSpec,
        query: Query,
        counts: Sequence[int],
        size: int,
        random_state: RandomState = None,
    ) -> list[np.ndarray]:
        from distprivacy.sampling import sample_statistics

        pos, neg = spec.groups(self.data)
        query.validate(self.data)
        gen = check_random_state(random_state, secure=False)
        return [sample_statistics(self.data, query, pos, neg, k, spec.n, size, gen) for k in counts]

    def random_subset_statistics(
        self, query: Query, n: int, random_state: RandomState = None
    ) -> np.ndarray:
        if n > len(self.data):
            raise DistPrivacyError(
                f"subset size n={n} is larger than the data ({len(self.data)} records); lower `n`"
            )
        gen = check_random_state(random_state, secure=False)
        rows = gen.choice(len(self.data), size=n, replace=False)
        return query.evaluate(self.data.iloc[rows])

    def record_sensitivities(self, spec: ProtectionSpec, query: Query) -> np.ndarray:
        return query.record_sensitivities(self.data, spec.n)
