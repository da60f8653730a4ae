"""Local obfuscation mechanisms: transition matrices on finite domains, samplers otherwise.

Every mechanism A maps an input x to a distribution A(x) on outputs. On a finite domain it is
held as a row-stochastic matrix ``matrix_[x, y] = A(x)[y]`` (inspectable before anything is
drawn); its lifting to an input distribution λ is ``A#λ = λ @ matrix_`` (Kawamoto & Murakami,
notes on ``004``, "Setting"). Continuous mechanisms (1-D / planar Laplace, Gaussian) are
samplers; "snapping" them to a grid (nearest cell, clipped at the border) is post-processing,
whose transition matrix is computed exactly here (closed form for Laplace on a line and for the
Gaussian; a one-dimensional Gauss–Legendre quadrature of the planar Laplace over each cell,
accurate to ~1e-13).

The tupling mechanism (notes, "The tupling mechanism") outputs a (k+1)-tuple: the base
mechanism's output at a uniformly random position among k dummies drawn i.i.d. from ν.

Randomness: every sampler takes ``random_state`` (:func:`distprivacy.randomness.
check_random_state` with ``secure=True``). The default, ``None``, is a real obfuscation: draws
come from the OS's cryptographically secure generator
(:class:`distprivacy.randomness.SecureGenerator`).
An int seed or a NumPy Generator gives reproducible draws, bit for bit, for experiments.
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from distprivacy.checks import check_int, check_positive
from distprivacy.exceptions import DistPrivacyError
from distprivacy.local.domains import Domain, check_distribution
from distprivacy.randomness import RandomState, check_random_state
from distprivacy.resources import check_memory

__all__ = [
    "ExponentialMechanism",
    "FiniteMechanism",
    "RandomizedResponse",
    "SnappedGaussian",
    "SnappedLaplace",
    "TuplingMechanism",
    "check_k",
    "check_positive",
    "gaussian_sample",
    "laplace_1d_sample",
    "planar_laplace_cell_probability",
    "planar_laplace_sample",
    "snap",
]

_ROW_TOL = 1e-9


# ---------------------------------------------------------------------------------------------
# Validation helpers
# ---------------------------------------------------------------------------------------------


def check_matrix_memory(n: int, name: str) -> None:
    """Refuse an n × n transition matrix that would not fit (a few n × n float temporaries)."""
    check_memory(32.0 * n * n, f"the {n}×{n} transition matrix of {name}")


def check_k(k: int) -> int:
    """The number of dummies: an integer ≥ 0."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer):
        raise DistPrivacyError(f"k (number of dummies) must be an integer ≥ 0, got {k!r}")
    if k < 0:
        raise DistPrivacyError(f"k (number of dummies) must be ≥ 0, got {k}; use k = 0 for none")
    return int(k)


def _indices(x: ArrayLike, n: int) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype.kind not in "iu" or (arr.size and (arr.min() < 0 or arr.max() >= n)):
        raise DistPrivacyError(f"inputs must be integer indices in [0, {n - 1}]")
    return arr.astype(np.intp)


# ---------------------------------------------------------------------------------------------
# Finite mechanisms
# ---------------------------------------------------------------------------------------------


