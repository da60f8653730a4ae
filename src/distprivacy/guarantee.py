"""One guarantee type and one calibration protocol for every wing of the library.

A :class:`Guarantee` is a frozen description of what one release promises — the model is
dp_accounting's frozen ``DpEvent`` and OpenDP's ``Measurement.check(d_in, d_out)``: (ε, δ) at
the stated ε, μ where the whole curve is μ-GDP, the largest accuracy any attacker can reach,
what it rests on and the theorem that proves it. :meth:`Guarantee.delta_at` is its privacy
profile and :meth:`Guarantee.check` answers "is this release (ε′, δ′)-private?".

Every calibration of the library — the main mechanisms (:class:`distprivacy.mechanisms.
Calibration`), attribute privacy (APGM, the Markov quilt, Pufferfish–Wasserstein) and the local
mechanisms — follows the :class:`Calibrated` protocol: inspect it (``guarantee``, ``noise``,
``summary()``), then ``release(...)`` returns a :class:`Release`; ``to_dict()`` /
``from_dict()`` round-trip it as plain data.

The profile of a point guarantee
--------------------------------
A pair of output laws that is (ε, δ)-indistinguishable in both directions has the trade-off
function f_{ε,δ} (Kairouz, Oh & Viswanath 2015, Thm 2.1; Dong, Roth & Su 2022, Prop 2.5), whose
privacy profile is, for ε′ < ε,

    δ(ε′) = 1 − (1 − δ)(1 + e^{ε′}) / (1 + e^{ε})

and δ(ε′) = δ for ε′ ≥ ε. :meth:`Guarantee.delta_at` uses it whenever the guarantee is known only
at its point; a μ-GDP guarantee uses δ_μ(ε′) = Φ(−ε′/μ + μ/2) − e^{ε′} Φ(−ε′/μ − μ/2) (Dong, Roth
& Su 2022, Cor 2.13), the exact curve.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from distprivacy._json import jsonable, number
from distprivacy.checks import (
    check_bool,
    check_callable,
    check_delta,
    check_instance,
    check_number,
    check_text,
)
from distprivacy.exceptions import (
    DistPrivacyError,
    ExactReleaseError,
    ExactValueWarning,
    Notice,
    SeededNoiseWarning,
)
from distprivacy.profiles import gdp_accuracy, gdp_delta, gdp_epsilon
from distprivacy.randomness import check_random_state, is_secure

if TYPE_CHECKING:
    import numpy as np

#: What the (ε, δ) curve of a guarantee is known as.
CURVES = ("gdp", "point")

#: The privacy notions of the library's wings.
NOTIONS = (
    "distribution privacy",
    "attribute privacy",
    "Pufferfish privacy",
    "local distribution privacy",
)


def point_profile(epsilon: float, delta: float, eps: float) -> float:
    """δ(ε′) of the trade-off function f_{ε,δ}: the smallest δ′ every (ε, δ)-indistinguishable
    pair meets at ε′ (module docstring)."""
    if eps >= epsilon:
        return float(delta)
    if math.isinf(epsilon):
        return 1.0
    # 1 − (1 − δ)(1 + e^{ε′})/(1 + e^{ε}), computed without overflow for large ε.
    ratio = math.exp(eps - epsilon) * (1.0 + math.exp(-eps)) / (1.0 + math.exp(-epsilon))
    return float(min(1.0, max(delta, 1.0 - (1.0 - delta) * ratio)))


def point_accuracy(epsilon: float, delta: float) -> float:
    """(e^ε + δ)/(1 + e^ε): the largest accuracy of an attacker between two equally likely
    laws that are (ε, δ)-indistinguishable (Chen & Ohrimenko 2023, §3.3)."""
    if math.isinf(epsilon):
        return 1.0
    return float((1.0 + delta * math.exp(-epsilon)) / (1.0 + math.exp(-epsilon)))


@dataclass(frozen=True)
class Guarantee:
    """What one release promises, verified (or assumed) for the noise actually used.

    Attributes
    ----------
    epsilon : float
        The ε it is stated at (ε ≥ 0, may be ∞ for "nothing hidden").
    delta : float
        The δ the noise achieves at ``epsilon`` (exact accounting; 0 for pure-ε mechanisms).
    theorem : str
        The result that proves it (paper and number).
    notion : str
        ``distribution privacy`` (the main paper), ``attribute privacy``, ``Pufferfish
        privacy`` or ``local distribution privacy``.
    mu : float or None
        μ of a μ-GDP guarantee (Gaussian mechanisms). With ``curve="gdp"`` the whole profile is
        δ_μ(ε′); with ``curve="point"`` μ is reported but the curve is only known at ε.
    curve : {"gdp", "point"}
        How :meth:`delta_at` extends the guarantee to other ε′.
    max_attack_accuracy : float or None
        Largest accuracy of any attacker between two equally likely secrets (None: computed
        from the curve, Φ(μ/2) or (e^ε + δ)/(1 + e^ε)).
    basis : str
        What it rests on (the fitted model, every dataset, an assumption).
    verified : bool
        True when it was verified for this noise without an unchecked modelling assumption.
    assumptions : tuple of str
        The theorem's hypotheses the release relies on.
    holds_for_every_input : bool
        True for a local-DP guarantee (every pair of inputs, not only the stated pairs) — the
        condition for composing two mechanisms on the same input (Kawamoto & Murakami 2019).
    profile : callable or None
        The exact privacy profile ε′ ↦ δ(ε′) of the noise actually used, when the release's
        model is at hand (a Gaussian calibration with unequal fitted covariances, a joint
        ledger account): :meth:`delta_at` and :meth:`epsilon_at` then use it instead of the
        one point (ε, δ). Not written by :meth:`to_dict` (a guarantee read back from a file
        has the point curve, a valid but looser bound) and not compared.
    """

    epsilon: float
    delta: float
    theorem: str
    notion: str = "distribution privacy"
    mu: float | None = None
    curve: str = "point"
    max_attack_accuracy: float | None = None
    basis: str = ""
    verified: bool = False
    assumptions: tuple[str, ...] = ()
    holds_for_every_input: bool = False
    profile: Callable[[float], float] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        check_number(self.epsilon, "a guarantee's ε", low=0, allow_inf=True)
        check_number(self.delta, "a guarantee's δ", low=0, high=1)
        check_text(self.theorem, "theorem")
        check_text(self.curve, "curve", choices=CURVES)
        check_text(self.notion, "notion", choices=NOTIONS)
        if self.mu is not None:
            check_number(self.mu, "a guarantee's μ", low=0, allow_inf=True)
        if self.max_attack_accuracy is not None:
            check_number(self.max_attack_accuracy, "max_attack_accuracy", low=0, high=1)
        check_text(self.basis, "basis")
        check_bool(self.verified, "verified")
        check_instance(self.assumptions, "assumptions", list | tuple, "a list of texts")
        check_bool(self.holds_for_every_input, "holds_for_every_input")
        check_callable(self.profile, "profile", "a function ε ↦ δ(ε)", optional=True)
        if self.curve == "gdp" and self.mu is None:
            raise DistPrivacyError("a μ-GDP curve needs μ")
        if self.curve == "gdp" and self.delta < self._gdp(self.epsilon) * (1 - 1e-6):
            raise DistPrivacyError(
                f"δ = {self.delta:.3g} is below the μ-GDP curve at ε = {self.epsilon:g} "
                f"(δ_μ(ε) = {self._gdp(self.epsilon):.3g} for μ = {self.mu:g})"
            )
        object.__setattr__(self, "epsilon", float(self.epsilon))
        object.__setattr__(self, "delta", float(self.delta))
        object.__setattr__(self, "assumptions", tuple(str(a) for a in self.assumptions))
        if self.max_attack_accuracy is None:
            object.__setattr__(self, "max_attack_accuracy", self._accuracy_from_curve())

    def _gdp(self, eps: float) -> float:
        if math.isinf(self.mu) or math.isinf(eps):  # type: ignore[arg-type]
            return 1.0 if math.isinf(self.mu) else 0.0  # type: ignore[arg-type]
        return float(min(gdp_delta(eps, self.mu), 1.0))

    def _accuracy_from_curve(self) -> float:
        if self.curve == "gdp":
            return 1.0 if math.isinf(self.mu) else float(gdp_accuracy(self.mu))  # type: ignore[arg-type]
        return point_accuracy(self.epsilon, self.delta)

    @property
    def pure(self) -> bool:
        """Whether this is a pure-ε guarantee (δ = 0)."""
        return self.delta == 0.0 and self.curve == "point"

    def delta_at(self, epsilon: float) -> float:
        """An upper bound on δ(ε′) for any ε′ ≥ 0 — the privacy profile (exact for μ-GDP;
        the f_{ε,δ} bound when only the point is known)."""
        import numpy as np

        eps = check_number(epsilon, "epsilon", low=0)
        if self.curve == "gdp":
            return self._gdp(eps)
        if self.profile is not None and math.isfinite(eps):
            try:
                d = float(self.profile(eps))
            except (DistPrivacyError, ArithmeticError, ValueError, np.linalg.LinAlgError):
                d = math.nan
            # Fail closed: a profile that could not be computed counts as the point bound.
            if math.isfinite(d) and 0.0 <= d:
                return min(1.0, d)
        return point_profile(self.epsilon, self.delta, eps)

    def epsilon_at(self, delta: float) -> float:
        """The smallest ε′ with :meth:`delta_at` (ε′) ≤ ``delta`` (∞ if none)."""
        d = check_delta(delta, allow_zero=True)
        if self.curve == "gdp":
            if math.isinf(self.mu):  # type: ignore[arg-type]
                return math.inf
            return float(gdp_epsilon(d, self.mu)) if d > 0 else math.inf
        if self.profile is not None and d > 0:
            return self._epsilon_from_profile(d)
        if d >= self.delta:
            # Solve 1 − (1 − δ)(1 + e^{ε′})/(1 + e^{ε}) = d for ε′ (below ε).
            if self.delta >= 1:
                return 0.0
            x = (1.0 - d) / (1.0 - self.delta) * (1.0 + math.exp(self.epsilon)) - 1.0
            return float(min(self.epsilon, max(0.0, math.log(x)))) if x > 0 else 0.0
        return math.inf

    def _epsilon_from_profile(self, d: float) -> float:
        """The smallest ε′ with δ(ε′) ≤ d on the exact profile (δ(ε′) is non-increasing):
        an expanding bracket, then bisection to 1e-9 relative, rounded up (never below the
        true ε′)."""
        if self.delta_at(0.0) <= d:
            return 0.0
        hi = max(self.epsilon, 1e-3)
        while self.delta_at(hi) > d:
            hi *= 2.0
            if hi > 1e4:
                return math.inf
        lo = 0.0
        while hi - lo > 1e-9 * hi:
            mid = (lo + hi) / 2
            if self.delta_at(mid) <= d:
                hi = mid
            else:
                lo = mid
        return float(hi)

    def check(self, epsilon: float, delta: float) -> bool:
        """Whether the release is (ε, δ)-private by this guarantee (OpenDP's
        ``Measurement.check``)."""
        return self.delta_at(epsilon) <= check_delta(delta, allow_zero=True) * (1 + 1e-12)

    @property
    def is_gdp(self) -> bool:
        """Whether the whole privacy profile is the μ-GDP curve δ_μ (``curve="gdp"``): only then
        is μ a GDP parameter, and only then is it printed as one (:meth:`figures`). Two
        Gaussians with unequal covariances (fitted covariances) have a profile with
        exponential tails that no μ-GDP curve bounds tightly: μ is then only the
        shared-covariance figure, and the guarantee is stated by its (ε, δ) points and its
        attack bound (issue 33 item 3)."""
        return self.curve == "gdp" and self.mu is not None

    def curve_points(self) -> tuple[tuple[float, float], ...]:
        """(ε, δ) points of the guarantee: the stated one, and — when the whole curve is known
        (μ-GDP, or the exact profile of the noise drawn) — δ at ε/2 and 2ε too, so that a
        reader sees the curve, not one point of it."""
        point = ((self.epsilon, self.delta),)
        if not (self.is_gdp or self.profile is not None) or not math.isfinite(self.epsilon):
            return point
        if self.epsilon <= 0:
            return point
        half, double = self.epsilon / 2, self.epsilon * 2
        return ((half, self.delta_at(half)), *point, (double, self.delta_at(double)))

    def figures(self) -> str:
        """The guarantee in symbols, said after the words (the one rule for every output):
        ``μ = 0.371-GDP, (ε, δ) = (1, 0.000999)`` when the release is μ-GDP
        (:attr:`is_gdp`); otherwise its (ε, δ) points — on the exact profile when it is at
        hand — and no μ-GDP claim."""
        points = self.curve_points()
        text = f"(ε, δ) = ({self.epsilon:.3g}, {self.delta:.3g})"
        others = [f"({e:.3g}, {d:.3g})" for e, d in points if e != self.epsilon]
        if others:
            text += f", also {' and '.join(others)}"
        if self.is_gdp and math.isfinite(self.mu):  # type: ignore[arg-type]
            return f"μ = {self.mu:.4g}-GDP, {text}"
        if others:
            text += " on the exact privacy profile of the noise (not a μ-GDP curve)"
        return text

    def describe(self) -> str:
        """One line: the figures (:meth:`figures`), the attack bound and the basis."""
        how = "verified for the noise drawn" if self.verified else "resting on assumptions"
        return (
            f"{self.figures()}: {self.notion}; no attacker above "
            f"{self.max_attack_accuracy:.1%} accuracy ({how})"
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON: infinities as the string ``"inf"``)."""
        return jsonable(
            {
                "epsilon": self.epsilon,
                "delta": self.delta,
                "theorem": self.theorem,
                "notion": self.notion,
                "mu": self.mu,
                "curve": self.curve,
                "max_attack_accuracy": self.max_attack_accuracy,
                "basis": self.basis,
                "verified": self.verified,
                "assumptions": list(self.assumptions),
                "holds_for_every_input": self.holds_for_every_input,
            }
        )

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Guarantee:
        """Inverse of :meth:`to_dict` (unknown keys refused)."""
        known = {
            "epsilon", "delta", "theorem", "notion", "mu", "curve", "max_attack_accuracy",
            "basis", "verified", "assumptions", "holds_for_every_input",
        }  # fmt: skip
        if not isinstance(raw, Mapping):
            raise DistPrivacyError(f"a guarantee must be an object, got {type(raw).__name__}")
        extra = sorted(set(raw) - known)
        if extra:
            raise DistPrivacyError(f"unknown key(s) in a guarantee: {', '.join(extra)}")
        kw = dict(raw)
        kw["epsilon"] = number(kw.get("epsilon"))
        if kw.get("mu") is not None:
            kw["mu"] = number(kw["mu"])
        assumptions = kw.get("assumptions", ())
        if not isinstance(assumptions, list | tuple) or not all(
            isinstance(a, str) for a in assumptions
        ):
            raise DistPrivacyError(
                f"a guarantee's assumptions must be a list of texts, got {assumptions!r}"
            )
        kw["assumptions"] = tuple(assumptions)
        try:
            return cls(**kw)
        except DistPrivacyError:
            raise
        except TypeError as e:
            raise DistPrivacyError(f"a guarantee is missing a field: {e}") from None


