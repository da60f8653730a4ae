"""A local mechanism with the pairs it protects: inspect its guarantee, then release.

:func:`calibrate_local` takes a local obfuscation mechanism
(randomized response, snapped Laplace or Gaussian, the exponential mechanism, tupling, any
transition matrix) and the pairs (λ, λ′) of input distributions to make indistinguishable, and
returns a frozen :class:`LocalCalibration` following the library's
:class:`~distprivacy.guarantee.Calibrated` protocol:

* ``guarantee`` — the best (ε, δ)-DistP guarantee for the pairs at the stated δ: the exact
  profile (closed form for RR, the transition matrix otherwise, enumeration for small tupling;
  :func:`~distprivacy.local.distp.distp_epsilon`) or, for a large tupling, the Monte-Carlo
  certified ε — unless the theorem-based guarantee is smaller (it can be, against a certificate);
* ``theorem_guarantee`` — what the theorems of Kawamoto & Murakami give for the same noise
  (local DP ⇒ DistP for RR and the Gaussian, ε·W∞ for the XDP mechanisms, the Hoeffding bound
  for tupling, the matrix's local-DP level for a given matrix). A local-DP guarantee has
  ``holds_for_every_input=True``: the one to pass to
  :func:`~distprivacy.local.guarantees.compose_same_input`;
* ``release(inputs, random_state=None)`` — the obfuscated records as a
  :class:`~distprivacy.guarantee.Release` (secure draws by default);
* ``to_dict()`` / ``from_dict()`` — plain data: a transition matrix for a given finite
  mechanism, the parameters (and domain) of a parametric one; :meth:`LocalCalibration.from_dict`
  recomputes the guarantee from them.

Several pairs: (ε, δ)-DistP for each pair at one δ gives the largest ε; a Monte-Carlo
certificate uses α / (number of pairs) per pair, so that all hold jointly with probability
≥ 1 − α (union bound).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from distprivacy._json import jsonable
from distprivacy.exceptions import DistPrivacyError
from distprivacy.guarantee import Guarantee, Release
from distprivacy.local.distp import (
    DEFAULT_ALPHA,
    DEFAULT_ENUMERATION_LIMIT,
    DEFAULT_MC_SAMPLES,
    distp_epsilon,
)
from distprivacy.local.domains import Domain, check_distribution
from distprivacy.local.guarantees import (
    dp_implies_distp,
    laplace_distp,
    local_dp_epsilon,
    local_guarantee,
    tupling_hoeffding,
)
from distprivacy.local.mechanisms import (
    ExponentialMechanism,
    FiniteMechanism,
    RandomizedResponse,
    SnappedGaussian,
    SnappedLaplace,
    TuplingMechanism,
)
from distprivacy.randomness import RandomState, check_random_state, is_secure

__all__ = [
    "LocalCalibration",
    "calibrate_local",
    "mechanism_from_dict",
    "mechanism_to_dict",
    "theorem_guarantee",
]

LocalMechanism = FiniteMechanism | TuplingMechanism


# ---------------------------------------------------------------------------------------------
# Mechanisms as plain data
# ---------------------------------------------------------------------------------------------


def mechanism_to_dict(mechanism: LocalMechanism) -> dict[str, Any]:
    """Plain data of a local mechanism: parameters (and domain) of a parametric one, the
    transition matrix of a given finite one, base, k and ν of tupling."""
    m = mechanism
    if isinstance(m, TuplingMechanism):
        uniform = bool(np.all(m.nu_ == m.nu_[0]))
        return {
            "kind": "tupling",
            "base": mechanism_to_dict(m.base),
            "k": m.k,
            "nu": None if uniform else m.nu_.tolist(),
        }
    if isinstance(m, RandomizedResponse):
        return {"kind": "randomized-response", "n": m.n, "epsilon": m.epsilon}
    if isinstance(m, SnappedLaplace):
        return {"kind": "snapped-laplace", "domain": m.domain.to_dict(), "epsilon": m.epsilon}
    if isinstance(m, SnappedGaussian):
        return {"kind": "snapped-gaussian", "domain": m.domain.to_dict(), "sigma": m.sigma}
    if isinstance(m, ExponentialMechanism):
        return {"kind": "exponential", "domain": m.domain.to_dict(), "epsilon": m.epsilon}
    if isinstance(m, FiniteMechanism):
        return {"kind": "finite", "name": m.name, "matrix": m.matrix_.tolist()}
    raise DistPrivacyError(
        f"a local mechanism must be a FiniteMechanism or a TuplingMechanism, got {type(m).__name__}"
    )


def mechanism_from_dict(raw: Mapping[str, Any]) -> LocalMechanism:
    """Inverse of :func:`mechanism_to_dict`."""
    if not isinstance(raw, Mapping) or "kind" not in raw:
        raise DistPrivacyError("a local mechanism must be an object with a 'kind'")
    kind = raw["kind"]
    try:
        if kind == "tupling":
            nu = raw.get("nu")
            return TuplingMechanism(mechanism_from_dict(raw["base"]), int(raw["k"]), nu)
        if kind == "randomized-response":
            return RandomizedResponse(int(raw["n"]), float(raw["epsilon"]))
        if kind == "snapped-laplace":
            return SnappedLaplace(Domain.from_dict(raw["domain"]), float(raw["epsilon"]))
        if kind == "snapped-gaussian":
            return SnappedGaussian(Domain.from_dict(raw["domain"]), float(raw["sigma"]))
        if kind == "exponential":
            return ExponentialMechanism(Domain.from_dict(raw["domain"]), float(raw["epsilon"]))
        if kind == "finite":
            return FiniteMechanism(raw["matrix"], name=str(raw.get("name", "finite")))
    except KeyError as e:
        raise DistPrivacyError(f"a {kind} mechanism is missing {e}") from None
    raise DistPrivacyError(
        f"unknown local mechanism kind {kind!r}; one of tupling, randomized-response, "
        "snapped-laplace, snapped-gaussian, exponential, finite"
    )


# ---------------------------------------------------------------------------------------------
# Pairs and the theorem-based guarantee
# ---------------------------------------------------------------------------------------------


def _n_inputs(mechanism: LocalMechanism) -> int:
    base = mechanism.base if isinstance(mechanism, TuplingMechanism) else mechanism
    return base.n if isinstance(base, RandomizedResponse) else base.n_inputs


def _pairs(pairs: Any, n: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """One pair (λ, λ′) or a sequence of pairs, each a distribution over the n inputs."""
    try:
        arr = np.asarray(pairs, dtype=float)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.ndim not in (2, 3) or arr.shape[-2] != 2:
        raise DistPrivacyError(
            "pairs must be one pair (lambda, lambda') or a list of pairs of distributions over "
            "the mechanism's inputs"
        )
    if arr.ndim == 2:
        arr = arr[None]
    if arr.shape[0] == 0:
        raise DistPrivacyError("give at least one pair (lambda, lambda') to protect")
    return tuple(
        (check_distribution(p, n, "lambda"), check_distribution(q, n, "lambda'")) for p, q in arr
    )


def _worst(guarantees: list[Guarantee]) -> Guarantee:
    """The guarantee for every pair at once (one δ): the largest ε."""
    return max(guarantees, key=lambda g: (g.epsilon, g.delta))


def theorem_guarantee(
    mechanism: LocalMechanism,
    pairs: Any,
    delta: float,
) -> Guarantee:
    """What the theorems give for ``mechanism`` on ``pairs`` (module docstring), at ``delta``
    where the theorem has a δ (Gaussian, tupling).

    Raises
    ------
    DistPrivacyError
        When the Gaussian's μ = diam/σ overflows its ε (σ too small for the domain).
    """
    from distprivacy.profiles import gdp_epsilon

    m = mechanism
    ps = _pairs(pairs, _n_inputs(m))
    if isinstance(m, TuplingMechanism):
        if not (0 < delta < 1):
            return local_guarantee(math.inf, 0.0, "tupling Hoeffding bound (needs 0 < δ < 1)")
        return _worst(
            [tupling_hoeffding(m.base.lift(p), m.base.lift(q), m.k, delta) for p, q in ps]
        )
    if isinstance(m, RandomizedResponse):
        return dp_implies_distp(m.epsilon)
    if isinstance(m, SnappedLaplace | ExponentialMechanism):
        return _worst([laplace_distp(m.epsilon, p, q, m.domain) for p, q in ps])
    if isinstance(m, SnappedGaussian):
        mu = m.domain.diameter / m.sigma
        if not math.isfinite(mu * mu):
            raise DistPrivacyError(
                f"σ = {m.sigma:g} is too small for this domain: μ = diam/σ = {mu:.3g} and its "
                "DistP ε overflow double precision; give σ ≥ 1e-150 × the domain's diameter"
            )
        eps = gdp_epsilon(delta, mu) if delta > 0 else math.inf
        return local_guarantee(eps, delta, "Gaussian local GDP over the grid ⇒ DistP", True)
    eps = local_dp_epsilon(m)
    return local_guarantee(eps, 0.0, "local-DP level of the transition matrix ⇒ DistP", True)


# ---------------------------------------------------------------------------------------------
# The calibration
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class LocalCalibration:
    """A local mechanism and the pairs (λ, λ′) it protects, inspectable before any release.

    Attributes
    ----------
    obfuscation : FiniteMechanism or TuplingMechanism
        The mechanism applied to each record.
    pairs : tuple of (ndarray, ndarray)
        The pairs of input distributions it makes (ε, δ)-indistinguishable.
    delta : float
        The δ the guarantee is stated at.
    guarantee : Guarantee
        The best guarantee for the pairs (module docstring).
    theorem_guarantee : Guarantee
        The theorem-based guarantee for the same noise.
    method : str
        How ``guarantee`` was obtained: ``closed-form``, ``exact``, ``enumeration``,
        ``monte-carlo`` or ``theorem``.
    options : mapping
        The exact calculator's settings (``method``, ``n_samples``, ``alpha``, ``seed``,
        ``limit``), kept so that :meth:`from_dict` recomputes the same guarantee.
    """

    obfuscation: FiniteMechanism | TuplingMechanism
    pairs: tuple[tuple[np.ndarray, np.ndarray], ...]
    delta: float
    guarantee: Guarantee
    theorem_guarantee: Guarantee
    method: str
    options: Mapping[str, Any]

    @property
    def mechanism(self) -> str:
        """The mechanism's short name (e.g. ``RR(ε=4)``)."""
        return str(self.obfuscation.name)

    @property
    def statistic_names(self) -> tuple[str, ...]:
        """What a release holds: one obfuscated ``record`` (a ``tuple`` for tupling) per
        input."""
        return ("tuple",) if isinstance(self.obfuscation, TuplingMechanism) else ("record",)

    @property
    def adds_noise(self) -> bool:
        """Whether a release can differ from its input (False for an identity matrix)."""
        base = self.obfuscation
        if isinstance(base, TuplingMechanism):
            return True  # dummies are added even over no noise
        M = base.matrix_
        return not (M.shape[0] == M.shape[1] and np.array_equal(M, np.eye(M.shape[0])))

    def __repr__(self) -> str:
        g = self.guarantee
        n = len(self.pairs)
        return (
            f"LocalCalibration({self.mechanism}, {n} pair{'s' if n != 1 else ''}, "
            f"ε={g.epsilon:.4g}, δ={g.delta:.3g}, {self.method})"
        )

    def summary(self) -> str:
        """A few lines: the mechanism, the guarantee for the pairs and the theorem's."""
        g, th = self.guarantee, self.theorem_guarantee
        every = " (every input: local DP)" if th.holds_for_every_input else ""
        lines = [
            f"{self.mechanism} ({self.obfuscation.theorem})",
            f"  pairs protected: {len(self.pairs)}",
            f"  guarantee: {g.describe()} [{self.method}: {g.theorem}]",
            f"  theorem: ({th.epsilon:.4g}, {th.delta:.3g}){every} [{th.theorem}]",
        ]
        if g.assumptions:
            lines += [f"  assumes: {a}" for a in g.assumptions]
        return "\n".join(lines)

    def release(self, inputs: ArrayLike, random_state: RandomState = None) -> Release:
        """Obfuscate each record of ``inputs`` (integer indices into the mechanism's inputs).

        Parameters
        ----------
        inputs : array_like of int
            The true records.
        random_state : None, int, Generator or SecureGenerator
            None (default): cryptographically secure draws. A seed or generator makes the
            release reproducible — for experiments only, never for a real release.

        Returns
        -------
        Release
            ``values``: the obfuscated records (shape of ``inputs``; tupling adds a last axis of
            k + 1 entries).
        """
        gen = check_random_state(random_state, secure=True)
        values = self.obfuscation.sample(inputs, random_state=gen)
        return Release(np.asarray(values), self.statistic_names, self, is_secure(gen))

    def to_dict(self) -> dict[str, Any]:
        """Plain data (the guarantees are included for reading; :meth:`from_dict` recomputes
        them)."""
        return jsonable(
            {
                "mechanism": self.mechanism,
                "obfuscation": mechanism_to_dict(self.obfuscation),
                "pairs": [[p, q] for p, q in self.pairs],
                "delta": self.delta,
                "method": self.method,
                "options": dict(self.options),
                "guarantee": self.guarantee.to_dict(),
                "theorem_guarantee": self.theorem_guarantee.to_dict(),
            }
        )

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> LocalCalibration:
        """Inverse of :meth:`to_dict`: rebuild the mechanism and recompute the guarantees."""
        if not isinstance(raw, Mapping):
            raise DistPrivacyError(f"a calibration must be an object, got {type(raw).__name__}")
        for key in ("obfuscation", "pairs", "delta"):
            if key not in raw:
                raise DistPrivacyError(f"a local calibration needs {key!r}")
        opts = dict(raw.get("options", {}))
        return calibrate_local(
            mechanism_from_dict(raw["obfuscation"]),
            raw["pairs"],
            float(raw["delta"]),
            method=str(opts.get("method", "auto")),
            n_samples=int(opts.get("n_samples", DEFAULT_MC_SAMPLES)),
            alpha=float(opts.get("alpha", DEFAULT_ALPHA)),
            random_state=opts.get("seed"),
            limit=int(opts.get("limit", DEFAULT_ENUMERATION_LIMIT)),
        )


