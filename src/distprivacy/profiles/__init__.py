"""Exact privacy profiles of Gaussian mechanisms.

The output of a mechanism is ``P = N(m_P, A)`` under θ_i and ``Q = N(m_Q, B)`` under θ_j. Its
privacy profile (Balle & Wang, ICML 2018, Thm 5; Balle, Barthe & Gaboardi 2018) is

    δ_{P‖Q}(ε) = sup_S P(S) − e^ε Q(S) = E_{x∼P}[(1 − e^{ε − L(x)})₊],   L = log(dP/dQ),

for ε ≥ 0; δ(0) is the total variation distance. The ordered pair is (ε, δ)-distribution
private (Kawamoto & Murakami 2019; Chen & Ohrimenko 2023) iff δ_{P‖Q}(ε) ≤ δ.

Equal covariances (A = B)
    L is normal, N(μ²/2, μ²) with μ² = (m_P − m_Q)ᵀ A⁻¹ (m_P − m_Q): the mechanism is μ-GDP
    (Dong, Roth & Su 2019/2022, Cor. 2.13) and δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)
    (Balle & Wang 2018, Thm 8), evaluated here in log space (:func:`gdp_delta`).

Unequal covariances (A ≠ B)
    With A = R Rᵀ and x = m_P + R z, z ∼ N(0, I),

        L = γ + Σ_k (½ λ_k w_k² + β_k w_k),   w = Uᵀ z ∼ N(0, I),

    where U diag(λ) Uᵀ = Rᵀ(B⁻¹ − A⁻¹)R = Rᵀ B⁻¹ R − I, β = Uᵀ Rᵀ B⁻¹ d, d = m_P − m_Q and
    γ = ½ dᵀ B⁻¹ d + ½ (log det B − log det A) (:class:`PrivacyLoss`). Its characteristic
    function is φ(u) = exp(iuγ + Σ_k [−½ log(1 − iuλ_k) − u² β_k² / (2 (1 − iuλ_k))]). Since
    (1 − e^{ε−L})₊ = ∫_ε^∞ e^{ε−t} 1{L > t} dt, the Gil-Pelaez inversion formula (Gil-Pelaez
    1951) integrated against e^{ε−t} gives one integral without cancellation of large terms:

        δ(ε) = ½ + (1/π) ∫_0^∞ h(u) du,   h(u) = Im[φ(u) e^{−iuε} / (u (1 + iu))].

    (For L ≡ a it returns (1 − e^{ε−a})₊.)

The computation lives in private sub-modules, all re-exported here: ``_gdp`` (the μ-GDP closed
forms), ``_loss`` (:class:`PrivacyLoss`), ``_integral`` (the Gil-Pelaez integral, its
integration scheme and shortcuts: :func:`gaussian_profile`, :func:`gaussian_epsilon`),
``_support`` (singular covariances: :func:`common_support`) and ``_pairs`` (many pairs at once:
:class:`LossBatch`, :func:`gaussian_pair_losses`, :func:`profile_upper_bound`).
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name → the private module that defines it, imported on first use: the μ-GDP closed
#: forms (``_gdp``) load neither the integral nor SciPy's integrators, so a command that only
#: states a budget (``distprivacy ledger init``) does not pay for them.
_LAZY: dict[str, str] = {
    **dict.fromkeys(
        ("gdp_accuracy", "gdp_delta", "gdp_epsilon", "gdp_mu", "mu_for_accuracy"), "_gdp"
    ),
    **dict.fromkeys(
        (
            "_profile_integral",
            "gaussian_epsilon",
            "gaussian_profile",
            "loss_profile",
            "total_variation",
        ),
        "_integral",
    ),
    "PrivacyLoss": "_loss",
    **dict.fromkeys(("LossBatch", "gaussian_pair_losses", "profile_upper_bound"), "_pairs"),
    **dict.fromkeys(
        ("RANK_RTOL", "SUPPORT_RTOL", "CommonSupport", "common_support", "gaussian_profile_psd"),
        "_support",
    ),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later lookups (and monkeypatching) see a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "RANK_RTOL",
    "SUPPORT_RTOL",
    "CommonSupport",
    "LossBatch",
    "PrivacyLoss",
    "common_support",
    "gaussian_epsilon",
    "gaussian_pair_losses",
    "gaussian_profile",
    "gaussian_profile_psd",
    "gdp_accuracy",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "loss_profile",
    "mu_for_accuracy",
    "profile_upper_bound",
    "total_variation",
]
