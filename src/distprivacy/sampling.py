"""Random size-n datasets as rows of index matrices, and F on each of them (vectorised)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from distprivacy.accounting import check_int
from distprivacy.exceptions import DistPrivacyError
from distprivacy.query import Query
from distprivacy.randomness import RandomState, check_random_state
from distprivacy.resources import check_memory


def sample_without_replacement(
    population: int, k: int, size: int, random_state: RandomState = None
) -> np.ndarray:
    """``size`` independent uniformly random k-subsets of ``range(population)``, as rows.

    Uses rejection of ordered draws with repeats (exactly uniform) when repeats are rare, and
    random-key partial sorting otherwise; both fully vectorised.

    Parameters
    ----------
    population, k, size : int
        Draw ``size`` subsets of k distinct elements of ``range(population)``.
    random_state : None, int or Generator
        Seed or generator (a simulation: None is fresh OS entropy, see
        :func:`distprivacy.randomness.check_random_state`).

    Returns
    -------
    ndarray of int64, shape (size, k)
    """
    gen = check_random_state(random_state, secure=False)
    if not 0 <= k <= population:
        raise DistPrivacyError(f"cannot draw {k} distinct records from {population}")
    if k == 0:
        return np.empty((size, 0), dtype=np.int64)
    if k * (k - 1) / (2 * population) < 0.5:
        out = gen.integers(0, population, size=(size, k))
        todo = np.arange(size)
        while todo.size:
            s = np.sort(out[todo], axis=1)
            bad = (s[:, 1:] == s[:, :-1]).any(axis=1)
            todo = todo[bad]
            if todo.size:
                out[todo] = gen.integers(0, population, size=(todo.size, k))
        return out
    out = np.empty((size, k), dtype=np.int64)
    rows = max(1, int(2e7 // population))
    for a in range(0, size, rows):
        keys = gen.random((min(rows, size - a), population))
        out[a : a + rows] = np.argpartition(keys, k - 1, axis=1)[:, :k]
    return out


def sample_statistics_bytes(size: int, n: int, m: int) -> float:
    """Peak bytes of :func:`sample_statistics`: the index matrices (the two groups' draws, their
    concatenation and the rejection step's sorted copy, ≈ 3n int64 per dataset) and F (m floats
    per dataset)."""
    return 8.0 * size * (3.0 * n + m)


def sample_statistics(
    data: pd.DataFrame,
    query: Query,
    positives: np.ndarray,
    negatives: np.ndarray,
    k: int,
    n: int,
    size: int,
    random_state: RandomState = None,
) -> np.ndarray:
    """F of ``size`` random datasets from θ: k records drawn without replacement from
    ``positives`` (row positions satisfying the property) and n − k from ``negatives``.

    One index matrix, one gather, one reduction (:meth:`Query.evaluate_batch`).

    Parameters
    ----------
    random_state : None, int or Generator
        Seed or generator of the subsets (a simulation: None is fresh OS entropy).

    Returns
    -------
    ndarray, shape (size, m)
    """
    size = check_int(size, "the number of samples", low=0)
    check_memory(
        sample_statistics_bytes(size, n, query.dim), f"{size} random datasets of {n} records"
    )
    gen = check_random_state(random_state, secure=False)
    ia = positives[sample_without_replacement(len(positives), k, size, gen)]
    ib = negatives[sample_without_replacement(len(negatives), n - k, size, gen)]
    return query.evaluate_batch(data, np.concatenate([ia, ib], axis=1))