def calibrate_local(
    mechanism: FiniteMechanism | TuplingMechanism,
    pairs: Any,
    delta: float = 1e-3,
    *,
    method: str = "auto",
    n_samples: int = DEFAULT_MC_SAMPLES,
    alpha: float = DEFAULT_ALPHA,
    random_state: int | None = None,
    limit: int = DEFAULT_ENUMERATION_LIMIT,
) -> LocalCalibration:
    """The :class:`LocalCalibration` of ``mechanism`` for ``pairs`` at ``delta``.

    Parameters
    ----------
    mechanism : FiniteMechanism or TuplingMechanism
    pairs : (λ, λ′) or sequence of (λ, λ′)
        Distributions over the mechanism's inputs.
    delta : float
        The δ of the guarantee, in (0, 1) for the theorems that need one (Gaussian, tupling).
    method, n_samples, limit
        The exact calculator's settings (:func:`~distprivacy.local.distp.distp_epsilon`).
    alpha : float
        Monte Carlo only: the certificates of all pairs hold jointly with probability ≥ 1 − α.
    random_state : int, optional
        Monte Carlo only (large tupling): the integer seed of the draws, required then (it is
        stored, so that the certificate can be recomputed).

    Returns
    -------
    LocalCalibration
    """
    if not isinstance(mechanism, FiniteMechanism | TuplingMechanism):
        raise DistPrivacyError(
            "calibrate a FiniteMechanism (RR, Laplace, Gaussian, exponential, a matrix) or a "
            f"TuplingMechanism, got {type(mechanism).__name__}"
        )
    ps = _pairs(pairs, _n_inputs(mechanism))
    seed = random_state
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer)):
        raise DistPrivacyError(
            "a local calibration stores its Monte-Carlo seed: pass an integer random_state"
        )
    if not (0 < alpha < 1):
        raise DistPrivacyError(f"alpha must be in (0, 1), got {alpha!r}")
    gen = None if seed is None else check_random_state(int(seed), secure=False)
    exact, methods = [], []
    for p, q in ps:
        res = distp_epsilon(
            mechanism,
            p,
            q,
            delta,
            method=method,
            n_samples=n_samples,
            alpha=alpha / len(ps),
            random_state=gen,
            limit=limit,
        )
        mc = res.method == "monte-carlo"
        methods.append(res.method)
        exact.append(
            local_guarantee(
                res.guaranteed,
                res.delta,
                f"{res.method} DistP profile for the pair (004 Def. 11)",
                verified=not mc,
                assumptions=(
                    (f"Monte-Carlo certificate: holds with probability ≥ {1 - alpha:g}",)
                    if mc
                    else ()
                ),
            )
        )
    best = _worst(exact)
    how = methods[exact.index(best)]
    theorem = theorem_guarantee(mechanism, ps, delta)
    if theorem.delta <= best.delta and theorem.epsilon < best.epsilon:
        best, how = theorem, "theorem"
    options = {
        "method": method,
        "n_samples": int(n_samples),
        "alpha": float(alpha),
        "seed": None if seed is None else int(seed),
        "limit": int(limit),
    }
    return LocalCalibration(mechanism, ps, float(delta), best, theorem, how, options)
