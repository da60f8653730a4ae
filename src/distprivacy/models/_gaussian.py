"""A user-supplied Gaussian model of f_θ (:class:`GaussianModel`), validated strictly."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from distprivacy.checks import check_array, check_label, check_texts, shown
from distprivacy.exceptions import DistPrivacyError, DistPrivacyTypeError
from distprivacy.models._base import FModel


def _validate_moments(
    means: np.ndarray, covs: np.ndarray, labels: Sequence[str], source: str
) -> tuple[np.ndarray, np.ndarray]:
    means = check_array(means, f"{source}: means", "a T×m matrix of numbers")
    covs = check_array(covs, f"{source}: covariances", "T m×m matrices of numbers")
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
        def listlike(x: Any) -> bool:
            return not isinstance(x, str | bytes | Mapping) and hasattr(x, "__iter__")

        def as_list(x: Any, what: str) -> list[Any]:
            try:
                if listlike(x):
                    return list(x)
            except TypeError:  # iterable in name only (a 0-d array)
                pass
            raise DistPrivacyTypeError(f"{source}: {what}, got {shown(x)}")

        source = check_label(source, "source", "model")
        check_texts(statistic_names, f"{source}: statistic_names", optional=True)

        thetas = as_list(thetas, "thetas must be a list of labels")
        want_pairs = "pairs must be a list of (θ, θ′) label pairs"
        pairs = [as_list(pr, want_pairs) for pr in as_list(pairs, want_pairs)]
        if not all(len(pr) == 2 for pr in pairs):
            raise DistPrivacyError(f"{source}: {want_pairs}, got {shown(pairs)}")
        labels = [str(t) for t in thetas]
        if len(set(labels)) != len(labels) or len(labels) < 2:
            raise DistPrivacyError(f"{source}: give at least two distinct θ labels")
        means, covs = _validate_moments(means, covariances, labels, source)
        if means.shape[0] != len(labels):
            raise DistPrivacyError(
                f"{source}: {len(labels)} θ labels but {means.shape[0]} mean vectors"
            )
        m = means.shape[1]
        given = () if statistic_names is None else tuple(statistic_names)
        names = given or tuple(f"F{k}" for k in range(m))
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
            if not listlike(samples):
                raise DistPrivacyError(f"{source}: samples must be one R×{m} array per θ")
            samples = [check_array(s, f"{source}: samples", f"R×{m} arrays") for s in samples]
            if len(samples) != len(labels) or any(
                s.ndim != 2 or s.shape[1] != m or not np.isfinite(s).all() for s in samples
            ):
                raise DistPrivacyError(f"{source}: samples must be one finite R×{m} array per θ")
        if record_sensitivities is not None:
            record_sensitivities = check_array(
                record_sensitivities, f"{source}: record_sensitivities", "a vector of numbers"
            )
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
