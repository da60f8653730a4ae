"""Exact distribution privacy (DistP) of local mechanisms: privacy profiles δ(ε) and ε(δ).

A local mechanism A is (ε, δ)-DistP for a pair (λ, λ′) (Kawamoto & Murakami, 004 Def. 11;
notes "Setting") iff ``D∞^δ(A#λ ‖ A#λ′) ≤ ε`` and ``D∞^δ(A#λ′ ‖ A#λ) ≤ ε``, i.e. iff
δ ≥ δ(ε) where the **privacy profile** of two finite distributions P, Q is

    δ_{P‖Q}(ε) = sup_R P[R] − e^ε Q[R] = Σ_y (P[y] − e^ε Q[y])₊,

and the symmetric profile is the larger of the two directions. Everything here is exact except
the Monte-Carlo path of the tupling mechanism, which states a confidence bound.

* Finite outputs: sort the log likelihood ratios once; with suffix sums of P and Q the profile at
  any ε is ``SP_j − e^ε·SQ_j`` (j = number of outputs with ratio > e^ε) — vectorised over ε.
  ε(δ) is solved exactly on the segment where the profile crosses δ.
* Randomized response: closed-form lifting A#λ[y] = (1 + (e^ε−1)λ[y])/(n−1+e^ε) and the pure
  level max_y |ln((1+(e^ε−1)λ[y])/(1+(e^ε−1)λ′[y]))| (notes, "Existing mechanisms" 4).
* Tupling (notes, "The tupling mechanism"): a tuple ȳ has probability
  Q#λ[ȳ] = (Π_i ν[y_i])·Σ_i r(y_i)/(k+1) with r = A#λ/ν. Grouping tuples by their count vector
  c ~ Multinomial(k+1, ν), the profile is

      δ(ε) = E_{Y_1..Y_{k+1} ~ ν i.i.d.}[(Σ_i r(Y_i) − e^ε Σ_i r′(Y_i))₊] / (k+1),

  evaluated **exactly** by enumerating count vectors (small k and |Y|) and otherwise by **Monte
  Carlo** on i.i.d. draws of (A, B) = (Σ r(Y_i), Σ r′(Y_i)), with an empirical-Bernstein
  confidence bound (Maurer & Pontil 2009, Thm 4): each summand lies in [0, R_ε] with
  R_ε = max_y (r(y) − e^ε r′(y))₊, so with probability ≥ 1 − α, simultaneously for all ε asked
  (Bonferroni over both directions and both sides, m = 4·#ε),
  |δ(ε) − δ̂(ε)| ≤ √(2 V̂ ln(2m/α)/N) + 7 R_ε ln(2m/α)/(3(N−1)).
  ε(δ) from Monte Carlo (:func:`monte_carlo_epsilon`): a point estimate by bisection, and a
  certified ε — a point of a fixed ε grid whose upper bound is ≤ δ (Bonferroni over the whole
  grid), so the certificate holds with probability ≥ 1 − α.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from distprivacy._json import jsonable
from distprivacy.checks import check_int
from distprivacy.exceptions import DistPrivacyError
from distprivacy.local.domains import check_distribution
from distprivacy.local.mechanisms import (
    FiniteMechanism,
    RandomizedResponse,
    TuplingMechanism,
    check_k,
)
from distprivacy.randomness import RandomState, check_random_state
from distprivacy.resources import check_memory

__all__ = [
    "EpsilonResult",
    "Profile",
    "TuplingMonteCarlo",
    "bisect_epsilon",
    "count_vectors",
    "delta_profile",
    "distp_epsilon",
    "distp_profile",
    "epsilon_for_delta",
    "monte_carlo_epsilon",
    "multisets",
    "n_count_vectors",
    "privacy_profile",
    "rr_lift",
    "rr_pure_epsilon",
    "tupling_exact_distributions",
    "tupling_profile_exact",
]

DEFAULT_ENUMERATION_LIMIT = 300_000
DEFAULT_MC_SAMPLES = 400_000
DEFAULT_ALPHA = 1e-3
#: Fixed ε grid on which a Monte-Carlo ε(δ) is certified (chosen before sampling).
CERTIFICATION_GRID = np.geomspace(1e-3, 20.0, 600)


# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------


def _epsilons(epsilons: ArrayLike) -> np.ndarray:
    e = np.atleast_1d(np.asarray(epsilons, dtype=float))
    if e.ndim != 1 or e.size == 0 or not np.isfinite(e).all() or (e < 0).any():
        raise DistPrivacyError("profile points ε must be finite numbers ≥ 0, e.g. 0.5,1,2")
    return e


def _delta(delta: float) -> float:
    try:
        d = float(delta)
    except (TypeError, ValueError):
        raise DistPrivacyError(f"delta must be a number in [0, 1), got {delta!r}") from None
    if not (0 <= d < 1):
        raise DistPrivacyError(f"delta must be in [0, 1), got {delta!r}; e.g. 0.001")
    return d


def _pair(p: ArrayLike, q: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    P = check_distribution(p, None, "first output distribution")
    Q = check_distribution(q, P.size, "second output distribution")
    return P, Q


# ---------------------------------------------------------------------------------------------
# Finite distributions
# ---------------------------------------------------------------------------------------------


def _sorted_ratios(P: np.ndarray, Q: np.ndarray):
    """Ascending log ratios of the outputs with P > 0 and the suffix sums of P and Q."""
    keep = P > 0
    with np.errstate(divide="ignore"):
        logr = np.log(P[keep]) - np.log(Q[keep])
    order = np.argsort(logr, kind="stable")
    logr, Ps, Qs = logr[order], P[keep][order], Q[keep][order]
    # suffix[j] = sum over the last (size − j) entries; suffix[size] = 0
    sufP = np.concatenate((np.cumsum(Ps[::-1])[::-1], [0.0]))
    sufQ = np.concatenate((np.cumsum(Qs[::-1])[::-1], [0.0]))
    return logr, sufP, sufQ


def delta_profile(p: ArrayLike, q: ArrayLike, epsilons: ArrayLike) -> np.ndarray:
    """One-directional profile δ_{P‖Q}(ε) = Σ_y (P[y] − e^ε Q[y])₊ at each ε (exact)."""
    P, Q = _pair(p, q)
    e = _epsilons(epsilons)
    logr, sufP, sufQ = _sorted_ratios(P, Q)
    j = np.searchsorted(logr, e, side="right")  # first index with ratio > ε
    return np.maximum(sufP[j] - np.exp(e) * sufQ[j], 0.0)


def privacy_profile(p: ArrayLike, q: ArrayLike, epsilons: ArrayLike) -> np.ndarray:
    """Symmetric profile max(δ_{P‖Q}(ε), δ_{Q‖P}(ε)) (exact)."""
    return np.maximum(delta_profile(p, q, epsilons), delta_profile(q, p, epsilons))


def _epsilon_one_way(P: np.ndarray, Q: np.ndarray, delta: float) -> float:
    logr, sufP, sufQ = _sorted_ratios(P, Q)
    finite = logr[np.isfinite(logr) & (logr > 0)]
    breaks = np.concatenate(([0.0], np.unique(finite)))
    j = np.searchsorted(logr, breaks, side="right")
    at = np.maximum(sufP[j] - np.exp(breaks) * sufQ[j], 0.0)
    if at[0] <= delta:
        return 0.0
    i = int(np.nonzero(at > delta)[0][-1])  # δ(breaks[i]) > δ ≥ δ(breaks[i+1])
    jj = j[i]  # outputs with log ratio > breaks[i] (constant on the open segment)
    SP, SQ = sufP[jj], sufQ[jj]
    if SQ <= 0:
        return math.inf  # mass with infinite ratio exceeds δ
    eps = math.log((SP - delta) / SQ)
    hi = breaks[i + 1] if i + 1 < breaks.size else math.inf
    return float(min(max(eps, breaks[i]), hi))


def epsilon_for_delta(p: ArrayLike, q: ArrayLike, delta: float) -> float:
    """Smallest ε with max(δ_{P‖Q}(ε), δ_{Q‖P}(ε)) ≤ δ, solved exactly on the crossing segment
    (``inf`` if some mass > δ has zero probability under the other distribution)."""
    P, Q = _pair(p, q)
    d = _delta(delta)
    return max(_epsilon_one_way(P, Q, d), _epsilon_one_way(Q, P, d))


def bisect_epsilon(
    delta_fn: Callable[[float], float],
    delta: float,
    *,
    hi: float = 64.0,
    tol: float = 1e-10,
) -> float:
    """Smallest ε in [0, hi] with ``delta_fn(ε) ≤ δ`` for a non-increasing ``delta_fn``, by
    bisection (``inf`` when even ``hi`` does not reach δ)."""
    d = _delta(delta)
    if delta_fn(0.0) <= d:
        return 0.0
    if delta_fn(hi) > d:
        return math.inf
    lo = 0.0
    while hi - lo > tol * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        if delta_fn(mid) <= d:
            hi = mid
        else:
            lo = mid
    return hi


# ---------------------------------------------------------------------------------------------
# Randomized response (closed form)
# ---------------------------------------------------------------------------------------------


def rr_lift(lam: ArrayLike, epsilon: float) -> np.ndarray:
    """A#λ[y] = (1 + (e^ε − 1)λ[y]) / (n − 1 + e^ε) for k-ary randomized response."""
    p = check_distribution(lam, None, "input distribution")
    return RandomizedResponse(p.size, epsilon).lift(p)


