"""Distribution transformers G: how the model trainer's data distribution is chosen (§2).

In the game of Suri & Evans (*Formalizing Distribution Inference Risks*, §2) the trainer picks
G_b ∈ {G0, G1}, samples a dataset from G_b(D) and trains a model on it. Here D is represented
by a pool of rows (the trainer's split of the data) and a transformer draws many datasets of
``n`` rows at once, as an ``(n_datasets, n)`` array of row positions.

* :class:`RatioTransformer` — Eq. 2: a binary property f (a predicate, e.g. ``sex==Female``)
  gets the adjusted prior p̂(f = 1) = α while the conditionals p(x | f = c) stay those of D.
  Datasets hold exactly ``round(α n)`` rows with the property (the authors' filter picks, among
  random subsamples, the one closest to α; we hit it exactly). With
  ``preserve_label_ratio=True`` (Appendix A.1: "ensuring that changing one of the ratios does
  not inadvertently change any other ratios") the share of positive labels is also held at the
  pool's (or a given) value: the rows are drawn from the four (property, label) strata with the
  joint q(f, y) nearest to D's (iterative proportional fitting of D's 2×2 table to the margins
  α and π, which keeps D's odds ratio between property and label), and uniformly within each
  stratum, so p(x | f, y) is D's.
* :class:`FunctionTransformer` — any user function of the pool returning a 0/1 mask, row
  positions or non-negative weights; datasets are weighted samples without replacement
  (Efraimidis–Spirakis keys, vectorised).
* :class:`IdentityTransformer` — G(D) = D (§2, "setting G0 to the identity function").

All sampling is vectorised over datasets (random keys and ``argpartition``), chunked so the keys
take at most :data:`KEY_BYTES` bytes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from distprivacy.exceptions import DistPrivacyError
from distprivacy.randomness import RandomState, check_random_state
from distprivacy.spec import Predicate, proportion_to_count

__all__ = [
    "KEY_BYTES",
    "DistributionTransformer",
    "FunctionTransformer",
    "IdentityTransformer",
    "RatioTransformer",
    "as_transformer",
    "fit_joint",
    "max_dataset_size",
    "stratum_counts",
]

#: Memory for the random keys of one block of datasets (bytes).
KEY_BYTES: int = 64 * 2**20


def _predicate(p: str | Predicate, what: str) -> Predicate:
    if isinstance(p, Predicate):
        return p
    if isinstance(p, str):
        return Predicate.parse(p)
    raise DistPrivacyError(
        f"{what} must be a predicate such as 'sex==Female' or a Predicate, got {type(p).__name__}"
    )


def _check_size(name: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
        raise DistPrivacyError(f"{name} must be a positive integer, got {v!r}")
    return int(v)


def _pool(data: pd.DataFrame, rows) -> np.ndarray:
    if not isinstance(data, pd.DataFrame):
        raise DistPrivacyError(f"data must be a pandas DataFrame, got {type(data).__name__}")
    if rows is None:
        return np.arange(len(data))
    rows = np.asarray(rows)
    if rows.ndim != 1 or (rows.size and not np.issubdtype(rows.dtype, np.integer)):
        raise DistPrivacyError("rows must be a 1-D array of integer row positions into data")
    if rows.size and (rows.min() < 0 or rows.max() >= len(data)):
        raise DistPrivacyError(f"rows must lie in [0, {len(data)}) (positions in data)")
    if np.unique(rows).size != rows.size:
        raise DistPrivacyError("rows has repeated positions; pass each row of the pool once")
    return rows


def _uniform_subsets(
    group: np.ndarray, k: int, n_datasets: int, gen: np.random.Generator
) -> np.ndarray:
    """``n_datasets`` independent uniform ``k``-subsets of ``group`` (without replacement)."""
    if k == 0:
        return np.empty((n_datasets, 0), dtype=np.int64)
    if k == group.size:  # every dataset takes the whole stratum
        return np.broadcast_to(group, (n_datasets, k)).copy()
    out = np.empty((n_datasets, k), dtype=np.int64)
    block = max(1, KEY_BYTES // (8 * group.size))
    for s in range(0, n_datasets, block):
        keys = gen.random((min(block, n_datasets - s), group.size))
        out[s : s + keys.shape[0]] = group[np.argpartition(keys, k - 1, axis=1)[:, :k]]
    return out


def _weighted_subsets(
    group: np.ndarray, weights: np.ndarray, k: int, n_datasets: int, gen: np.random.Generator
) -> np.ndarray:
    """Weighted samples without replacement: the ``k`` largest keys ``log(u) / w``
    (Efraimidis & Spirakis 2006); rows of weight 0 are never drawn."""
    keep = weights > 0
    group, w = group[keep], weights[keep]
    out = np.empty((n_datasets, k), dtype=np.int64)
    block = max(1, KEY_BYTES // (8 * group.size))
    for s in range(0, n_datasets, block):
        u = gen.random((min(block, n_datasets - s), group.size))
        keys = np.log1p(-u) / w  # log(1 − u) ~ log(U), finite since u < 1
        out[s : s + keys.shape[0]] = group[np.argpartition(-keys, k - 1, axis=1)[:, :k]]
    return out


class DistributionTransformer(ABC):
    """A distribution transformer G: draws datasets of ``n`` rows from G(pool)."""

    @abstractmethod
    def sample(
        self,
        data: pd.DataFrame,
        *,
        n: int,
        n_datasets: int,
        rows: np.ndarray | None = None,
        random_state: RandomState = None,
    ) -> np.ndarray:
        """``(n_datasets, n)`` row positions into ``data`` (restricted to ``rows`` if given):
        ``n_datasets`` independent datasets from G(pool), rows distinct within a dataset and
        in random order. ``random_state``: a seed, a generator, or None (fresh entropy;
        :func:`~distprivacy.randomness.check_random_state` with ``secure=False``)."""

    @abstractmethod
    def describe(self) -> dict:
        """JSON-serialisable description (for a population's ``meta``)."""


# ---------------------------------------------------------------------------------------------
# Ratio filters (Eq. 2)
# ---------------------------------------------------------------------------------------------


def fit_joint(table: np.ndarray, alpha: float, pi: float, *, iterations: int = 200) -> np.ndarray:
    """The 2×2 joint q(f, y) with margins q(f=1) = α, q(y=1) = π nearest to ``table``.

    Iterative proportional fitting (raking) of the pool's counts ``table[f, y]``: it converges to
    the distribution of least KL divergence from the pool's with those margins, which keeps the
    pool's odds ratio between f and y (Deming & Stephan 1940). Exact after one sweep when α or
    π is 0 or 1.

    Raises
    ------
    DistPrivacyError
        When no joint supported on the pool's non-empty cells has those margins.
    """
    q = np.asarray(table, dtype=np.float64)
    if q.shape != (2, 2) or np.any(q < 0) or q.sum() <= 0:
        raise DistPrivacyError("table must be a 2×2 array of non-negative counts")
    rows = np.array([1 - alpha, alpha])
    cols = np.array([1 - pi, pi])
    q = q / q.sum()
    for _ in range(iterations):
        with np.errstate(invalid="ignore", divide="ignore"):
            r = q.sum(axis=1)
            q = q * np.where(r > 0, rows / np.where(r > 0, r, 1), 0)[:, None]
            c = q.sum(axis=0)
            q = q * np.where(c > 0, cols / np.where(c > 0, c, 1), 0)[None, :]
        if np.allclose(q.sum(axis=1), rows, atol=1e-12, rtol=0):
            break
    if not (
        np.allclose(q.sum(axis=1), rows, atol=1e-9) and np.allclose(q.sum(axis=0), cols, atol=1e-9)
    ):
        raise DistPrivacyError(
            f"the pool cannot give property share {alpha} with label share {pi}: some "
            "(property, label) group it needs is empty; use preserve_label_ratio=False"
        )
    return q


def stratum_counts(n: int, alpha: float, pi: float | None, joint: np.ndarray | None) -> np.ndarray:
    """Integer rows per stratum of a dataset of ``n`` rows.

    Without labels (``pi`` None): ``[n − k, k]`` with ``k = round(α n)`` (half up). With labels:
    a 2×2 array ``[f, y]`` with exact margins ``round(α n)`` and ``round(π n)`` and the
    (f=1, y=1) cell ``round(q11 n)`` moved into its feasible range.
    """
    k = proportion_to_count(alpha, n)
    if pi is None:
        return np.array([n - k, k])
    pos = proportion_to_count(pi, n)
    lo, hi = max(0, k + pos - n), min(k, pos)
    n11 = int(min(max(round(float(joint[1, 1]) * n), lo), hi))
    return np.array([[n - k - pos + n11, pos - n11], [k - n11, n11]])


@dataclass(frozen=True)
class RatioTransformer(DistributionTransformer):
    """Eq. 2 of Suri & Evans: set the share of rows with a binary property to ``ratio``.

    Parameters
    ----------
    property
        The binary property f, a predicate such as ``"sex==Female"`` or ``"race==White"``.
    ratio
        α = p̂(f = 1) ∈ [0, 1]: each dataset holds exactly ``round(α n)`` rows with f.
    preserve_label_ratio
        Keep the share of positive labels fixed (Appendix A.1); needs ``label``.
    label
        The label predicate, e.g. ``"income==>50K"`` (required when preserving label ratios).
    label_ratio
        Share of positive labels to keep; ``None`` = the share in the pool sampled from.
    """

    property: str | Predicate
    ratio: float
    preserve_label_ratio: bool = True
    label: str | Predicate | None = None
    label_ratio: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "property", _predicate(self.property, "property"))
        r = self.ratio
        if isinstance(r, bool) or not isinstance(r, int | float | np.number) or not 0 <= r <= 1:
            raise DistPrivacyError(f"ratio must be a number in [0, 1], got {r!r}")
        object.__setattr__(self, "ratio", float(r))
        if self.preserve_label_ratio:
            if self.label is None:
                raise DistPrivacyError(
                    "preserve_label_ratio=True needs the label predicate, e.g. "
                    "label='income==>50K' (or pass preserve_label_ratio=False)"
                )
            object.__setattr__(self, "label", _predicate(self.label, "label"))
        elif self.label is not None:
            object.__setattr__(self, "label", _predicate(self.label, "label"))
        lr = self.label_ratio
        if lr is not None:
            if not self.preserve_label_ratio:
                raise DistPrivacyError("label_ratio only applies with preserve_label_ratio=True")
            if (
                isinstance(lr, bool)
                or not isinstance(lr, int | float | np.number)
                or not 0 <= lr <= 1
            ):
                raise DistPrivacyError(f"label_ratio must be a number in [0, 1], got {lr!r}")
            object.__setattr__(self, "label_ratio", float(lr))

    def describe(self) -> dict:
        return {
            "kind": "ratio",
            "property": str(self.property),
            "ratio": self.ratio,
            "preserve_label_ratio": self.preserve_label_ratio,
            "label": None if self.label is None else str(self.label),
            "label_ratio": self.label_ratio,
        }

    def plan(self, data: pd.DataFrame, *, n: int, rows: np.ndarray | None = None) -> dict:
        """The strata, their sizes in the pool and the rows each dataset takes from them."""
        n = _check_size("n", n)
        pool = _pool(data, rows)
        if pool.size == 0:
            raise DistPrivacyError("the pool of rows is empty; pass a non-empty split")
        sub = data.iloc[pool]
        f = self.property.evaluate(sub).astype(np.int64)
        if self.preserve_label_ratio:
            yv = self.label.evaluate(sub).astype(np.int64)
            cell = 2 * f + yv
            groups = [pool[cell == j] for j in range(4)]
            available = np.array([g.size for g in groups]).reshape(2, 2)
            pi = float(yv.mean()) if self.label_ratio is None else self.label_ratio
            joint = fit_joint(available, self.ratio, pi)
            counts = stratum_counts(n, self.ratio, pi, joint)
            names = [
                f"{'' if a else 'not '}{self.property} & {'' if b else 'not '}{self.label}"
                for a in (0, 1)
                for b in (0, 1)
            ]
        else:
            groups = [pool[f == 0], pool[f == 1]]
            available = np.array([g.size for g in groups])
            counts = stratum_counts(n, self.ratio, None, None)
            names = [f"not {self.property}", str(self.property)]
        flat_avail, flat_counts = available.ravel(), counts.ravel()
        for name, need, have in zip(names, flat_counts, flat_avail, strict=True):
            if need > have:
                raise DistPrivacyError(
                    f"ratio {self.ratio} of {self.property} with n={n} needs {need} rows "
                    f"({name}) but the pool has only {have}; lower n or choose another ratio"
                )
        return {"groups": groups, "available": available, "counts": counts, "names": names}

    def sample(
        self,
        data: pd.DataFrame,
        *,
        n: int,
        n_datasets: int,
        rows: np.ndarray | None = None,
        random_state: RandomState = None,
    ) -> np.ndarray:
        n_datasets = _check_size("n_datasets", n_datasets)
        plan = self.plan(data, n=n, rows=rows)
        gen = check_random_state(random_state, secure=False)
        parts = [
            _uniform_subsets(g, int(k), n_datasets, gen)
            for g, k in zip(plan["groups"], plan["counts"].ravel(), strict=True)
        ]
        out = np.concatenate(parts, axis=1)
        return gen.permuted(out, axis=1, out=out)  # rows in random order, not by stratum


