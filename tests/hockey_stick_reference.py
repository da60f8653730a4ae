"""Exact hockey-stick divergence of two Gaussians (dimension ≤ 3, singular covariances
allowed), written from first principles for the tests; it uses nothing of
:mod:`distprivacy.profiles`.

δ_{P‖Q}(ε) = sup_A P(A) − e^ε Q(A) = E_P[(1 − e^{ε − L})₊], L = log dP/dQ.

1. *Supports.* supp P = m_P + range(C_P), supp Q = m_Q + range(C_Q). If supp P ⊄ supp Q, then
   P(supp Q) = 0 (a proper affine subspace of supp P is P-null) and A = ℝᵈ \\ supp Q gives
   δ = 1. If supp P ⊊ supp Q, Q(supp P) = 0 and A = supp P gives δ = 1. Otherwise both live on
   one affine subspace of dimension r; on it they are non-degenerate (r = 0: one point, δ = 0).
   Each coordinate is first rescaled by a power of two (exact in floating point, and δ is
   invariant under a common invertible affine map) so that scales 1e8 and 1e-8 side by side do
   not defeat the rank decisions; the rank threshold is 1e-11 of the rescaled entries.
2. *Whitening.* In an orthonormal basis of the common support, Q = N(0, D) with D diagonal;
   x ↦ D^{-1/2} x makes Q = N(0, I) and P = N(a, B); rotating by B's eigenvectors keeps Q and
   makes P = N(b, diag λ). Both are now products of independent coordinates, so the privacy
   loss is separable: L(z) = Σ_k ℓ_k(z_k), ℓ_k(z) = log N(z; b_k, λ_k) − log N(z; 0, 1).
   Coordinates with λ_k = 1 (to 1e-10) carry the same loss as one coordinate of mean
   ‖b_unit‖ and are merged.
3. *Integration.* δ = E_P[(1 − e^{ε − L})₊] = ∫ p_{<K}(z) h_K(ε − Σ_{k<K} ℓ_k(z_k)) dz,
   where h_K(c) = ∫ (p_K − e^c q_K)₊ is the one-dimensional hockey-stick divergence of the last
   coordinate, in closed form: {ℓ_K > c} is a half-line or one or two intervals whose ends are
   the roots of a quadratic, and h_K(c) = P_K(·) − e^c Q_K(·) of that set. The remaining ≤ 2
   coordinates are integrated under P's standard normal variables u (z_k = b_k + √λ_k u_k) on
   [−12, 12] (the tails weigh < 1e-32): the outer one with adaptive Gauss–Kronrod (QUADPACK,
   absolute tolerance 1e-13) split at the points where the inner integrand is not smooth
   (where the quadratic's roots coalesce), the inner one (three coordinates) by Gauss–Legendre
   panels split at the same kind of points and at the points where c moves by O(1), each
   panel mapped by u = a + (b − a)(1 − cos πt)/2 so that the algebraic end-point singularities
   become smooth. With every λ_k = 1, L is normal under P and δ is the closed form
   Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2), μ = ‖b‖.

"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import mpmath
import numpy as np
from scipy import integrate
from scipy.special import log_ndtr, ndtr

#: Relative rank threshold after the power-of-two rescaling.
RANK_TOL = 1e-11
#: Off-support mean difference (rescaled units) that counts as leaving the support.
MEAN_TOL = 1e-9
UNIT_TOL = 1e-10
#: Relative singular value below which unit direction vectors count as dependent.
SPAN_TOL = 1e-9
U_MAX = 12.0

# --------------------------------------------------------------------------------------------
# One-dimensional hockey-stick divergence in closed form
# --------------------------------------------------------------------------------------------


def _log_sf(x: np.ndarray) -> np.ndarray:
    return log_ndtr(-x)


def _interval_prob(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Φ(hi) − Φ(lo) for lo ≤ hi, without cancellation in either tail."""
    right = lo > 0
    return np.where(right, ndtr(-lo) - ndtr(-hi), ndtr(hi) - ndtr(lo))


