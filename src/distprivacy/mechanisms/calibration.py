"""The calibration: what a mechanism calibrated on a model of f_θ will add, and the release.

A :class:`Calibration` holds the noise (family, directions, scales, covariance), the expected L2
error, the guarantee (:attr:`Calibration.guarantee`, a :class:`~distprivacy.guarantee.
Guarantee`), the theorem it rests on, its assumptions and typed warnings; only
:meth:`Calibration.release` draws noise. It follows the :class:`~distprivacy.guarantee.
Calibrated` protocol: :meth:`Calibration.to_dict` is the JSON of ``distprivacy calibrate`` and
:meth:`Calibration.from_dict` reads it back exactly (same guarantee, same noise bit for bit,
same release for the same seed).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from distprivacy._json import jsonable, number
from distprivacy.checks import (
    check_bool,
    check_dataframe,
    check_delta,
    check_instance,
    check_int,
    check_number,
    check_text,
    check_texts,
    check_vector,
)
from distprivacy.exceptions import WARNING_CODES, DistPrivacyError, Notice
from distprivacy.guarantee import Guarantee, Release, check_names
from distprivacy.mechanisms._accounting import GaussianAccounting
from distprivacy.mechanisms._exactness import Exactness, check_exact, exactness
from distprivacy.noise import NoiseDistribution
from distprivacy.randomness import RandomState, check_random_state, is_secure

#: What a guarantee rests on (``Calibration.basis``).
BASIS_FITTED = "exact profile of the fitted Gaussian model (unequal covariances included)"
BASIS_UNCONDITIONAL = "every dataset (group differential privacy)"
BASIS_EQUAL_COVARIANCES = "the fitted Gaussian model with one covariance per pair (assumed)"
BASIS_TRANSLATION = "f_θi a translation of f_θj for every pair (assumed, not verified)"
BASIS_SAMPLES = "the empirical distributions of the Monte-Carlo samples (W∞ computed on them)"


@dataclass(frozen=True, repr=False)
class Calibration:
    """A calibrated mechanism, inspectable before any release.

    Attributes
    ----------
    mechanism : str
        Shorthand (Table 1 of the paper: ``ExpM-G``, ``DauM-G``, ...).
    theorem : str
        The result that proves the guarantee (paper and number).
    epsilon, delta : float
        The guarantee: (ε, δ)-distribution privacy w.r.t. the model's pairs Ψ.
    noise : NoiseDistribution
        Family, orthonormal directions and scales of the added noise Z.
    statistic_names : tuple of str
    sensitivity : float or None
        The distance the noise is scaled to (Δ_E,2, Δ_W, W, ...), named by ``sensitivity_label``.
    rule : str or None
        Gaussian calibration rule (``classic``); None for pure-ε Laplace mechanisms.
    assumptions : tuple of str
        What the guarantee rests on (model assumptions of the theorem).
    warnings : tuple of Notice
        Where an assumption is visibly off or the rule is outside its proven range; each a
        :class:`~distprivacy.exceptions.Notice` whose ``category`` says which (plain text given
        here becomes a Notice of the generic category).
    details : mapping
        Mechanism-specific intermediate quantities (per-pair variances, directions, ...).
    accounting : GaussianAccounting or None
        The guarantee of a Gaussian mechanism in its three forms — μ (``shared``), the (ε, δ)
        point (``delta_achieved`` at ε; the ``shared`` and ``unequal`` profiles) and
        ``max_attack_accuracy`` — see :mod:`distprivacy.mechanisms.gaussian`; None for the
        others.
    statistic_scales, statistic_levels : ndarray or None
        Each statistic's sampling scale and typical magnitude under the model.
    basis : str
        What the guarantee rests on (one of the ``BASIS_*`` texts).
    query : Query or None
        The query F the model was fitted for (None for a model read from a file): with it,
        :meth:`release` takes the dataset itself.
    n : int or None
        The size of the datasets the protection is for (the specification's n).
    model_ : FModel or None
        The model it was calibrated on (None when read back from plain data, which does not
        hold the model; a plan keeps it beside).
    """

    mechanism: str
    theorem: str
    epsilon: float
    delta: float
    noise: NoiseDistribution
    statistic_names: tuple[str, ...]
    sensitivity: float | None = None
    sensitivity_label: str = ""
    rule: str | None = None
    assumptions: tuple[str, ...] = ()
    warnings: tuple[Notice, ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)
    accounting: GaussianAccounting | None = None
    statistic_scales: np.ndarray | None = None
    statistic_levels: np.ndarray | None = None
    basis: str = ""
    query: Any = field(default=None, compare=False)
    n: int | None = None
    model_: Any = field(default=None, compare=False)

    def __post_init__(self) -> None:
        from distprivacy.query import Query

        check_text(self.mechanism, "mechanism")
        check_text(self.theorem, "theorem")
        check_number(self.epsilon, "epsilon", low=0)
        check_number(self.delta, "delta", low=0, high=1)
        check_instance(self.noise, "noise", NoiseDistribution, "a NoiseDistribution")
        check_texts(self.statistic_names, "statistic_names")
        check_instance(self.sensitivity, "sensitivity", numbers.Real, "a number", optional=True)
        check_text(self.sensitivity_label, "sensitivity_label")
        check_text(self.rule, "rule", optional=True)
        check_texts(self.assumptions, "assumptions")
        check_instance(self.warnings, "warnings", list | tuple, "a list of warnings")
        check_instance(self.details, "details", Mapping, "a mapping")
        for key in ("statistic_scales", "statistic_levels"):
            check_instance(getattr(self, key), key, np.ndarray | list | tuple, "an array",
                           optional=True)  # fmt: skip
        check_text(self.basis, "basis")
        check_instance(self.query, "query", Query, "a Query", optional=True)
        if self.n is not None:
            check_int(self.n, "n", low=1)
        if self.accounting is not None and not isinstance(self.accounting, GaussianAccounting):
            raise DistPrivacyError(
                "a calibration's accounting must be a GaussianAccounting or None, got "
                f"{type(self.accounting).__name__}"
            )
        object.__setattr__(self, "statistic_names", tuple(self.statistic_names))
        object.__setattr__(self, "assumptions", tuple(self.assumptions))
        object.__setattr__(
            self,
            "warnings",
            tuple(w if isinstance(w, Notice) else Notice(str(w)) for w in self.warnings),
        )

    @property
    def guarantee(self) -> Guarantee:
        """What a release promises (:class:`~distprivacy.guarantee.Guarantee`): (ε, δ achieved)
        -distribution privacy for the model's pairs; its curve is the μ-GDP one only when the
        whole curve is known to be (a Gaussian mechanism whose accounting has no
        unequal-covariance profile), else the point (ε, δ). A group-DP baseline whose group is
        the whole dataset (k = n) holds for every pair of n-record datasets
        (``holds_for_every_input``: releases of it compose by basic/GDP composition,
        docs/ledger.md); with k < n only for datasets differing in k records."""
        acct = self.accounting
        k, n = self.details.get("group_size"), self.n
        whole = self.basis == BASIS_UNCONDITIONAL and k is not None and n is not None and k >= n
        return Guarantee(
            epsilon=self.epsilon,
            delta=self.delta_achieved,
            theorem=self.theorem,
            notion="distribution privacy",
            mu=self.mu,
            curve="gdp" if acct is not None and acct.unequal is None else "point",
            max_attack_accuracy=self.max_attack_accuracy,
            basis=self.basis,
            verified=self.verified,
            assumptions=self.assumptions,
            holds_for_every_input=bool(whole),
            profile=self._exact_profile(),
        )

    def _exact_profile(self) -> Any:
        """ε′ ↦ δ(ε′) of this noise on the fitted model, unequal covariances included (the
        worse of the shared-covariance μ-GDP curve and the fitted Gaussians' exact profile),
        when the model is at hand and the guarantee rests on it; None otherwise."""
        acct, model = self.accounting, self.model_
        if acct is None or acct.unequal is None or model is None or self.mu is None:
            return None
        if not hasattr(model, "pair_indices_"):
            return None
        from distprivacy.mechanisms._fitted import fitted_profile
        from distprivacy.profiles import gdp_delta

        mu, Z = float(self.mu), np.array(self.noise_covariance, dtype=float)

        def profile(eps: float) -> float:
            shared = 1.0 if math.isinf(mu) else float(gdp_delta(eps, mu))
            fitted = fitted_profile(model, Z, eps, accuracy=False).delta_at_epsilon
            return max(shared, float(fitted))

        return profile

    @property
    def verified(self) -> bool:
        """Whether the guarantee was verified for this noise without an unchecked modelling
        assumption: exact accounting on the fitted Gaussian model as it is (unequal covariances
        included), or a guarantee that holds for every dataset (group DP)."""
        return self.basis in (BASIS_FITTED, BASIS_UNCONDITIONAL) and (
            self.delta_achieved <= self.delta * (1 + 1e-6)
        )

    @property
    def noise_sd(self) -> np.ndarray:
        """Standard deviation of each released statistic's noise (in the statistic's units)."""
        return np.sqrt(np.maximum(np.diag(self.noise_covariance), 0.0))

    @property
    def relative_error(self) -> np.ndarray:
        """Noise SD over the statistic's typical magnitude (mean over θ of |E F_k|); NaN where
        that is 0."""
        if self.statistic_levels is None:
            return np.full(len(self.statistic_names), np.nan)
        lv = np.asarray(self.statistic_levels, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(lv > 0, self.noise_sd / np.where(lv > 0, lv, 1.0), np.nan)

    @property
    def noise_to_sampling(self) -> np.ndarray:
        """Noise SD over the statistic's own sampling SD under f_θ (its scale s_k)."""
        if self.statistic_scales is None:
            return np.full(len(self.statistic_names), np.nan)
        return self.noise_sd / np.asarray(self.statistic_scales, dtype=float)

    def utility_cost(self, utility: str = "scaled") -> float:
        """The noise's cost under a utility: ``scaled`` Σ_k Var(Z_k)/s_k² (unit-free),
        ``l2`` E‖Z‖₂ (raw units, the paper's)."""
        check_text(utility, "utility", choices=("scaled", "l2"))
        if utility == "l2":
            return self.expected_l2_error
        if self.statistic_scales is None:
            raise DistPrivacyError("this calibration carries no statistic scales")
        return float(np.sum(self.noise_sd**2 / np.asarray(self.statistic_scales) ** 2))

    def per_statistic(self) -> list[dict[str, Any]]:
        """Per statistic: name, noise SD, relative error, noise SD over sampling SD."""
        return [
            {
                "statistic": n,
                "noise_sd": float(sd),
                "relative_error": jsonable(float(re)),
                "noise_to_sampling_sd": jsonable(float(ns)),
            }
            for n, sd, re, ns in zip(
                self.statistic_names,
                self.noise_sd,
                self.relative_error,
                self.noise_to_sampling,
                strict=True,
            )
        ]

    def __repr__(self) -> str:
        mu = "" if not self.guarantee.is_gdp else f", μ={self.mu:.4g}-GDP"
        return (
            f"Calibration({self.mechanism}, ε={self.epsilon:g}, δ={self.delta_achieved:.3g}{mu}, "
            f"E‖Z‖₂={self.expected_l2_error:.4g}, {'verified' if self.verified else 'assumed'})"
        )

    def summary(self) -> str:
        """A few lines a person can read: the guarantee, what it rests on, and each
        statistic's noise SD and relative error."""
        lines = [
            f"{self.mechanism} ({self.theorem})",
            f"  guarantee: {self.guarantee.figures()}, distribution privacy; no attacker above "
            f"{self.max_attack_accuracy:.1%} accuracy",
            f"  rests on: {self.basis or 'the assumptions below'}"
            f" ({'verified' if self.verified else 'not verified'})",
            f"  noise: {self.noise.family}, E‖Z‖₂ = {self.expected_l2_error:.4g}",
        ]
        for row in self.per_statistic():
            rel = row["relative_error"]
            rel_text = "—" if rel is None else f"{rel:.2%}"
            lines.append(f"    {row['statistic']}: SD {row['noise_sd']:.4g} ({rel_text})")
        lines += [f"  warning: {w}" for w in self.warnings]
        found = self.exactness()
        lines += [f"  note: {s.describe()}" for s in found.statistics if s.justified]
        if found.refused:
            lines.append(f"  exact: {found.message()}")
        return "\n".join(lines)

    @property
    def mu(self) -> float | None:
        """μ of the μ-GDP guarantee (Gaussian mechanisms; None for pure-ε Laplace ones)."""
        return None if self.accounting is None else float(self.accounting.shared.mu)

    @property
    def max_attack_accuracy(self) -> float:
        """Upper bound on any attacker's accuracy between two equally likely θ of a pair:
        Φ(μ/2) for μ-GDP (or (1 + TV)/2 of the fitted Gaussians, if worse), and
        (e^ε + δ)/(1 + e^ε) for an (ε, δ) guarantee."""
        if self.accounting is not None:
            return float(self.accounting.max_attack_accuracy)
        e = math.exp(min(self.epsilon, 700.0))
        return (e + self.delta) / (1 + e)

    @property
    def delta_achieved(self) -> float:
        """The δ the noise actually achieves at ``epsilon`` (exact accounting; equals ``delta``
        for pure-ε mechanisms)."""
        if self.accounting is None:
            return float(self.delta)
        return float(self.accounting.delta_achieved)

    def delta_at(self, epsilon: float) -> float:
        """δ(ε) of the μ-GDP guarantee (shared-covariance form), at any ε ≥ 0."""
        from distprivacy.profiles import gdp_delta

        if self.mu is None:
            raise DistPrivacyError(f"{self.mechanism} is pure-ε: it has no (ε, δ) curve")
        return float(gdp_delta(check_number(epsilon, "epsilon", low=0), self.mu))

    def epsilon_at(self, delta: float) -> float:
        """Smallest ε with δ(ε) ≤ delta for the μ-GDP guarantee."""
        from distprivacy.profiles import gdp_epsilon

        if self.mu is None:
            raise DistPrivacyError(f"{self.mechanism} is pure-ε: it has no (ε, δ) curve")
        return gdp_epsilon(check_delta(delta), self.mu)

    @property
    def noise_covariance(self) -> np.ndarray:
        """Cov(Z), shape (m, m)."""
        return self.noise.covariance

    @property
    def expected_l2_error(self) -> float:
        """E‖M(D) − F(D)‖₂ = E‖Z‖₂, computed exactly (the paper's Table 2 metric)."""
        return self.noise.expected_l2_error

    @property
    def expected_squared_error(self) -> float:
        """E‖Z‖₂² = tr Cov(Z)."""
        return self.noise.expected_squared_error

    @property
    def bias(self) -> np.ndarray:
        """E[M(D)] − F(D): zero, every noise here is centred."""
        return np.zeros(len(self.statistic_names))

    @property
    def variance(self) -> np.ndarray:
        """Variance of each released statistic's noise."""
        return np.diag(self.noise_covariance).copy()

    @property
    def adds_noise(self) -> bool:
        """Whether the release adds any noise (False: it would publish F(D) itself)."""
        n = self.noise
        return n.family != "none" and bool(np.any(n.scales > 0))

    def sample_noise(self, size: int | None = None, random_state: RandomState = None) -> np.ndarray:
        """Draw the noise Z (one call for all ``size`` draws; ``size`` a non-negative integer;
        ``random_state`` None: the secure generator)."""
        return self.noise.sample(size, random_state)

    def exactness(self, value: Any = None) -> Exactness:
        """What the exactness gate finds for this calibration (and the value ``value`` to
        release, for the float-resolution test): the statistics released without noise or
        with noise below their resolution, and whether a release needs ``allow_exact``
        (:mod:`distprivacy.mechanisms._exactness`)."""
        return exactness(self, value)

    def evaluate(self, data: pd.DataFrame) -> np.ndarray:
        """F(data): the calibration's query on a dataset of the specification's n records.

        Raises
        ------
        DistPrivacyError
            When the calibration carries no query (its model was not fitted on data), or the
            dataset does not have n records, or a statistic cannot be computed on it.
        """
        check_dataframe(data, "data")
        if self.query is None:
            raise DistPrivacyError(
                f"this {self.mechanism} calibration carries no query (its model was not fitted "
                "by fit_model); pass F(D), the statistics of the dataset, as numbers"
            )
        if self.n is not None and len(data) != self.n:
            raise DistPrivacyError(
                f"the dataset has {len(data)} records but the calibration protects datasets of "
                f"n = {self.n} records; release a dataset of {self.n} records"
            )
        self.query.validate(data)
        return np.asarray(self.query.evaluate(data), dtype=float)

    def release(
        self,
        value: np.ndarray | list[float] | pd.DataFrame,
        random_state: RandomState = None,
        *,
        allow_exact: bool = False,
    ) -> Release:
        """Release M(D) = F(D) + Z.

        Parameters
        ----------
        value : array (m,) or DataFrame
            F(D), the true statistics of the dataset being released (finite real numbers), or
            the dataset D itself (n records; its statistics are computed with the query the
            model was fitted for, :meth:`evaluate`).
        random_state : None, int, Generator or SecureGenerator
            None (default): cryptographically secure noise (OpenDP). A seed or generator makes the
            release reproducible — for experiments only, never for a real release.
        allow_exact : bool
            Release even when the release is (near-)exact: the calibration adds no noise
            (NoNoise, Thm 4.4), its attack bound rounds to 1, or a statistic's noise SD is
            below its resolution while its mean moves by more than that between protected
            shares (the one gate of :mod:`distprivacy.mechanisms._exactness`,
            :meth:`exactness`). Off by default. A statistic whose mean moves by less — one a
            directional mechanism leaves noise-free because its mean is the same under every
            protected share — needs no consent: the release says so (:attr:`Release.notes
            <distprivacy.guarantee.Release.notes>`).

        Returns
        -------
        Release
            With ``exact_statistics``: the statistics released without noise or with noise
            below their resolution.

        Raises
        ------
        ExactReleaseError
            When the release is (near-)exact and ``allow_exact`` is False (one line naming
            the statistics, their noise SD against their resolution, and the fix).
        DistPrivacyError
            When ``value`` is not a vector of m finite real numbers (or a dataset of n records
            the query can be computed on), or the release overflows.
        """
        if isinstance(value, pd.DataFrame):
            value = self.evaluate(value)
        v = check_vector(value, "the value to release", len(self.statistic_names))
        check_bool(allow_exact, "allow_exact")
        model = self.model_
        if (
            getattr(model, "means_", None) is not None
            and getattr(model, "covariances_", None) is not None
        ):
            from distprivacy.mechanisms._target_check import check_target

            check_target(
                model.means_, model.covariances_, self.noise_covariance, v, self.statistic_names
            )
        found = check_exact(self, v, allow_exact)
        gen = check_random_state(random_state, secure=True)
        noisy = v + self.noise.sample(None, gen)
        bad = [n for n, x in zip(self.statistic_names, noisy, strict=True) if not np.isfinite(x)]
        if bad:
            raise DistPrivacyError(
                f"the release of {', '.join(bad)} overflowed (value plus noise is not a finite "
                "number); rescale the statistic"
            )
        rel = Release(
            noisy, self.statistic_names, self, is_secure(gen), exact_statistics=found.statistics
        )
        rel.emit_warnings(stacklevel=2)  # as Python warnings too, at the caller's line
        return rel

    @property
    def statistic_ranges(self) -> list[tuple[float, float] | None]:
        """Each statistic's possible values ([0, 1] for a proportion, [0, n] for a count;
        None otherwise): a release's published values are clipped into them."""
        from distprivacy.mechanisms._swamped import statistic_ranges

        return statistic_ranges(self)

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (JSON output of ``distprivacy calibrate``); :meth:`from_dict` reads it
        back exactly (``noise``, ``statistic_scales``, ``statistic_levels`` and
        ``warning_codes`` are there for that; ``guarantee`` is :attr:`guarantee`)."""
        return jsonable(
            {
                "name": self.mechanism,
                "theorem": self.theorem,
                "epsilon": self.epsilon,
                "delta": self.delta,
                "rule": self.rule,
                "noise_family": self.noise.family,
                "noise_directions": self.noise.basis.T,
                "noise_scales": self.noise.scales,
                "noise_covariance": self.noise_covariance,
                "expected_l2_error": self.expected_l2_error,
                "expected_squared_error": self.expected_squared_error,
                "sensitivity": self.sensitivity,
                "sensitivity_label": self.sensitivity_label,
                "statistics": list(self.statistic_names),
                "assumptions": list(self.assumptions),
                "warnings": [str(w) for w in self.warnings],
                "details": dict(self.details),
                "mu": self.mu,
                "max_attack_accuracy": self.max_attack_accuracy,
                "delta_achieved": self.delta_achieved,
                "accounting": {} if self.accounting is None else self.accounting.to_dict(),
                "per_statistic": self.per_statistic(),
                "basis": self.basis,
                "verified": self.verified,
                "utility_scaled": (
                    self.utility_cost("scaled") if self.statistic_scales is not None else None
                ),
                "guarantee": self.guarantee.to_dict(),
                "warning_codes": [w.code for w in self.warnings],
                "noise": {k: v for k, v in self.noise.to_dict().items() if k != "covariance"},
                "statistic_scales": self.statistic_scales,
                "statistic_levels": self.statistic_levels,
                "n": self.n,
            }
        )

    @classmethod
    def from_dict(
        cls, raw: Mapping[str, Any], *, query: Any = None, n: int | None = None
    ) -> Calibration:
        """Inverse of :meth:`to_dict` (also of its JSON text, ``json.loads``): the same
        guarantee, the same noise bit for bit, hence the same release for the same seed.

        Parameters
        ----------
        raw : mapping
            What :meth:`to_dict` wrote. Unknown keys are refused; the noise covariance and the
            ``guarantee`` written must be those of the rebuilt calibration (the other derived
            entries are recomputed). ``details`` come back as plain data (lists, not arrays).
        query : Query, optional
            The query F, so that :meth:`release` takes a dataset (not part of the plain data).
        n : int, optional
            The dataset size (default: the one written, if any).

        Raises
        ------
        DistPrivacyError
            One line naming what is wrong.
        """
        from distprivacy.query import Query

        check_instance(query, "query", Query, "a Query", optional=True)
        try:
            return cls._from_plain(raw, query, n)
        except DistPrivacyError:
            raise
        except (TypeError, ValueError, KeyError) as e:
            first = (str(e).splitlines() or [type(e).__name__])[0]
            raise DistPrivacyError(f"a calibration's plain data is malformed ({first})") from None

    @classmethod
    def _from_plain(cls, raw: Mapping[str, Any], query: Any, n: int | None) -> Calibration:
        if not isinstance(raw, Mapping):
            raise DistPrivacyError(f"a calibration must be an object, got {type(raw).__name__}")
        extra = sorted(map(str, set(raw) - set(_KEYS)))
        if extra:
            raise DistPrivacyError(f"unknown key(s) in a calibration: {', '.join(extra)}")
        missing = [k for k in _REQUIRED if k not in raw]
        if missing:
            raise DistPrivacyError(
                f"a calibration is missing {', '.join(missing)} (was it written by an older "
                "version? calibrate again)"
            )
        texts = list(raw.get("warnings") or ())
        codes = list(raw.get("warning_codes") or ["caveat"] * len(texts))
        unknown = [c for c in codes if c not in WARNING_CODES]
        if len(codes) != len(texts) or unknown:
            raise DistPrivacyError(
                "a calibration's warning_codes must name one known category per warning "
                f"({', '.join(WARNING_CODES)})"
            )
        acct = raw.get("accounting") or None
        size = raw.get("n") if n is None else n
        cal = cls(
            mechanism=str(raw["name"]),
            theorem=str(raw["theorem"]),
            epsilon=float(number(raw["epsilon"])),
            delta=float(number(raw["delta"])),
            noise=NoiseDistribution.from_dict(
                {**raw["noise"], "covariance": raw.get("noise_covariance")}
            ),
            statistic_names=check_names(raw["statistics"]),
            sensitivity=_optional_float(raw.get("sensitivity")),
            sensitivity_label=str(raw.get("sensitivity_label", "")),
            rule=raw.get("rule"),
            assumptions=tuple(str(a) for a in raw.get("assumptions", ())),
            warnings=tuple(
                Notice(str(t), WARNING_CODES[c]) for t, c in zip(texts, codes, strict=True)
            ),
            details=dict(raw.get("details") or {}),
            accounting=None if acct is None else GaussianAccounting.from_dict(acct),
            statistic_scales=_optional_array(raw.get("statistic_scales")),
            statistic_levels=_optional_array(raw.get("statistic_levels")),
            basis=str(raw.get("basis", "")),
            query=query,
            n=None if size is None else check_int(size, "n", low=1),
        )
        m = len(cal.statistic_names)
        if cal.noise.dim != m:
            raise DistPrivacyError(
                f"a calibration's noise has dimension {cal.noise.dim} but it names {m} statistics"
            )
        for key, positive in (("statistic_scales", True), ("statistic_levels", False)):
            arr = getattr(cal, key)
            if arr is None:
                continue
            if arr.shape != (m,) or not np.isfinite(arr).all() or (positive and (arr <= 0).any()):
                kind = "positive finite numbers" if positive else "finite numbers"
                raise DistPrivacyError(
                    f"a calibration's {key} must be {m} {kind} (one per statistic), got "
                    f"shape {arr.shape} (edited?); calibrate again"
                )
        if query is not None and tuple(query.names) != cal.statistic_names:
            raise DistPrivacyError(
                f"the query computes {', '.join(query.names)} but the calibration releases "
                f"{', '.join(cal.statistic_names)}"
            )
        if "guarantee" in raw and Guarantee.from_dict(raw["guarantee"]) != cal.guarantee:
            raise DistPrivacyError(
                "a calibration's guarantee does not match its noise and accounting (edited?); "
                "calibrate again"
            )
        return cal


#: The keys of :meth:`Calibration.to_dict` (the derived ones are checked or recomputed).
_KEYS = (
    "name", "theorem", "epsilon", "delta", "rule", "noise_family", "noise_directions",
    "noise_scales", "noise_covariance", "expected_l2_error", "expected_squared_error",
    "sensitivity", "sensitivity_label", "statistics", "assumptions", "warnings", "details", "mu",
    "max_attack_accuracy", "delta_achieved", "accounting", "per_statistic", "basis", "verified",
    "utility_scaled", "guarantee", "warning_codes", "noise", "statistic_scales",
    "statistic_levels", "n",
)  # fmt: skip
_REQUIRED = ("name", "theorem", "epsilon", "delta", "noise", "statistics")


def _optional_float(x: Any) -> float | None:
    return None if x is None else float(number(x))


def _optional_array(x: Any) -> np.ndarray | None:
    return None if x is None else np.asarray(x, dtype=float)
