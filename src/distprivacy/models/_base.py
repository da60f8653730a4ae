"""The base of fitted models of f_θ (:class:`FModel`) and the data they are fitted on."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from distprivacy.checks import check_instance
from distprivacy.exceptions import DistPrivacyError, NotApplicableError
from distprivacy.query import Query
from distprivacy.spec import ProtectionSpec

if TYPE_CHECKING:
    from distprivacy.engines import Engine


ProgressCallback = Callable[[int, int], None]
#: The records: a DataFrame (in memory), a path or table name (scanned by an engine), or an engine.
Data = Any  # pd.DataFrame | str | Path | Engine


def check_fit_inputs(spec: Any, query: Any) -> None:
    """A model is fitted for a :class:`ProtectionSpec` and a :class:`Query`: a library
    TypeError naming the one that is not."""
    check_instance(spec, "spec", ProtectionSpec, "a ProtectionSpec")
    check_instance(query, "query", Query, "a Query (Query.parse('mean:age,...'))")


def _on_engine(data: Data, engine: str | Engine | None) -> Engine:
    """The engine that computes the aggregates: resolved once, at the models' boundary
    (``engine=None``: pandas for a DataFrame, DuckDB for a path; an Engine as it is). The
    models read engines only — the pandas engine is the in-memory path."""
    from distprivacy.engines import Engine as _Engine
    from distprivacy.engines import resolve_engine

    if engine is None and isinstance(data, _Engine):
        return data
    return resolve_engine(engine, data)


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
    #: SHA-256 of the columns the model was fitted on (:mod:`distprivacy.fingerprint`); None
    #: for a user's model or data the library never held whole.
    data_fingerprint_: str | None = None
    #: The query and the protection spec the model was fitted with (None for a model given by
    #: the user, e.g. loaded from a file): what a calibration evaluates on a dataset to release.
    query_: Query | None = None
    spec_: ProtectionSpec | None = None

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