@dataclass(frozen=True)
class Coord:
    """One coordinate after whitening: P = N(b, lam), Q = N(0, 1)."""

    lam: float
    b: float

    @property
    def a2(self) -> float:
        return 0.5 * (1.0 - 1.0 / self.lam)

    @property
    def a1(self) -> float:
        return self.b / self.lam

    @property
    def a0(self) -> float:
        return -0.5 * self.b * self.b / self.lam - 0.5 * math.log(self.lam)

    @property
    def unit(self) -> bool:
        return self.lam == 1.0

    def loss(self, z: np.ndarray) -> np.ndarray:
        """ℓ(z) = log N(z; b, λ) − log N(z; 0, 1)."""
        return -0.5 * (z - self.b) ** 2 / self.lam - 0.5 * math.log(self.lam) + 0.5 * z * z

    def critical(self) -> float | None:
        """The value c* of ℓ's extremum (where {ℓ > c} changes shape), None if ℓ is linear."""
        if self.unit:
            return None
        return self.a0 - self.a1**2 / (4 * self.a2)

    def roots(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Roots r1 ≤ r2 of ℓ(z) = c (NaN where none) and whether they exist."""
        A, B = self.a2, self.a1
        C = self.a0 - np.asarray(c, dtype=float)
        disc = B * B - 4 * A * C
        ok = disc > 0
        sq = np.sqrt(np.where(ok, disc, 0.0))
        q = -0.5 * (B + (1.0 if B >= 0 else -1.0) * sq)
        with np.errstate(divide="ignore", invalid="ignore"):
            r_a = q / A
            r_b = np.where(q != 0, C / q, -r_a)
        r1 = np.where(ok, np.minimum(r_a, r_b), np.nan)
        r2 = np.where(ok, np.maximum(r_a, r_b), np.nan)
        return r1, r2, ok

    def h(self, c: np.ndarray) -> np.ndarray:
        """∫ (p − e^c q)₊ dz = P(ℓ > c) − e^c Q(ℓ > c), vectorised over c."""
        with np.errstate(all="ignore"):
            return self._h(c)

    def _h(self, c: np.ndarray) -> np.ndarray:
        c = np.asarray(c, dtype=float)
        s = math.sqrt(self.lam)
        if self.unit:
            b = abs(self.b)
            if b == 0.0:
                return np.maximum(0.0, -np.expm1(c))
            t = (c + 0.5 * b * b) / b  # ℓ(z) = b z − b²/2 > c  ⟺  z > t
            out = ndtr(-(t - b)) - np.exp(c + _log_sf(t))
            return np.clip(out, 0.0, 1.0)
        r1, r2, ok = self.roots(c)
        if self.a2 > 0:  # convex: {ℓ > c} = ℝ, or (−∞, r1) ∪ (r2, ∞)
            p_tail = ndtr((r1 - self.b) / s) + ndtr(-(r2 - self.b) / s)
            log_q_tail = np.logaddexp(log_ndtr(r1), _log_sf(r2))
            two = p_tail - np.exp(c + log_q_tail)
            out = np.where(ok, two, -np.expm1(c))
        else:  # concave: {ℓ > c} = ∅ or (r1, r2)
            r1s = np.where(ok, r1, 0.0)
            r2s = np.where(ok, r2, 0.0)
            p_in = _interval_prob((r1s - self.b) / s, (r2s - self.b) / s)
            q_in = _interval_prob(r1s, r2s)
            with np.errstate(over="ignore", invalid="ignore"):
                two = p_in - np.exp(c) * q_in
            out = np.where(ok, two, 0.0)
        return np.clip(np.nan_to_num(out, nan=0.0), 0.0, 1.0)


def gdp_delta_reference(epsilon: float, mu: float) -> float:
    """Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (δ = 0 for μ = 0), e^ε Φ(·) taken in log space."""
    if mu == 0:
        return 0.0
    a = -epsilon / mu + mu / 2
    b = -epsilon / mu - mu / 2
    return max(0.0, float(ndtr(a) - math.exp(epsilon + float(log_ndtr(b)))))


# --------------------------------------------------------------------------------------------
# Reduction to independent coordinates
# --------------------------------------------------------------------------------------------


def _pow2_scales(*vectors: np.ndarray) -> np.ndarray:
    s = np.max(np.abs(np.vstack(vectors)), axis=0)
    out = np.ones_like(s)
    pos = s > 0
    out[pos] = np.exp2(np.floor(np.log2(s[pos])))
    return out


def _factor(X: np.ndarray) -> np.ndarray:
    """F with X = F Fᵀ for the intended PSD matrix X: the rank is decided on X's correlation
    form (eigenvalues below 1e-11 of the largest are rounding, and dropped — so a float matrix
    meant to be singular, which rounding makes slightly indefinite or definite, counts as
    singular). Per summand, so that a summand far larger than another in the same coordinates
    cannot hide the smaller one's support."""
    dim = X.shape[0]
    dg = np.diag(X).copy()
    nz = dg > 0
    if not nz.any():
        return np.zeros((dim, 0))
    s = np.sqrt(dg[nz])
    R = X[np.ix_(nz, nz)] / np.outer(s, s)
    w, V = np.linalg.eigh((R + R.T) / 2)
    keep = w > RANK_TOL * w.max()
    out = np.zeros((dim, int(keep.sum())))
    out[nz] = V[:, keep] * np.sqrt(w[keep]) * s[:, None]
    return out


def _span(*bases: np.ndarray) -> np.ndarray:
    """Orthonormal basis of the span of the columns of the bases."""
    M = np.concatenate(bases, axis=1)
    if M.shape[1] == 0:
        return M
    M = M / np.linalg.norm(M, axis=0)
    if M.shape[1] >= M.shape[0] and np.linalg.matrix_rank(M, tol=SPAN_TOL) == M.shape[0]:
        return np.eye(M.shape[0])  # the whole space: no rounding from a computed basis
    U, sv, _ = np.linalg.svd(M, full_matrices=False)
    return U[:, sv > SPAN_TOL * sv[0]]


def _mp_matrix(x: np.ndarray) -> mpmath.matrix:
    return mpmath.matrix([[mpmath.mpf(float(v)) for v in row] for row in np.atleast_2d(x)])


def reduce_pair(
    m_p: np.ndarray,
    S_p: np.ndarray,
    m_q: np.ndarray,
    S_q: np.ndarray,
    Z: np.ndarray | None = None,
) -> list[Coord] | None:
    """The independent coordinates of P = N(m_p, S_p + Z) against Q = N(m_q, S_q + Z) on their
    common support, or None when the supports differ (then δ = 1 for every ε).

    The supports are range(S) + range(Z), each summand's range decided on its own (and each
    summand replaced by its intended PSD form F Fᵀ, :func:`_factor`); on the common support Q's
    covariance is whitened and P's diagonalised in 80-digit arithmetic (mixed scales and
    ill-conditioned sums lose nothing there)."""
    d = np.asarray(m_p, float) - np.asarray(m_q, float)
    S_p = np.asarray(S_p, float)
    S_q = np.asarray(S_q, float)
    Z = np.zeros_like(S_p) if Z is None else np.asarray(Z, float)
    diag = [np.sqrt(np.abs(np.diag(X))) for X in (S_p, S_q, Z)]
    scale = _pow2_scales(*diag, d)
    keep = ~((diag[0] == 0) & (diag[1] == 0) & (diag[2] == 0) & (d == 0))  # equal constants
    scale = scale[keep]
    d = d[keep] / scale
    S_p, S_q, Z = (X[np.ix_(keep, keep)] / np.outer(scale, scale) for X in (S_p, S_q, Z))
    if d.size == 0:
        return []
    F_p, F_q, F_z = _factor(S_p), _factor(S_q), _factor(Z)
    U_q = _span(F_q, F_z)
    U_p = _span(F_p, F_z)
    if U_p.shape[1] != U_q.shape[1]:
        return None  # one support is a proper subspace of (or not inside) the other
    off = np.eye(d.size) - U_q @ U_q.T
    if np.abs(off @ U_p).max(initial=0.0) > 1e3 * SPAN_TOL:
        return None  # supp P ⊄ supp Q
    if np.abs(off @ d).max() > MEAN_TOL:
        return None  # the means differ off supp Q
    if U_q.shape[1] == 0:
        return []  # one common point
    with mpmath.workdps(80):
        U = _mp_matrix(U_q)
        Fz = U.T * _mp_matrix(F_z) if F_z.shape[1] else None
        Fq = U.T * _mp_matrix(F_q) if F_q.shape[1] else None
        Fp = U.T * _mp_matrix(F_p) if F_p.shape[1] else None
        zero = mpmath.zeros(U.cols, U.cols)
        Czz = Fz * Fz.T if Fz is not None else zero
        Cq = (Fq * Fq.T if Fq is not None else zero) + Czz
        Cp = (Fp * Fp.T if Fp is not None else zero) + Czz
        dr = U.T * _mp_matrix(d.reshape(-1, 1))
        L = mpmath.cholesky(Cq)
        Li = mpmath.inverse(L)
        B = Li * Cp * Li.T
        B = (B + B.T) / 2
        lam_mp, V = mpmath.eigsy(B)
        b_mp = V.T * (Li * dr)
        lam = [float(lam_mp[k]) for k in range(U.cols)]
        b = [float(b_mp[k]) for k in range(U.cols)]
    if min(lam) <= 0:
        return None  # P degenerate inside the common support (rounding-level case)
    coords: list[Coord] = []
    unit_sq = 0.0
    for lk, bk in zip(lam, b, strict=True):
        if abs(lk - 1.0) <= UNIT_TOL:
            unit_sq += bk * bk
        else:
            coords.append(Coord(float(lk), float(bk)))
    if unit_sq > 0:
        coords.append(Coord(1.0, math.sqrt(unit_sq)))
    return coords


# --------------------------------------------------------------------------------------------
# Integration over the outer coordinates
# --------------------------------------------------------------------------------------------

_GL_T, _GL_W = np.polynomial.legendre.leggauss(16)
_GL_T = (_GL_T + 1) / 2
_GL_W = _GL_W / 2
_C_OFFSETS = (-20.0, -5.0, -2.0, -0.5, 0.0, 0.5, 2.0, 5.0, 20.0)
_U_FIXED = (-U_MAX, -8.0, -5.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 5.0, 8.0, U_MAX)


def _phi(u: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * u * u) / math.sqrt(2 * math.pi)


def _panel_nodes(edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights on the consecutive panels of each row of ``edges`` (sorted, shape
    (..., M)); each panel [a, b] is mapped by u = a + (b − a)(1 − cos πt)/2, so that algebraic
    end-point singularities become smooth. Returns shape (..., (M − 1)·nodes)."""
    a, b = edges[..., :-1, None], edges[..., 1:, None]
    u = a + (b - a) * (1 - np.cos(np.pi * _GL_T)) / 2
    w = (b - a) * np.pi * np.sin(np.pi * _GL_T) / 2 * _GL_W
    shape = (*edges.shape[:-1], -1)
    return u.reshape(shape), w.reshape(shape)


def _u_at_levels(coord: Coord, levels: np.ndarray) -> np.ndarray:
    """u (z = b + √λ u) where ℓ(z) equals each level, shape (..., 2·L); NaN where none."""
    levels = np.asarray(levels, dtype=float)
    s = math.sqrt(coord.lam)
    if coord.unit:
        if coord.b == 0:
            z = np.full(levels.shape, np.nan)
        else:
            z = (levels + 0.5 * coord.b * coord.b) / coord.b
        r1, r2 = z, np.full(levels.shape, np.nan)
    else:
        r1, r2, _ = coord.roots(levels)
    both = np.concatenate([r1, r2], axis=-1)
    return (both - coord.b) / s


def _edges(points: np.ndarray) -> np.ndarray:
    """Sorted panel edges per row: the fixed points and the given ones inside (−U, U); the
    others (and NaN) become duplicates of −U (panels of width 0)."""
    points = np.asarray(points, dtype=float)
    fixed = np.broadcast_to(np.array(_U_FIXED), (*points.shape[:-1], len(_U_FIXED)))
    pts = np.where(np.isfinite(points) & (np.abs(points) < U_MAX), points, -U_MAX)
    return np.sort(np.concatenate([fixed, pts], axis=-1), axis=-1)


def _levels(inner: Coord, budget: np.ndarray, extra: tuple[float, ...] = ()) -> np.ndarray:
    """Loss levels of the outer coordinates at which the integrand changes character: where
    the inner argument c = budget − loss crosses the inner critical value or 0, and O(1) moves
    around them. Shape (..., L)."""
    budget = np.asarray(budget, dtype=float)[..., None]
    crit = inner.critical()
    centres = [budget] + ([] if crit is None else [budget - crit])
    off = np.array(_C_OFFSETS)
    out = [c + off for c in centres]
    out += [budget - e for e in extra]
    return np.concatenate([np.broadcast_to(x, (*budget.shape[:-1], x.shape[-1])) for x in out], -1)


def hockey_stick_coords(coords: list[Coord], epsilon: float) -> float:
    """δ(ε) for P = ⊗ N(b_k, λ_k) against Q = N(0, I) (at most three coordinates)."""
    if not coords:
        return 0.0
    if all(c.unit for c in coords):
        return gdp_delta_reference(epsilon, math.sqrt(sum(c.b * c.b for c in coords)))
    if len(coords) > 3:
        raise ValueError("the reference handles at most three coordinates")
    # The inner (closed-form) coordinate: the unit one if any (smooth h), else the first.
    order = sorted(coords, key=lambda c: not c.unit)
    inner, outer = order[0], order[1:]
    if not outer:
        return float(inner.h(np.array([epsilon]))[0])
    o1 = outer[0]
    crit2 = outer[1].critical() if len(outer) == 2 else None
    extra = () if crit2 is None else (crit2,)
    crit_in = inner.critical()
    if crit2 is not None and crit_in is not None:
        extra = (*extra, crit2 + crit_in)
    u1, w1 = _panel_nodes(_edges(_u_at_levels(o1, _levels(inner, np.array(epsilon), extra))))
    budget = epsilon - o1.loss(o1.b + math.sqrt(o1.lam) * u1)
    if len(outer) == 1:
        return float(np.clip(np.sum(w1 * _phi(u1) * inner.h(budget)), 0.0, 1.0))
    o2 = outer[1]
    lv = _levels(inner, budget)
    if crit2 is not None:
        lv = np.concatenate([lv, np.full((*lv.shape[:-1], 1), crit2)], axis=-1)
    u2, w2 = _panel_nodes(_edges(_u_at_levels(o2, lv)))
    vals = inner.h(budget[:, None] - o2.loss(o2.b + math.sqrt(o2.lam) * u2))
    g = np.sum(w2 * _phi(u2) * vals, axis=-1)
    return float(np.clip(np.sum(w1 * _phi(u1) * g), 0.0, 1.0))


def hockey_stick_nested_quad(coords: list[Coord], epsilon: float) -> float:
    """The same integral by nested adaptive quadrature (QUADPACK, tolerance 1e-11), slow: a
    check of :func:`hockey_stick_coords`'s fixed rules."""
    inner, outer = coords[-1], coords[:-1]

    def f(*us: float) -> float:
        loss = sum(
            float(c.loss(np.array(c.b + math.sqrt(c.lam) * u)))
            for c, u in zip(outer, us, strict=True)
        )
        weight = math.prod(math.exp(-0.5 * u * u) / math.sqrt(2 * math.pi) for u in us)
        return float(inner.h(np.array([epsilon - loss]))[0]) * weight

    if not outer:
        return float(inner.h(np.array([epsilon]))[0])
    opts = {"epsabs": 1e-12, "epsrel": 1e-11, "limit": 200}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        return integrate.nquad(f, [[-U_MAX, U_MAX]] * len(outer), opts=opts)[0]


def hockey_stick(
    m_p: np.ndarray,
    S_p: np.ndarray,
    m_q: np.ndarray,
    S_q: np.ndarray,
    epsilon: float,
    Z: np.ndarray | None = None,
) -> float:
    """δ_{P‖Q}(ε) = sup_A P(A) − e^ε Q(A) for P = N(m_p, S_p + Z), Q = N(m_q, S_q + Z),
    exactly (dimension ≤ 3; singular covariances allowed; Z, the noise, optional)."""
    coords = reduce_pair(m_p, S_p, m_q, S_q, Z)
    if coords is None:
        return 1.0
    with np.errstate(all="ignore"):
        return hockey_stick_coords(coords, epsilon)
