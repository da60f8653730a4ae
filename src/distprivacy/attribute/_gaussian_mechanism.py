"""The Attribute-Private Gaussian Mechanism and its calibration (Zhang, Ohrimenko & Cummings,
FAccT 2022, Alg. 1, Thm 1, Thm 2; the accounting is described in
:mod:`distprivacy.attribute.gaussian`).

Part of :mod:`distprivacy.attribute.gaussian` (every name is importable from there).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from distprivacy._json import jsonable, number
from distprivacy.accounting import classic_c
from distprivacy.attribute._gaussian_terms import (
    PAIR_READINGS,
    THEOREM,
    SensitivityTerm,
    _as_matrix,
    _lmin,
    _top_up,
    conditional_moments_term,
)
from distprivacy.attribute.framework import AttributeFramework
from distprivacy.checks import check_delta, check_epsilon, check_rule
from distprivacy.exceptions import (
    AssumptionWarning,
    ClassicRuleWarning,
    DistPrivacyError,
    DistPrivacyTypeError,
    Notice,
)
from distprivacy.guarantee import Guarantee, Release, noisy_release
from distprivacy.noise import NoiseDistribution
from distprivacy.randomness import RandomState
from distprivacy.targets import EpsDelta

if TYPE_CHECKING:
    from distprivacy.attribute._gaussian_theta import GaussianTheta, RegressionTheta

#: What the guarantee rests on when Θ is a family of multivariate Gaussians (§4.2): F | g_i is
#: then Gaussian with a secret-independent covariance for every θ, Thm 1's hypothesis, exactly.
BASIS_GAUSSIAN_THETA = (
    "Θ of multivariate Gaussian records (§4.2): F | g_i is Gaussian with a secret-independent "
    "covariance for every θ (Thm 1's hypothesis holds); exact μ-GDP accounting of the noise"
)
#: What it rests on when Alg. 1 is given Δ_i F and the covariance floors (or moments) only.
BASIS_MOMENTS = (
    "the given conditional moments, F | g_i assumed Gaussian with a secret-independent "
    "covariance for every θ (Thm 1's hypothesis, not verified); exact μ-GDP accounting"
)
_ASSUME_GAUSSIAN = "F(X) | g_i(X_i), θ is Gaussian for every θ ∈ Θ and sensitive i (Thm 1)"
_ASSUME_EQUAL_COV = "Cov(F(X) | g_i(X_i), θ) does not depend on the secret (Thm 1)"
_ASSUME_THETA = "the data's distribution belongs to Θ"
_ASSUME_RESIDUALS = (
    "the residuals of the query attributes are independent given the sensitive one "
    "(RegressionTheta with several query attributes)"
)
_CALIBRATION_KEYS = frozenset(
    {
        "mechanism", "theorem", "epsilon", "delta", "rule", "statistics", "binding_attribute",
        "sensitivity", "conditional_variance", "noise_variance", "noise_covariance",
        "adds_noise", "expected_error", "accuracy_beta_0.05", "multiplier", "mu",
        "delta_achieved", "terms", "warnings", "guarantee",
    }
)  # fmt: skip


def apgm_warnings(
    rule: str, epsilon: float, terms: Sequence[SensitivityTerm], achieved: float
) -> tuple[Notice, ...]:
    """The caveats of a calibration (typed :class:`~distprivacy.exceptions.Notice`): a secret-
    dependent conditional covariance (:class:`AssumptionWarning`) and the classic rule at
    ε ≥ 1 (:class:`ClassicRuleWarning`)."""
    warns = []
    for t in terms:
        mismatch = _mismatch(t)
        if mismatch > 1e-9:
            warns.append(
                Notice(
                    f"Cov(F | s, θ) of {t.attribute!r} varies with the secret (by up to "
                    f"{mismatch:.1%} of its largest entry) but Thm 1 assumes it does not; the "
                    "noise uses the smallest, and delta_with_moments() gives the exact δ",
                    AssumptionWarning,
                )
            )
    if rule == "classic" and epsilon >= 1:
        warns.append(
            Notice(
                f"epsilon={epsilon:g} ≥ 1: c = √(2 ln(1.25/δ)) is proven only for ε < 1; "
                f"the exact δ this noise achieves is {achieved:.3g}",
                ClassicRuleWarning,
            )
        )
    return tuple(warns)


def _mismatch(t: SensitivityTerm) -> float:
    return float(t.details.get("covariance_mismatch", 0.0))


def _independent_residuals(t: SensitivityTerm) -> bool:
    """Whether the term's floor is RegressionTheta's diagonal for several query attributes."""
    return len(t.details.get("min_residual_variance", ())) > 1


@dataclass(frozen=True, repr=False)
class APGMCalibration:
    """A calibrated Attribute-Private Gaussian Mechanism, inspectable before any release
    (the :class:`~distprivacy.guarantee.Calibrated` protocol).

    Attributes
    ----------
    epsilon, delta : float
        The target (ε, δ)-dataset attribute privacy.
    rule : {"exact", "classic"}
    statistics : tuple of str
        Names of the k released statistics.
    terms : tuple of SensitivityTerm
        Δ_i F and the covariance floor for each i ∈ C.
    multiplier : float
        c/ε (classic) or 1/μ* (exact): the noise makes Cov(F + Z | s, θ) ⪰ (multiplier·Δ_i)² I.
    noise_covariance : ndarray (k, k)
        Cov(Z) (all zeros: F is released unchanged).
    mu : float
        The μ-GDP guarantee: max_i Δ_i / √λ_min(L_i + Cov Z) (0 if every Δ_i = 0).
    delta_achieved : float
        δ_μ(ε), the exact δ the noise achieves at ε (≤ δ for ``exact``).
    warnings : tuple of Notice
        Typed caveats (:func:`apgm_warnings`).
    basis : str
        What the guarantee rests on (:data:`BASIS_GAUSSIAN_THETA` for §4.2's Gaussian Θ,
        :data:`BASIS_MOMENTS` for the general form).
    """

    epsilon: float
    delta: float
    rule: str
    statistics: tuple[str, ...]
    terms: tuple[SensitivityTerm, ...]
    multiplier: float
    noise_covariance: np.ndarray
    mu: float
    delta_achieved: float
    warnings: tuple[Notice, ...] = ()
    mechanism: str = "APGM"
    theorem: str = THEOREM
    basis: str = BASIS_MOMENTS

    @property
    def statistic_names(self) -> tuple[str, ...]:
        """The released statistics (the protocol's name for ``statistics``)."""
        return tuple(self.statistics)

    @property
    def verified(self) -> bool:
        """True when Θ is §4.2's Gaussian family (Thm 1's hypothesis holds by construction) and
        no conditional covariance varies with the secret (nor is a residual independence
        assumed)."""
        return (
            self.basis == BASIS_GAUSSIAN_THETA
            and all(_mismatch(t) <= 1e-9 for t in self.terms)
            and not any(_independent_residuals(t) for t in self.terms)
        )

    @property
    def guarantee(self) -> Guarantee:
        """μ-GDP (so (ε, δ_μ(ε)) at every ε) dataset attribute privacy, by Thm 1."""
        assumptions = [_ASSUME_THETA]
        if self.basis != BASIS_GAUSSIAN_THETA:
            assumptions.append(_ASSUME_GAUSSIAN)
        if any(_independent_residuals(t) for t in self.terms):
            assumptions.append(_ASSUME_RESIDUALS)
        if any(_mismatch(t) > 1e-9 for t in self.terms):
            assumptions.append(
                _ASSUME_EQUAL_COV + " — off here: delta_with_moments() gives the exact δ"
            )
        elif self.basis != BASIS_GAUSSIAN_THETA:
            assumptions.append(_ASSUME_EQUAL_COV)
        return Guarantee(
            epsilon=self.epsilon,
            delta=self.delta_achieved,
            theorem=self.theorem,
            notion="attribute privacy",
            mu=self.mu,
            curve="gdp",
            basis=self.basis,
            verified=self.verified,
            assumptions=tuple(assumptions),
        )

    @property
    def binding(self) -> SensitivityTerm:
        """The sensitive attribute that sets the noise (largest required top-up)."""
        return max(self.terms, key=lambda t: (self.multiplier * t.sensitivity) ** 2 - _lmin(t))

    @property
    def sensitivity(self) -> float:
        """Δ F of the binding attribute (the paper's Δ_gndr F in §4.2)."""
        return self.binding.sensitivity

    @property
    def conditional_variance(self) -> float:
        """min_θ Var(F | g_i, θ) of the binding attribute (λ_min of the floor if k > 1)."""
        return _lmin(self.binding)

    @property
    def noise_variance(self) -> float:
        """σ² of Alg. 1 (k = 1); the largest noise variance along any direction if k > 1."""
        return float(np.linalg.eigvalsh(self.noise_covariance)[-1])

    @property
    def adds_noise(self) -> bool:
        return bool(self.noise_variance > 0)

    @property
    def noise(self) -> NoiseDistribution:
        k = len(self.statistics)
        if not self.adds_noise:
            return NoiseDistribution.none(k)
        return NoiseDistribution.gaussian_from_covariance(self.noise_covariance)

    @property
    def expected_error(self) -> float:
        """E‖Z‖₂ exactly (k = 1: E|Z| = σ √(2/π)), the metric of the paper's §4.2 table."""
        return 0.0 if not self.adds_noise else float(self.noise.expected_l2_error)

    def accuracy(self, beta: float) -> float:
        """Thm 2: α with P(|M(X) − F(X)| > α) ≤ β, α = σ Φ⁻¹(1 − β/2) (k = 1); for k > 1 the
        per-coordinate bound with the largest coordinate variance."""
        b = float(beta)
        if not (0 < b < 1):
            raise DistPrivacyError(f"beta must lie in (0, 1), got {beta!r}")
        sd = math.sqrt(float(np.diag(self.noise_covariance).max()))
        return sd * float(special.ndtri(1 - b / 2))

    def __repr__(self) -> str:
        return (
            f"APGMCalibration({self.rule}, ε={self.epsilon:g}, δ={self.delta_achieved:.3g}, "
            f"μ={self.mu:.4g}, σ²={self.noise_variance:.4g}, k={len(self.statistics)})"
        )

    def summary(self) -> str:
        """A few lines a person can read: the guarantee, the noise, the caveats."""
        g = self.guarantee
        lines = [
            f"{self.mechanism} ({self.theorem}), rule {self.rule}",
            f"  guarantee: {g.describe()}",
            f"  rests on: {self.basis}",
            f"  binding attribute {self.binding.attribute}: Δ = {self.sensitivity:.6g}, "
            f"min cond. var {self.conditional_variance:.6g}",
            f"  noise: σ² = {self.noise_variance:.6g}, E‖Z‖₂ = {self.expected_error:.6g}"
            + ("" if self.adds_noise else " (none: F(X) is released unchanged)"),
        ]
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    def release(
        self,
        value: float | ArrayLike,
        random_state: RandomState = None,
        *,
        allow_exact: bool = False,
        size: int | None = None,
    ) -> Release:
        """M(X) = F(X) + Z.

        Parameters
        ----------
        value : float or array (k,)
            F(X) of the dataset being released.
        random_state : None, int, Generator or SecureGenerator
            None (default): OpenDP's secure sampler. A seed or generator: reproducible noise,
            for experiments only.
        allow_exact : bool
            Release even when σ² = 0 (Alg. 1 then returns F(X) unchanged). Off by default.
        size : int, optional
            Draw ``size`` independent releases at once (values of shape (size, k), or (size,)
            if k = 1).

        Raises
        ------
        ExactReleaseError
            When the calibration adds no noise and ``allow_exact`` is False.
        """
        k = len(self.statistics)
        v = np.atleast_1d(_as_matrix(value, "the value to release"))
        if v.shape != (k,):
            raise DistPrivacyError(
                f"the value to release has shape {v.shape}, expected ({k},) for "
                f"{list(self.statistics)}"
            )
        return noisy_release(
            self,
            v,
            random_state=random_state,
            allow_exact=allow_exact,
            size=size,
            exact_reason=(
                f"{self.mechanism} adds no noise here (σ² = 0: the data's own variance gives the "
                "guarantee, cf. Theorem 4.4 of Chen & Ohrimenko 2023), so the release would "
                "publish F(X); pass `allow_exact=True` to release it exactly"
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON output of ``distprivacy attribute gaussian``)."""
        b = self.binding
        return jsonable(
            {
                "mechanism": self.mechanism,
                "theorem": self.theorem,
                "epsilon": self.epsilon,
                "delta": self.delta,
                "rule": self.rule,
                "statistics": list(self.statistics),
                "binding_attribute": b.attribute,
                "sensitivity": self.sensitivity,
                "conditional_variance": self.conditional_variance,
                "noise_variance": self.noise_variance,
                "noise_covariance": self.noise_covariance.tolist(),
                "adds_noise": self.adds_noise,
                "expected_error": self.expected_error,
                "accuracy_beta_0.05": self.accuracy(0.05),
                "multiplier": self.multiplier,
                "mu": self.mu,
                "delta_achieved": self.delta_achieved,
                "terms": [
                    {
                        "attribute": t.attribute,
                        "sensitivity": t.sensitivity,
                        "conditional_covariance_floor": t.floor.tolist(),
                        "details": t.details,
                    }
                    for t in self.terms
                ],
                "warnings": list(self.warnings),
                "guarantee": self.guarantee.to_dict(),
            }
        )

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> APGMCalibration:
        """Inverse of :meth:`to_dict` (unknown keys refused; the derived numbers are recomputed,
        the warnings too — they are a function of the fields)."""
        if not isinstance(raw, Mapping):
            raise DistPrivacyError(f"a calibration must be an object, got {type(raw).__name__}")
        extra = sorted(set(raw) - _CALIBRATION_KEYS)
        if extra:
            raise DistPrivacyError(f"unknown key(s) in an APGM calibration: {', '.join(extra)}")
        try:
            terms = tuple(
                SensitivityTerm(
                    t["attribute"],
                    number(t["sensitivity"]),
                    np.asarray(t["conditional_covariance_floor"], dtype=float),
                    dict(t.get("details", {})),
                )
                for t in raw["terms"]
            )
            epsilon, achieved = float(number(raw["epsilon"])), float(number(raw["delta_achieved"]))
            basis = Guarantee.from_dict(raw["guarantee"]).basis if "guarantee" in raw else ""
            cal = cls(
                epsilon=epsilon,
                delta=check_delta(number(raw["delta"])),
                rule=check_rule(raw["rule"]),
                statistics=tuple(raw["statistics"]),
                terms=terms,
                multiplier=float(number(raw["multiplier"])),
                noise_covariance=np.asarray(raw["noise_covariance"], dtype=float),
                mu=float(number(raw["mu"])),
                delta_achieved=achieved,
                warnings=apgm_warnings(raw["rule"], epsilon, terms, achieved),
                mechanism=raw.get("mechanism", "APGM"),
                theorem=raw.get("theorem", THEOREM),
                basis=basis or BASIS_MOMENTS,
            )
        except KeyError as e:
            raise DistPrivacyError(f"an APGM calibration is missing {e.args[0]!r}") from None
        except (TypeError, ValueError) as e:
            raise DistPrivacyError(f"an APGM calibration has a malformed field: {e}") from None
        if "guarantee" in raw and Guarantee.from_dict(raw["guarantee"]) != cal.guarantee:
            raise DistPrivacyError("the calibration's guarantee does not match its fields")
        return cal


class AttributeGaussianMechanism:
    """Attribute-Private Gaussian Mechanism (Zhang, Ohrimenko & Cummings 2022, Alg. 1).

    (ε, δ)-dataset attribute private by Thm 1 when F(X) | g_i(X_i) is Gaussian with a
    secret-independent variance for every θ ∈ Θ and i ∈ C; (α, β)-accurate by Thm 2.

    Parameters
    ----------
    target : EpsDelta
        The (ε, δ) to meet (:mod:`distprivacy.targets`): ε > 0, δ ∈ (0, 1).
    rule : {"exact", "classic"}
        ``classic``: c = √(2 ln(1.25/δ)) as in Alg. 1. ``exact`` (default): the least noise
        whose μ-GDP guarantee implies (ε, δ) exactly (module docstring).

    Follows :class:`~distprivacy.protocols.CalibratingMechanism`: ``name``, ``theorem``,
    ``calibrate`` (and ``calibrate_moments``/``calibrate_terms``) returning an
    :class:`APGMCalibration`.
    """

    #: The shorthand of its calibrations (``APGMCalibration.mechanism``).
    name: ClassVar[str] = "APGM"
    theorem: ClassVar[str] = THEOREM

    def __init__(self, target: EpsDelta | None = None, *, rule: str = "exact", **old: Any) -> None:
        if old or not isinstance(target, EpsDelta):
            given = ", ".join(f"{k}={v!r}" for k, v in old.items()) or repr(target)
            raise DistPrivacyTypeError(
                "AttributeGaussianMechanism takes an (ε, δ) target (distprivacy.targets), e.g. "
                f"AttributeGaussianMechanism(EpsDelta(1.0, 1e-3), rule='exact'); got {given}"
            )
        self.target = target
        self.epsilon = check_epsilon(target.epsilon)
        self.delta = check_delta(target.delta)
        self.rule = check_rule(rule)

    @property
    def multiplier(self) -> float:
        from distprivacy.profiles import gdp_mu

        if self.rule == "classic":
            return classic_c(self.delta) / self.epsilon
        # 1/μ*, enlarged by 1e-12 so that rounding in the top-up never exceeds δ
        return (1.0 + 1e-12) / gdp_mu(self.epsilon, self.delta)

    def calibrate_terms(
        self, terms: Sequence[SensitivityTerm], statistics: Sequence[str] | None = None
    ) -> APGMCalibration:
        """Algorithm 1 from Δ_i F and the covariance floors (the general form)."""
        from distprivacy.profiles import gdp_delta

        terms = tuple(terms)
        if not terms:
            raise DistPrivacyError("give at least one sensitive attribute")
        k = terms[0].floor.shape[0]
        if any(t.floor.shape != (k, k) for t in terms):
            raise DistPrivacyError(
                "the sensitive attributes' conditional covariances differ in size"
            )
        names = tuple(statistics) if statistics is not None else tuple(f"F{j}" for j in range(k))
        if len(names) != k:
            raise DistPrivacyError(f"{len(names)} statistic names for {k} statistics")
        r = self.multiplier
        if len(terms) == 1 or k == 1:
            covs = [_top_up(t.floor, (r * t.sensitivity) ** 2) for t in terms]
            noise = max(covs, key=lambda S: float(np.trace(S)))
        else:  # several attributes with different floors: isotropic, the safe common choice
            noise = np.eye(k) * max(max((r * t.sensitivity) ** 2 - _lmin(t), 0.0) for t in terms)
        noise = (noise + noise.T) / 2
        mus = []
        for t in terms:
            lam = float(np.linalg.eigvalsh(t.floor + noise)[0])
            if t.sensitivity == 0:
                mus.append(0.0)
            elif lam <= 0:
                mus.append(math.inf)
            else:
                mus.append(t.sensitivity / math.sqrt(lam))
        mu = max(mus)
        achieved = 1.0 if math.isinf(mu) else float(gdp_delta(self.epsilon, mu))
        return APGMCalibration(
            epsilon=self.epsilon,
            delta=self.delta,
            rule=self.rule,
            statistics=names,
            terms=terms,
            multiplier=r,
            noise_covariance=noise,
            mu=mu,
            delta_achieved=achieved,
            warnings=apgm_warnings(self.rule, self.epsilon, terms, achieved),
        )

    def calibrate_moments(
        self,
        attribute: str,
        means: ArrayLike,
        covariances: ArrayLike,
        pairs: Sequence[tuple[int, int]],
        statistics: Sequence[str] | None = None,
    ) -> APGMCalibration:
        """Algorithm 1 from conditional moments E[F | s, θ], Cov(F | s, θ) over a finite Θ."""
        term = conditional_moments_term(attribute, means, covariances, pairs)
        return self.calibrate_terms([term], statistics)

    def calibrate(
        self,
        framework: AttributeFramework,
        theta: GaussianTheta | RegressionTheta,
        query: Sequence[str] | str,
        *,
        pair_distance: str = "sup",
    ) -> APGMCalibration:
        """§4.2: F = the means of the ``query`` attributes over n i.i.d. Gaussian records,
        g_i = the mean of each sensitive attribute i, Θ a family of Gaussians.

        Parameters
        ----------
        framework : AttributeFramework
            Dataset attribute privacy framework: pairs Q and n.
        theta : GaussianTheta or RegressionTheta
        query : str or sequence of str
            Attributes whose means are released.
        pair_distance : {"sup", "centres"}
            d(U) for interval secrets: the supremum of |a − b| (Eq. 1 with point
            conditioning) or the distance of the intervals' centres (the paper's arithmetic).
        """
        if framework.kind != "dataset":
            raise DistPrivacyError(
                "the Gaussian mechanism is for dataset attribute privacy; convert a "
                "distributional framework with .to_dataset() (§3, unbiased estimator)"
            )
        if pair_distance not in PAIR_READINGS:
            raise DistPrivacyError(f"pair_distance must be one of {PAIR_READINGS}")
        q = [query] if isinstance(query, str) else list(query)
        if not q:
            raise DistPrivacyError("name at least one attribute to release")
        for a in framework.sensitive:
            if a in q:
                raise DistPrivacyError(f"the released attributes include the sensitive {a!r}")
        terms = [
            theta.term(a, q, framework.n, framework.diameter(a, pair_distance))
            for a in framework.sensitive
        ]
        cal = self.calibrate_terms(terms, [f"mean({a})" for a in q])
        return dataclasses.replace(cal, basis=BASIS_GAUSSIAN_THETA)


def delta_with_moments(
    calibration: APGMCalibration,
    means: ArrayLike,
    covariances: ArrayLike,
    pairs: Sequence[tuple[int, int]],
) -> float:
    """The exact δ at ε of a calibrated noise when Cov(F | s, θ) differs between the secrets
    (Thm 1's assumption off): max over θ, pairs and both orders of the privacy profile of
    N(m_a, S_a + Σ_Z) against N(m_b, S_b + Σ_Z) (:func:`distprivacy.profiles.gaussian_profile`,
    exact up to 1e-10). Shapes as in :func:`conditional_moments_term`."""
    from distprivacy.profiles import gaussian_profile

    m = _as_matrix(means, "the conditional means")
    c = _as_matrix(covariances, "the conditional covariances")
    if m.ndim == 2:
        m, c = m[..., None], c[..., None, None]
    Z = calibration.noise_covariance
    if m.shape[-1] != Z.shape[0] or c.shape != (*m.shape, m.shape[-1]):
        raise DistPrivacyError("the moments do not match the calibration's statistics")
    worst = 0.0
    for t in range(m.shape[0]):
        for a, b in pairs:
            for x, y in ((a, b), (b, a)):
                d, _ = gaussian_profile(
                    m[t, x], c[t, x] + Z, m[t, y], c[t, y] + Z, calibration.epsilon
                )
                worst = max(worst, d)
    return worst
