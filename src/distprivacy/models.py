"""Models of f_θ, the distribution of F(Data) when Data ~ θ.

Three ways to obtain the per-θ mean vectors μ_θ and covariance matrices Σ_θ the mechanisms need:

* :class:`MonteCarloModel` — Chen & Ohrimenko (2023), Appendix C.1: sample many size-n subsets
  with the property fixed, compute F on each, take the sample mean and covariance. Vectorised:
  subsets are rows of index matrices, F is a gather and a reduction.
* :class:`ExactModel` — for linear statistics (means, sums, counts), the exact mean and covariance
  under simple random sampling without replacement inside each property group (the
  finite-population formulas), from one pass over the data.
* :class:`GaussianModel` — user-supplied (the paper's "domain expert", §2.2): per θ a mean vector,
  a covariance matrix and optionally samples; loadable from JSON or TOML with
  :func:`load_model_file`.

All fitted models expose ``thetas_``, ``means_`` (T, m), ``covariances_`` (T, m, m),
``pair_indices_``, ``statistic_names_``, ``samples_`` (list of (R, m) arrays, or None) and
``record_sensitivities_`` (m,) or None.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from distprivacy.accounting import check_int
from distprivacy.exceptions import DistPrivacyError, NotApplicableError
from distprivacy.files import (
    Array,
    Field,
    Int,
    InvalidFileError,
    Label,
    ListOf,
    Pair,
    Str,
    Table,
    read_mapping_file,
)
from distprivacy.query import Query
from distprivacy.randomness import check_random_state
from distprivacy.resources import check_memory
from distprivacy.spec import ProtectionSpec

if TYPE_CHECKING:
    from distprivacy.engines import Engine

ProgressCallback = Callable[[int, int], None]
#: The records: a DataFrame (in memory), a path or table name (scanned by an engine), or an engine.
Data = Any  # pd.DataFrame | str | Path | Engine


def _on_engine(data: Data, engine: str | Engine | None) -> tuple[pd.DataFrame, Engine | None]:
    """``(DataFrame, None)`` for the in-memory path, or ``(None, engine)`` when an engine of
    :mod:`distprivacy.engines` computes the aggregates (``engine=None``: pandas for a
    DataFrame, DuckDB for a path)."""
    if engine is None and isinstance(data, pd.DataFrame):
        return data, None
    from distprivacy.engines import resolve_engine

    eng = resolve_engine(engine, data)
    return (eng.data, None) if eng.name == "pandas" else (None, eng)  # type: ignore[attr-defined]


def sample_without_replacement(
    population: int, k: int, size: int, rng: np.random.Generator
) -> np.ndarray:
    """``size`` independent uniformly random k-subsets of ``range(population)``, as rows.

    Uses rejection of ordered draws with repeats (exactly uniform) when repeats are rare, and
    random-key partial sorting otherwise; both fully vectorised.

    Returns
    -------
    ndarray of int64, shape (size, k)
    """
    if not 0 <= k <= population:
        raise DistPrivacyError(f"cannot draw {k} distinct records from {population}")
    if k == 0:
        return np.empty((size, 0), dtype=np.int64)
    if k * (k - 1) / (2 * population) < 0.5:
        out = rng.integers(0, population, size=(size, k))
        todo = np.arange(size)
        while todo.size:
            s = np.sort(out[todo], axis=1)
            bad = (s[:, 1:] == s[:, :-1]).any(axis=1)
            todo = todo[bad]
            if todo.size:
                out[todo] = rng.integers(0, population, size=(todo.size, k))
        return out
    out = np.empty((size, k), dtype=np.int64)
    rows = max(1, int(2e7 // population))
    for a in range(0, size, rows):
        keys = rng.random((min(rows, size - a), population))
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
    rng: np.random.Generator,
) -> np.ndarray:
    """F of ``size`` random datasets from θ: k records drawn without replacement from
    ``positives`` (row positions satisfying the property) and n − k from ``negatives``.

    One index matrix, one gather, one reduction (:meth:`Query.evaluate_batch`).

    Returns
    -------
    ndarray, shape (size, m)
    """
    size = check_int(size, "the number of samples", low=0)
    check_memory(
        sample_statistics_bytes(size, n, query.dim), f"{size} random datasets of {n} records"
    )
    ia = positives[sample_without_replacement(len(positives), k, size, rng)]
    ib = negatives[sample_without_replacement(len(negatives), n - k, size, rng)]
    return query.evaluate_batch(data, np.concatenate([ia, ib], axis=1))


class FModel:
    """Base of fitted models of f_θ: validation and derived quantities."""

    thetas_: tuple[float, ...]
    means_: np.ndarray
    covariances_: np.ndarray
    pair_indices_: tuple[tuple[int, int], ...]
    statistic_names_: tuple[str, ...]
    samples_: list[np.ndarray] | None = None
    record_sensitivities_: np.ndarray | None = None
    n_: int | None = None
    method_: str = ""

    def _check_fitted(self) -> None:
        if not hasattr(self, "means_"):
            raise DistPrivacyError(f"{type(self).__name__} is not fitted; call fit() first")

    @property
    def dim(self) -> int:
        self._check_fitted()
        return int(self.means_.shape[1])

    def mean_differences(self) -> np.ndarray:
        """μ_θi − μ_θj for every protected pair, shape (P, m)."""
        self._check_fitted()
        i, j = np.array(self.pair_indices_).T
        return self.means_[i] - self.means_[j]

    def theta_label(self, t: int) -> str:
        return f"p={self.thetas_[t]:g}"

    def statistic_scales(self) -> np.ndarray:
        """Each statistic's own scale s_k: its sampling standard deviation under f_θ (root of
        the mean over θ of Var_θ F_k); for a statistic without sampling variance, the largest
        mean difference over Ψ; else its largest |E F_k|; else 1.

        Unit-free utilities divide by it: rescale a statistic by c and its s_k scales by c."""
        self._check_fitted()
        s = np.sqrt(np.maximum(np.mean(np.diagonal(self.covariances_, axis1=1, axis2=2), 0), 0))
        d = np.abs(self.mean_differences()).max(axis=0)
        s = np.where(s > 0, s, d)
        s = np.where(s > 0, s, np.abs(self.means_).max(axis=0))
        return np.where(s > 0, s, 1.0)

    def statistic_levels(self) -> np.ndarray:
        """Each statistic's typical magnitude: the mean over θ of |E_θ F_k| (the denominator of
        a relative error)."""
        self._check_fitted()
        return np.abs(self.means_).mean(axis=0)

    def check_finite(self, source: str = "the model") -> None:
        """Refuse (naming the statistic) a model whose moments or samples are not finite:
        a NaN or an overflow must never reach a calibration."""
        names = self.statistic_names_
        if self.samples_ is not None:
            for t, x in enumerate(self.samples_):
                bad = ~np.isfinite(x)
                if bad.any():
                    k = int(np.argmax(bad.mean(axis=0)))
                    share = float(bad[:, k].mean())
                    raise DistPrivacyError(
                        f"{source}: statistic {names[k]!r} is NaN or infinite on {share:.1%} of "
                        f"the sampled datasets under {self.theta_label(t)} (e.g. a mean over an "
                        "empty group, or an overflow); change the statistic or the subset size"
                    )
        for what, arr in (("mean", self.means_), ("variance", self.covariances_)):
            if not np.isfinite(arr).all():
                bad = (~np.isfinite(arr.reshape(arr.shape[0], arr.shape[1], -1))).any(axis=(0, 2))
                k = int(np.flatnonzero(bad)[0])
                raise DistPrivacyError(
                    f"{source}: the {what} of statistic {names[k]!r} is not finite (NaN or "
                    "overflow); rescale the column (e.g. thousands of dollars) or drop it"
                )

    def covariance_mismatch(self) -> float:
        """Largest relative Frobenius difference ‖Σ_θi − Σ_θj‖ / max ‖Σ‖ over the pairs, in
        unit-free coordinates (each statistic divided by :meth:`statistic_scales`), so that a
        money statistic does not hide the mismatch of a share.

        Zero when the equal-covariance assumption of Thm 4.4/4.5/A.1 holds exactly.
        """
        i, j = np.array(self.pair_indices_).T
        sc = self.statistic_scales()
        C = self.covariances_ / np.outer(sc, sc)
        d = np.linalg.norm(C[i] - C[j], axis=(1, 2))
        s = np.maximum(np.linalg.norm(C[i], axis=(1, 2)), np.linalg.norm(C[j], axis=(1, 2)))
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.where(s > 0, d / s, 0.0)
        return float(r.max())

    def zero_variance_statistics(self, t: int) -> list[str]:
        """Statistics with (numerically) zero variance under θ_t: below 1e-12 of their own
        squared level (unit-free: rescaling a statistic does not change the answer)."""
        v = np.diag(self.covariances_[t])
        level = np.maximum(np.abs(self.means_).max(axis=0), np.sqrt(np.abs(v)))
        return [
            n
            for n, x, lv in zip(self.statistic_names_, v, level, strict=True)
            if x <= 1e-12 * lv**2
        ]

    def require_invertible(self) -> None:
        """Raise NotApplicableError naming the cause if some Σ_θ is singular (the
        adversarial-uncertainty mechanisms invert Σ_θ). The test is on the correlation matrix,
        so it does not depend on the statistics' units."""
        for t in range(len(self.thetas_)):
            S = self.covariances_[t]
            zero = self.zero_variance_statistics(t)
            singular = bool(zero)
            if not singular:
                sd = np.sqrt(np.diag(S))
                w = np.linalg.eigvalsh(S / np.outer(sd, sd))
                singular = w[0] <= 1e-12 * max(w[-1], 1e-300)
            if singular:
                why = (
                    f" ({', '.join(zero)} {'has' if len(zero) == 1 else 'have'} zero variance)"
                    if zero
                    else " (its statistics are linearly dependent)"
                )
                raise NotApplicableError(
                    f"the covariance of F under {self.theta_label(t)} is singular{why}; remove "
                    "the redundant statistic or use a mechanism without adversarial uncertainty "
                    "(ExpM, DirM)"
                )


