"""The Pufferfish Wasserstein Mechanism (Song, Wang & Chaudhuri, SIGMOD 2017, Alg. 1, Thm 3.2).

The general mechanism for any Pufferfish framework (S, Q, Θ), hence for both attribute-privacy
definitions (Zhang, Ohrimenko & Cummings 2022, §2–3 and App. C):

    W = sup_{θ ∈ Θ} max_{(s_a, s_b) ∈ Q, P(s_a|θ), P(s_b|θ) > 0}
            W∞(P(F(X) | s_a, θ), P(F(X) | s_b, θ)),

    M(X) = F(X) + Lap(W/ε)   (per coordinate; W∞ with the L1 ground metric for vector F),

is (ε, 0)-Pufferfish private. Its cost is the W∞ of every pair for every θ — the reason the
attribute-privacy paper proposes Alg. 1 and Alg. 2 instead. W∞ here is the project's exact
:func:`distprivacy.distances.wasserstein_inf` between discrete conditional distributions
(exact enumeration of small discrete problems, or Monte-Carlo samples), and the closed form for
Gaussian conditionals (W∞ = ‖m_a − m_b‖₁ when the covariances are equal — the translation
coupling is optimal, since x ↦ Σ sign(m_a − m_b)_k x_k is 1-Lipschitz — and +∞ otherwise).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from distprivacy._json import jsonable, number
from distprivacy.attribute.framework import Secret, ValueSet
from distprivacy.checks import check_epsilon
from distprivacy.distances import wasserstein_inf
from distprivacy.exceptions import DistPrivacyError, NotApplicableError
from distprivacy.guarantee import Guarantee, Release, noisy_release
from distprivacy.noise import NoiseDistribution
from distprivacy.randomness import RandomState, check_random_state

THEOREM = "Song, Wang & Chaudhuri 2017, Alg. 1 (Wasserstein Mechanism), Thm 3.2"


@dataclass(frozen=True)
class DiscreteConditional:
    """P(F(X) | s, θ) as atoms with non-negative weights (None: uniform, e.g. samples).

    ``empirical`` marks an empirical law of Monte-Carlo samples (:func:`sample_conditionals`):
    W∞ is then that of the samples, not of the true conditionals.
    """

    atoms: np.ndarray
    weights: np.ndarray | None = None
    empirical: bool = False

    def __post_init__(self) -> None:
        a = np.asarray(self.atoms, dtype=float)
        if a.ndim not in (1, 2) or a.shape[0] == 0:
            raise DistPrivacyError(
                "a conditional distribution needs at least one atom (shape (N,) or (N, k)); "
                "is the secret impossible under this θ?"
            )
        object.__setattr__(self, "atoms", a)
        if self.weights is not None:
            w = np.asarray(self.weights, dtype=float)
            if w.shape != (a.shape[0],):
                raise DistPrivacyError("give one weight per atom of a conditional distribution")
            object.__setattr__(self, "weights", w)

    @property
    def dim(self) -> int:
        return 1 if self.atoms.ndim == 1 else int(self.atoms.shape[1])


@dataclass(frozen=True)
class GaussianConditional:
    """P(F(X) | s, θ) = N(mean, cov)."""

    mean: np.ndarray
    cov: np.ndarray

    def __post_init__(self) -> None:
        m = np.atleast_1d(np.asarray(self.mean, dtype=float))
        c = np.atleast_2d(np.asarray(self.cov, dtype=float))
        if c.shape != (m.size, m.size):
            raise DistPrivacyError("a Gaussian conditional's covariance does not match its mean")
        if np.linalg.eigvalsh((c + c.T) / 2)[0] < 0:
            raise DistPrivacyError("a Gaussian conditional's covariance must be PSD")
        object.__setattr__(self, "mean", m)
        object.__setattr__(self, "cov", c)

    @property
    def dim(self) -> int:
        return int(self.mean.size)


Conditional = DiscreteConditional | GaussianConditional


def winf(p: Conditional, q: Conditional) -> float:
    """W∞ (L1 ground metric) between two conditional distributions of F."""
    if p.dim != q.dim:
        raise DistPrivacyError("the two conditional distributions are of different dimension")
    if isinstance(p, GaussianConditional) and isinstance(q, GaussianConditional):
        if not np.allclose(p.cov, q.cov, rtol=1e-12, atol=1e-15):
            return math.inf
        return float(np.abs(p.mean - q.mean).sum())
    if isinstance(p, DiscreteConditional) and isinstance(q, DiscreteConditional):
        return wasserstein_inf(p.atoms, q.atoms, x_weights=p.weights, y_weights=q.weights)
    raise DistPrivacyError("W∞ between a Gaussian and a discrete conditional is not supported")


#: What the guarantee rests on: the conditionals given (exact W∞ of them).
BASIS_EXACT = (
    "the conditional laws P(F(X) | s, θ) given for every θ ∈ Θ and secret (exact W∞ of them)"
)
#: ... when some conditional is an empirical law of Monte-Carlo samples.
BASIS_SAMPLES = (
    "Monte-Carlo samples of P(F(X) | s, θ): W∞ of the empirical laws, not of the true ones"
)
_CALIBRATION_KEYS = frozenset(
    {
        "mechanism", "theorem", "epsilon", "delta", "sensitivity", "laplace_scale",
        "noise_variance", "expected_error", "worst", "distances", "statistics", "guarantee",
    }
)  # fmt: skip


@dataclass(frozen=True, repr=False)
class WassersteinCalibration:
    """A calibrated Wasserstein Mechanism: Laplace of scale W/ε on each coordinate (the
    :class:`~distprivacy.guarantee.Calibrated` protocol).

    Attributes
    ----------
    epsilon : float
    sensitivity : float
        W, the largest W∞ over θ and the secret pairs.
    worst : (θ, s_a, s_b)
        Where W is attained.
    distances : mapping (θ, s_a, s_b) -> float
        Every W∞ computed.
    dim : int
        k, the number of statistics.
    statistics : tuple of str
        Their names (default F0, …, F{k−1}).
    basis : str
        :data:`BASIS_EXACT`, or :data:`BASIS_SAMPLES` when a conditional came from samples.
    """

    epsilon: float
    sensitivity: float
    worst: tuple[str, str, str]
    distances: Mapping[tuple[str, str, str], float] = field(default_factory=dict)
    dim: int = 1
    mechanism: str = "Pufferfish-Wasserstein"
    theorem: str = THEOREM
    statistics: tuple[str, ...] = ()
    basis: str = BASIS_EXACT

    @property
    def statistic_names(self) -> tuple[str, ...]:
        return tuple(self.statistics) or tuple(f"F{j}" for j in range(self.dim))

    @property
    def guarantee(self) -> Guarantee:
        """(ε, 0)-Pufferfish privacy for the framework the conditionals describe (Thm 3.2)."""
        return Guarantee(
            epsilon=self.epsilon,
            delta=0.0,
            theorem=self.theorem,
            notion="Pufferfish privacy",
            curve="point",
            basis=self.basis,
            verified=self.basis == BASIS_EXACT,
            assumptions=(
                "the data's distribution belongs to Θ",
                "the conditionals P(F(X) | s, θ) given are those of every θ ∈ Θ and secret",
            ),
        )

    @property
    def scale(self) -> float:
        """Laplace scale b = W/ε."""
        return self.sensitivity / self.epsilon

    @property
    def adds_noise(self) -> bool:
        return self.scale > 0

    @property
    def noise(self) -> NoiseDistribution:
        if self.scale == 0:
            return NoiseDistribution.none(self.dim)
        return NoiseDistribution.isotropic("laplace", self.dim, self.scale)

    @property
    def noise_variance(self) -> float:
        return 2.0 * self.scale**2

    @property
    def expected_error(self) -> float:
        """E‖Z‖₂ (k = 1: E|Z| = b)."""
        return 0.0 if self.scale == 0 else float(self.noise.expected_l2_error)

    def accuracy(self, beta: float) -> float:
        """α with P(|Z| > α) = β per coordinate: b ln(1/β)."""
        b = float(beta)
        if not 0 < b < 1:
            raise DistPrivacyError(f"beta must lie in (0, 1), got {beta!r}")
        return self.scale * math.log(1 / b)

    def __repr__(self) -> str:
        return (
            f"WassersteinCalibration(ε={self.epsilon:g}, W={self.sensitivity:.4g}, "
            f"Laplace scale={self.scale:.4g}, k={self.dim})"
        )

    def summary(self) -> str:
        """A few lines a person can read: the guarantee and the noise."""
        return "\n".join(
            [
                f"{self.mechanism} ({self.theorem})",
                f"  guarantee: {self.guarantee.describe()}",
                f"  rests on: {self.basis}",
                f"  sensitivity: W = sup W∞ = {self.sensitivity:.6g} (worst: θ={self.worst[0]}, "
                f"{self.worst[1]} vs {self.worst[2]})",
                f"  noise: Laplace, scale b = W/ε = {self.scale:.6g} per coordinate, "
                f"E‖Z‖₂ = {self.expected_error:.6g}",
            ]
        )

    def release(
        self,
        value: float | ArrayLike,
        random_state: RandomState = None,
        *,
        allow_exact: bool = False,
        size: int | None = None,
    ) -> Release:
        """M(X) = F(X) + Lap(W/ε); ``random_state`` None = OpenDP's secure sampler (a seed or
        generator is for experiments only). ``size``: that many independent releases at once.

        Raises
        ------
        ExactReleaseError
            When W = 0 (no noise) and ``allow_exact`` is False.
        """
        v = np.atleast_1d(np.asarray(value, dtype=float))
        if v.shape != (self.dim,):
            raise DistPrivacyError(
                f"the value to release has shape {v.shape}, expected ({self.dim},)"
            )
        return noisy_release(
            self,
            v,
            random_state=random_state,
            allow_exact=allow_exact,
            size=size,
            exact_reason=(
                f"{self.mechanism} adds no noise here (W = 0), so the release would publish "
                "F(X) (cf. Theorem 4.4 of Chen & Ohrimenko 2023); pass `allow_exact=True` "
                "to release it exactly"
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        return jsonable(
            {
                "mechanism": self.mechanism,
                "theorem": self.theorem,
                "epsilon": self.epsilon,
                "delta": 0.0,
                "sensitivity": self.sensitivity,
                "laplace_scale": self.scale,
                "noise_variance": self.noise_variance,
                "expected_error": self.expected_error,
                "worst": list(self.worst),
                "distances": [[*k, v] for k, v in self.distances.items()],
                "statistics": list(self.statistic_names),
                "guarantee": self.guarantee.to_dict(),
            }
        )

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> WassersteinCalibration:
        """Inverse of :meth:`to_dict` (unknown keys refused; derived numbers recomputed)."""
        if not isinstance(raw, Mapping):
            raise DistPrivacyError(f"a calibration must be an object, got {type(raw).__name__}")
        extra = sorted(set(raw) - _CALIBRATION_KEYS)
        if extra:
            raise DistPrivacyError(
                f"unknown key(s) in a Wasserstein calibration: {', '.join(extra)}"
            )
        try:
            names = tuple(raw.get("statistics", ()))
            dist = {(str(t), str(a), str(b)): float(number(v)) for t, a, b, v in raw["distances"]}
            basis = Guarantee.from_dict(raw["guarantee"]).basis if "guarantee" in raw else ""
            cal = cls(
                epsilon=check_epsilon(number(raw["epsilon"])),
                sensitivity=float(number(raw["sensitivity"])),
                worst=tuple(str(x) for x in raw["worst"]),  # type: ignore[arg-type]
                distances=dist,
                dim=max(1, len(names)),
                mechanism=raw.get("mechanism", "Pufferfish-Wasserstein"),
                theorem=raw.get("theorem", THEOREM),
                statistics=names,
                basis=basis or BASIS_EXACT,
            )
        except KeyError as e:
            raise DistPrivacyError(f"a Wasserstein calibration is missing {e.args[0]!r}") from None
        except (TypeError, ValueError) as e:
            raise DistPrivacyError(f"a Wasserstein calibration has a bad field: {e}") from None
        if "guarantee" in raw and Guarantee.from_dict(raw["guarantee"]) != cal.guarantee:
            raise DistPrivacyError("the calibration's guarantee does not match its fields")
        return cal


class PufferfishWassersteinMechanism:
    """The Wasserstein Mechanism (Song, Wang & Chaudhuri 2017, Alg. 1): (ε, 0)-Pufferfish private
    for the framework whose conditionals it is calibrated on (Thm 3.2).

    Parameters
    ----------
    epsilon : float
        ε > 0.

    Follows :class:`~distprivacy.protocols.CalibratingMechanism` (``name``, ``theorem``,
    ``calibrate`` returning a :class:`WassersteinCalibration`).
    """

    #: The shorthand of its calibrations (``WassersteinCalibration.mechanism``).
    name: ClassVar[str] = "Pufferfish-Wasserstein"
    theorem: ClassVar[str] = THEOREM

    def __init__(self, *, epsilon: float) -> None:
        self.epsilon = check_epsilon(epsilon)

    def calibrate(
        self,
        conditionals: Mapping[str, Mapping[str, Conditional | None]],
        pairs: Sequence[tuple[str, str]],
        statistics: Sequence[str] | None = None,
    ) -> WassersteinCalibration:
        """W = max over θ and pairs of W∞ between the conditionals.

        Parameters
        ----------
        conditionals : mapping θ-label -> (secret-label -> conditional or None)
            P(F(X) | s, θ); None (or a missing label) when P(s | θ) = 0 — such pairs are
            skipped for that θ, as Def. 1 requires.
        pairs : sequence of (secret-label, secret-label)
        statistics : sequence of str, optional
            Names of the k statistics (default F0, …, F{k−1}).
        """
        if not conditionals:
            raise DistPrivacyError("give the conditional distributions for at least one θ")
        if not pairs:
            raise DistPrivacyError("give at least one secret pair")
        dist: dict[tuple[str, str, str], float] = {}
        dims = set()
        empirical = False
        for t, conds in conditionals.items():
            for a, b in pairs:
                p, q = conds.get(a), conds.get(b)
                if p is None or q is None:
                    continue
                dims.update((p.dim, q.dim))
                empirical |= any(getattr(c, "empirical", False) for c in (p, q))
                dist[(str(t), str(a), str(b))] = winf(p, q)
        if not dist:
            raise DistPrivacyError(
                "no θ gives both secrets of any pair positive probability; no secret pair "
                "constrains the mechanism — check the secrets against Θ"
            )
        if len(dims) != 1:
            raise DistPrivacyError("the conditional distributions differ in dimension")
        worst = max(dist, key=dist.__getitem__)
        if math.isinf(dist[worst]):
            raise NotApplicableError(
                f"W∞ is infinite for θ={worst[0]}, pair ({worst[1]}, {worst[2]}) (Gaussian "
                "conditionals with different covariances): no Laplace noise suffices"
            )
        dim = dims.pop()
        names = () if statistics is None else tuple(statistics)
        if names and len(names) != dim:
            raise DistPrivacyError(f"{len(names)} statistic names for {dim} statistics")
        return WassersteinCalibration(
            self.epsilon,
            dist[worst],
            worst,
            dist,
            dim,
            statistics=names,
            basis=BASIS_SAMPLES if empirical else BASIS_EXACT,
        )


# ---------------------------------------------------------------------------------------------
# Conditional distributions of F given a secret
# ---------------------------------------------------------------------------------------------


def _compositions(n: int, d: int) -> np.ndarray:
    """All count vectors c ∈ N^d with Σc = n, shape (C(n+d−1, d−1), d)."""
    if d == 1:
        return np.array([[n]])
    rows = [
        np.column_stack([np.full(len(r), k), r])
        for k in range(n, -1, -1)
        for r in [_compositions(n - k, d - 1)]
    ]
    return np.vstack(rows)


_MAX_DATASETS = 200_000


def enumerate_conditionals(
    record_weights: ArrayLike,
    n: int,
    statistic: Callable[[np.ndarray], np.ndarray],
    secret_function: Callable[[np.ndarray], np.ndarray],
    secrets: Sequence[Secret | ValueSet],
) -> dict[str, DiscreteConditional | None]:
    """Exact P(F(X) | g(X) ∈ U_a) for n i.i.d. records from a finite domain (one θ).

    Parameters
    ----------
    record_weights : array (d,) of non-negative integers
        Relative frequencies of the d possible records (integer weights keep the multinomial
        masses exact integers, which the exact W∞ needs).
    n : int
        Records per dataset.
    statistic, secret_function : callables on count matrices (N, d) -> (N,) or (N, k)
        F and g as functions of the record counts (both are symmetric in the records).
    secrets : sequence of Secret or ValueSet
        The sets U_a; the result maps str(secret) to its conditional (None if impossible).
    """
    w = np.asarray(record_weights)
    if w.ndim != 1 or not np.issubdtype(w.dtype, np.integer) or (w < 0).any() or w.sum() == 0:
        raise DistPrivacyError("record weights must be non-negative integers, not all zero")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise DistPrivacyError(f"n must be a positive integer, got {n!r}")
    d = len(w)
    if math.comb(n + d - 1, d - 1) > _MAX_DATASETS:
        raise DistPrivacyError(
            f"{math.comb(n + d - 1, d - 1)} distinct datasets is too many to enumerate; "
            "use sample_conditionals"
        )
    C = _compositions(n, d)
    # multinomial mass n!/∏c! ∏ w^c as exact Python integers
    fact = [math.factorial(k) for k in range(n + 1)]
    mass = [
        fact[n]
        // math.prod(fact[c] for c in row)
        * math.prod(int(wk) ** int(c) for wk, c in zip(w, row, strict=True))
        for row in C.tolist()
    ]
    positive = np.array([m > 0 for m in mass])
    F = np.asarray(statistic(C), dtype=float)
    g = np.asarray(secret_function(C), dtype=float)
    out: dict[str, DiscreteConditional | None] = {}
    for s in secrets:
        vs = s.values if isinstance(s, Secret) else s
        sel = np.flatnonzero(vs.contains(g) & positive)
        if sel.size == 0:
            out[str(s)] = None
            continue
        ms = [mass[i] for i in sel.tolist()]
        div = math.gcd(*ms)
        if max(ms) // div > 2**53:
            raise DistPrivacyError(
                "the exact multinomial masses exceed 2^53 and cannot be held exactly as weights; "
                "use smaller integer record weights or fewer records"
            )
        out[str(s)] = DiscreteConditional(F[sel], np.array([m // div for m in ms], dtype=float))
    return out


def sample_conditionals(
    sampler: Callable[[int, np.random.Generator], np.ndarray],
    statistic: Callable[[np.ndarray], np.ndarray],
    secret_function: Callable[[np.ndarray], np.ndarray],
    secrets: Sequence[Secret | ValueSet],
    *,
    samples: int,
    random_state: RandomState,
) -> dict[str, DiscreteConditional | None]:
    """Monte-Carlo P(F(X) | g(X) ∈ U_a) for one θ: draw ``samples`` datasets with
    ``sampler(samples, generator)`` (shape (samples, n, m)), evaluate F and g on all of them at
    once (callables on that array), and keep the draws in each secret's set. Empirical W∞ is
    then the W∞ of the empirical conditionals, not of the true ones (the calibration's
    guarantee says so: not verified). ``random_state``: a seed or generator (simulation, via
    :func:`~distprivacy.randomness.check_random_state` with ``secure=False``)."""
    gen = check_random_state(random_state, secure=False)
    X = np.asarray(sampler(int(samples), gen), dtype=float)
    F = np.asarray(statistic(X), dtype=float)
    g = np.asarray(secret_function(X), dtype=float)
    out: dict[str, DiscreteConditional | None] = {}
    for s in secrets:
        vs = s.values if isinstance(s, Secret) else s
        sel = vs.contains(g)
        out[str(s)] = DiscreteConditional(F[sel], empirical=True) if sel.any() else None
    return out