@dataclass(frozen=True)
class ExactStatistic:
    """A statistic a release publishes without noise, or with noise below its resolution
    (the exactness gate, :mod:`distprivacy.mechanisms._exactness`, finds them).

    Attributes
    ----------
    statistic : str
        Its name.
    noise_sd : float
        The SD of its noise (0: no noise at all).
    resolution : float
        The SD below which its noise counts as none; ``resolution_text`` gives it with where
        it comes from (half a count, a share of its spread under the model, the float
        resolution of its value).
    resolution_text : str
    justified : bool
        True when its mean moves by no more than its resolution between any two protected
        shares (``mean_difference`` ≤ ``resolution``, by the fitted model; 0 for a statistic
        a directional mechanism leaves noise-free): what it says about the secret is itself
        below what the release resolves, and it is released without ``allow_exact``, the
        output saying so. False: releasing it needs ``allow_exact=True``.
    mean_difference : float or None
        Its largest |E_θi F − E_θj F| over the protected pairs, in its own units (None when
        the model is not at hand).
    """

    statistic: str
    noise_sd: float
    resolution: float
    resolution_text: str
    justified: bool
    mean_difference: float | None = None

    @property
    def noise_free(self) -> bool:
        """Whether no noise at all is added to it."""
        return self.noise_sd == 0.0

    @property
    def same_mean(self) -> bool:
        """Whether its mean is the same under every protected share: its largest difference
        at most 10⁻⁶ of its resolution (float rounding of equal means)."""
        d = self.mean_difference
        return d is not None and (d == 0.0 or d <= 1e-6 * self.resolution)

    def describe(self) -> str:
        """One sentence for the output: what is released (near-)exactly, and why it may be."""
        name = self.statistic
        how = (
            "without noise"
            if self.noise_free
            else f"with noise SD {self.noise_sd:.3g}, below {self.resolution_text}"
        )
        if self.justified and self.same_mean:
            return (
                f"{name} is released {how}: its mean is the same under every protected share "
                "(verified by the model), and the guarantee covers the whole release"
            )
        if self.justified:
            return (
                f"{name} is released {how}: its mean moves by at most "
                f"{self.mean_difference:.3g} between protected shares, below that resolution "
                "too (verified by the model), and the guarantee covers the whole release"
            )
        return f"{name} is released {how}: its (near-)exact value (by `allow_exact=True`)"

    def to_dict(self) -> dict[str, Any]:
        return jsonable(
            {
                "statistic": self.statistic,
                "noise_sd": self.noise_sd,
                "resolution": self.resolution,
                "resolution_text": self.resolution_text,
                "justified": self.justified,
                "mean_difference": self.mean_difference,
                "note": self.describe(),
            }
        )