def rr_pure_epsilon(lam: ArrayLike, lam2: ArrayLike, epsilon: float) -> float:
    """Exact pure DistP level of RR for (λ, λ′): max_y |ln((1+(e^ε−1)λ[y])/(1+(e^ε−1)λ′[y]))|.

    Notes on 004, "Existing mechanisms" 4 (closed form; no transition matrix).
    """
    p = check_distribution(lam, None, "lambda")
    q = check_distribution(lam2, p.size, "lambda'")
    RandomizedResponse(p.size, epsilon)  # validates ε > 0
    c = math.expm1(epsilon)
    return float(np.max(np.abs(np.log1p(c * p) - np.log1p(c * q))))


# ---------------------------------------------------------------------------------------------
# Tupling: exact enumeration
# ---------------------------------------------------------------------------------------------


def multisets(size: int, m: int) -> np.ndarray:
    """All multisets of ``size`` elements of {0..m−1} as non-decreasing rows, shape
    (C(m+size−1, size), size); built position by position, each step vectorised."""
    rows = np.arange(m, dtype=np.int64)[:, None]
    for _ in range(size - 1):  # one pass per tuple position, vectorised over all rows
        last = rows[:, -1]
        reps = m - last
        starts = np.cumsum(reps) - reps
        vals = np.arange(int(reps.sum()), dtype=np.int64) - np.repeat(starts, reps)
        rows = np.column_stack((np.repeat(rows, reps, axis=0), np.repeat(last, reps) + vals))
    return rows