class FiniteMechanism:
    """A local mechanism on a finite input set given by its transition matrix.

    Parameters
    ----------
    matrix : array_like, shape (n_inputs, n_outputs)
        ``matrix[x, y] = A(x)[y]``; rows must be probability vectors.
    name : str
        Label used in reports.

    Attributes
    ----------
    matrix_ : ndarray
        The validated transition matrix.
    """

    theorem = "a given transition matrix (no guarantee beyond what guarantees.py computes)"

    def __init__(self, matrix: ArrayLike, *, name: str = "finite") -> None:
        self.name = name
        self.matrix_ = self._validate(matrix)

    @staticmethod
    def _validate(matrix: ArrayLike) -> np.ndarray:
        M = np.asarray(matrix, dtype=float)
        if M.ndim != 2 or M.shape[0] < 1 or M.shape[1] < 1:
            raise DistPrivacyError(f"a transition matrix must be 2-D, got shape {M.shape}")
        if not np.isfinite(M).all() or (M < 0).any():
            raise DistPrivacyError("transition matrix has negative, NaN or infinite entries")
        bad = np.abs(M.sum(axis=1) - 1.0) > _ROW_TOL
        if bad.any():
            raise DistPrivacyError(
                f"transition matrix row {int(np.argmax(bad))} sums to "
                f"{M[int(np.argmax(bad))].sum():.12g}, not 1; each row must be a distribution"
            )
        return M

    @property
    def n_inputs(self) -> int:
        return int(self.matrix_.shape[0])

    @property
    def n_outputs(self) -> int:
        return int(self.matrix_.shape[1])

    def lift(self, lam: ArrayLike) -> np.ndarray:
        """A#λ = Σ_x λ[x]·A(x): the output distribution when the input is drawn from λ."""
        p = check_distribution(lam, self.n_inputs, "input distribution")
        return p @ self.matrix_

    def sample(self, x: ArrayLike, *, random_state: RandomState = None) -> np.ndarray:
        """Obfuscate each input index in ``x`` (inverse-CDF on its row; vectorised)."""
        g = check_random_state(random_state, secure=True)
        xi = _indices(x, self.n_inputs)
        cdf = np.cumsum(self.matrix_, axis=1)
        cdf[:, -1] = 1.0
        u = g.random(xi.shape)
        flat_x, flat_u = xi.reshape(-1), u.reshape(-1)
        out = np.empty(flat_x.size, dtype=np.intp)
        step = max(1, 2_000_000 // self.n_outputs)
        for s in range(0, flat_x.size, step):  # chunks bound memory, not a per-sample loop
            rows = cdf[flat_x[s : s + step]]
            out[s : s + step] = (rows < flat_u[s : s + step, None]).sum(axis=1)
        return np.minimum(out, self.n_outputs - 1).reshape(xi.shape)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name}, {self.n_inputs}→{self.n_outputs})"


class RandomizedResponse(FiniteMechanism):
    """k-ary randomized response on n values.

    Keeps x with probability e^ε/(n − 1 + e^ε), otherwise outputs one of the other n − 1 values
    uniformly (Warner 1965; Kairouz, Oh & Viswanath 2014). ε-local DP; its lifting has the closed
    form A#λ[y] = (1 + (e^ε − 1)λ[y])/(n − 1 + e^ε) (Kawamoto & Murakami, notes on 004, §4).
    """

    theorem = "ε-local DP (Kairouz et al. 2014); closed-form lifting, notes on 004 §4"

    def __init__(self, n: int, epsilon: float) -> None:
        self.n = check_int(n, "randomized response's n (values)", low=2)
        self.epsilon = check_positive(epsilon, "epsilon")
        self.name = f"RR(ε={self.epsilon:g})"

    @cached_property
    def keep_probability(self) -> float:
        """e^ε / (n − 1 + e^ε), computed stably."""
        return float(1.0 / (1.0 + (self.n - 1) * math.exp(-self.epsilon)))

    @cached_property
    def matrix_(self) -> np.ndarray:  # type: ignore[override]
        check_matrix_memory(self.n, self.name)
        keep = self.keep_probability
        other = (1.0 - keep) / (self.n - 1)
        M = np.full((self.n, self.n), other)
        np.fill_diagonal(M, keep)
        return M

    def lift(self, lam: ArrayLike) -> np.ndarray:
        """Closed form: A#λ[y] = (1 + (e^ε − 1)λ[y]) / (n − 1 + e^ε), in O(n)."""
        p = check_distribution(lam, self.n, "input distribution")
        keep = self.keep_probability
        other = (1.0 - keep) / (self.n - 1)
        return other + (keep - other) * p

    def sample(self, x: ArrayLike, *, random_state: RandomState = None) -> np.ndarray:
        """Keep or replace by a uniform other value (O(1) per input)."""
        g = check_random_state(random_state, secure=True)
        xi = _indices(x, self.n)
        keep = g.random(xi.shape) < self.keep_probability
        other = g.integers(0, self.n - 1, size=xi.shape)
        other = other + (other >= xi)
        return np.where(keep, xi, other)


