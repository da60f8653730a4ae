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

Modules (every name is importable from here)
--------------------------------------------
``_gaussian_terms``
    Δ_i F and the covariance floor (:class:`SensitivityTerm`), from conditional moments.
``_gaussian_mechanism``
    :class:`AttributeGaussianMechanism` and :class:`APGMCalibration` (the
    :class:`~distprivacy.guarantee.Calibrated` protocol: ``guarantee``, ``release`` →
    :class:`~distprivacy.guarantee.Release`, ``to_dict``/``from_dict``).
``_gaussian_theta``
    Θ of §4.2: :class:`GaussianTheta`, :class:`RegressionTheta`.
``_gaussian_problem``
    :class:`GaussianProblem`, a user's problem from a dict or a file.
"""

from __future__ import annotations

from distprivacy.accounting import classic_c
from distprivacy.attribute._gaussian_mechanism import (
    BASIS_GAUSSIAN_THETA,
    BASIS_MOMENTS,
    APGMCalibration,
    AttributeGaussianMechanism,
    apgm_warnings,
    delta_with_moments,
)
from distprivacy.attribute._gaussian_problem import (
    PROBLEM_FILE_SCHEMA,
    PROBLEM_SCHEMA,
    GaussianProblem,
    read_problem_file,
)
from distprivacy.attribute._gaussian_terms import (
    PAIR_READINGS,
    RULES,
    THEOREM,
    SensitivityTerm,
    conditional_moments_term,
)
from distprivacy.attribute._gaussian_theta import (
    GaussianTheta,
    RegressionTheta,
    conditional_covariance,
    conditional_mean,
)

__all__ = [
    "BASIS_GAUSSIAN_THETA",
    "BASIS_MOMENTS",
    "PAIR_READINGS",
    "PROBLEM_FILE_SCHEMA",
    "PROBLEM_SCHEMA",
    "RULES",
    "THEOREM",
    "APGMCalibration",
    "AttributeGaussianMechanism",
    "GaussianProblem",
    "GaussianTheta",
    "RegressionTheta",
    "SensitivityTerm",
    "apgm_warnings",
    "classic_c",
    "conditional_covariance",
    "conditional_mean",
    "conditional_moments_term",
    "delta_with_moments",
    "read_problem_file",
]
