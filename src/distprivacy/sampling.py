"""Random size-n datasets as rows of index matrices, and F on each of them (vectorised)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

from distprivacy.checks import check_int
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


#: Drawn record indices per batch of subsets (32 MiB of int64): subsets are drawn and summed a
#: batch at a time, so memory does not grow with the number of subsets. A batch holds
#: ``max(1, BATCH_INDICES // n)`` subsets; it depends on n only, so that a seed draws the same
#: subsets on every machine and engine.
BATCH_INDICES = 1 << 22


def subset_batch_rows(n: int) -> int:
    """Subsets of n records per batch of :func:`draw_subsets`."""
    return max(1, BATCH_INDICES // max(int(n), 1))


def draw_subsets(
    n_pos: int, n_neg: int, k: int, n: int, size: int, random_state: RandomState = None
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``size`` random size-n datasets from θ (k of ``n_pos`` records with the property, n − k
    of ``n_neg`` without, all without replacement), a batch of
    :func:`subset_batch_rows` datasets at a time: pairs (rows of positions among the records
    with the property, rows of positions among those without). Every engine draws through
    here, so one seed gives the same datasets everywhere."""
    gen = check_random_state(random_state, secure=False)
    rows = subset_batch_rows(n)
    for a in range(0, size, rows):
        b = min(rows, size - a)
        yield (
            sample_without_replacement(n_pos, k, b, gen),
            sample_without_replacement(n_neg, n - k, b, gen),
        )


def sample_statistics_bytes(size: int, n: int, m: int) -> float:
    """Peak bytes of :func:`sample_statistics`: one batch's index matrices (the two groups'
    draws, their concatenation and the rejection step's sorted copy, ≈ 3n int64 per dataset)
    and F (m floats per dataset).

    Parameters
    ----------
    size : int
        The number of datasets drawn in one batch.
    n : int
        The records per dataset.
    m : int
        The number of statistics.

    Returns
    -------
    float
        The estimated peak bytes.
    """
    return 8.0 * (3.0 * n * min(size, subset_batch_rows(n)) + size * m)


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

    Batches of :func:`draw_subsets`: per batch one index matrix, one gather, one reduction
    (:meth:`Query.evaluate_batch`).

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
    out = np.empty((size, query.dim))
    a = 0
    for ia, ib in draw_subsets(len(positives), len(negatives), k, n, size, gen):
        index = np.concatenate([positives[ia], negatives[ib]], axis=1)
        out[a : a + len(ia)] = query.evaluate_batch(data, index)
        a += len(ia)
    if size == 0:
        query.evaluate_batch(data, np.empty((0, n), dtype=np.int64))
    return out