class ExponentialMechanism(FiniteMechanism):
    """Exponential mechanism with utility −d: A(x)[y] ∝ exp(−ε·d(x, y)/2) over the domain.

    McSherry & Talwar (2007), with the utility distance of Kawamoto & Murakami (004, Def. 4 and
    Example 1): the utility u(x, y) = −d(x, y) has |u(x, y) − u(x′, y)| ≤ d(x, x′), so the
    mechanism is ε·d-extended DP (ε·d(x, x′)-indistinguishable), hence ε·diam-local DP.
    """

    theorem = "ε·d-XDP (McSherry & Talwar 2007; 004 Example 1)"

    def __init__(self, domain: Domain, epsilon: float) -> None:
        self.domain = domain
        self.epsilon = check_positive(epsilon, "epsilon")
        self.name = f"Exp(ε={self.epsilon:g})"

    @cached_property
    def matrix_(self) -> np.ndarray:  # type: ignore[override]
        check_matrix_memory(self.domain.size, self.name)
        logits = -0.5 * self.epsilon * self.domain.distances
        logits -= logits.max(axis=1, keepdims=True)
        W = np.exp(logits)
        return W / W.sum(axis=1, keepdims=True)


# ---------------------------------------------------------------------------------------------
# Continuous samplers and snapping
# ---------------------------------------------------------------------------------------------


def laplace_1d_sample(
    x: ArrayLike, epsilon: float, *, random_state: RandomState = None
) -> np.ndarray:
    """y = x + Lap(1/ε): density (ε/2)e^{−ε|y−x|}, ε·|·|-XDP (004 §V; notes "Laplace and W∞")."""
    eps = check_positive(epsilon, "epsilon")
    xa = np.asarray(x, dtype=float)
    return xa + check_random_state(random_state, secure=True).laplace(0.0, 1.0 / eps, size=xa.shape)


def planar_laplace_sample(
    x: ArrayLike, epsilon: float, *, random_state: RandomState = None
) -> np.ndarray:
    """Planar Laplace (Andrés et al. 2013): density (ε²/2π)e^{−ε‖y−x‖₂}, ε·‖·‖₂-XDP.

    Polar sampling: angle uniform, radius ~ Gamma(2, 1/ε). ``x`` has shape (..., 2).
    """
    eps = check_positive(epsilon, "epsilon")
    xa = np.asarray(x, dtype=float)
    if xa.shape[-1:] != (2,):
        raise DistPrivacyError(f"planar Laplace needs points of shape (..., 2), got {xa.shape}")
    g = check_random_state(random_state, secure=True)
    theta = g.uniform(0.0, 2 * np.pi, size=xa.shape[:-1])
    r = g.gamma(2.0, 1.0 / eps, size=xa.shape[:-1])
    return xa + np.stack([r * np.cos(theta), r * np.sin(theta)], axis=-1)


def gaussian_sample(x: ArrayLike, sigma: float, *, random_state: RandomState = None) -> np.ndarray:
    """y = x + N(0, σ²I) (isotropic, any dimension; the last axis holds coordinates)."""
    s = check_positive(sigma, "sigma")
    xa = np.asarray(x, dtype=float)
    return xa + s * check_random_state(random_state, secure=True).standard_normal(xa.shape)


def _axis_sizes(domain: Domain) -> tuple[int, ...]:
    if len(domain.shape) not in (1, 2) or math.prod(domain.shape) != domain.size:
        raise DistPrivacyError(
            "snapping needs a grid or a line domain (built by local.domains.grid / line)"
        )
    return domain.shape