# ---------------------------------------------------------------------------------------------
# Any user function; the identity
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FunctionTransformer(DistributionTransformer):
    """G(D) given by a user function of the pool.

    Parameters
    ----------
    func
        ``func(pool: DataFrame) -> array`` with one entry per pool row: a boolean mask (the
        transformed distribution is uniform on the selected rows) or non-negative weights
        (rows drawn with probability ∝ weight, without replacement within a dataset).
    name
        A label for ``meta`` (default: the function's name).
    """

    func: Callable[[pd.DataFrame], np.ndarray]
    name: str | None = None

    def __post_init__(self) -> None:
        if not callable(self.func):
            raise DistPrivacyError(
                f"a function transformer needs a callable, got {type(self.func).__name__}"
            )

    def describe(self) -> dict:
        return {"kind": "function", "name": self.name or getattr(self.func, "__name__", "func")}

    def weights(self, data: pd.DataFrame, *, rows: np.ndarray | None = None) -> np.ndarray:
        """The function's weights on the pool, validated (float64, one per pool row)."""
        pool = _pool(data, rows)
        w = np.asarray(self.func(data.iloc[pool]))
        if w.shape != (pool.size,):
            raise DistPrivacyError(
                f"the transformer function returned shape {w.shape}; it must return one weight "
                f"or mask entry per pool row ({pool.size},)"
            )
        if not (w.dtype == bool or np.issubdtype(w.dtype, np.number)):
            raise DistPrivacyError(
                f"the transformer function returned {w.dtype} values; "
                "return a boolean mask or numeric weights"
            )
        w = w.astype(np.float64)
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise DistPrivacyError(
                "the transformer function returned negative or non-finite weights"
            )
        return w

    def sample(
        self,
        data: pd.DataFrame,
        *,
        n: int,
        n_datasets: int,
        rows: np.ndarray | None = None,
        random_state: RandomState = None,
    ) -> np.ndarray:
        n, n_datasets = _check_size("n", n), _check_size("n_datasets", n_datasets)
        pool = _pool(data, rows)
        w = self.weights(data, rows=rows)
        support = int(np.count_nonzero(w))
        if support < n:
            raise DistPrivacyError(
                f"the transformer {self.describe()['name']!r} keeps {support} rows of the pool "
                f"but datasets need n={n}; lower n or widen the filter"
            )
        gen = check_random_state(random_state, secure=False)
        positive = w[w > 0]
        if np.all(positive == positive[0]):  # a filter: uniform on the kept rows
            out = _uniform_subsets(pool[w > 0], n, n_datasets, gen)
        else:
            out = _weighted_subsets(pool, w, n, n_datasets, gen)
        return gen.permuted(out, axis=1, out=out)


