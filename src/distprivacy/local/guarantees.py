"""Theorem-based DistP guarantees, exact point (local DP) levels, Wasserstein distances, and
composition (Kawamoto & Murakami, 004 §IV–VI; rigorous statements in the notes on 004).

* :func:`dp_implies_distp` / :func:`dp_distp_for_relation` — notes "Existing mechanisms" 1:
  (ε, δ)-DP w.r.t. Φ gives (ε, δ)-DistP for every pair with a coupling supported in Φ.
* :func:`laplace_distp` — notes 2: an ε·d-XDP mechanism is (ε·W∞,d(λ, λ′), 0)-DistP.
* :func:`kl_distp` — notes 3: D_KL(A(x)‖A(x′)) ≤ c·d(x, x′) gives D_KL(A#λ‖A#λ′) ≤ c·W1,d.
* :func:`tupling_hoeffding` — notes, tupling: a closed-form (ε, δ) with proved constants.
* :func:`compose_independent`, :func:`compose_same_input`, :func:`post_process` — notes,
  "Composition"; two DistP mechanisms on the *same* input are refused unless one side is
  local DP (the counter-example in the notes shows why).

Every guarantee is a :class:`distprivacy.guarantee.Guarantee` with notion ``"local
distribution privacy"`` and curve ``"point"``; ``holds_for_every_input`` marks a local-DP
guarantee (every pair of inputs, not only the stated pairs of distributions).

The Wasserstein distances here live on a finite metric space (:class:`~distprivacy.local.
domains.Domain`): :func:`domain_wasserstein_inf`, :func:`domain_wasserstein_1` (the ones of
:mod:`distprivacy.distances` compare samples in R^m).

W∞ on a finite metric space: bottleneck search over the sorted distinct distances, deciding at
each threshold θ whether a transport plan using only pairs with d ≤ θ exists (maximum flow,
solved as an LP by HiGHS; feasible when the flow is ≥ 1 − 1e-9). W1: the transport LP.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from scipy.optimize import linprog

from distprivacy.exceptions import DistPrivacyError, NotApplicableError
from distprivacy.guarantee import Guarantee
from distprivacy.local.domains import Domain, check_distribution
from distprivacy.local.mechanisms import check_k, check_positive
from distprivacy.profiles import gdp_delta

__all__ = [
    "NOTION",
    "compose_independent",
    "compose_same_input",
    "coupling_within",
    "domain_wasserstein_1",
    "domain_wasserstein_inf",
    "dp_distp_for_relation",
    "dp_implies_distp",
    "gaussian_local_dp",
    "kl_distp",
    "kl_divergence",
    "kl_xdp_constant",
    "laplace_distp",
    "laplace_kl_1d",
    "local_dp_delta",
    "local_dp_epsilon",
    "local_guarantee",
    "post_process",
    "tupling_hoeffding",
    "xdp_epsilon",
]

FLOW_TOL = 1e-9


#: The notion of every guarantee of this wing.
NOTION = "local distribution privacy"


def local_guarantee(
    epsilon: float,
    delta: float,
    theorem: str,
    holds_for_every_input: bool = False,
    *,
    verified: bool = True,
    assumptions: tuple[str, ...] = (),
    basis: str = "",
) -> Guarantee:
    """An (ε, δ)-DistP :class:`~distprivacy.guarantee.Guarantee` of a local mechanism.

    Parameters
    ----------
    epsilon, delta : float
        The guarantee (ε may be ∞: nothing hidden).
    theorem : str
        The result (or exact computation) that proves it.
    holds_for_every_input : bool
        True for (ε, δ)-local DP: it holds for every pair of inputs, hence for every pair of
        input distributions — the condition for composing on the same input.
    verified : bool
        False for a Monte-Carlo certificate (it holds with a stated probability).
    assumptions : tuple of str
    basis : str
        What it rests on (default: the stated pairs, or every input).
    """
    if not basis:
        basis = "every pair of inputs (local DP)" if holds_for_every_input else "the stated pairs"
    return Guarantee(
        epsilon=epsilon,
        delta=float(delta),
        theorem=theorem,
        notion=NOTION,
        curve="point",
        basis=basis,
        verified=verified,
        assumptions=tuple(assumptions),
        holds_for_every_input=bool(holds_for_every_input),
    )


# ---------------------------------------------------------------------------------------------
# Exact point privacy of finite mechanisms
# ---------------------------------------------------------------------------------------------


def _matrix(matrix: ArrayLike) -> np.ndarray:
    M = np.asarray(getattr(matrix, "matrix_", matrix), dtype=float)
    if M.ndim != 2 or (M < 0).any() or not np.isfinite(M).all():
        raise DistPrivacyError("pass a transition matrix (rows = inputs) or a FiniteMechanism")
    return M


def local_dp_epsilon(matrix: ArrayLike) -> float:
    """Pure local-DP level max_{x, x′, y} ln(A(x)[y]/A(x′)[y]) (inf if some column mixes zero
    and positive entries)."""
    M = _matrix(matrix)
    with np.errstate(divide="ignore"):
        L = np.log(M)
    hi, lo = L.max(axis=0), L.min(axis=0)
    used = np.isfinite(hi)
    if (np.isinf(lo[used])).any():
        return math.inf
    return float(np.max(hi[used] - lo[used]))


def local_dp_delta(matrix: ArrayLike, epsilons: ArrayLike) -> np.ndarray:
    """Exact point-privacy profile: max over ordered input pairs of Σ_y (A(x)[y] −
    e^ε A(x′)[y])₊, for each ε (vectorised over pairs in memory-bounded chunks)."""
    M = _matrix(matrix)
    e = np.atleast_1d(np.asarray(epsilons, dtype=float))
    n = M.shape[0]
    out = np.zeros(e.size)
    step = max(1, 4_000_000 // (n * M.shape[1]))
    for j, ee in enumerate(e):  # a handful of ε values
        scaled = math.exp(ee) * M
        for s in range(0, n, step):  # chunks of rows bound memory
            diff = M[s : s + step, None, :] - scaled[None, :, :]
            out[j] = max(out[j], float(np.maximum(diff, 0).sum(axis=2).max()))
    return out


def xdp_epsilon(matrix: ArrayLike, distances: ArrayLike) -> float:
    """Smallest ε with A(x)[y] ≤ e^{ε·d(x, x′)} A(x′)[y] for all x ≠ x′, y (ε·d-XDP level)."""
    M = _matrix(matrix)
    D = np.asarray(distances, dtype=float)
    if D.shape != (M.shape[0], M.shape[0]):
        raise DistPrivacyError(
            f"distance matrix has shape {D.shape}; it must be {M.shape[0]}×{M.shape[0]}"
        )
    with np.errstate(divide="ignore"):
        L = np.log(M)
    worst = 0.0
    n = M.shape[0]
    step = max(1, 4_000_000 // (n * M.shape[1]))
    for s in range(0, n, step):  # chunks of rows bound memory
        with np.errstate(invalid="ignore"):
            diff = (L[s : s + step, None, :] - L[None, :, :]).max(axis=2)
            d = D[s : s + step]
            off = d > 0
            ratio = np.where(off, diff / np.where(off, d, 1.0), 0.0)
        if np.isnan(ratio).any():
            return math.inf
        worst = max(worst, float(ratio.max()))
    return worst


def gaussian_local_dp(sigma: float, diameter: float, epsilon: float) -> Guarantee:
    """Gaussian noise N(0, σ²I) on a domain of diameter D is μ-GDP with μ = D/σ (Dong, Roth &
    Su 2022), hence (ε, gdp_delta(ε, μ))-local DP and so (ε, δ)-DistP for every pair."""
    s = check_positive(sigma, "sigma")
    D = check_positive(diameter, "diameter")
    e = check_positive(epsilon, "epsilon")
    d = float(gdp_delta(e, D / s))
    return local_guarantee(e, d, f"Gaussian local DP, μ = diam/σ = {D / s:.4g} (GDP)", True)


def dp_implies_distp(epsilon: float, delta: float = 0.0) -> Guarantee:
    """(ε, δ)-local DP ⇒ (ε, δ)-DistP for every pair (notes, "Existing mechanisms" 1)."""
    e = check_positive(epsilon, "epsilon")
    return local_guarantee(e, float(delta), "local DP ⇒ DistP (004 §V; notes 1)", True)


# ---------------------------------------------------------------------------------------------
# Couplings and Wasserstein distances
# ---------------------------------------------------------------------------------------------


def _two(lam: ArrayLike, lam2: ArrayLike, n: int | None = None):
    p = check_distribution(lam, n, "lambda")
    q = check_distribution(lam2, p.size, "lambda'")
    return p, q


def _max_flow(p: np.ndarray, q: np.ndarray, allowed: np.ndarray) -> float:
    """Largest coupling mass on allowed pairs: max Σγ, rows ≤ p, columns ≤ q (HiGHS LP)."""
    rows, cols = np.nonzero(allowed)
    if rows.size == 0:
        return 0.0
    k = rows.size
    A = sp.vstack(
        [
            sp.csr_array((np.ones(k), (rows, np.arange(k))), shape=(p.size, k)),
            sp.csr_array((np.ones(k), (cols, np.arange(k))), shape=(q.size, k)),
        ]
    )
    res = linprog(
        -np.ones(k), A_ub=A, b_ub=np.concatenate((p, q)), bounds=(0, None), method="highs"
    )
    if res.status != 0:
        raise DistPrivacyError(f"the transport LP failed ({res.message}); report this input")
    return float(-res.fun)


def coupling_within(lam: ArrayLike, lam2: ArrayLike, allowed: ArrayLike) -> bool:
    """Whether some coupling of (λ, λ′) is supported inside the relation ``allowed`` (boolean
    n×n), i.e. (λ, λ′) is in the lifting of the relation (004 Def. 9)."""
    p, q = _two(lam, lam2)
    R = np.asarray(allowed, dtype=bool)
    if R.shape != (p.size, p.size):
        raise DistPrivacyError(f"relation has shape {R.shape}; it must be {p.size}×{p.size}")
    sub = R[np.ix_(p > 0, q > 0)]
    return _max_flow(p[p > 0], q[q > 0], sub) >= 1 - FLOW_TOL


def _distances(domain: Domain | ArrayLike, n: int) -> np.ndarray:
    D = domain.distances if isinstance(domain, Domain) else np.asarray(domain, dtype=float)
    if D.shape != (n, n):
        raise DistPrivacyError(
            f"the distributions have {n} entries but the domain has {D.shape[0]} points "
            f"(distance matrix {D.shape}); give one probability per domain point"
        )
    return D


def domain_wasserstein_inf(lam: ArrayLike, lam2: ArrayLike, domain: Domain | ArrayLike) -> float:
    """W∞,d(λ, λ′): the smallest θ such that a coupling moves mass only along d ≤ θ
    (bottleneck search over the sorted distinct distances; notes, "W∞ algorithms")."""
    p, q = _two(lam, lam2)
    D = _distances(domain, p.size)
    sp_, sq = p > 0, q > 0
    p, q, D = p[sp_], q[sq], D[np.ix_(sp_, sq)]
    # lower bound: every atom of either side travels at least to its nearest partner
    lb = max(float(D.min(axis=1).max()), float(D.min(axis=0).max()))
    cand = np.unique(D[D >= lb])
    lo, hi = 0, cand.size - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if _max_flow(p, q, D <= cand[mid]) >= 1 - FLOW_TOL:
            hi = mid
        else:
            lo = mid + 1
    return float(cand[lo])


def domain_wasserstein_1(lam: ArrayLike, lam2: ArrayLike, domain: Domain | ArrayLike) -> float:
    """W1,d(λ, λ′) (earth mover's distance) by the transport LP (HiGHS)."""
    p, q = _two(lam, lam2)
    D = _distances(domain, p.size)
    sp_, sq = p > 0, q > 0
    p, q, D = p[sp_], q[sq], D[np.ix_(sp_, sq)]
    n, m = D.shape
    rows = np.repeat(np.arange(n), m)
    cols = np.tile(np.arange(m), n)
    idx = np.arange(n * m)
    A = sp.vstack(
        [
            sp.csr_array((np.ones(n * m), (rows, idx)), shape=(n, n * m)),
            sp.csr_array((np.ones(n * m), (cols, idx)), shape=(m, n * m)),
        ]
    )
    res = linprog(D.ravel(), A_eq=A, b_eq=np.concatenate((p, q)), bounds=(0, None), method="highs")
    if res.status != 0:
        raise DistPrivacyError(f"the transport LP failed ({res.message}); report this input")
    return float(res.fun)


# ---------------------------------------------------------------------------------------------
# Theorem-based guarantees
# ---------------------------------------------------------------------------------------------


def dp_distp_for_relation(
    lam: ArrayLike, lam2: ArrayLike, relation: ArrayLike, epsilon: float, delta: float = 0.0
) -> Guarantee:
    """(ε, δ)-DP w.r.t. Φ ⇒ (ε, δ)-DistP for (λ, λ′) if a coupling lies inside Φ (notes 1).

    Raises NotApplicableError when no such coupling exists.
    """
    e = check_positive(epsilon, "epsilon")
    if not coupling_within(lam, lam2, relation):
        raise NotApplicableError(
            "no coupling of the pair lies inside the DP relation; widen the relation "
            "(e.g. all pairs: local DP) or use another guarantee"
        )
    return local_guarantee(e, float(delta), "DP w.r.t. Φ ⇒ DistP on Φ# (notes 1)")


def laplace_distp(
    epsilon: float, lam: ArrayLike, lam2: ArrayLike, domain: Domain | ArrayLike
) -> Guarantee:
    """An ε·d-XDP mechanism (Laplace) is (ε·W∞,d(λ, λ′), 0)-DistP for the pair (notes 2)."""
    e = check_positive(epsilon, "epsilon")
    w = domain_wasserstein_inf(lam, lam2, domain)
    return local_guarantee(e * w, 0.0, f"ε·W∞ with W∞ = {w:.4g} (004 §V; notes 2)")


def kl_divergence(p: ArrayLike, q: ArrayLike) -> float:
    """D_KL(p ‖ q) (inf if p puts mass where q has none)."""
    P = np.asarray(p, dtype=float)
    Q = np.asarray(q, dtype=float)
    m = P > 0
    if (Q[m] <= 0).any():
        return math.inf
    return float(np.sum(P[m] * (np.log(P[m]) - np.log(Q[m]))))


def kl_xdp_constant(matrix: ArrayLike, distances: ArrayLike) -> float:
    """Smallest c with D_KL(A(x) ‖ A(x′)) ≤ c·d(x, x′) for all x ≠ x′ (exact, vectorised)."""
    M = _matrix(matrix)
    D = np.asarray(distances, dtype=float)
    with np.errstate(divide="ignore"):
        L = np.log(M)
    if np.isinf(L).any():
        return math.inf
    # KL[x, x'] = Σ_y M[x,y] (L[x,y] − L[x',y]) = rowsum(M·L)[x] − (M @ L.T)[x, x']
    KL = (M * L).sum(axis=1)[:, None] - M @ L.T
    off = D > 0
    return float(np.max(KL[off] / D[off]))


def laplace_kl_1d(epsilon: float, distance: float) -> float:
    """D_KL(Lap(x, 1/ε) ‖ Lap(x′, 1/ε)) = εΔ + e^{−εΔ} − 1 ≤ εΔ (notes 3)."""
    e = check_positive(epsilon, "epsilon")
    t = e * abs(float(distance))
    return t + math.expm1(-t)


def kl_distp(c: float, lam: ArrayLike, lam2: ArrayLike, domain: Domain | ArrayLike) -> float:
    """Bound D_KL(A#λ ‖ A#λ′) ≤ c·W1,d(λ, λ′) for a mechanism with KL ≤ c·d (notes 3)."""
    if not (c >= 0):
        raise DistPrivacyError(f"the KL constant c must be ≥ 0, got {c!r}")
    return float(c) * domain_wasserstein_1(lam, lam2, domain)


def tupling_hoeffding(p: ArrayLike, q: ArrayLike, k: int, delta: float) -> Guarantee:
    """Closed-form (ε, δ) for tupling with uniform dummies over m outputs (notes, tupling).

    p, q are the base liftings A#λ, A#λ′. With β = max(max p, max q), α = β√(k ln(2/δ)/2),
    Hoeffding on the k dummy terms (each in [0, β], mean 1/m) gives, outside an event of
    probability ≤ 2e^{−2α²/(kβ²)} = δ, a likelihood ratio ≤ (k + (α+β)m)/(k − αm); PDistP
    implies DistP. Valid when k > αm; otherwise ε = inf.
    """
    P, Q = _two(p, q)
    kk = check_k(k)
    d = float(delta)
    if not (0 < d < 1):
        raise DistPrivacyError(f"delta must be in (0, 1) for the Hoeffding bound, got {delta!r}")
    m = P.size
    beta = float(max(P.max(), Q.max()))
    alpha = beta * math.sqrt(kk * math.log(2 / d) / 2)
    if kk == 0 or kk <= alpha * m:
        return local_guarantee(math.inf, d, "tupling Hoeffding bound (vacuous: k ≤ αm)")
    eps = math.log((kk + (alpha + beta) * m) / (kk - alpha * m))
    return local_guarantee(eps, d, "tupling Hoeffding bound (notes, tupling)")


# ---------------------------------------------------------------------------------------------
# Composition
# ---------------------------------------------------------------------------------------------


def _check(g: Guarantee, name: str) -> Guarantee:
    if not isinstance(g, Guarantee):
        raise DistPrivacyError(f"{name} must be a Guarantee, got {type(g).__name__}")
    if g.curve != "point":
        raise DistPrivacyError(
            f"{name} is a μ-GDP curve; compose local guarantees stated at one (ε, δ) point"
        )
    return g


def _derived(g0: Guarantee, g1: Guarantee | None, theorem: str, every: bool) -> dict:
    """The fields a composed guarantee inherits: verified only if both parts are, the union
    of their assumptions."""
    parts = (g0,) if g1 is None else (g0, g1)
    assumptions = tuple(dict.fromkeys(a for g in parts for a in g.assumptions))
    return {
        "theorem": theorem,
        "holds_for_every_input": every,
        "verified": all(g.verified for g in parts),
        "assumptions": assumptions,
    }


def post_process(g: Guarantee) -> Guarantee:
    """Post-processing keeps (ε, δ) (004 Table III; notes "Composition")."""
    g = _check(g, "the guarantee")
    return local_guarantee(
        g.epsilon,
        g.delta,
        **_derived(g, None, f"post-processing of [{g.theorem}]", g.holds_for_every_input),
    )


def compose_independent(g0: Guarantee, g1: Guarantee) -> Guarantee:
    """Two mechanisms applied to independent inputs: (ε0 + ε1, δ0 + δ1) (notes)."""
    g0, g1 = _check(g0, "the first guarantee"), _check(g1, "the second guarantee")
    return local_guarantee(
        g0.epsilon + g1.epsilon,
        min(1.0, g0.delta + g1.delta),
        **_derived(
            g0,
            g1,
            f"independent composition of [{g0.theorem}] and [{g1.theorem}]",
            g0.holds_for_every_input and g1.holds_for_every_input,
        ),
    )


def compose_same_input(g0: Guarantee, g1: Guarantee) -> Guarantee:
    """Two mechanisms on the *same* input: (ε0+ε1, e^{ε1}δ0 + δ1) when A1 is local DP (or
    symmetrically A0). Refused otherwise: DistP of each part is not enough (notes'
    counter-example: each part 0-DistP, the pair reveals the distribution)."""
    g0, g1 = _check(g0, "the first guarantee"), _check(g1, "the second guarantee")
    if g1.holds_for_every_input:
        a, b = g0, g1
    elif g0.holds_for_every_input:
        a, b = g1, g0
    else:
        raise DistPrivacyError(
            "cannot compose two DistP mechanisms on the same input: DistP of each part does not "
            "bound the pair; one of them must be local DP"
        )
    delta = min(1.0, math.exp(b.epsilon) * a.delta + b.delta)
    return local_guarantee(
        a.epsilon + b.epsilon,
        delta,
        **_derived(
            a,
            b,
            f"same-input composition of [{a.theorem}] with local-DP [{b.theorem}]",
            a.holds_for_every_input and b.holds_for_every_input,
        ),
    )