def snap(points: ArrayLike, domain: Domain) -> np.ndarray:
    """Nearest cell of a grid/line domain for continuous points (clipped at the border)."""
    sizes = _axis_sizes(domain)
    pts = np.asarray(points, dtype=float)
    if len(sizes) == 1:
        coords = pts[..., 0] if pts.ndim and pts.shape[-1:] == (1,) else pts
        return np.clip(np.floor(coords / domain.cell + 0.5), 0, sizes[0] - 1).astype(np.intp)
    rows, cols = sizes
    c = np.clip(np.floor(pts[..., 0] / domain.cell + 0.5), 0, cols - 1).astype(np.intp)
    r = np.clip(np.floor(pts[..., 1] / domain.cell + 0.5), 0, rows - 1).astype(np.intp)
    return r * cols + c


def _edges(n: int) -> np.ndarray:
    """Cell boundaries (in cell units) of n cells centred at 0..n−1, border cells unbounded."""
    return np.concatenate(([-np.inf], np.arange(n - 1) + 0.5, [np.inf]))


_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(16)
# Graded composite rule on [0, 1], refined toward 1 (pieces [1 − 2^−j, 1 − 2^−(j+1)], j < 40):
# the angular integrands below vanish like e^{−c/x} at that end, on scales down to ~ε·cell.
_GRADE = np.concatenate(([0.0], 1.0 - 0.5 ** np.arange(1, 41), [1.0]))
_G_NODES = (_GRADE[:-1, None] + np.diff(_GRADE)[:, None] * (_GL_NODES + 1) / 2).ravel()
_G_WEIGHTS = (np.diff(_GRADE)[:, None] / 2 * _GL_WEIGHTS).ravel()