#: The notice of a release whose noise came from a seed.
SEEDED = "the noise comes from a seed and is reproducible: never publish a seeded release"

#: The notice of a sealed (steward-approved) plan released outside its ledger.
UNRECORDED = (
    "not recorded in any ledger: this plan was sealed for a ledger, but this release was made "
    "outside it, so no budget was checked and the ledger does not count it (release through "
    "the ledger: `ledger.release('PLAN', 'DATASET')`)"
)

#: The notice of a demonstration release (no target dataset given).
DEMONSTRATION = (
    "a demonstration: the released dataset was drawn at random from the data, not a dataset "
    "you gave (give the n records to release with `target`)"
)

#: The probability of the noise intervals a release publishes.
LEVEL = 0.95


@dataclass(frozen=True)
class Published:
    """What a release publishes — the one number and the one interval rule of every output
    (terminal, ``--json``, reports, the ledger; issue 33 item 1).

    A value is post-processed into its statistic's range (a proportion into [0, 1], a count
    into [0, n]) when ``clip`` is on; post-processing keeps the guarantee. Its interval is the
    noise interval of the raw value, [raw − h, raw + h] with P(|Z| ≤ h) = ``level``
    (:func:`~distprivacy.intervals.noise_halfwidths`), intersected with the range when
    ``clip`` is on: the true value lies in its range, so the intersection holds it whenever
    the raw interval does (the same coverage), and it never states values the statistic
    cannot take.

    Attributes
    ----------
    values : ndarray (m,)
        What is published: clipped into the ranges when ``clip``, else the raw noisy values.
    raw : ndarray (m,)
        The noisy values as drawn.
    low, high : ndarray (m,)
        Each value's interval (NaN where the noise is not known).
    ranges : tuple of (low, high) or None
        Each statistic's range (None: unbounded or not known).
    clip : bool
        Whether values were clipped into their ranges.
    clipped : tuple of int
        The statistics whose value was clipped.
    outside : tuple of int
        With ``clip`` off, the statistics whose raw value lies outside its range.
    level : float
        The intervals' probability.
    """

    values: np.ndarray
    raw: np.ndarray
    low: np.ndarray
    high: np.ndarray
    ranges: tuple[tuple[float, float] | None, ...]
    clip: bool
    clipped: tuple[int, ...] = ()
    outside: tuple[int, ...] = ()
    level: float = LEVEL