def _validate_moments(
    means: np.ndarray, covs: np.ndarray, labels: Sequence[str], source: str
) -> tuple[np.ndarray, np.ndarray]:
    means = np.asarray(means, dtype=float)
    covs = np.asarray(covs, dtype=float)
    if means.ndim != 2 or covs.ndim != 3 or covs.shape != (means.shape[0], *means.shape[1:] * 2):
        raise DistPrivacyError(
            f"{source}: means must be T×m and covariances T×m×m, got {means.shape} and {covs.shape}"
        )
    if not (np.isfinite(means).all() and np.isfinite(covs).all()):
        raise DistPrivacyError(f"{source}: means and covariances must be finite numbers")
    for t, S in enumerate(covs):
        tol = 1e-9 * max(1.0, float(np.abs(S).max()))
        if not np.allclose(S, S.T, rtol=0, atol=tol):
            raise DistPrivacyError(
                f"{source}: the covariance for {labels[t]} is not symmetric; fix the matrix "
                "(it is not symmetrised silently)"
            )
        w = np.linalg.eigvalsh(S)
        if w[0] < -tol:
            raise DistPrivacyError(
                f"{source}: the covariance for {labels[t]} is not positive semidefinite "
                f"(smallest eigenvalue {w[0]:.3g}); fix the matrix"
            )
    return means, covs


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
        if not query.is_linear:
            raise DistPrivacyError(
                "exact moments need linear statistics (mean, sum, count, proportion); use the "
                "Monte-Carlo model for other statistics"
            )
        data, eng = _on_engine(data, engine)
        s = query.scales(spec.n)
        parts = []
        if eng is not None:
            for x in eng.strata_moments(spec, query):
                parts.append((x.count, x.mean, x.scatter / x.count))
        else:
            pos, neg = spec.groups(data)
            G = query.record_matrix(data)
            for idx in (pos, neg):
                g = G[idx]
                mu = g.mean(axis=0)
                c = g - mu
                parts.append((len(idx), mu, c.T @ c / len(idx)))
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
        self.record_sensitivities_ = (
            query.record_sensitivities(data, spec.n)
            if eng is None
            else eng.record_sensitivities(spec, query)
        )
        self.n_ = spec.n
        self.method_ = "exact"
        self.check_finite("exact moments")
        return self