def _tail_mass(u: np.ndarray, v: np.ndarray, eps: float) -> np.ndarray:
    """T(u, v) = P(Z1 > u, Z2 > v) for planar Laplace Z (rate ε), u, v ≥ 0 (may be +inf).

    In polar coordinates the radial tail is closed-form: P(‖Z‖ > R) = h(R) = e^{−εR}(1 + εR).
    A ray at angle θ ∈ (0, π/2) enters the region at R(θ) = max(u/cos θ, v/sin θ) and never
    leaves, so T = (1/2π) ∫ h(R(θ)) dθ; split at φ0 = atan2(v, u) into θ ∈ [0, φ0]
    (R = v/sin θ, vanishing as θ → 0) and [φ0, π/2] (R = u/cos θ, vanishing as θ → π/2), each
    by a composite Gauss–Legendre rule graded toward the vanishing end. No cancellation: far
    tails keep full relative accuracy.
    """
    u = np.abs(np.asarray(u, dtype=float))  # also turns −0.0 into 0.0 (atan2(0, −0) = π)
    v = np.abs(np.asarray(v, dtype=float))
    phi0 = np.arctan2(v, u)[..., None]

    def h(R: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", over="ignore"):
            out = np.exp(-eps * R) * (1.0 + eps * R)
        return np.where(np.isinf(R), 0.0, out)

    with np.errstate(divide="ignore", invalid="ignore"):
        th1 = phi0 * (1.0 - _G_NODES)  # [0, φ0], graded toward 0
        part1 = phi0[..., 0] * (h(v[..., None] / np.sin(th1)) @ _G_WEIGHTS)
        th2 = phi0 + (np.pi / 2 - phi0) * _G_NODES  # [φ0, π/2], graded toward π/2
        part2 = (np.pi / 2 - phi0[..., 0]) * (h(u[..., None] / np.cos(th2)) @ _G_WEIGHTS)
    part1 = np.where(phi0[..., 0] > 0, part1, 0.0)
    part2 = np.where(phi0[..., 0] < np.pi / 2, part2, 0.0)
    return (part1 + part2) / (2 * np.pi)


def _folded_parts(lo: np.ndarray, hi: np.ndarray) -> list[tuple[np.ndarray, ...]]:
    """Fold an interval [lo, hi] onto [0, ∞) by symmetry: up to two parts (p, q, used)."""
    straddle = (lo < 0) & (hi > 0)
    p0 = np.abs(np.where(lo >= 0, lo, np.where(hi <= 0, -hi, 0.0)))
    q0 = np.abs(np.where(lo >= 0, hi, np.where(hi <= 0, -lo, hi)))
    return [(p0, q0, np.ones_like(p0, dtype=bool)), (np.zeros_like(lo), np.abs(lo), straddle)]


def _rect_masses(lo: np.ndarray, hi: np.ndarray, eps: float) -> np.ndarray:
    """P(Z ∈ [lo, hi]) for rectangles (R, 2): fold each axis onto [0, ∞), then
    T(p, r) − T(p, s) − T(q, r) + T(q, s) on each quadrant piece [p, q] × [r, s]; every T is
    evaluated once per distinct (u, v)."""
    xs = _folded_parts(lo[:, 0], hi[:, 0])
    ys = _folded_parts(lo[:, 1], hi[:, 1])
    us, vs, signs, used = [], [], [], []
    for p, q, mx in xs:
        for r, t, my in ys:
            for uu, vv, sg in ((p, r, 1.0), (p, t, -1.0), (q, r, -1.0), (q, t, 1.0)):
                us.append(uu)
                vs.append(vv)
                signs.append(sg)
                used.append(mx & my)
    U, V = np.stack(us), np.stack(vs)  # (16, R)
    pairs = np.stack((U.ravel(), V.ravel()), axis=1)
    uniq, inv = np.unique(pairs, axis=0, return_inverse=True)
    T = _tail_mass(uniq[:, 0], uniq[:, 1], eps)[inv.reshape(-1)].reshape(U.shape)
    terms = np.where(np.stack(used), np.asarray(signs)[:, None] * T, 0.0)
    return np.maximum(terms.sum(axis=0), 0.0)


def planar_laplace_cell_probability(
    lower: ArrayLike, upper: ArrayLike, epsilon: float
) -> np.ndarray:
    """P(Z ∈ [lower, upper]) for planar Laplace noise Z centred at 0 (rate ε).

    ``lower``, ``upper``: arrays of shape (..., 2) (entries may be ±inf). Each axis interval is
    folded onto [0, ∞) by symmetry and each quadrant piece is an inclusion–exclusion of tail
    masses T(u, v) = P(Z1 > u, Z2 > v) (:func:`_tail_mass`): relative accuracy ~1e-12 even far
    in the tail, where the mass is e^{−ε·distance}-small.
    """
    eps = check_positive(epsilon, "epsilon")
    lo = np.asarray(lower, dtype=float)
    hi = np.asarray(upper, dtype=float)
    shape = np.broadcast_shapes(lo.shape, hi.shape)[:-1]
    lo = np.broadcast_to(lo, (*shape, 2)).reshape(-1, 2)
    hi = np.broadcast_to(hi, (*shape, 2)).reshape(-1, 2)
    return _rect_masses(lo, hi, eps).reshape(shape)


class SnappedLaplace(FiniteMechanism):
    """Laplace noise (1-D on a line, planar on a grid) snapped to the nearest cell.

    1-D Laplace with density (ε/2)e^{−ε|y−x|} and planar Laplace with density
    (ε²/2π)e^{−ε‖y−x‖₂} are ε·d-XDP (004 §V; Andrés et al. 2013 for the planar case); snapping
    is post-processing, so the finite mechanism is ε·d-XDP too and, by the notes' result
    "Laplace and W∞", (ε·W∞,d(λ, λ′), 0)-DistP. Here ε is per unit of the domain's coordinates.

    The transition matrix is exact: the 1-D Laplace CDF on a line; on a grid, the probability
    of each cell by :func:`planar_laplace_cell_probability` (tail masses in polar coordinates,
    radial integral in closed form, graded Gauss–Legendre in the angle): relative accuracy
    ~1e-12 even far in the tail, so ratio-based quantities of the matrix (XDP and KL constants,
    local-DP ε) are meaningful. Rows are renormalised by their sums, which differ from 1 by
    ~1e-15.
    """

    theorem = "ε·d-XDP ⇒ (ε·W∞(λ, λ′), 0)-DistP (004 §V, notes 'Laplace and W∞')"

    def __init__(self, domain: Domain, epsilon: float) -> None:
        self.domain = domain
        self.epsilon = check_positive(epsilon, "epsilon")
        self.name = f"Laplace(ε={self.epsilon:g})"
        _axis_sizes(domain)

    @cached_property
    def matrix_(self) -> np.ndarray:  # type: ignore[override]
        check_matrix_memory(self.domain.size, self.name)
        sizes = _axis_sizes(self.domain)
        eps = self.epsilon * self.domain.cell  # rate per cell unit
        if len(sizes) == 1:
            n = sizes[0]
            e = _edges(n)
            diff = e[None, :] - np.arange(n)[:, None]  # (input, edge)
            cdf = np.where(diff < 0, 0.5 * np.exp(eps * np.minimum(diff, 0)), 0.0)
            cdf = np.where(diff >= 0, 1 - 0.5 * np.exp(-eps * np.maximum(diff, 0)), cdf)
            return np.diff(cdf, axis=1)
        rows, cols = sizes

        def intervals(n: int) -> tuple[np.ndarray, np.ndarray]:
            """Distinct (edge_i − centre_a, edge_{i+1} − centre_a) and the (a, i) → index map."""
            e = _edges(n)
            lo = e[None, :-1] - np.arange(n)[:, None]  # (input, output)
            hi = e[None, 1:] - np.arange(n)[:, None]
            uniq, inv = np.unique(
                np.stack((lo, hi), axis=-1).reshape(-1, 2), axis=0, return_inverse=True
            )
            return uniq, inv.reshape(n, n)

        ux, ix = intervals(cols)
        uy, iy = intervals(rows)
        nx, ny = ux.shape[0], uy.shape[0]
        lo = np.column_stack((np.repeat(ux[:, 0], ny), np.tile(uy[:, 0], nx)))
        hi = np.column_stack((np.repeat(ux[:, 1], ny), np.tile(uy[:, 1], nx)))
        table = _rect_masses(lo, hi, eps).reshape(nx, ny)  # every distinct cell once
        # P[b, a, j, i]: input (row b, col a) → output cell (row j, col i)
        P = table[ix[None, :, None, :], iy[:, None, :, None]].reshape(rows * cols, rows * cols)
        return P / P.sum(axis=1, keepdims=True)

    def sample(self, x: ArrayLike, *, random_state: RandomState = None) -> np.ndarray:
        """Draw continuous Laplace noise around each input cell centre and snap."""
        xi = _indices(x, self.domain.size)
        centres = self.domain.points[xi]
        if len(self.domain.shape) == 1:
            return snap(
                laplace_1d_sample(centres[..., 0], self.epsilon, random_state=random_state),
                self.domain,
            )
        return snap(
            planar_laplace_sample(centres, self.epsilon, random_state=random_state), self.domain
        )


class SnappedGaussian(FiniteMechanism):
    """Isotropic Gaussian noise N(0, σ²I) snapped to the nearest cell of a line or grid.

    Two inputs at Euclidean distance Δ give μ-Gaussian DP with μ = Δ/σ (Dong, Roth & Su 2022),
    so the mechanism is (ε, δ(ε))-local DP with δ(ε) = gdp_delta(ε, diam/σ) and — by
    DP ⇒ DistP (notes, "Existing mechanisms" 1) — (ε, δ)-DistP for every pair. The transition
    matrix is exact (a product of normal-CDF differences along each axis).
    """

    theorem = "μ = diam/σ Gaussian DP (Dong et al. 2022) ⇒ DistP (004 §V, notes 1)"

    def __init__(self, domain: Domain, sigma: float) -> None:
        self.domain = domain
        self.sigma = check_positive(sigma, "sigma")
        self.name = f"Gaussian(σ={self.sigma:g})"
        _axis_sizes(domain)

    @cached_property
    def matrix_(self) -> np.ndarray:  # type: ignore[override]
        check_matrix_memory(self.domain.size, self.name)
        sizes = _axis_sizes(self.domain)
        s = self.sigma / self.domain.cell

        def axis(n: int) -> np.ndarray:
            diff = (_edges(n)[None, :] - np.arange(n)[:, None]) / s
            return np.diff(special.ndtr(diff), axis=1)  # (input, output)

        if len(sizes) == 1:
            P = axis(sizes[0])
        else:
            rows, cols = sizes
            Px, Py = axis(cols), axis(rows)
            P = np.einsum("bj,ai->baji", Py, Px).reshape(rows * cols, rows * cols)
        return P / P.sum(axis=1, keepdims=True)

    def sample(self, x: ArrayLike, *, random_state: RandomState = None) -> np.ndarray:
        """Draw continuous Gaussian noise around each input cell centre and snap."""
        xi = _indices(x, self.domain.size)
        centres = self.domain.points[xi]
        if len(self.domain.shape) == 1:
            return snap(
                gaussian_sample(centres[..., 0], self.sigma, random_state=random_state), self.domain
            )
        return snap(gaussian_sample(centres, self.sigma, random_state=random_state), self.domain)


# ---------------------------------------------------------------------------------------------
# Tupling
# ---------------------------------------------------------------------------------------------


class TuplingMechanism:
    """The tupling mechanism of Kawamoto & Murakami (004 §VI; notes "The tupling mechanism").

    On input x: draw y ~ A(x) from the base mechanism and y1..yk i.i.d. from the dummy
    distribution ν over A's outputs, put y at a uniformly random position among the dummies and
    output the (k+1)-tuple. Its point DP equals the base's (the dummies ignore x); its service
    quality equals the base's (the user knows which entry is real); the cost is k dummies.

    Parameters
    ----------
    base : FiniteMechanism
        The base mechanism A (its outputs are the tuple entries).
    k : int
        Number of dummies, ≥ 0.
    nu : array_like, optional
        Dummy distribution over A's outputs, every entry > 0 (default uniform, as in the paper).
    """

    theorem = "point DP = base's; DistP exact by distp.tupling_profile (notes, tupling)"

    def __init__(self, base: FiniteMechanism, k: int, nu: ArrayLike | None = None) -> None:
        if not isinstance(base, FiniteMechanism):
            raise DistPrivacyError("the tupling base must be a FiniteMechanism (a finite output)")
        self.base = base
        self.k = check_k(k)
        m = base.n_outputs
        if nu is None:
            self.nu_ = np.full(m, 1.0 / m)
        else:
            self.nu_ = check_distribution(nu, m, "dummy distribution nu")
            if (self.nu_ <= 0).any():
                raise DistPrivacyError(
                    "dummy distribution nu must give every output a positive probability"
                )
        self.name = f"Tupling(k={self.k}, {base.name})"

    def sample(self, x: ArrayLike, *, random_state: RandomState = None) -> np.ndarray:
        """Outputs of shape (len(x), k+1); returns the tuples (positions of the real entry are
        not returned — see :meth:`sample_with_position`)."""
        return self.sample_with_position(x, random_state=random_state)[0]

    def sample_with_position(
        self, x: ArrayLike, *, random_state: RandomState = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(tuples (n, k+1), position of the real entry in each)."""
        g = check_random_state(random_state, secure=True)
        xi = np.atleast_1d(_indices(x, self.base.n_inputs))
        real = self.base.sample(xi, random_state=g)
        dummies = g.choice(self.base.n_outputs, size=(xi.size, self.k + 1), p=self.nu_)
        pos = g.integers(0, self.k + 1, size=xi.size)
        dummies[np.arange(xi.size), pos] = real
        return dummies, pos

    def lift_ratio_terms(self, lam: ArrayLike) -> np.ndarray:
        """r(y) = A#λ[y] / ν[y]: a tuple's probability is (Π ν[y_i]) · Σ_i r(y_i) / (k+1)."""
        return self.base.lift(lam) / self.nu_

    def __repr__(self) -> str:
        return self.name