def publish(
    raw: Any,
    ranges: Sequence[tuple[float, float] | None] | None,
    halfwidths: Any,
    *,
    clip: bool = True,
    level: float = LEVEL,
) -> Published:
    """The published values and intervals of noisy values ``raw`` (:class:`Published`).

    Parameters
    ----------
    raw : array (m,)
        The noisy values.
    ranges : sequence of (low, high) or None, or None
        Each statistic's range (None: no range known for it, or for any).
    halfwidths : array (m,) or None
        The half-width of each value's noise interval at ``level`` (None: not known).
    clip : bool
        Post-process the values (and intervals) into their ranges.
    level : float
        The intervals' probability.
    """
    import numpy as np

    x = np.asarray(raw, dtype=float).reshape(-1)
    m = x.size
    rng = tuple(ranges) if ranges is not None and len(ranges) == m else (None,) * m
    lo = np.array([r[0] if r else -np.inf for r in rng], dtype=float)
    hi = np.array([r[1] if r else np.inf for r in rng], dtype=float)
    h = (
        np.full(m, np.nan)
        if halfwidths is None or np.size(halfwidths) != m
        else np.asarray(halfwidths, dtype=float).reshape(-1)
    )
    low, high = x - h, x + h
    out = np.clip(x, lo, hi)
    moved = tuple(k for k in range(m) if out[k] != x[k])
    if not clip:
        return Published(x, x, low, high, rng, False, outside=moved, level=level)
    with np.errstate(invalid="ignore"):
        low, high = np.clip(low, lo, hi), np.clip(high, lo, hi)
    return Published(out, x, low, high, rng, True, clipped=moved, level=level)


