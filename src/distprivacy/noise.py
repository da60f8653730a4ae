"""Noise: distributions in an orthonormal basis, where randomness comes from, expected error.

Every mechanism of the main paper adds Z = V y, where V (m × d) has orthonormal columns (the
directions the noise acts in: the identity, the span of the mean differences, an eigenbasis, a
single direction v) and y has d independent components, Gaussian N(0, s_k²) or Laplace
Lap(0, b_k). :class:`NoiseDistribution` holds (family, V, scales) and knows its covariance, its
exact expected L2 error E‖Z‖₂ and how to sample.

Randomness: :func:`distprivacy.randomness.check_random_state` with ``secure=True`` — a release
defaults to the secure generator (OpenDP's samplers, driven by the OS's cryptographically secure
generator); experiments pass a seed or a NumPy generator and are reproducible bit for bit.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from scipy import integrate, special

from distprivacy.checks import check_array, check_int, check_number, check_text
from distprivacy.exceptions import DistPrivacyError
from distprivacy.randomness import RandomState, check_random_state
from distprivacy.resources import check_memory

FAMILIES = ("gaussian", "laplace", "none")


def _laplace_log_mgf(t: float, b: float) -> float:
    """log E[exp(−t Y²)] for Y ~ Lap(0, b), accurate for every t > 0.

    E[exp(−t Y²)] = √π z erfcx(z) with z = 1 / (2 b √t); for large z the asymptotic series
    1 − 1/(2z²) + 3/(4z⁴) − 15/(8z⁶) + 105/(16z⁸) avoids cancellation.
    """
    z = 1.0 / (2.0 * b * math.sqrt(t))
    if z > 50.0:
        w = 1.0 / (z * z)
        return math.log1p(-w / 2 + 3 * w**2 / 4 - 15 * w**3 / 8 + 105 * w**4 / 16)
    return 0.5 * math.log(math.pi) + math.log(z) + math.log(float(special.erfcx(z)))


def expected_norm(family: str, scales: np.ndarray) -> float:
    """E‖y‖₂ for independent components y_k (Gaussian std s_k, or Laplace scale b_k).

    Exact up to quadrature error (relative ~1e-10), from
    E√X = (1 / (2√π)) ∫₀^∞ (1 − E e^{−tX}) t^{−3/2} dt with X = ‖y‖², whose Laplace transform
    factorises over the components: Gaussian Π (1 + 2 t s_k²)^{−1/2}; Laplace
    Π √π z_k erfcx(z_k) with z_k = 1 / (2 b_k √t).
    """
    s = np.asarray(scales, dtype=float)
    s = s[s > 0]
    if family == "none" or s.size == 0:
        return 0.0
    # E‖y‖ is homogeneous of degree 1 in the scales: work with scales ≤ 1 so that neither s²
    # nor E[X] overflows or underflows to 0 (ε = 1e300 gives b ~ 1e-300).
    top = float(s.max())
    if not math.isfinite(top):
        raise DistPrivacyError("noise scales must be finite to compute E‖Z‖₂")
    if top != 1.0:
        rest = s / top
        return top * expected_norm(family, rest[rest > 0])
    if s.size == 1:
        return float(s[0] * (math.sqrt(2 / math.pi) if family == "gaussian" else 1.0))
    if family == "gaussian":
        ex = float(np.sum(s**2))

        def one_minus_m(t: float) -> float:
            return -math.expm1(-0.5 * float(np.sum(np.log1p(2 * t * s**2))))
    elif family == "laplace":
        ex = float(np.sum(2 * s**2))

        def one_minus_m(t: float) -> float:
            return -math.expm1(sum(_laplace_log_mgf(t, b) for b in s))
    else:
        raise DistPrivacyError(f"unknown noise family {family!r}")
    u0 = -math.log(ex)

    def f(u: float) -> float:
        return one_minus_m(math.exp(u)) * math.exp(-u / 2)

    # The integrand is ≈ E[X]·e^{u/2} far left of u0 = −log E[X] and ≈ e^{−u/2} far right, so
    # the window [u0 − 70, u0 + 80] leaves out less than e^{−35} of the integral; the right tail
    # beyond it, where 1 − M ≈ 1, is added in closed form (∫ e^{−u/2} du = 2 e^{−U/2}).
    edges = (u0 - 70, u0 - 10, u0, u0 + 10, u0 + 80)
    total = sum(
        integrate.quad(f, a, b, epsabs=0, epsrel=1e-11, limit=200)[0]
        for a, b in itertools.pairwise(edges)
    )
    total += one_minus_m(math.exp(edges[-1])) * 2 * math.exp(-edges[-1] / 2)
    return total / (2 * math.sqrt(math.pi))


@dataclass(frozen=True)
class NoiseDistribution:
    """Z = V y with orthonormal columns V (m × d) and independent components y_k.

    Parameters
    ----------
    family : {"gaussian", "laplace", "none"}
    basis : ndarray (m, d)
        Orthonormal columns: the directions the noise acts in.
    scales : ndarray (d,)
        Standard deviations (Gaussian) or Laplace scales b (variance 2b²).
    """

    family: str
    basis: np.ndarray
    scales: np.ndarray
    #: Optional exact factor F (m × r) of a Gaussian noise, Z = F y with y ~ N(0, I): computed
    #: in unit-free coordinates, it keeps small-scale statistics' noise exact next to
    #: large-scale ones (an orthonormal eigenbasis in raw units cannot, beyond a spread of
    #: ~1e13). When given, the covariance and the draws come from it; ``basis``/``scales``
    #: are then its orthonormal eigen-summary, for display.
    factor: np.ndarray | None = None

    def __post_init__(self) -> None:
        check_text(self.family, "noise family", choices=FAMILIES)
        V = np.atleast_2d(check_array(self.basis, "the noise basis", "an m×d matrix"))
        s = np.atleast_1d(check_array(self.scales, "the noise scales", "a vector of scales"))
        if V.ndim != 2 or s.ndim != 1:
            raise DistPrivacyError(
                f"the noise basis must be a matrix and its scales a vector, got shapes {V.shape} "
                f"and {s.shape}"
            )
        if V.shape[1] != s.shape[0]:
            raise DistPrivacyError("noise basis and scales disagree in size")
        if not np.allclose(V.T @ V, np.eye(V.shape[1]), atol=1e-8):
            raise DistPrivacyError("noise basis must have orthonormal columns")
        if (s < 0).any() or not np.isfinite(s).all():
            bad = s[~np.isfinite(s) | (s < 0)][0]
            raise DistPrivacyError(
                f"noise scales must be finite and non-negative, got {bad:g} (the scale "
                "overflowed double precision: epsilon too small or the statistics too large)"
            )
        # One memory layout (column-major, the one of the factors below): a matrix product's
        # last bits may depend on it, and a noise read back from plain data must draw the
        # same numbers bit for bit.
        object.__setattr__(self, "basis", np.asfortranarray(V))
        object.__setattr__(self, "scales", s)
        if self.factor is not None:
            F = np.atleast_2d(check_array(self.factor, "the noise factor", "an m×r matrix"))
            if (
                self.family != "gaussian"
                or F.ndim != 2
                or F.shape[0] != V.shape[0]
                or not np.isfinite(F).all()
            ):
                raise DistPrivacyError("a noise factor must be a finite m×r matrix (Gaussian)")
            object.__setattr__(self, "factor", np.asfortranarray(F))

    @classmethod
    def none(cls, m: int) -> NoiseDistribution:
        """No noise."""
        return cls("none", np.eye(m)[:, :0], np.zeros(0))

    @classmethod
    def isotropic(cls, family: str, m: int, scale: float) -> NoiseDistribution:
        """The same scale on every coordinate."""
        m = check_int(m, "the dimension m", low=0)
        check_memory(8.0 * m * m, f"a {m}×{m} noise basis")
        if isinstance(scale, bool | np.bool_) or not isinstance(scale, numbers.Real):
            check_number(scale, "the noise scale", low=0)  # raises: not a real number
        # A real but infinite/negative scale is refused by __post_init__ (overflow message).
        return cls(family, np.eye(m), np.full(m, float(scale)))

    @classmethod
    def gaussian_from_covariance(cls, cov: np.ndarray) -> NoiseDistribution:
        """Gaussian noise with a given covariance.

        The covariance is factored in unit-free coordinates (each statistic divided by its own
        noise SD), where it is well conditioned: Z = F y with F = D U Λ^½ exact to rounding for
        every statistic, whatever their scales. Directions with zero, rounding-level (below
        1e-15 of the largest, in those coordinates) or rounding-negative eigenvalues carry no
        noise and are dropped, never rounded up: every guarantee is verified on the covariance
        of the noise actually drawn (:attr:`covariance`)."""
        cov = np.asarray(cov, dtype=float)
        cov = (cov + cov.T) / 2
        d = np.sqrt(np.maximum(np.diag(cov), 0.0))
        d = np.where(d > 0, d, 1.0)
        w, U = np.linalg.eigh(cov / np.outer(d, d))
        if w.size and w[0] < -1e-9 * max(1.0, abs(w[-1])):
            raise DistPrivacyError("noise covariance must be positive semidefinite")
        keep = w > 1e-15 * max(float(w[-1]), 0.0) if w.size else w > 0
        factor = d[:, None] * U[:, keep] * np.sqrt(w[keep])
        # The orthonormal eigen-summary (display only).
        wr, V = np.linalg.eigh(factor @ factor.T)
        show = wr > 1e-15 * max(float(wr[-1]), 0.0) if wr.size else wr > 0
        return cls("gaussian", V[:, show], np.sqrt(wr[show]), factor=factor)

    @property
    def dim(self) -> int:
        return int(self.basis.shape[0])

    @cached_property
    def variances(self) -> np.ndarray:
        """Variance along each basis direction."""
        if self.family == "laplace":
            return 2.0 * self.scales**2
        if self.family == "gaussian":
            return self.scales**2
        return np.zeros_like(self.scales)

    @cached_property
    def covariance(self) -> np.ndarray:
        """Cov(Z) = V diag(var) Vᵀ (or F Fᵀ with a factor), shape (m, m)."""
        if self.factor is not None:
            return self.factor @ self.factor.T
        return (self.basis * self.variances) @ self.basis.T

    @cached_property
    def expected_l2_error(self) -> float:
        """E‖Z‖₂ (the paper's "L2 error" of Table 2, exactly rather than averaged)."""
        if self.factor is not None:
            w = np.clip(np.linalg.eigvalsh(self.covariance), 0.0, None)
            return expected_norm("gaussian", np.sqrt(w[w > 0]))
        return expected_norm(self.family, self.scales)

    @property
    def expected_squared_error(self) -> float:
        """E‖Z‖₂² = tr Cov(Z)."""
        if self.factor is not None:
            return float(np.trace(self.covariance))
        return float(self.variances.sum())

    def sample(self, size: int | None = None, random_state: RandomState = None) -> np.ndarray:
        """Draw Z: shape (m,) when ``size`` is None, else (size, m). One draw call in all.

        ``random_state`` None draws from the secure generator (:mod:`distprivacy.randomness`).
        """
        count = 1 if size is None else check_int(size, "size", low=0)
        d = self.scales.shape[0]
        check_memory(8.0 * count * (2 * d + self.dim), f"size={count} noise draws")
        gen = check_random_state(random_state, secure=True)
        if self.factor is not None:
            r = self.factor.shape[1]
            out = gen.standard_normal(count * r).reshape(count, r) @ self.factor.T
        elif self.family == "none" or d == 0:
            out = np.zeros((count, self.dim))
        else:
            if self.family == "gaussian":
                y = gen.standard_normal(count * d)
            else:
                y = gen.laplace(0.0, 1.0, count * d)
            y = y.reshape(count, d) * self.scales
            out = y @ self.basis.T
        return out[0] if size is None else out

    def to_dict(self) -> dict[str, Any]:
        """Plain data that :meth:`from_dict` rebuilds exactly: family, basis, scales and the
        exact factor (None without one); ``covariance`` is derived, for reading."""
        return {
            "family": self.family,
            "basis": self.basis.tolist(),
            "scales": self.scales.tolist(),
            "factor": None if self.factor is None else self.factor.tolist(),
            "covariance": self.covariance.tolist(),
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> NoiseDistribution:
        """Inverse of :meth:`to_dict`, bit for bit (unknown keys refused; a ``covariance`` that
        is not the one of the rebuilt noise is refused too).

        Raises
        ------
        DistPrivacyError
        """
        if not isinstance(raw, Mapping):
            raise DistPrivacyError(f"a noise must be an object, got {type(raw).__name__}")
        extra = sorted(set(raw) - set(_NOISE_KEYS))
        if extra:
            raise DistPrivacyError(f"unknown key(s) in a noise: {', '.join(map(str, extra))}")
        missing = [k for k in ("family", "basis", "scales") if k not in raw]
        if missing:
            raise DistPrivacyError(f"a noise is missing {', '.join(missing)}")
        try:
            basis = np.asarray(raw["basis"], dtype=float)
            scales = np.asarray(raw["scales"], dtype=float)
            factor = None if raw.get("factor") is None else np.asarray(raw["factor"], dtype=float)
        except (TypeError, ValueError):
            raise DistPrivacyError("a noise's basis, scales and factor must be numbers") from None
        if basis.ndim != 2:
            raise DistPrivacyError(f"a noise's basis must be an m×d matrix, got {basis.ndim}-D")
        noise = cls(raw["family"], basis, scales, factor=factor)
        cov = None if raw.get("covariance") is None else np.asarray(raw["covariance"], float)
        # Rounding-level slack only: the same product may differ in its last bit across BLAS
        # thread counts.
        tol = 1e-9 * float(np.abs(noise.covariance).max(initial=0.0))
        if cov is not None and (
            cov.shape != noise.covariance.shape
            or not np.allclose(cov, noise.covariance, rtol=1e-9, atol=tol)
        ):
            raise DistPrivacyError(
                "a noise's covariance is not the one of its basis, scales and factor"
            )
        return noise


_NOISE_KEYS = ("family", "basis", "scales", "factor", "covariance")
