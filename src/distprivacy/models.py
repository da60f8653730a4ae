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

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from distprivacy.exceptions import DistPrivacyError, NotApplicableError
from distprivacy.files import read_mapping_file
from distprivacy.query import Query
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


def as_generator(random_state: int | np.random.Generator | None) -> np.random.Generator:
    """A NumPy generator from a seed, a generator (used as is) or None (fresh OS entropy)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, int | np.integer):
        return np.random.default_rng(random_state)
    raise DistPrivacyError(
        f"random_state must be an int seed, a numpy Generator or None, got {type(random_state)}"
    )


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

    def covariance_mismatch(self) -> float:
        """Largest relative Frobenius difference ‖Σ_θi − Σ_θj‖ / max ‖Σ‖ over the pairs.

        Zero when the equal-covariance assumption of Thm 4.4/4.5/A.1 holds exactly.
        """
        i, j = np.array(self.pair_indices_).T
        d = np.linalg.norm(self.covariances_[i] - self.covariances_[j], axis=(1, 2))
        s = np.maximum(
            np.linalg.norm(self.covariances_[i], axis=(1, 2)),
            np.linalg.norm(self.covariances_[j], axis=(1, 2)),
        )
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.where(s > 0, d / s, 0.0)
        return float(r.max())

    def zero_variance_statistics(self, t: int) -> list[str]:
        """Statistics with (numerically) zero variance under θ_t."""
        v = np.diag(self.covariances_[t])
        scale = max(float(np.abs(self.means_).max()), 1.0)
        return [n for n, x in zip(self.statistic_names_, v, strict=True) if x <= 1e-12 * scale**2]

    def require_invertible(self) -> None:
        """Raise NotApplicableError naming the cause if some Σ_θ is singular (the
        adversarial-uncertainty mechanisms invert Σ_θ)."""
        for t in range(len(self.thetas_)):
            S = self.covariances_[t]
            w = np.linalg.eigvalsh(S)
            if w[0] <= 1e-12 * max(w[-1], 1e-300):
                zero = self.zero_variance_statistics(t)
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
        rng = as_generator(self.random_state)
        data, eng = _on_engine(data, engine)
        if eng is not None:
            return self._fit_on_engine(eng, spec, query, rng, progress)
        pos, neg = spec.groups(data)
        query.validate(data)
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


def load_model_file(path: str | Path) -> GaussianModel:
    """Load a user-supplied model from JSON or TOML.

    The file holds ``thetas`` (list of {"label", "mean", "covariance", optional "samples"}),
    ``pairs`` (list of [label, label]) and optionally ``statistics`` (names),
    ``record_sensitivities`` and ``n``. Example (JSON)::

        {"statistics": ["x", "y"],
         "thetas": [{"label": "a", "mean": [100, 101], "covariance": [[22, -6], [-6, 13]]},
                    {"label": "b", "mean": [99, 102], "covariance": [[22, -6], [-6, 13]]}],
         "pairs": [["a", "b"]]}
    """
    p = Path(path)
    raw = read_mapping_file(p, "model file")
    src = f"model file {p.name!r}"
    if "thetas" not in raw or "pairs" not in raw:
        raise DistPrivacyError(f"{src} needs 'thetas' and 'pairs' entries (see the README)")
    thetas = raw["thetas"]
    try:
        labels = [t["label"] for t in thetas]
        means = [t["mean"] for t in thetas]
        covs = [t["covariance"] for t in thetas]
    except (KeyError, TypeError):
        raise DistPrivacyError(f"{src}: each θ needs 'label', 'mean' and 'covariance'") from None
    has_samples = [("samples" in t) for t in thetas]
    if any(has_samples) and not all(has_samples):
        raise DistPrivacyError(f"{src}: give samples for every θ or for none")
    samples = [t["samples"] for t in thetas] if all(has_samples) else None
    try:
        means_arr = np.array(means, dtype=float)
        covs_arr = np.array(covs, dtype=float)
    except (TypeError, ValueError):
        raise DistPrivacyError(f"{src}: means and covariances must be numeric arrays") from None
    n = raw.get("n")
    if n is not None and (not isinstance(n, int) or n < 1 or math.isnan(n)):
        raise DistPrivacyError(f"{src}: n must be a positive integer")
    return GaussianModel(
        thetas=labels,
        means=means_arr,
        covariances=covs_arr,
        pairs=[tuple(p) for p in raw["pairs"]],
        statistic_names=raw.get("statistics"),
        samples=samples,
        record_sensitivities=raw.get("record_sensitivities"),
        n=n,
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