@dataclass(frozen=True, repr=False)
class Release:
    """Released values M(D) and the calibration that produced them.

    Attributes
    ----------
    values : ndarray
        The released statistics (shape (m,)), or the obfuscated records of a local mechanism.
    statistic_names : tuple of str
    calibration : Calibrated
    secure : bool
        Whether the noise came from the cryptographically secure generator.
    exact_statistics : tuple of ExactStatistic
        The statistics released without noise or with noise below their resolution (the
        exactness gate's findings); :attr:`notes` says each in a sentence.
    """

    values: np.ndarray
    statistic_names: tuple[str, ...]
    calibration: Any
    secure: bool
    exact_statistics: tuple[ExactStatistic, ...] = ()
    clip: bool = True
    notices: tuple[Notice, ...] = ()

    @cached_property
    def published(self) -> Published:
        """What this release publishes (:class:`Published`): the values clipped into their
        statistics' ranges (unless ``clip`` is off) and their noise intervals — the numbers
        every output states (:func:`publish`). ``values`` stay the raw noisy ones."""
        import numpy as np

        vals = np.asarray(self.values, dtype=float)
        m = len(self.statistic_names)
        if vals.ndim != 1 or vals.size != m:  # the records of a local mechanism
            return publish(vals.reshape(-1), None, None, clip=False)
        ranges = getattr(self.calibration, "statistic_ranges", None)
        noise = getattr(self.calibration, "noise", None)
        h = None
        if noise is not None and getattr(noise, "dim", None) == m:
            from distprivacy.intervals import noise_halfwidths

            h = noise_halfwidths(noise, LEVEL)
        return publish(vals, ranges, h, clip=self.clip)

    def unclipped(self) -> Release:
        """This release publishing its raw noisy values (``--no-clip``)."""
        return replace(self, clip=False)

    def with_notices(self, *notices: Notice) -> Release:
        """This release with more notices (a demonstration, a release no ledger recorded)."""
        return replace(self, notices=(*self.notices, *notices))

    @property
    def warnings(self) -> tuple[Notice, ...]:
        """Every caveat of this release, each a :class:`~distprivacy.exceptions.Notice` whose
        ``category`` is a :class:`~distprivacy.exceptions.DistPrivacyWarning`: the
        calibration's (swamped statistics, assumptions visibly off, ...), the (near-)exact
        statistics released by consent, seeded noise, and this release's own notices (a
        demonstration, a release no ledger recorded). :meth:`emit_warnings` issues them as
        Python warnings."""
        out = list(getattr(self.calibration, "warnings", ()))
        out = [w if isinstance(w, Notice) else Notice(str(w)) for w in out]
        out += [Notice(e.describe(), ExactValueWarning) for e in self.exact_statistics
                if not e.justified]  # fmt: skip
        if not self.secure:
            out.append(Notice(SEEDED, SeededNoiseWarning))
        out += list(self.notices)
        return tuple(dict.fromkeys(out))

    def emit_warnings(self, stacklevel: int = 2) -> None:
        """Issue :attr:`warnings` as Python warnings of their categories."""
        for w in self.warnings:
            w.emit(stacklevel=stacklevel + 1)

    @property
    def notes(self) -> tuple[str, ...]:
        """One sentence per statistic released (near-)exactly, saying why it may be."""
        return tuple(e.describe() for e in self.exact_statistics)

    @property
    def exact(self) -> bool:
        """Whether this release published (near-)exact values by consent (``allow_exact``):
        a calibration that adds no noise, or a statistic whose (near-)exact value the
        guarantee does not cover by itself."""
        none = not bool(getattr(self.calibration, "adds_noise", True))
        return none or any(not e.justified for e in self.exact_statistics)

    @property
    def guarantee(self) -> Guarantee:
        return self.calibration.guarantee

    @property
    def value(self) -> float:
        """The one released number (for a single statistic)."""
        import numpy as np

        if np.size(self.values) != 1:
            raise DistPrivacyError(f"this release holds {np.size(self.values)} values; use .values")
        return float(np.asarray(self.values).reshape(-1)[0])

    def __repr__(self) -> str:
        """The published values with their intervals, the guarantee and the warnings."""
        import numpy as np

        mech = getattr(self.calibration, "mechanism", type(self.calibration).__name__)
        noise = "secure noise" if self.secure else "SEEDED noise (never publish it)"
        lines = [f"Release({mech}, {noise}):"]
        pub = self.published
        if len(self.statistic_names) == pub.values.size:
            for k, (n, v) in enumerate(zip(self.statistic_names, pub.values, strict=True)):
                iv = pub.low[k], pub.high[k]
                interval = (
                    "" if np.isnan(iv).any() else f"  {pub.level:.0%} [{iv[0]:.4g}, {iv[1]:.4g}]"
                )
                mark = " (clipped into its range)" if k in pub.clipped else ""
                lines.append(f"  {n} = {v:.4g}{interval}{mark}")
        else:
            lines.append(f"  {np.size(self.values)} values")
        try:
            g = self.guarantee
        except (AttributeError, DistPrivacyError):
            g = None
        if g is not None:
            lines.append(f"  guarantee: {g.describe()}")
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Plain data: ``statistics`` the published values (:attr:`published`), with
        ``raw_statistics``, the ``intervals`` and which were ``clipped``."""
        import numpy as np

        vals = np.asarray(self.values)
        pub = self.published
        out: dict[str, Any] = {}
        if vals.ndim == 1 and len(self.statistic_names) == vals.size:
            names = list(self.statistic_names)
            out["statistics"] = dict(zip(names, pub.values.tolist(), strict=True))
            out["raw_statistics"] = dict(zip(names, vals.tolist(), strict=True))
            out["intervals"] = {
                n: [float(lo), float(hi)]
                for n, lo, hi in zip(names, pub.low, pub.high, strict=True)
            }
            out["interval_level"] = pub.level
            out["clipped_to_range"] = pub.clip
            out["clipped"] = [names[k] for k in pub.clipped]
        else:
            out["statistics"] = vals.tolist()
        return jsonable(
            {
                **out,
                "noise_added": bool(getattr(self.calibration, "adds_noise", True)),
                "exact_statistics": [e.to_dict() for e in self.exact_statistics],
                "secure_randomness": self.secure,
                "guarantee": self.guarantee.to_dict(),
                "warnings": [str(w) for w in self.warnings],
                "warning_codes": [w.code for w in self.warnings],
                "calibration": self.calibration.to_dict(),
            }
        )


def noisy_release(
    calibration: Any,
    value: np.ndarray,
    *,
    random_state: Any,
    allow_exact: bool,
    exact_reason: str,
    size: int | None = None,
) -> Release:
    """F(X) + Z for a calibration with a ``noise`` (:class:`~distprivacy.noise.
    NoiseDistribution`) and ``adds_noise``: the one way the wings draw a release.

    ``value`` is F(X) as a vector of the noise's dimension (checked by the caller). A
    calibration that adds no noise refuses (:class:`~distprivacy.exceptions.ExactReleaseError`
    with ``exact_reason``) unless ``allow_exact``. The noise comes from
    :func:`~distprivacy.randomness.check_random_state` with ``secure=True``. ``size`` draws that
    many releases at once (values of shape (size, m), or (size,) for m = 1).
    """
    if not calibration.adds_noise and not allow_exact:
        raise ExactReleaseError(exact_reason)
    gen = check_random_state(random_state, secure=True)
    out = value + calibration.noise.sample(size, gen)
    if value.shape == (1,) and size is not None:
        out = out[:, 0]
    rel = Release(out, calibration.statistic_names, calibration, is_secure(gen))
    rel.emit_warnings(stacklevel=3)  # at the caller of the wing's release
    return rel


@runtime_checkable
class Calibrated(Protocol):
    """The protocol every calibration of the library follows: inspect, then release.

    Attributes
    ----------
    mechanism : str
        Its short name.
    statistic_names : tuple of str
        What a release holds.
    guarantee : Guarantee
        What a release promises.
    """

    mechanism: str

    @property
    def statistic_names(self) -> tuple[str, ...]: ...

    @property
    def guarantee(self) -> Guarantee: ...

    def summary(self) -> str: ...

    def release(self, value: Any, random_state: Any = None, **kwargs: Any) -> Release: ...

    def to_dict(self) -> dict[str, Any]: ...

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Calibrated: ...


def check_names(names: Sequence[str]) -> tuple[str, ...]:
    """Statistic names as a tuple of non-empty strings."""
    out = tuple(names)
    if not all(isinstance(n, str) and n for n in out):
        raise DistPrivacyError("statistic names must be non-empty strings")
    return out
