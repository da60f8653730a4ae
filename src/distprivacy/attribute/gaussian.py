"""The Attribute-Private Gaussian Mechanism (Zhang, Ohrimenko & Cummings, FAccT 2022, §4).

Algorithm 1 (APGM), for dataset attribute privacy (Def. 4). For each sensitive attribute i ∈ C

    Δ_i F = max_{θ ∈ Θ} max_{(s_a, s_b) ∈ Q} ‖E[F(X) | s_a, θ] − E[F(X) | s_b, θ]‖₂      (Eq. 1)

and the noise variance is σ² = max_i (c Δ_i F / ε)² − min_θ Var(F(X) | g_i(X_i), θ), c =
√(2 ln(1.25/δ)); if σ² > 0 the mechanism returns F(X) + N(0, σ²), else F(X) unchanged.

* Thm 1: (ε, δ)-dataset attribute private when F(X) | g_i(X_i) is Gaussian (with a variance
  that does not depend on the secret) for every θ ∈ Θ and i ∈ C.
* Thm 2: (α, β)-accurate with α = σ Φ⁻¹(1 − β/2) (σ = 0 when no noise is added).
* Vector-valued F (the remark below Alg. 1): Δ_i F is the ℓ2 distance and the noise is reduced by
  the conditional covariance. Here Σ_Z tops the conditional covariance floor L_i (a matrix with
  Cov(F | g_i, θ) ⪰ L_i for every θ) up to (c Δ_i F/ε)² I along L_i's eigenvectors, so
  Cov(F + Z | s, θ) ⪰ (c Δ_i F/ε)² I for every θ and secret — the condition of the Gaussian
  mechanism's proof along any mean difference.

Calibration rules
    ``classic`` — the paper's c = √(2 ln(1.25/δ)) (Dwork & Roth 2014, Thm A.1, proven for ε < 1;
    the paper uses ε = 1). ``exact`` (default) — c/ε replaced by 1/μ*, μ* = the largest μ with
    μ-GDP ⊂ (ε, δ) (:func:`distprivacy.profiles.gdp_mu`): two Gaussians with a common covariance
    S and mean difference m are (ε, δ)-indistinguishable iff δ ≥ δ_μ(ε) with μ² = mᵀS⁻¹m
    (Balle & Wang 2018, Thm 8), and mᵀS⁻¹m ≤ ‖m‖²/λ_min(S) ≤ Δ_i²/(λ_min(L_i) + top-up). Either
    way every calibration reports the μ it guarantees and the exact δ it achieves at ε.

§4.2, multivariate Gaussian data: with F the mean of attributes J and g_i the mean of attribute
i over n i.i.d. records, F | g_i = a ~ N(μ_J + (V_Ji/V_ii)(a − μ_i), (V_JJ − V_Ji V_iJ/V_ii)/n),
so Δ_i F = max_θ ‖V_Ji/V_ii‖ d(U) and the floor is min_θ (V_JJ − V_Ji V_iJ/V_ii)/n.
Θ is a finite list of covariances (:class:`GaussianTheta`), a box of covariance entries
(:meth:`GaussianTheta.from_ranges`, extremes at the box's vertices) or ranges of the regression
slope V_ij/V_ii and residual variance V_jj − V_ij²/V_ii (:class:`RegressionTheta`, the
parametrisation of the paper's hospital experiment).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from distprivacy.accounting import (
    CALIBRATION_RULES,
    check_delta,
    check_epsilon,
    check_rule,
    classic_c,
)
from distprivacy.attribute.framework import AttributeFramework
from distprivacy.exceptions import DistPrivacyError
from distprivacy.files import (
    AnyOf,
    Array,
    Bool,
    Field,
    Int,
    ListOf,
    MapOf,
    Number,
    Pair,
    Str,
    Table,
    read_mapping_file,
    validate,
)
from distprivacy.noise import NoiseDistribution
from distprivacy.randomness import RandomState, check_random_state

RULES = CALIBRATION_RULES
PAIR_READINGS = ("sup", "centres")
THEOREM = "Zhang, Ohrimenko & Cummings 2022, Alg. 1 / Thm 1 (privacy), Thm 2 (accuracy)"
_MAX_BOX_ENTRIES = 16  # 2**16 vertices at most when Θ is a box of covariance entries


def _as_matrix(x: ArrayLike, name: str) -> np.ndarray:
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise DistPrivacyError(f"{name} must be numeric") from None
    if not np.isfinite(a).all():
        raise DistPrivacyError(f"{name} has NaN or infinite entries")
    return a


def _check_n(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise DistPrivacyError(f"the number of records n must be a positive integer, got {n!r}")
    return int(n)


# ---------------------------------------------------------------------------------------------
# The general mechanism: per sensitive attribute, a sensitivity and a covariance floor
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SensitivityTerm:
    """What Algorithm 1 needs about one sensitive attribute i.

    Attributes
    ----------
    attribute : str
    sensitivity : float
        Δ_i F (Eq. 1; ℓ2 for vector-valued F).
    floor : ndarray (k, k)
        L_i with Cov(F(X) | g_i(X_i), θ) ⪰ L_i for every θ ∈ Θ (k = 1: min_θ Var).
    details : mapping
        How both were obtained (worst θ, slopes, d(U), ...).
    """

    attribute: str
    sensitivity: float
    floor: np.ndarray
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        d = float(self.sensitivity)
        if not (math.isfinite(d) and d >= 0):
            raise DistPrivacyError(f"the sensitivity of {self.attribute!r} must be finite ≥ 0")
        L = np.atleast_2d(_as_matrix(self.floor, f"the conditional covariance of {self.attribute}"))
        if L.shape[0] != L.shape[1] or not np.allclose(L, L.T, atol=1e-10 * (1 + abs(L).max())):
            raise DistPrivacyError(
                f"the conditional covariance of {self.attribute!r} must be a symmetric matrix"
            )
        w = np.linalg.eigvalsh(L)
        if w[0] < -1e-12 * max(1.0, abs(w[-1])):
            raise DistPrivacyError(
                f"the conditional variance of {self.attribute!r} is negative "
                f"(smallest eigenvalue {w[0]:.3g}); variances must be ≥ 0"
            )
        object.__setattr__(self, "sensitivity", d)
        object.__setattr__(self, "floor", (L + L.T) / 2)


def conditional_moments_term(
    attribute: str,
    means: ArrayLike,
    covariances: ArrayLike,
    pairs: Sequence[tuple[int, int]],
) -> SensitivityTerm:
    """Δ_i F and the covariance floor from conditional moments over a finite Θ (Eq. 1).

    Parameters
    ----------
    attribute : str
    means : array (T, S, k) or (T, S)
        E[F(X) | s, θ] for each of T distributions θ and S secrets (k statistics).
    covariances : array (T, S, k, k) or (T, S)
        Cov(F(X) | s, θ) (variances when F is real-valued).
    pairs : sequence of (a, b)
        Secret pairs, as indices into the S secrets.

    Notes
    -----
    Thm 1 assumes Cov(F | s, θ) does not depend on the secret; the floor is the minimum over
    secrets and θ (λ_min times the identity when the matrices differ and k > 1), which is
    what Alg. 1 uses.
    """
    m = _as_matrix(means, "the conditional means")
    if m.ndim == 2:
        m = m[..., None]
    if m.ndim != 3:
        raise DistPrivacyError("conditional means must have shape (thetas, secrets[, k])")
    T, S, k = m.shape
    c = _as_matrix(covariances, "the conditional covariances")
    if c.ndim == 2:
        c = c[..., None, None]
    if c.shape != (T, S, k, k):
        raise DistPrivacyError(
            f"conditional covariances have shape {c.shape}, expected {(T, S, k, k)} to match "
            f"the means {m.shape}"
        )
    if not pairs:
        raise DistPrivacyError("give at least one secret pair")
    for a, b in pairs:
        if not (0 <= a < S and 0 <= b < S) or a == b:
            raise DistPrivacyError(f"secret pair ({a}, {b}) is invalid for {S} secrets")
    diag = np.diagonal(c, axis1=2, axis2=3)
    if (diag < 0).any():
        raise DistPrivacyError(f"a conditional variance of {attribute!r} is negative")
    ia = np.array([p[0] for p in pairs])
    ib = np.array([p[1] for p in pairs])
    dist = np.linalg.norm(m[:, ia] - m[:, ib], axis=-1)  # (T, P)
    t, p = np.unravel_index(int(np.argmax(dist)), dist.shape)
    flat = c.reshape(T * S, k, k)
    if k == 1:
        floor = np.array([[flat[:, 0, 0].min()]])
    elif np.allclose(flat, flat[0]):
        floor = flat[0]
    else:
        floor = np.eye(k) * float(np.linalg.eigvalsh(flat)[:, 0].min())
    # how far Cov(F | s, θ) varies with the secret s (Thm 1 assumes it does not)
    spread = np.abs(c - c[:, :1]).max(axis=(1, 2, 3)) / np.maximum(np.abs(c).max(), 1e-300)
    return SensitivityTerm(
        attribute,
        float(dist[t, p]),
        floor,
        {
            "worst_theta": int(t),
            "worst_pair": [int(ia[p]), int(ib[p])],
            "covariance_mismatch": float(spread.max()),
        },
    )


def delta_with_moments(
    calibration: APGMCalibration,
    means: ArrayLike,
    covariances: ArrayLike,
    pairs: Sequence[tuple[int, int]],
) -> float:
    """The exact δ at ε of a calibrated noise when Cov(F | s, θ) differs between the secrets
    (Thm 1's assumption off): max over θ, pairs and both orders of the privacy profile of
    N(m_a, S_a + Σ_Z) against N(m_b, S_b + Σ_Z) (:func:`distprivacy.profiles.gaussian_profile`,
    exact up to 1e-10). Shapes as in :func:`conditional_moments_term`."""
    from distprivacy.profiles import gaussian_profile

    m = _as_matrix(means, "the conditional means")
    c = _as_matrix(covariances, "the conditional covariances")
    if m.ndim == 2:
        m, c = m[..., None], c[..., None, None]
    Z = calibration.noise_covariance
    if m.shape[-1] != Z.shape[0] or c.shape != (*m.shape, m.shape[-1]):
        raise DistPrivacyError("the moments do not match the calibration's statistics")
    worst = 0.0
    for t in range(m.shape[0]):
        for a, b in pairs:
            for x, y in ((a, b), (b, a)):
                d, _ = gaussian_profile(
                    m[t, x], c[t, x] + Z, m[t, y], c[t, y] + Z, calibration.epsilon
                )
                worst = max(worst, d)
    return worst


@dataclass(frozen=True)
class APGMCalibration:
    """A calibrated Attribute-Private Gaussian Mechanism, inspectable before any release.

    Attributes
    ----------
    epsilon, delta : float
        The target (ε, δ)-dataset attribute privacy.
    rule : {"exact", "classic"}
    statistics : tuple of str
        Names of the k released statistics.
    terms : tuple of SensitivityTerm
        Δ_i F and the covariance floor for each i ∈ C.
    multiplier : float
        c/ε (classic) or 1/μ* (exact): the noise makes Cov(F + Z | s, θ) ⪰ (multiplier·Δ_i)² I.
    noise_covariance : ndarray (k, k)
        Cov(Z) (all zeros: F is released unchanged).
    mu : float
        The μ-GDP guarantee: max_i Δ_i / √λ_min(L_i + Cov Z) (0 if every Δ_i = 0).
    delta_achieved : float
        δ_μ(ε), the exact δ the noise achieves at ε (≤ δ for ``exact``).
    warnings : tuple of str
    """

    epsilon: float
    delta: float
    rule: str
    statistics: tuple[str, ...]
    terms: tuple[SensitivityTerm, ...]
    multiplier: float
    noise_covariance: np.ndarray
    mu: float
    delta_achieved: float
    warnings: tuple[str, ...] = ()
    mechanism: str = "APGM"
    theorem: str = THEOREM

    @property
    def binding(self) -> SensitivityTerm:
        """The sensitive attribute that sets the noise (largest required top-up)."""
        return max(self.terms, key=lambda t: (self.multiplier * t.sensitivity) ** 2 - _lmin(t))

    @property
    def sensitivity(self) -> float:
        """Δ F of the binding attribute (the paper's Δ_gndr F in §4.2)."""
        return self.binding.sensitivity

    @property
    def conditional_variance(self) -> float:
        """min_θ Var(F | g_i, θ) of the binding attribute (λ_min of the floor if k > 1)."""
        return _lmin(self.binding)

    @property
    def noise_variance(self) -> float:
        """σ² of Alg. 1 (k = 1); the largest noise variance along any direction if k > 1."""
        return float(np.linalg.eigvalsh(self.noise_covariance)[-1])

    @property
    def adds_noise(self) -> bool:
        return bool(self.noise_variance > 0)

    @property
    def noise(self) -> NoiseDistribution:
        k = len(self.statistics)
        if not self.adds_noise:
            return NoiseDistribution.none(k)
        return NoiseDistribution.gaussian_from_covariance(self.noise_covariance)

    @property
    def expected_error(self) -> float:
        """E‖Z‖₂ exactly (k = 1: E|Z| = σ √(2/π)), the metric of the paper's §4.2 table."""
        return 0.0 if not self.adds_noise else float(self.noise.expected_l2_error)

    def accuracy(self, beta: float) -> float:
        """Thm 2: α with P(|M(X) − F(X)| > α) ≤ β, α = σ Φ⁻¹(1 − β/2) (k = 1); for k > 1 the
        per-coordinate bound with the largest coordinate variance."""
        b = float(beta)
        if not (0 < b < 1):
            raise DistPrivacyError(f"beta must lie in (0, 1), got {beta!r}")
        sd = math.sqrt(float(np.diag(self.noise_covariance).max()))
        return sd * float(special.ndtri(1 - b / 2))

    def release(
        self,
        value: float | ArrayLike,
        rng: RandomState = None,
        *,
        size: int | None = None,
    ) -> np.ndarray | float:
        """M(X) = F(X) + Z.

        Parameters
        ----------
        value : float or array (k,)
            F(X) of the dataset being released.
        rng : None, int or Generator
            None (default): OpenDP's secure sampler. A seed or generator: reproducible noise,
            for experiments only.
        size : int, optional
            Draw ``size`` independent releases at once (shape (size, k), or (size,) if k = 1).
        """
        k = len(self.statistics)
        v = np.atleast_1d(_as_matrix(value, "the value to release"))
        if v.shape != (k,):
            raise DistPrivacyError(
                f"the value to release has shape {v.shape}, expected ({k},) for "
                f"{list(self.statistics)}"
            )
        z = self.noise.sample(size, check_random_state(rng, secure=True))
        out = v + z
        if k == 1:
            return float(out[0]) if size is None else out[:, 0]
        return out

    def to_dict(self) -> dict[str, Any]:
        b = self.binding
        return {
            "mechanism": self.mechanism,
            "theorem": self.theorem,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "rule": self.rule,
            "statistics": list(self.statistics),
            "binding_attribute": b.attribute,
            "sensitivity": self.sensitivity,
            "conditional_variance": self.conditional_variance,
            "noise_variance": self.noise_variance,
            "noise_covariance": self.noise_covariance.tolist(),
            "adds_noise": self.adds_noise,
            "expected_error": self.expected_error,
            "accuracy_beta_0.05": self.accuracy(0.05),
            "multiplier": self.multiplier,
            "mu": self.mu,
            "delta_achieved": self.delta_achieved,
            "terms": [
                {
                    "attribute": t.attribute,
                    "sensitivity": t.sensitivity,
                    "conditional_covariance_floor": t.floor.tolist(),
                    "details": _plain(t.details),
                }
                for t in self.terms
            ],
            "warnings": list(self.warnings),
        }


def _plain(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.floating | np.integer):
        return x.item()
    if isinstance(x, Mapping):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_plain(v) for v in x]
    return x


def _lmin(t: SensitivityTerm) -> float:
    return float(np.linalg.eigvalsh(t.floor)[0])


def _top_up(floor: np.ndarray, target: float) -> np.ndarray:
    """The least Σ_Z along floor's eigenvectors with floor + Σ_Z ⪰ target·I."""
    w, U = np.linalg.eigh(floor)
    return (U * np.clip(target - w, 0.0, None)) @ U.T


class AttributeGaussianMechanism:
    """Attribute-Private Gaussian Mechanism (Zhang, Ohrimenko & Cummings 2022, Alg. 1).

    (ε, δ)-dataset attribute private by Thm 1 when F(X) | g_i(X_i) is Gaussian with a
    secret-independent variance for every θ ∈ Θ and i ∈ C; (α, β)-accurate by Thm 2.

    Parameters
    ----------
    epsilon : float
        ε > 0.
    delta : float
        δ ∈ (0, 1).
    rule : {"exact", "classic"}
        ``classic``: c = √(2 ln(1.25/δ)) as in Alg. 1. ``exact`` (default): the least noise
        whose μ-GDP guarantee implies (ε, δ) exactly (module docstring).
    """

    def __init__(self, *, epsilon: float, delta: float, rule: str = "exact") -> None:
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        self.rule = check_rule(rule)

    @property
    def multiplier(self) -> float:
        from distprivacy.profiles import gdp_mu

        if self.rule == "classic":
            return classic_c(self.delta) / self.epsilon
        # 1/μ*, enlarged by 1e-12 so that rounding in the top-up never exceeds δ
        return (1.0 + 1e-12) / gdp_mu(self.epsilon, self.delta)

    def calibrate_terms(
        self, terms: Sequence[SensitivityTerm], statistics: Sequence[str] | None = None
    ) -> APGMCalibration:
        """Algorithm 1 from Δ_i F and the covariance floors (the general form)."""
        from distprivacy.profiles import gdp_delta

        terms = tuple(terms)
        if not terms:
            raise DistPrivacyError("give at least one sensitive attribute")
        k = terms[0].floor.shape[0]
        if any(t.floor.shape != (k, k) for t in terms):
            raise DistPrivacyError(
                "the sensitive attributes' conditional covariances differ in size"
            )
        names = tuple(statistics) if statistics is not None else tuple(f"F{j}" for j in range(k))
        if len(names) != k:
            raise DistPrivacyError(f"{len(names)} statistic names for {k} statistics")
        r = self.multiplier
        if len(terms) == 1 or k == 1:
            covs = [_top_up(t.floor, (r * t.sensitivity) ** 2) for t in terms]
            noise = max(covs, key=lambda S: float(np.trace(S)))
        else:  # several attributes with different floors: isotropic, the safe common choice
            noise = np.eye(k) * max(max((r * t.sensitivity) ** 2 - _lmin(t), 0.0) for t in terms)
        noise = (noise + noise.T) / 2
        mus = []
        for t in terms:
            lam = float(np.linalg.eigvalsh(t.floor + noise)[0])
            if t.sensitivity == 0:
                mus.append(0.0)
            elif lam <= 0:
                mus.append(math.inf)
            else:
                mus.append(t.sensitivity / math.sqrt(lam))
        mu = max(mus)
        achieved = 1.0 if math.isinf(mu) else float(gdp_delta(self.epsilon, mu))
        warns = []
        for t in terms:
            mismatch = float(t.details.get("covariance_mismatch", 0.0))
            if mismatch > 1e-9:
                warns.append(
                    f"Cov(F | s, θ) of {t.attribute!r} varies with the secret (by up to "
                    f"{mismatch:.1%} of its largest entry) but Thm 1 assumes it does not; the "
                    "noise uses the smallest, and delta_with_moments() gives the exact δ"
                )
        if self.rule == "classic" and self.epsilon >= 1:
            warns.append(
                f"epsilon={self.epsilon:g} ≥ 1: c = √(2 ln(1.25/δ)) is proven only for ε < 1; "
                f"the exact δ this noise achieves is {achieved:.3g}"
            )
        return APGMCalibration(
            epsilon=self.epsilon,
            delta=self.delta,
            rule=self.rule,
            statistics=names,
            terms=terms,
            multiplier=r,
            noise_covariance=noise,
            mu=mu,
            delta_achieved=achieved,
            warnings=tuple(warns),
        )

    def calibrate_moments(
        self,
        attribute: str,
        means: ArrayLike,
        covariances: ArrayLike,
        pairs: Sequence[tuple[int, int]],
        statistics: Sequence[str] | None = None,
    ) -> APGMCalibration:
        """Algorithm 1 from conditional moments E[F | s, θ], Cov(F | s, θ) over a finite Θ."""
        term = conditional_moments_term(attribute, means, covariances, pairs)
        return self.calibrate_terms([term], statistics)

    def calibrate(
        self,
        framework: AttributeFramework,
        theta: GaussianTheta | RegressionTheta,
        query: Sequence[str] | str,
        *,
        pair_distance: str = "sup",
    ) -> APGMCalibration:
        """§4.2: F = the means of the ``query`` attributes over n i.i.d. Gaussian records,
        g_i = the mean of each sensitive attribute i, Θ a family of Gaussians.

        Parameters
        ----------
        framework : AttributeFramework
            Dataset attribute privacy framework: pairs Q and n.
        theta : GaussianTheta or RegressionTheta
        query : str or sequence of str
            Attributes whose means are released.
        pair_distance : {"sup", "centres"}
            d(U) for interval secrets: the supremum of |a − b| (Eq. 1 with point
            conditioning) or the distance of the intervals' centres (the paper's arithmetic).
        """
        if framework.kind != "dataset":
            raise DistPrivacyError(
                "the Gaussian mechanism is for dataset attribute privacy; convert a "
                "distributional framework with .to_dataset() (§3, unbiased estimator)"
            )
        if pair_distance not in PAIR_READINGS:
            raise DistPrivacyError(f"pair_distance must be one of {PAIR_READINGS}")
        q = [query] if isinstance(query, str) else list(query)
        if not q:
            raise DistPrivacyError("name at least one attribute to release")
        for a in framework.sensitive:
            if a in q:
                raise DistPrivacyError(f"the released attributes include the sensitive {a!r}")
        terms = [
            theta.term(a, q, framework.n, framework.diameter(a, pair_distance))
            for a in framework.sensitive
        ]
        return self.calibrate_terms(terms, [f"mean({a})" for a in q])


# ---------------------------------------------------------------------------------------------
# Θ for the multivariate Gaussian instantiation (§4.2)
# ---------------------------------------------------------------------------------------------


def conditional_mean(
    mean: ArrayLike, cov: ArrayLike, i: int, j: int | Sequence[int], a: float
) -> np.ndarray:
    """E[mean of X_J | mean of X_i = a] = μ_J + (V_Ji/V_ii)(a − μ_i) (§4.2)."""
    mu = _as_matrix(mean, "mean")
    V = _as_matrix(cov, "covariance")
    J = np.atleast_1d(j)
    return mu[J] + V[J, i] / V[i, i] * (float(a) - mu[i])


def conditional_covariance(cov: ArrayLike, i: int, j: int | Sequence[int], n: int) -> np.ndarray:
    """Cov(mean of X_J | mean of X_i) = (V_JJ − V_Ji V_iJ / V_ii)/n (§4.2)."""
    V = _as_matrix(cov, "covariance")
    J = np.atleast_1d(j)
    v = V[J, i]
    return (V[np.ix_(J, J)] - np.outer(v, v) / V[i, i]) / _check_n(n)


def _slopes_and_residuals(V: np.ndarray, i: int, J: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For a stack of covariances V (T, m, m): slopes V_Ji/V_ii (T, k) and residual covariances
    V_JJ − V_Ji V_iJ/V_ii (T, k, k)."""
    vii = V[:, i, i]
    vJi = V[:, J, i]
    beta = vJi / vii[:, None]
    resid = V[:, J][:, :, J] - vJi[:, :, None] * vJi[:, None, :] / vii[:, None, None]
    return beta, resid


def _check_pd(V: np.ndarray, names: Sequence[str], where: str) -> None:
    w = np.linalg.eigvalsh(V)
    bad = np.flatnonzero(w[:, 0] <= 1e-12 * np.maximum(1.0, np.abs(w[:, -1])))
    if bad.size:
        raise DistPrivacyError(
            f"{where} {int(bad[0])} over ({', '.join(names)}) is not positive definite "
            f"(smallest eigenvalue {w[bad[0], 0]:.3g}); a covariance needs positive variances "
            "and |V_ij| < √(V_ii V_jj)"
        )


@dataclass(frozen=True)
class GaussianTheta:
    """Θ: multivariate Gaussian record distributions N(μ, V), a finite list of V (§4.2).

    Only V enters the mechanism (Δ and the conditional variance do not depend on μ).

    Parameters
    ----------
    names : sequence of str
        The m attributes.
    covariances : array (T, m, m) or (m, m)
        The covariance of each θ ∈ Θ; each must be positive definite.
    means : array (T, m) or (m,), optional
        The means (used by :func:`conditional_mean` and for simulation only).
    """

    names: tuple[str, ...]
    covariances: np.ndarray
    means: np.ndarray | None = None

    def __post_init__(self) -> None:
        names = tuple(self.names)
        if len(set(names)) != len(names) or not names:
            raise DistPrivacyError("attribute names must be distinct and non-empty")
        V = _as_matrix(self.covariances, "covariance")
        if V.ndim == 2:
            V = V[None]
        m = len(names)
        if V.ndim != 3 or V.shape[1:] != (m, m):
            raise DistPrivacyError(
                f"covariance has shape {V.shape[1:] if V.ndim == 3 else V.shape}, expected "
                f"({m}, {m}) for attributes {list(names)}"
            )
        if not np.allclose(V, np.swapaxes(V, 1, 2), atol=1e-12 * (1 + abs(V).max())):
            raise DistPrivacyError("covariance matrices must be symmetric")
        if (np.diagonal(V, axis1=1, axis2=2) <= 0).any():
            raise DistPrivacyError("variances on the covariance diagonal must be positive")
        _check_pd(V, names, "covariance")
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "covariances", V)
        if self.means is not None:
            mu = _as_matrix(self.means, "mean")
            mu = np.broadcast_to(mu, (V.shape[0], m)) if mu.ndim == 1 else mu
            if mu.shape != (V.shape[0], m):
                raise DistPrivacyError(
                    f"means have shape {mu.shape}, expected ({V.shape[0]}, {m}) or ({m},)"
                )
            object.__setattr__(self, "means", np.array(mu))

    @classmethod
    def from_ranges(
        cls,
        names: Sequence[str],
        cov_low: ArrayLike,
        cov_high: ArrayLike,
        *,
        sensitive: str,
        query: Sequence[str],
    ) -> GaussianTheta:
        """Θ = every covariance with V_ab ∈ [low_ab, high_ab] (only the entries among the
        sensitive and query attributes matter). sup_Θ |V_ij|/V_ii, min_Θ λ_min of the residual
        covariance and hence Alg. 1's noise are attained at vertices of the box (each is
        monotone or concave in every entry), so Θ is represented by its vertices, each of which
        must be positive definite."""
        names = tuple(names)
        lo, hi = _as_matrix(cov_low, "cov_low"), _as_matrix(cov_high, "cov_high")
        m = len(names)
        if lo.shape != (m, m) or hi.shape != (m, m):
            raise DistPrivacyError(f"covariance ranges must have shape ({m}, {m})")
        if (lo > hi).any():
            raise DistPrivacyError("a covariance range has low > high")
        if not (np.allclose(lo, lo.T) and np.allclose(hi, hi.T)):
            raise DistPrivacyError("covariance ranges must be symmetric")
        idx = [_index(names, sensitive), *(_index(names, q) for q in query)]
        entries = [(a, b) for x, a in enumerate(idx) for b in idx[x:]]
        free = [(a, b) for a, b in entries if lo[a, b] != hi[a, b]]
        if len(free) > _MAX_BOX_ENTRIES:
            raise DistPrivacyError(
                f"{len(free)} covariance entries vary; at most {_MAX_BOX_ENTRIES} (release fewer "
                "attributes at once or give Θ as a list of covariances)"
            )
        base = (lo + hi) / 2
        verts = np.repeat(base[None], 2 ** len(free), axis=0)
        for v, corner in enumerate(itertools.product((0, 1), repeat=len(free))):
            for (a, b), c in zip(free, corner, strict=True):
                verts[v, a, b] = verts[v, b, a] = hi[a, b] if c else lo[a, b]
        sub = verts[:, idx][:, :, idx]
        _check_pd(sub, [names[i] for i in idx], "the covariance-range vertex")
        # attributes outside the problem are irrelevant: keep the sub-problem only
        return cls(tuple(names[i] for i in idx), sub)

    def term(
        self, sensitive: str, query: Sequence[str], n: int, diameter: float
    ) -> SensitivityTerm:
        """Δ_i F = max_θ ‖V_Ji/V_ii‖ d(U) and the floor min_θ (V_JJ − V_Ji V_iJ/V_ii)/n."""
        n = _check_n(n)
        i = _index(self.names, sensitive)
        J = np.array([_index(self.names, q) for q in query])
        beta, resid = _slopes_and_residuals(self.covariances, i, J)
        norms = np.linalg.norm(beta, axis=1)
        t = int(np.argmax(norms))
        if len(J) == 1:
            floor = np.array([[resid[:, 0, 0].min()]])
        elif len(resid) == 1:
            floor = resid[0]
        else:
            floor = np.eye(len(J)) * float(np.linalg.eigvalsh(resid)[:, 0].min())
        return SensitivityTerm(
            sensitive,
            float(norms[t]) * float(diameter),
            floor / n,
            {
                "max_slope": float(norms[t]),
                "slope_worst_theta": beta[t].tolist(),
                "diameter": float(diameter),
                "n": n,
                "thetas": len(self.covariances),
            },
        )

    def conditionals(
        self, sensitive: str, query: Sequence[str], n: int, diameter: float
    ) -> dict[str, dict[str, Any]]:
        """For the Pufferfish Wasserstein Mechanism: per θ, the Gaussian laws of F (up to a
        common shift) given two secrets at distance d(U): N(β_θ a, R_θ/n), a ∈ {0, d}."""
        from distprivacy.attribute.pufferfish import GaussianConditional

        n = _check_n(n)
        i = _index(self.names, sensitive)
        J = np.array([_index(self.names, q) for q in query])
        beta, resid = _slopes_and_residuals(self.covariances, i, J)
        return {
            f"theta{t}": {
                "a": GaussianConditional(np.zeros(len(J)), resid[t] / n),
                "b": GaussianConditional(beta[t] * diameter, resid[t] / n),
            }
            for t in range(len(beta))
        }


def _index(names: Sequence[str], name: str) -> int:
    try:
        return list(names).index(name)
    except ValueError:
        raise DistPrivacyError(
            f"unknown attribute {name!r}; the attributes are {', '.join(names)}"
        ) from None


def _interval(value: Any, name: str) -> tuple[float, float]:
    if isinstance(value, int | float | np.floating | np.integer):
        lo = hi = float(value)
    else:
        try:
            lo, hi = (float(v) for v in value)
        except (TypeError, ValueError):
            raise DistPrivacyError(f"{name} must be a number or a [low, high] range") from None
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        raise DistPrivacyError(f"{name} must be a finite range with low ≤ high, got {value!r}")
    return lo, hi


@dataclass(frozen=True)
class RegressionTheta:
    """Θ given by ranges of the two §4.2 quantities, per (sensitive i, query j):

    * the slope V_ij/V_ii (for a 0/1 sensitive attribute: E[X_j | X_i = 1] − E[X_j | X_i = 0]);
    * the residual variance V_jj − V_ij²/V_ii = Var(X_j | X_i) per record.

    Any slope with any positive residual variance is a valid Gaussian, so every box is a valid Θ.
    Residuals of different query attributes are taken as independent given X_i (a vector query
    gets a diagonal residual covariance).

    Parameters
    ----------
    slopes : mapping (i, j) -> float or (low, high)
    residual_variances : mapping (i, j) -> float or (low, high), each > 0
    """

    slopes: Mapping[tuple[str, str], tuple[float, float]]
    residual_variances: Mapping[tuple[str, str], tuple[float, float]]

    def __post_init__(self) -> None:
        s = {tuple(k): _interval(v, f"slope of {k}") for k, v in self.slopes.items()}
        r = {
            tuple(k): _interval(v, f"residual variance of {k}")
            for k, v in self.residual_variances.items()
        }
        if set(s) != set(r):
            raise DistPrivacyError("give a slope and a residual variance for the same pairs (i, j)")
        for k, (lo, _) in r.items():
            if lo <= 0:
                raise DistPrivacyError(
                    f"the residual variance of {k[1]!r} given {k[0]!r} must be positive, got {lo:g}"
                )
        object.__setattr__(self, "slopes", s)
        object.__setattr__(self, "residual_variances", r)

    def term(
        self, sensitive: str, query: Sequence[str], n: int, diameter: float
    ) -> SensitivityTerm:
        """Δ_i F = ‖(max |slope_ij|)_j‖ d(U); floor = diag(min residual variance_ij)/n."""
        n = _check_n(n)
        missing = [q for q in query if (sensitive, q) not in self.slopes]
        if missing:
            raise DistPrivacyError(
                f"Θ gives no slope/residual variance for {missing} given {sensitive!r}"
            )
        slope = np.array([max(abs(v) for v in self.slopes[(sensitive, q)]) for q in query])
        resid = np.array([self.residual_variances[(sensitive, q)][0] for q in query])
        return SensitivityTerm(
            sensitive,
            float(np.linalg.norm(slope)) * float(diameter),
            np.diag(resid) / n,
            {
                "max_slope": slope.tolist(),
                "min_residual_variance": resid.tolist(),
                "diameter": float(diameter),
                "n": n,
            },
        )

    def conditionals(
        self, sensitive: str, query: Sequence[str], n: int, diameter: float
    ) -> dict[str, dict[str, Any]]:
        """For the Pufferfish Wasserstein Mechanism: per vertex of the slope box, the Gaussian
        laws of F given two secrets at distance d(U) (W∞ = ‖slope‖₁ d is convex in the slopes,
        so its maximum over the box is at a vertex)."""
        from distprivacy.attribute.pufferfish import GaussianConditional

        n = _check_n(n)
        self.term(sensitive, query, n, diameter)  # validates the attributes
        cov = np.diag([self.residual_variances[(sensitive, q)][0] for q in query]) / n
        out: dict[str, dict[str, Any]] = {}
        for corner in itertools.product(*(self.slopes[(sensitive, q)] for q in query)):
            slope = np.array(corner, dtype=float)
            label = "slopes=(" + ", ".join(f"{v:g}" for v in corner) + ")"
            out[label] = {
                "a": GaussianConditional(np.zeros(len(query)), cov),
                "b": GaussianConditional(slope * diameter, cov),
            }
        return out


# ---------------------------------------------------------------------------------------------
# A user's problem, from a dict / JSON / TOML file (used by ``distprivacy attribute gaussian``)
# ---------------------------------------------------------------------------------------------


def _problem_schema() -> Table:
    """The schema of a problem (file or dict): every key, its type and shape."""
    value_or_range = AnyOf(
        Number(), Pair(Number(), example="[low, high]"), noun="a number or [low, high]"
    )
    per_attribute = MapOf(
        value_or_range,
        noun="an object mapping query attributes to a number or [low, high]",
        example='{"bp": [6, 10]}',
        min_len=1,
    )
    # shapes against the attributes are checked by GaussianTheta (which names them)
    matrix = Array((None, None), noun="a matrix of finite numbers (a list of rows)")
    return Table(
        {
            "attributes": Field(
                ListOf(Str(), min_len=1, unique=True, noun="names", example='["g", "w"]')
            ),
            "sensitive": Field(Str()),
            "query": Field(
                AnyOf(
                    Str(),
                    ListOf(Str(), min_len=1, noun="names", example='["bp"]'),
                    noun='an attribute name or a list of them, such as "bp" or ["bp", "w"]',
                )
            ),
            "n": Field(Int(minimum=1)),
            "secrets": Field(
                ListOf(
                    AnyOf(Str(), Number(), noun="a value or an interval string"),
                    min_len=2,
                    noun="secrets",
                    example='["(0.25,0.5)", "(0.5,0.75)"]',
                )
            ),
            "pairs": Field(
                ListOf(
                    Pair(Int(minimum=0), example="[0, 1]"),
                    min_len=1,
                    noun="pairs of secret indices",
                    example="[[0, 1]]",
                )
            ),
            "binary": Field(Bool()),
            "parameter_range": Field(Pair(Number(finite=False), example="[low, high]")),
            "means": Field(
                AnyOf(
                    Array((None,)),
                    Array((None, None)),
                    noun="a list of m numbers or one such list per covariance",
                )
            ),
            "covariances": Field(
                AnyOf(
                    matrix,
                    Array((None, None, None)),
                    noun="a matrix or a list of matrices of finite numbers",
                )
            ),
            "cov_low": Field(matrix),
            "cov_high": Field(matrix),
            "slopes": Field(per_attribute),
            "residual_variances": Field(per_attribute),
            "epsilon": Field(Number()),
            "delta": Field(Number()),
            "rule": Field(Str(RULES)),
            "pair_distance": Field(Str(PAIR_READINGS)),
        },
        noun="an object (see distprivacy attribute gaussian --help)",
    )


#: The schema of a problem (:meth:`GaussianProblem.from_dict`, and a problem file completed by
#: command-line options).
PROBLEM_SCHEMA = _problem_schema()
#: The schema of a problem file read on its own (:meth:`GaussianProblem.from_file`).
PROBLEM_FILE_SCHEMA = Table(
    {
        k: Field(f.schema, required=k in ("sensitive", "query", "n", "secrets"))
        for k, f in PROBLEM_SCHEMA.fields.items()
    },
    noun=PROBLEM_SCHEMA.noun,
)
_PROBLEM_KEYS = frozenset(PROBLEM_SCHEMA.fields)


@dataclass(frozen=True)
class GaussianProblem:
    """A dataset-attribute-privacy problem for §4.2: who is sensitive, what is released, the
    secrets, n and Θ (covariance list, covariance box, or slope / residual-variance ranges).

    Keys of :meth:`from_dict` (JSON or TOML files hold the same):
    ``sensitive`` (str), ``query`` (str or list), ``n`` (int), ``secrets`` (≥ 2 values or
    intervals such as "(0.25,0.5)"), optional ``pairs`` (index pairs; default all),
    ``binary`` (the sensitive column is 0/1; default false), ``parameter_range`` ([low, high] of
    φ over Θ), and Θ as one of: ``attributes`` + ``covariances`` (one m×m matrix or a list of
    them; optional ``means``), ``attributes`` + ``cov_low`` + ``cov_high``, or ``slopes`` +
    ``residual_variances`` (maps query attribute -> value or [low, high]). Optional
    ``epsilon``, ``delta``, ``rule``, ``pair_distance``.
    """

    framework: AttributeFramework
    theta: GaussianTheta | RegressionTheta
    query: tuple[str, ...]
    settings: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> GaussianProblem:
        from distprivacy.attribute.framework import (
            AttributeDomain,
            DatasetAttributeFramework,
            pairs_from_sets,
        )

        raw = validate(raw, PROBLEM_SCHEMA, "the problem")
        for key in ("sensitive", "query", "n", "secrets"):
            if raw.get(key) in (None, "", []):
                raise DistPrivacyError(f"the problem needs {key!r}")
        sensitive = str(raw["sensitive"])
        query = raw["query"]
        query = (query,) if isinstance(query, str) else tuple(query)
        n = raw["n"]
        binary = raw.get("binary", False)
        prange = raw.get("parameter_range")
        if prange is None:
            prange = (0.0, 1.0) if binary else (-math.inf, math.inf)
        dom = AttributeDomain(sensitive, binary=binary, parameter_range=tuple(prange))
        pair_idx = raw.get("pairs")
        pairs = pairs_from_sets(
            sensitive,
            list(raw["secrets"]),
            pairs=pair_idx,
        )
        fw = DatasetAttributeFramework(pairs=pairs, domains=(dom,), n=n)
        forms = [k for k in ("covariances", "cov_low", "slopes") if raw.get(k) is not None]
        if len(forms) != 1:
            raise DistPrivacyError(
                "give Θ in exactly one form: covariances, cov_low + cov_high, or slopes + "
                "residual_variances"
            )
        if forms[0] == "slopes":
            if raw.get("residual_variances") is None:
                raise DistPrivacyError("slopes need residual_variances too")
            for key in ("slopes", "residual_variances"):
                lacking = [q for q in query if q not in raw[key]]
                if lacking:
                    raise DistPrivacyError(
                        f"{key} gives no value for the query attribute(s) {lacking}; give one "
                        f"per query attribute ({', '.join(query)})"
                    )
            theta: GaussianTheta | RegressionTheta = RegressionTheta(
                {(sensitive, q): v for q, v in raw["slopes"].items()},
                {(sensitive, q): v for q, v in raw["residual_variances"].items()},
            )
        else:
            names = raw.get("attributes")
            if not names:
                raise DistPrivacyError("a covariance form of Θ needs 'attributes' (their order)")
            names = tuple(names)
            unknown = [a for a in (sensitive, *query) if a not in names]
            if unknown:
                raise DistPrivacyError(
                    f"unknown attribute {unknown[0]!r} (sensitive or queried); the attributes "
                    f"are {', '.join(names)}"
                )
            if forms[0] == "covariances":
                theta = GaussianTheta(names, raw["covariances"], raw.get("means"))
            else:
                if raw.get("cov_high") is None:
                    raise DistPrivacyError("cov_low needs cov_high too")
                theta = GaussianTheta.from_ranges(
                    names, raw["cov_low"], raw["cov_high"], sensitive=sensitive, query=query
                )
        settings = {k: raw[k] for k in ("epsilon", "delta", "rule", "pair_distance") if k in raw}
        return cls(fw, theta, query, settings)

    @classmethod
    def from_file(cls, path: str) -> GaussianProblem:
        """Read a JSON (.json) or TOML (.toml) problem file (checked against
        :data:`PROBLEM_SCHEMA`, with ``sensitive``, ``query``, ``n`` and ``secrets``
        required); every error names the file."""
        source = f"problem file {Path(path).name!r}"
        raw = read_mapping_file(path, "problem file", PROBLEM_FILE_SCHEMA)
        try:
            return cls.from_dict(raw)
        except DistPrivacyError as e:
            raise type(e)(f"{source}: {e}") from None

    def calibrate(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        rule: str | None = None,
        pair_distance: str | None = None,
    ) -> APGMCalibration:
        """Algorithm 1 on this problem; arguments override the problem's own settings."""
        s = self.settings
        eps = epsilon if epsilon is not None else s.get("epsilon")
        dlt = delta if delta is not None else s.get("delta")
        if eps is None or dlt is None:
            raise DistPrivacyError("give epsilon and delta (e.g. --epsilon 1 --delta 0.001)")
        mech = AttributeGaussianMechanism(
            epsilon=eps, delta=dlt, rule=rule or s.get("rule", "exact")
        )
        return mech.calibrate(
            self.framework,
            self.theta,
            self.query,
            pair_distance=pair_distance or s.get("pair_distance", "sup"),
        )

    def calibrate_wasserstein(
        self, *, epsilon: float | None = None, pair_distance: str | None = None
    ) -> Any:
        """The Pufferfish Wasserstein Mechanism (Song et al. 2017) on this problem: Laplace noise
        of scale W/ε with W = max over θ (and sensitive attributes) of W∞ between the Gaussian
        conditionals of F, which is ‖β_θ‖₁ d(U) (their covariances are equal)."""
        from distprivacy.attribute.pufferfish import PufferfishWassersteinMechanism

        eps = epsilon if epsilon is not None else self.settings.get("epsilon")
        if eps is None:
            raise DistPrivacyError("give epsilon (e.g. --epsilon 1)")
        reading = pair_distance or self.settings.get("pair_distance", "sup")
        if reading not in PAIR_READINGS:
            raise DistPrivacyError(f"pair_distance must be one of {PAIR_READINGS}")
        conds: dict[str, dict[str, Any]] = {}
        for a in self.framework.sensitive:
            d = self.framework.diameter(a, reading)
            for label, c in self.theta.conditionals(a, self.query, self.framework.n, d).items():
                conds[f"{a}:{label}"] = c
        return PufferfishWassersteinMechanism(epsilon=eps).calibrate(conds, [("a", "b")])


def read_problem_file(path: str) -> dict[str, Any]:
    """The problem of a JSON (.json) or TOML (.toml) file, checked against
    :data:`PROBLEM_SCHEMA` (errors name the file and the key), for
    :meth:`GaussianProblem.from_dict`."""
    return read_mapping_file(path, "problem file", PROBLEM_SCHEMA)
