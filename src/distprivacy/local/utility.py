"""Utility and interpretation: service quality loss and the Bayes-factor reading of DistP.

* Service quality loss (Kawamoto & Murakami, 004 §VII; notes "Experiments"):
  SQL = Σ_x π[x] Σ_y A(x)[y]·d(x, y) — the expected distance between a user's true location and
  the one the service answers for. For the tupling mechanism the user knows which entry is real
  and discards the others, so its SQL is the base mechanism's.
* Bayes factor (004 §III-E): if A is (ε, 0)-DistP for (λ, λ′), an observer's posterior odds of λ
  against λ′ after seeing one output are at most e^ε times the prior odds. With δ > 0 the
  bound can fail, but — for any ε′ > ε — only on outputs of total probability
  ≤ δ / (1 − e^{ε−ε′}) (if L = P/Q > e^{ε′} on B then P(B) − e^ε Q(B) ≥ (1 − e^{ε−ε′})P(B)).
  For finite output laws the exact tail P_λ[L > t] is computed by :func:`bayes_factor_tail`.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from distprivacy.exceptions import DistPrivacyError
from distprivacy.local.domains import Domain, check_distribution
from distprivacy.local.mechanisms import FiniteMechanism, TuplingMechanism

__all__ = ["bayes_factor_reading", "bayes_factor_tail", "service_quality_loss"]


def service_quality_loss(
    mechanism: FiniteMechanism | TuplingMechanism | ArrayLike,
    prior: ArrayLike,
    domain: Domain | ArrayLike,
) -> float:
    """SQL = Σ_x π[x] Σ_y A(x)[y]·d(x, y) (exact, from the transition matrix).

    The tupling mechanism's SQL is its base mechanism's (the user keeps the real entry).
    """
    if isinstance(mechanism, TuplingMechanism):
        mechanism = mechanism.base
    M = np.asarray(getattr(mechanism, "matrix_", mechanism), dtype=float)
    D = domain.distances if isinstance(domain, Domain) else np.asarray(domain, dtype=float)
    if M.ndim != 2 or D.shape != M.shape:
        raise DistPrivacyError(
            f"mechanism matrix {M.shape} and distance matrix {D.shape} must both be n×n "
            "over the same domain"
        )
    pi = check_distribution(prior, M.shape[0], "prior")
    return float(pi @ np.sum(M * D, axis=1))


def bayes_factor_tail(p: ArrayLike, q: ArrayLike, factor: float) -> float:
    """Exact probability, when the output comes from P, that it multiplies the odds of P
    against Q by more than ``factor`` (i.e. P[y]/Q[y] > factor)."""
    P = check_distribution(p, None, "first output distribution")
    Q = check_distribution(q, P.size, "second output distribution")
    if not (factor > 0):
        raise DistPrivacyError(f"the Bayes factor threshold must be > 0, got {factor!r}")
    with np.errstate(divide="ignore", invalid="ignore"):
        big = (P > 0) & ((Q == 0) | (P > factor * Q))
    return float(P[big].sum())


def bayes_factor_reading(epsilon: float, delta: float, *, slack: float = 2.0) -> dict:
    """What an (ε, δ)-DistP guarantee says about an observer's odds.

    Returns the pure bound e^ε and, for δ > 0, the factor e^{slack·ε} that is exceeded with
    probability at most δ / (1 − e^{ε − slack·ε}) (see the module docstring), with a sentence.
    """
    if not (epsilon >= 0) or not (0 <= delta <= 1):
        raise DistPrivacyError(f"need ε ≥ 0 and δ in [0, 1], got ε={epsilon!r}, δ={delta!r}")
    if math.isinf(epsilon):
        return {"max_factor": math.inf, "text": "no bound: the odds can move arbitrarily"}
    if delta == 0:
        f = math.exp(epsilon)
        return {
            "max_factor": f,
            "text": f"one output moves the odds of λ vs λ′ by at most ×{f:.3g}",
        }
    e2 = slack * epsilon if epsilon > 0 else 1.0
    f2 = math.exp(e2)
    tail = min(1.0, delta / -math.expm1(epsilon - e2))
    return {
        "max_factor": math.exp(epsilon),
        "factor": f2,
        "tail": tail,
        "text": (
            f"except with probability ≤ {tail:.3g}, one output moves the odds by at most "
            f"×{f2:.3g} (e^ε = {math.exp(epsilon):.3g} on sets of outputs, up to δ = {delta:g})"
        ),
    }