@dataclass(frozen=True)
class IdentityTransformer(DistributionTransformer):
    """G(D) = D: datasets of ``n`` rows drawn uniformly from the pool."""

    def describe(self) -> dict:
        return {"kind": "identity"}

    def sample(
        self,
        data: pd.DataFrame,
        *,
        n: int,
        n_datasets: int,
        rows: np.ndarray | None = None,
        random_state: RandomState = None,
    ) -> np.ndarray:
        n, n_datasets = _check_size("n", n), _check_size("n_datasets", n_datasets)
        pool = _pool(data, rows)
        if pool.size < n:
            raise DistPrivacyError(f"the pool has {pool.size} rows but datasets need n={n}")
        gen = check_random_state(random_state, secure=False)
        out = _uniform_subsets(pool, n, n_datasets, gen)
        return gen.permuted(out, axis=1, out=out)


def max_dataset_size(
    data: pd.DataFrame,
    transformers: DistributionTransformer | list[DistributionTransformer],
    *,
    rows: np.ndarray | None = None,
) -> int:
    """The largest ``n`` every one of ``transformers`` can draw datasets of from the pool.

    For ratio filters this is where some (property, label) stratum runs out of rows (e.g. women
    earning >50K at α = 1); found by bisection on the feasibility of :meth:`RatioTransformer.plan`.
    """
    ts = [transformers] if isinstance(transformers, DistributionTransformer) else list(transformers)
    pool = _pool(data, rows)

    def feasible(n: int) -> bool:
        for t in ts:
            try:
                if isinstance(t, RatioTransformer):
                    t.plan(data, n=n, rows=pool)
                elif isinstance(t, FunctionTransformer):
                    if np.count_nonzero(t.weights(data, rows=pool)) < n:
                        return False
                elif pool.size < n:
                    return False
            except DistPrivacyError:
                return False
        return True

    lo, hi = 0, int(pool.size)  # feasible(lo) holds trivially; find the largest feasible n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if feasible(mid):
            lo = mid
        else:
            hi = mid - 1
    if lo == 0:
        raise DistPrivacyError("no dataset size is feasible for these transformers on this pool")
    return lo


def as_transformer(obj) -> DistributionTransformer:
    """A transformer as is; a plain callable wrapped in :class:`FunctionTransformer`."""
    if isinstance(obj, DistributionTransformer):
        return obj
    if callable(obj):
        return FunctionTransformer(obj)
    raise DistPrivacyError(
        f"expected a distribution transformer or a function of the pool, got {type(obj).__name__}"
    )