class MonteCarloModel(FModel):
    """Sample-based model of f_θ (Chen & Ohrimenko 2023, Appendix C.1).

    Parameters
    ----------
    n_samples : int
        Subsets drawn per θ (the paper: 1000).
    random_state : int, Generator or None
        Seed for the subset sampling (reproducible bit for bit from a seed).
    moments : {"sample", "exact"}
        Where μ_θ and Σ_θ come from: the samples (the paper's estimator, default) or the exact
        finite-population formulas (linear queries only), keeping the samples for the
        sample-based mechanisms (Wasserstein).
    """

    def __init__(
        self,
        n_samples: int = 1000,
        random_state: int | np.random.Generator | None = None,
        moments: str = "sample",
    ) -> None:
        if isinstance(n_samples, bool) or not isinstance(n_samples, int | np.integer):
            raise DistPrivacyError(f"n_samples must be an integer, got {n_samples!r}")
        if n_samples < 2:
            raise DistPrivacyError(f"n_samples must be at least 2, got {n_samples}")
        if moments not in ("sample", "exact"):
            raise DistPrivacyError(f"moments must be 'sample' or 'exact', got {moments!r}")
        self.n_samples = int(n_samples)
        self.random_state = random_state
        self.moments = moments

    def _fit_on_engine(
        self,
        eng: Engine,
        spec: ProtectionSpec,
        query: Query,
        rng: np.random.Generator,
        progress: ProgressCallback | None,
    ) -> MonteCarloModel:
        """:meth:`fit` on an engine of :mod:`distprivacy.engines` (other than pandas): the
        engine draws the subsets and, for ``moments="exact"``, computes the moments."""
        samples = eng.subset_statistics(spec, query, spec.counts, self.n_samples, rng)
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
        other than pandas, by the engine, see :mod:`distprivacy.engines`)."""
        rng = check_random_state(self.random_state, secure=False)
        data, eng = _on_engine(data, engine)
        if eng is not None:
            return self._fit_on_engine(eng, spec, query, rng, progress)
        pos, neg = spec.groups(data)
        query.validate(data)
        T, R = len(spec.counts), self.n_samples
        check_memory(
            sample_statistics_bytes(R, spec.n, query.dim) + 8.0 * T * R * query.dim,
            f"{R} Monte-Carlo samples per θ of datasets of {spec.n} records ({T} values of θ)",
        )
        samples = []
        for t, k in enumerate(spec.counts):
            samples.append(sample_statistics(data, query, pos, neg, k, spec.n, self.n_samples, rng))
            if progress is not None:
                progress(t + 1, len(spec.counts))
        self.samples_ = samples
        if self.moments == "exact":
            ex = ExactModel().fit(data, spec, query)
            self.means_, self.covariances_ = ex.means_, ex.covariances_
        else:
            self.means_ = np.array([x.mean(axis=0) for x in samples])
            self.covariances_ = np.array([np.cov(x, rowvar=False, ddof=1) for x in samples])
            if self.covariances_.ndim == 1:
                self.covariances_ = self.covariances_[:, None, None]
            self.covariances_ = self.covariances_.reshape(len(samples), query.dim, query.dim)
        self.thetas_ = spec.values
        self.pair_indices_ = spec.pair_indices
        self.statistic_names_ = query.names
        self.record_sensitivities_ = query.record_sensitivities(data, spec.n)
        self.n_ = spec.n
        self.method_ = "monte-carlo" if self.moments == "sample" else "monte-carlo+exact"
        self.check_finite("Monte-Carlo model")
        return self


class GaussianModel(FModel):
    """A user-supplied model: per θ a mean vector and covariance matrix (and optional samples).

    Parameters
    ----------
    thetas : sequence of float or str
        Labels of the distributions θ (e.g. proportions).
    means : array (T, m)
    covariances : array (T, m, m)
        Symmetric positive semidefinite; never symmetrised or regularised silently.
    pairs : sequence of (label, label)
        Protected pairs; each is protected in both directions.
    statistic_names : sequence of str, optional
    samples : sequence of arrays (R_t, m), optional
        Samples of F under each θ (for the Wasserstein mechanisms).
    record_sensitivities : array (m,), optional
        Per-record sensitivities (for the group-DP baselines).
    n : int, optional
        Dataset size (group size of the group-DP baselines).
    """

    def __init__(
        self,
        thetas: Sequence[Any],
        means: Any,
        covariances: Any,
        pairs: Sequence[tuple[Any, Any]],
        statistic_names: Sequence[str] | None = None,
        samples: Sequence[Any] | None = None,
        record_sensitivities: Any | None = None,
        n: int | None = None,
        source: str = "model",
    ) -> None:
        labels = [str(t) for t in thetas]
        if len(set(labels)) != len(labels) or len(labels) < 2:
            raise DistPrivacyError(f"{source}: give at least two distinct θ labels")
        means, covs = _validate_moments(means, covariances, labels, source)
        if means.shape[0] != len(labels):
            raise DistPrivacyError(
                f"{source}: {len(labels)} θ labels but {means.shape[0]} mean vectors"
            )
        m = means.shape[1]
        names = tuple(statistic_names) if statistic_names else tuple(f"F{k}" for k in range(m))
        if len(names) != m:
            raise DistPrivacyError(f"{source}: {len(names)} statistic names for {m} statistics")
        index = {lab: i for i, lab in enumerate(labels)}
        idx: set[tuple[int, int]] = set()
        for a, b in pairs:
            a, b = str(a), str(b)
            for x in (a, b):
                if x not in index:
                    raise DistPrivacyError(f"{source}: pair names unknown θ {x!r}; known: {labels}")
            if a == b:
                raise DistPrivacyError(f"{source}: pair ({a}, {b}) joins a θ to itself")
            idx.update({(index[a], index[b]), (index[b], index[a])})
        if not idx:
            raise DistPrivacyError(f"{source}: the set of protected pairs Ψ is empty")
        if samples is not None:
            samples = [np.asarray(s, dtype=float) for s in samples]
            if len(samples) != len(labels) or any(
                s.ndim != 2 or s.shape[1] != m or not np.isfinite(s).all() for s in samples
            ):
                raise DistPrivacyError(f"{source}: samples must be one finite R×{m} array per θ")
        if record_sensitivities is not None:
            record_sensitivities = np.asarray(record_sensitivities, dtype=float)
            if record_sensitivities.shape != (m,):
                raise DistPrivacyError(f"{source}: record_sensitivities must have {m} entries")
        try:
            self.thetas_ = tuple(float(t) for t in thetas)
        except (TypeError, ValueError):
            self.thetas_ = tuple(labels)  # type: ignore[assignment]
        self._labels = labels
        self.means_ = means
        self.covariances_ = covs
        self.pair_indices_ = tuple(sorted(idx))
        self.statistic_names_ = names
        self.samples_ = samples
        self.record_sensitivities_ = record_sensitivities
        self.n_ = n
        self.method_ = "user"

    def theta_label(self, t: int) -> str:
        return self._labels[t]


#: Largest working memory a model file may imply (bytes); see :func:`model_file_memory`.
MODEL_MEMORY_LIMIT: int = 4 * 2**30

_MODEL_THETA = Table(
    {
        "label": Field(Label(), required=True),
        "mean": Field(Array(("m",), noun="a list of finite numbers (one per statistic)"), True),
        "covariance": Field(
            Array(("m", "m"), noun="an m×m matrix of finite numbers (a list of m rows)"), True
        ),
        "samples": Field(
            Array((None, "m"), noun="a matrix of finite numbers, one row of m per sample")
        ),
    },
    noun='an object {"label": …, "mean": […], "covariance": [[…], …]}',
)

#: The schema of a model file (README, "A user-supplied model").
MODEL_FILE_SCHEMA = Table(
    {
        "statistics": Field(
            ListOf(Str(), length="m", unique=True, noun="names", example='["x", "y"]')
        ),
        "thetas": Field(ListOf(_MODEL_THETA, min_len=2, noun="θ objects"), required=True),
        "pairs": Field(
            ListOf(
                Pair(Label(), example='["a", "b"]'),
                min_len=1,
                noun="pairs of θ labels",
                example='[["a", "b"]]',
            ),
            required=True,
        ),
        "record_sensitivities": Field(
            Array(("m",), noun="a list of finite numbers ≥ 0 (one per statistic)", minimum=0.0)
        ),
        "n": Field(Int(minimum=1)),
    },
    noun="an object with thetas and pairs",
)


def model_file_memory(dim: int, lmis: int, sample_pairs: int = 0) -> int:
    """Working memory (bytes) the costliest mechanism needs on a user model, estimated.

    OptM-G solves a semidefinite program with one (m+1)×(m+1) linear matrix inequality per
    protected pair and covariance; the interior-point solver (Clarabel) then needs about
    30·L·m⁴ bytes for L inequalities (measured on 2 to 10 pairs, m = 30 to 100: 0.23 GB at
    m = 50, 2.9 GB at m = 100) and aborts the process when an allocation fails. The exact W∞
    of two sample sets of R and R' rows holds R·R' distances (≈ 24 bytes each with the
    matching's work arrays).

    Parameters
    ----------
    dim : int
        The number of statistics m.
    lmis : int
        The number of inequalities: per unordered pair, 1 if its two covariances are equal,
        else 2.
    sample_pairs : int
        The largest R·R' over the pairs (0 without samples).
    """
    return int(30 * lmis * dim**4 + 24 * sample_pairs)


def _gib(x: float) -> str:
    return f"{x / 2**30:.3g} GiB" if x >= 2**30 else f"{x / 2**20:.3g} MiB"


def load_model_file(
    path: str | Path, *, memory_limit: int | None = MODEL_MEMORY_LIMIT
) -> GaussianModel:
    """Load a user-supplied model from JSON or TOML, validated strictly.

    The file holds ``thetas`` (a list of at least two objects {"label", "mean", "covariance",
    optional "samples"}), ``pairs`` (a list of [label, label]) and optionally ``statistics``
    (names), ``record_sensitivities`` and ``n``. Example (JSON)::

        {"statistics": ["x", "y"],
         "thetas": [{"label": "a", "mean": [100, 101], "covariance": [[22, -6], [-6, 13]]},
                    {"label": "b", "mean": [99, 102], "covariance": [[22, -6], [-6, 13]]}],
         "pairs": [["a", "b"]]}

    Parameters
    ----------
    path : str or Path
        A ``.json`` or ``.toml`` file.
    memory_limit : int or None
        The most working memory (bytes) the model may imply for the costliest mechanism
        (:func:`model_file_memory`); None for no limit. Default :data:`MODEL_MEMORY_LIMIT`.

    Raises
    ------
    DistPrivacyError
        (:class:`~distprivacy.files.InvalidFileError`) naming the file, the key path and the
        fix: unknown or missing keys, a value of the wrong type (``true`` for ``n``, a string
        for a list), ragged or mis-sized matrices, non-finite numbers, a covariance that is not
        symmetric positive semidefinite, or a model above the memory limit.
    """
    p = Path(path)
    src = f"model file {p.name!r}"
    raw = read_mapping_file(p, "model file", MODEL_FILE_SCHEMA)
    thetas = raw["thetas"]
    has_samples = [("samples" in t) for t in thetas]
    if any(has_samples) and not all(has_samples):
        k = has_samples.index(False)
        raise InvalidFileError(
            f"{src}: thetas[{k}] has no samples; give samples for every θ or for none"
        )
    labels = [t["label"] for t in thetas]
    seen: dict[str, int] = {}
    for k, lab in enumerate(labels):
        if lab in seen:
            raise InvalidFileError(
                f"{src}: thetas[{k}].label repeats {lab!r} (thetas[{seen[lab]}]); give every θ "
                "a distinct label"
            )
        seen[lab] = k
    index = {lab: k for k, lab in enumerate(labels)}
    for k, pair in enumerate(raw["pairs"]):
        for x in pair:
            if x not in index:
                raise InvalidFileError(
                    f"{src}: pairs[{k}] names unknown θ {x!r}; known: {', '.join(labels)}"
                )
    means = np.stack([t["mean"] for t in thetas])
    covs = np.stack([t["covariance"] for t in thetas])
    if memory_limit is not None:
        dim = means.shape[1]
        unordered = {tuple(sorted((index[a], index[b]))) for a, b in raw["pairs"] if a != b}
        lmis = sum(1 if np.array_equal(covs[i], covs[j]) else 2 for i, j in unordered)
        rr = 0
        if all(has_samples):
            rr = max(
                (len(thetas[i]["samples"]) * len(thetas[j]["samples"]) for i, j in unordered),
                default=0,
            )
        need = model_file_memory(dim, lmis, rr)
        if need > memory_limit:
            what = (
                f"OptM-G's semidefinite program on {dim} statistics with {lmis} pair "
                f"constraint{'s' if lmis > 1 else ''}, which grows as m⁴ per constraint"
            )
            if 24 * rr > 30 * lmis * dim**4:
                what = f"the exact W∞ of two sample sets of {rr:,} sample pairs"
            raise InvalidFileError(
                f"{src} implies about {_gib(need)} of working memory ({what}); the limit is "
                f"{_gib(memory_limit)}: give fewer statistics, pairs or samples"
            )
    return GaussianModel(
        thetas=labels,
        means=means,
        covariances=covs,
        pairs=raw["pairs"],
        statistic_names=raw.get("statistics"),
        samples=[t["samples"] for t in thetas] if all(has_samples) else None,
        record_sensitivities=raw.get("record_sensitivities"),
        n=raw.get("n"),
        source=src,
    )


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