def count_vectors(total: int, parts: int) -> np.ndarray:
    """All vectors of ``parts`` non-negative integers summing to ``total`` (one per multiset
    of size ``total``; C(total+parts−1, parts−1) rows)."""
    idx = multisets(total, parts)
    out = np.zeros((idx.shape[0], parts), dtype=np.int64)
    np.add.at(out, (np.repeat(np.arange(idx.shape[0]), total), idx.ravel()), 1)
    return out


def n_count_vectors(k: int, m: int) -> int:
    return math.comb(k + m, m - 1)


def tupling_exact_distributions(
    r: np.ndarray, r2: np.ndarray, nu: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The two output laws of the tupling mechanism on multisets of entries (order is
    irrelevant): P_c = Mult(c; k+1, ν)·(Σ_i r(y_i))/(k+1), and likewise with r′.

    Multisets are enumerated as sorted index tuples (cost #multisets × (k+1)); the multinomial
    weight is (k+1)!/Π_y c_y! · Π_i ν(y_i), with Π c_y! from the run lengths of each tuple.
    """
    t = k + 1
    idx = multisets(t, nu.size)
    log_fact = np.zeros(idx.shape[0])
    run = np.ones(idx.shape[0])
    for j in range(1, t):  # positions of the tuple, not outputs
        same = idx[:, j] == idx[:, j - 1]
        run = np.where(same, run + 1, 1.0)
        log_fact += np.log(run)
    with np.errstate(divide="ignore"):
        logmult = special.gammaln(t + 1) - log_fact + np.log(nu)[idx].sum(axis=1)
    w = np.exp(logmult) / t
    return w * r[idx].sum(axis=1), w * r2[idx].sum(axis=1)


def _tupling_terms(
    mech: TuplingMechanism, lam: ArrayLike, lam2: ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    m = mech.base.n_inputs
    p = check_distribution(lam, m, "lambda")
    q = check_distribution(lam2, m, "lambda'")
    return mech.lift_ratio_terms(p), mech.lift_ratio_terms(q)


def tupling_profile_exact(
    mech: TuplingMechanism,
    lam: ArrayLike,
    lam2: ArrayLike,
    epsilons: ArrayLike,
    *,
    limit: int = DEFAULT_ENUMERATION_LIMIT,
) -> np.ndarray:
    """Exact symmetric profile of the tupling mechanism by enumerating count vectors."""
    n = n_count_vectors(mech.k, mech.nu_.size)
    if n > limit:
        raise DistPrivacyError(
            f"exact tupling profile needs {n:,} count vectors (> limit {limit:,}); "
            "use method='monte-carlo' or a smaller k / output set"
        )
    r, r2 = _tupling_terms(mech, lam, lam2)
    P, Q = tupling_exact_distributions(r, r2, mech.nu_, mech.k)
    P, Q = P / P.sum(), Q / Q.sum()  # sums are 1 up to ~1e-15 rounding
    return privacy_profile(P, Q, epsilons)


# ---------------------------------------------------------------------------------------------
# Tupling: Monte Carlo with a confidence bound
# ---------------------------------------------------------------------------------------------


class TuplingMonteCarlo:
    """Monte-Carlo privacy profile of the tupling mechanism with empirical-Bernstein bounds.

    Draws N i.i.d. samples of (A, B) = (Σ_{i≤k+1} r(Y_i), Σ_{i≤k+1} r′(Y_i)), Y_i ~ ν, once;
    every profile evaluation reuses them (one vectorised pass per batch of ε).

    Parameters
    ----------
    mechanism : TuplingMechanism
    lam, lam2 : array_like
        The pair of input distributions.
    n_samples : int
        N (≥ 2).
    random_state : int or numpy.random.Generator
        Where the Monte-Carlo draws come from (a simulation: ``secure=False``); required, so
        that an estimate can be reproduced.

    Attributes
    ----------
    a_, b_ : ndarray, shape (N,)
        The sampled sums.
    r_, r2_ : ndarray
        r = A#λ/ν and r′ = A#λ′/ν.
    """

    def __init__(
        self,
        mechanism: TuplingMechanism,
        lam: ArrayLike,
        lam2: ArrayLike,
        *,
        n_samples: int = DEFAULT_MC_SAMPLES,
        random_state: RandomState,
    ) -> None:
        check_int(n_samples, "n_samples", low=2)
        # s_ab (complex) plus a_, b_ and the profile's per-sample temporaries: ~64 bytes each.
        check_memory(64.0 * n_samples, f"{n_samples} Monte-Carlo samples of the tupling output")
        if random_state is None:
            raise DistPrivacyError(
                "the Monte-Carlo tupling profile needs a seed: pass random_state="
            )
        g = check_random_state(random_state, secure=False)
        self.k = mechanism.k
        r, r2 = _tupling_terms(mechanism, lam, lam2)
        self.r_, self.r2_ = r, r2
        nu = mechanism.nu_
        m, t = nu.size, self.k + 1
        N = int(n_samples)
        z = r + 1j * r2  # one gather yields both sums
        uniform = bool(np.all(nu == nu[0]))
        cdf = np.cumsum(nu)
        cdf[-1] = 1.0
        s_ab = np.empty(N, dtype=complex)
        step = max(1, 4_000_000 // t)
        for s in range(0, N, step):  # memory chunks, each fully vectorised
            size = (min(step, N - s), t)
            if uniform:
                idx = g.integers(0, m, size=size)
            else:
                idx = np.searchsorted(cdf, g.random(size), side="right")
            s_ab[s : s + step] = z[idx].sum(axis=1)
        self.a_, self.b_ = s_ab.real.copy(), s_ab.imag.copy()
        self.n_samples = N

    def _moments(self, e: np.ndarray) -> tuple[np.ndarray, ...]:
        """Per ε and direction: mean and unbiased variance of (A − e^ε B)₊/(k+1)."""
        t = self.k + 1
        out = []
        for x, y in ((self.a_, self.b_), (self.b_, self.a_)):
            means = np.empty(e.size)
            var = np.empty(e.size)
            step = max(1, 2_000_000 // x.size)
            for s in range(0, e.size, step):  # chunks of ε bound memory
                z = np.maximum(x[None, :] - np.exp(e[s : s + step, None]) * y[None, :], 0) / t
                means[s : s + step] = z.mean(axis=1)
                var[s : s + step] = z.var(axis=1, ddof=1)
            out.append((means, var))
        return out[0][0], out[0][1], out[1][0], out[1][1]

    def affine(self, scale: float, shift: float) -> TuplingMonteCarlo:
        """The same samples read for a base whose ratio terms are ``shift + scale·r`` (same k,
        same ν): the sums become (k+1)·shift + scale·A. Exact reuse, no new draws.

        Example: with the identity base and uniform ν on m outputs (r = m·λ), k-ary randomized
        response with keep probability κ and other probability o has
        r_RR = m·o + (κ − o)·r, i.e. ``affine(κ − o, m·o)``.
        """
        if not (scale > 0 and shift >= 0):
            raise DistPrivacyError("affine reuse needs scale > 0 and shift ≥ 0")
        out = object.__new__(TuplingMonteCarlo)
        out.k, out.n_samples = self.k, self.n_samples
        out.r_, out.r2_ = shift + scale * self.r_, shift + scale * self.r2_
        t = self.k + 1
        out.a_, out.b_ = t * shift + scale * self.a_, t * shift + scale * self.b_
        return out

    def ranges(self, epsilons: np.ndarray, direction: int) -> np.ndarray:
        """Upper end R_ε of each summand: (Σ_i w(Y_i))₊/(k+1) ≤ max_y (r(y) − e^ε r′(y))₊
        (direction 0; r and r′ swapped for direction 1)."""
        x, y = (self.r_, self.r2_) if direction == 0 else (self.r2_, self.r_)
        w = x[None, :] - np.exp(np.asarray(epsilons)[:, None]) * y[None, :]
        return np.maximum(w.max(axis=1), 0.0)

    def profile(
        self, epsilons: ArrayLike, *, alpha: float = DEFAULT_ALPHA, family: int | None = None
    ) -> Profile:
        """δ̂(ε) (symmetric) with upper and lower bounds holding simultaneously with
        probability ≥ 1 − α for every ε of a family of ``family`` values fixed before sampling
        (default: the ε given) — empirical Bernstein, two-sided, Bonferroni over 4·family."""
        e = _epsilons(epsilons)
        if not (0 < alpha < 1):
            raise DistPrivacyError(f"alpha must be in (0, 1), got {alpha!r}")
        fam = e.size if family is None else int(family)
        if fam < e.size:
            raise DistPrivacyError("the Bonferroni family must include every ε evaluated")
        m1, v1, m2, v2 = self._moments(e)
        n = self.n_samples
        log_term = math.log(2 * 4 * fam / alpha)  # 2/α' with α' = α/(2 directions·2 sides·fam)

        def half(v: np.ndarray, R: np.ndarray) -> np.ndarray:
            return np.sqrt(2 * v * log_term / n) + 7 * R * log_term / (3 * (n - 1))

        h1, h2 = half(v1, self.ranges(e, 0)), half(v2, self.ranges(e, 1))
        return Profile(
            epsilons=e,
            delta=np.maximum(m1, m2),
            method="monte-carlo",
            delta_upper=np.minimum(np.maximum(m1 + h1, m2 + h2), 1.0),
            delta_lower=np.maximum(np.maximum(m1 - h1, m2 - h2), 0.0),
            confidence=1 - alpha,
            n_samples=n,
        )

    def point_epsilon(self, delta: float) -> float:
        """Point estimate of ε(δ): bisection on the estimated symmetric profile δ̂."""
        d = _delta(delta)

        def dhat(x: float) -> float:
            m1, _, m2, _ = self._moments(np.array([x]))
            return float(max(m1[0], m2[0]))

        return bisect_epsilon(dhat, d, hi=float(CERTIFICATION_GRID[-1]), tol=1e-6)

    def certified_epsilon(
        self, delta: float, grid: ArrayLike = CERTIFICATION_GRID, *, alpha: float = DEFAULT_ALPHA
    ) -> float:
        """A point of ``grid`` (fixed before sampling) whose upper confidence bound on δ is
        ≤ δ, found by binary search (the first such point when the bound is monotone; any point
        found is valid). On the event, of probability ≥ 1 − α, that the bounds of *all* grid
        points hold, the mechanism is (returned ε, δ)-DistP. ``inf`` if the largest grid
        point does not certify."""
        d = _delta(delta)
        g = np.sort(_epsilons(grid))

        def ok(i: int) -> bool:
            up = self.profile(g[i : i + 1], alpha=alpha, family=g.size).delta_upper
            return bool(up[0] <= d)  # type: ignore[index]

        lo, hi = 0, g.size - 1
        if not ok(hi):
            return math.inf
        while lo < hi:
            mid = (lo + hi) // 2
            if ok(mid):
                hi = mid
            else:
                lo = mid + 1
        return float(g[lo])


# ---------------------------------------------------------------------------------------------
# Monte-Carlo ε(δ) with a certificate
# ---------------------------------------------------------------------------------------------


def monte_carlo_epsilon(
    mechanism: TuplingMechanism,
    lam: ArrayLike,
    lam2: ArrayLike,
    delta: float,
    *,
    n_samples: int = DEFAULT_MC_SAMPLES,
    alpha: float = DEFAULT_ALPHA,
    random_state: RandomState,
    grid: ArrayLike = CERTIFICATION_GRID,
) -> EpsilonResult:
    """ε(δ) of the tupling mechanism by Monte Carlo: a point estimate (bisection on δ̂) and a
    certified ε from ``grid`` (see :meth:`TuplingMonteCarlo.certified_epsilon`) holding with
    probability ≥ 1 − α."""
    d = _delta(delta)
    mc = TuplingMonteCarlo(mechanism, lam, lam2, n_samples=n_samples, random_state=random_state)
    return EpsilonResult(
        epsilon=mc.point_epsilon(d),
        epsilon_upper=mc.certified_epsilon(d, grid, alpha=alpha),
        delta=d,
        method="monte-carlo",
        confidence=1 - alpha,
        n_samples=n_samples,
    )


# ---------------------------------------------------------------------------------------------
# Results and dispatch
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Profile:
    """A symmetric privacy profile δ(ε) of a mechanism for a pair (λ, λ′).

    ``delta`` is exact for methods ``closed-form``, ``exact`` and ``enumeration``; for
    ``monte-carlo`` it is an estimate and ``delta_upper``/``delta_lower`` hold simultaneously for
    every ε with probability ≥ ``confidence``.
    """

    epsilons: np.ndarray
    delta: np.ndarray
    method: str
    delta_upper: np.ndarray | None = None
    delta_lower: np.ndarray | None = None
    confidence: float | None = None
    n_samples: int | None = None

    def to_dict(self) -> dict:
        """Plain JSON data (:func:`distprivacy._json.jsonable`)."""
        out: dict = {"method": self.method, "epsilon": self.epsilons, "delta": self.delta}
        if self.delta_upper is not None:
            out["delta_upper"] = self.delta_upper
            out["delta_lower"] = self.delta_lower
            out["confidence"] = self.confidence
            out["n_samples"] = self.n_samples
        return jsonable(out)


@dataclass(frozen=True)
class EpsilonResult:
    """ε(δ): exact for finite outputs; for Monte Carlo a point estimate and a certified upper
    value (``epsilon_upper``) holding with probability ≥ ``confidence``."""

    epsilon: float
    delta: float
    method: str
    epsilon_upper: float | None = None
    confidence: float | None = None
    n_samples: int | None = None

    @property
    def guaranteed(self) -> float:
        """The ε to quote as a guarantee (certified value for Monte Carlo)."""
        return self.epsilon if self.epsilon_upper is None else self.epsilon_upper

    def to_dict(self) -> dict:
        """Plain JSON data (:func:`distprivacy._json.jsonable`; ∞ as ``"inf"``), the fields
        that are set."""
        return jsonable({k: v for k, v in self.__dict__.items() if v is not None})


def _choose_tupling_method(mech: TuplingMechanism, method: str, limit: int) -> str:
    if method not in ("auto", "enumeration", "monte-carlo"):
        raise DistPrivacyError(
            f"unknown method {method!r} for tupling; choose auto, enumeration or monte-carlo"
        )
    if method == "auto":
        fits = n_count_vectors(mech.k, mech.nu_.size) <= limit
        return "enumeration" if fits else "monte-carlo"
    return method


def distp_profile(
    mechanism: FiniteMechanism | TuplingMechanism,
    lam: ArrayLike,
    lam2: ArrayLike,
    epsilons: ArrayLike,
    *,
    method: str = "auto",
    n_samples: int = DEFAULT_MC_SAMPLES,
    alpha: float = DEFAULT_ALPHA,
    random_state: RandomState = None,
    limit: int = DEFAULT_ENUMERATION_LIMIT,
) -> Profile:
    """The symmetric privacy profile δ(ε) of ``mechanism`` for the pair (λ, λ′).

    Randomized response: closed-form lifting. Other finite mechanisms: exact (lifting by the
    transition matrix, then sorted likelihood ratios). Tupling: exact enumeration when the
    number of count vectors is ≤ ``limit`` (or ``method="enumeration"``), else Monte Carlo
    with ``n_samples`` draws (``random_state`` required) and simultaneous (1 − α) bounds.
    """
    e = _epsilons(epsilons)
    if isinstance(mechanism, TuplingMechanism):
        check_k(mechanism.k)
        how = _choose_tupling_method(mechanism, method, limit)
        if how == "enumeration":
            delta = tupling_profile_exact(mechanism, lam, lam2, e, limit=max(limit, 1))
            return Profile(e, delta, "enumeration")
        if random_state is None:
            raise DistPrivacyError(
                "the Monte-Carlo tupling profile needs a seed: pass random_state="
            )
        mc = TuplingMonteCarlo(mechanism, lam, lam2, n_samples=n_samples, random_state=random_state)
        return mc.profile(e, alpha=alpha)
    if not isinstance(mechanism, FiniteMechanism):
        raise DistPrivacyError(
            "exact DistP needs a finite mechanism (transition matrix) or a tupling mechanism"
        )
    P, Q = mechanism.lift(lam), mechanism.lift(lam2)
    how = "closed-form" if isinstance(mechanism, RandomizedResponse) else "exact"
    return Profile(e, privacy_profile(P, Q, e), how)


def distp_epsilon(
    mechanism: FiniteMechanism | TuplingMechanism,
    lam: ArrayLike,
    lam2: ArrayLike,
    delta: float,
    *,
    method: str = "auto",
    n_samples: int = DEFAULT_MC_SAMPLES,
    alpha: float = DEFAULT_ALPHA,
    random_state: RandomState = None,
    limit: int = DEFAULT_ENUMERATION_LIMIT,
) -> EpsilonResult:
    """Smallest ε such that ``mechanism`` is (ε, δ)-DistP for (λ, λ′) (see
    :func:`distp_profile` for the methods; exact segment solve for finite outputs, bisection
    plus a certified grid value for Monte Carlo)."""
    d = _delta(delta)
    if isinstance(mechanism, TuplingMechanism):
        how = _choose_tupling_method(mechanism, method, limit)
        if how == "enumeration":
            n = n_count_vectors(mechanism.k, mechanism.nu_.size)
            if n > limit:
                raise DistPrivacyError(
                    f"exact tupling profile needs {n:,} count vectors (> limit {limit:,}); "
                    "use method='monte-carlo'"
                )
            r, r2 = _tupling_terms(mechanism, lam, lam2)
            P, Q = tupling_exact_distributions(r, r2, mechanism.nu_, mechanism.k)
            return EpsilonResult(epsilon_for_delta(P / P.sum(), Q / Q.sum(), d), d, how)
        if random_state is None:
            raise DistPrivacyError(
                "the Monte-Carlo tupling profile needs a seed: pass random_state="
            )
        return monte_carlo_epsilon(
            mechanism, lam, lam2, d, n_samples=n_samples, alpha=alpha, random_state=random_state
        )
    if not isinstance(mechanism, FiniteMechanism):
        raise DistPrivacyError(
            "exact DistP needs a finite mechanism (transition matrix) or a tupling mechanism"
        )
    P, Q = mechanism.lift(lam), mechanism.lift(lam2)
    how = "closed-form" if isinstance(mechanism, RandomizedResponse) else "exact"
    return EpsilonResult(epsilon_for_delta(P, Q, d), d, how)
