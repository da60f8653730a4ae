"""One exactness gate for every mechanism (issue 31).

A release is *exact* when it publishes a statistic's true value, or a value whose noise is too
small to matter; it then needs the caller's consent, ``allow_exact=True`` (``--allow-exact`` on
the command line). :func:`check_exact` is the one place that decides, and every release of the
main mechanisms goes through it: :meth:`Calibration.release
<distprivacy.mechanisms.Calibration.release>`, which a plan's release, a ledger's, the library's
:func:`distprivacy.workflow.release` and ``distprivacy release`` all call. The rule is the same
for every mechanism (Laplace and Gaussian families, NoNoise, the group-DP baselines, the
Wasserstein mechanisms). A release needs ``allow_exact`` when:

1. **No noise at all**: the calibration adds none (NoNoise, or a Gaussian mechanism whose
   model's own randomness already meets the target: Chen & Ohrimenko 2023, Theorem 4.4).
2. **The guarantee bounds nothing**: its largest attack accuracy is at least
   :data:`ATTACK_BOUND_LIMIT` = 1 − 10⁻⁹ (μ ≳ 12 for a Gaussian mechanism, ε ≳ 20.7 for a
   pure-ε one): an attacker may be wrong once in 10⁹ guesses, and the bound prints as 100.0 %.
3. **A statistic's noise is below its resolution while its mean moves by more**. Its
   resolution r_k is the largest of

   - the resolution of its kind (:meth:`~distprivacy.query.Statistic.resolution`): half a
     count, 0.5/n for a proportion. Gaussian noise of SD 0.5 rounds back to the true count
     68 % of the time, more as the SD shrinks;
   - :data:`NEAR_EXACT_TOLERANCE` = 10⁻³ of its spread under the model (its sampling SD under
     f_θ averaged over θ, ``Calibration.statistic_scales``): noise a thousandth of the
     statistic's own variation pins the dataset's value three digits beyond what the
     population says, the true value for every purpose;
   - the float resolution of its value (:data:`UNDERFLOW_ULPS` spacings of doubles: the sum
     rounds back to the value).

   Such a statistic is (near-)exact. If its mean moves by no more than r_k between any two
   protected shares (max over Ψ of |E_θi F_k − E_θj F_k| ≤ r_k, by the fitted model), what it
   says about the secret is itself below what the release resolves: the mechanism's small
   noise there is in proportion to a small signal, as a directional mechanism designs it
   (DirM-G, DirM-L, OptM-G: noise along the mean differences), and the guarantee, computed for
   the whole released vector, covers it. It is released **without** ``allow_exact`` and the
   release **says so** (:attr:`Release.notes <distprivacy.guarantee.Release.notes>`,
   ``exact_statistics`` in its JSON, a note on the terminal) — in particular a statistic whose
   mean is the same under every protected share, which a directional mechanism leaves
   noise-free. If its mean moves by more, the release publishes that signal unmasked and
   rests, for it, on the model's own randomness (the Theorem 4.4 argument of case 1): consent
   is needed. Without the model (a ``Calibration.from_dict`` alone) no mean difference is
   known and every (near-)exact statistic needs consent (fail closed).

Why these figures. At μ = 10⁶ (or ε = 10⁶) every mechanism is caught twice over (an attack
bound of 1, noise SD about 10⁻⁶ against half a count), where the float-resolution test alone
passed ExpM-G, DirM-G, GroupDP-G and ExpM-L and refused only the noiseless DauM-G, OptM-G and
EigM-G. At ε = 1, δ = 10⁻³ on Adult (n = 100, ten statistics, protecting income, sex or race) the
smallest noise of any mechanism on a statistic whose mean moves more than its resolution is
0.01 of its spread (DirM-L, mean(education_num)), ten times the tolerance, with one exception:
EigM-G puts 4.4 × 10⁻⁵ and 1.9 × 10⁻⁴ of its spread on mean(fnlwgt) (protecting sex, race)
while its mean moves by 0.06 and 0.18 spreads — it leaves that statistic to the model's own
randomness, as Theorem 4.4 does, and is refused there. The directional mechanisms put noise
below half a count or 0.5/n on count(native_country==United-States) or
proportion(workclass==Private) in five of the nine (mechanism, property) pairs, each with a
mean that moves less than its resolution (by 0.05–0.25 of a count, by 4.4 × 10⁻⁴ of a share):
released, with a note. Were those refused too, DirM-L could release at ε = 1 for none of the
three properties.

Without ``allow_exact`` the refusal is one :class:`~distprivacy.exceptions.ExactReleaseError`
line naming each (near-)exact statistic with its noise SD and resolution, an attack bound that
rounds to 1, and the fix: a lower privacy target, or ``allow_exact``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from distprivacy.exceptions import DistPrivacyError, ExactReleaseError
from distprivacy.guarantee import ExactStatistic

__all__ = [
    "ATTACK_BOUND_LIMIT",
    "NEAR_EXACT_TOLERANCE",
    "UNDERFLOW_ULPS",
    "Exactness",
    "check_exact",
    "exact_release_reason",
    "exactness",
]

#: Noise SD below this share of a statistic's spread under the model counts as none.
NEAR_EXACT_TOLERANCE = 1e-3
#: A guarantee whose largest attack accuracy reaches this bounds nothing (rounds to 1).
ATTACK_BOUND_LIMIT = 1.0 - 1e-9
#: Noise whose SD is below this many units of float resolution (the spacing of doubles at the
#: value) does not change the released value beyond rounding: it counts as no noise.
UNDERFLOW_ULPS = 2.0**10
#: Noise SD at most this share of a statistic's spread is float rounding: no noise.
_ZERO = 1e-12
#: At most this many statistics are named in a refusal (the rest are counted).
_NAMED = 4


@dataclass(frozen=True)
class Exactness:
    """What the gate found for one calibration (and, when given, the value to release).

    Attributes
    ----------
    mechanism : str
    statistics : tuple of ExactStatistic
        Every statistic released without noise or with noise below its resolution, justified
        (its mean moves by no more than that resolution between protected shares) or not.
    adds_noise : bool
        Whether the calibration adds any noise.
    max_attack_accuracy : float
        The guarantee's attack bound.
    """

    mechanism: str
    statistics: tuple[ExactStatistic, ...]
    adds_noise: bool
    max_attack_accuracy: float

    @property
    def bounds_nothing(self) -> bool:
        """Whether the guarantee's attack bound reaches :data:`ATTACK_BOUND_LIMIT`."""
        return not self.max_attack_accuracy < ATTACK_BOUND_LIMIT

    @property
    def unjustified(self) -> tuple[ExactStatistic, ...]:
        """The (near-)exact statistics the guarantee does not cover by itself."""
        return tuple(s for s in self.statistics if not s.justified)

    @property
    def refused(self) -> bool:
        """Whether a release needs ``allow_exact`` (module docstring, cases 1-3)."""
        return not self.adds_noise or self.bounds_nothing or bool(self.unjustified)

    @property
    def notes(self) -> tuple[str, ...]:
        """The sentences a release prints about its (near-)exact statistics."""
        return tuple(s.describe() for s in self.statistics)

    def message(self) -> str:
        """The one-line refusal: what is (near-)exact, by how much, and the fix."""
        acc = self.max_attack_accuracy
        bound = (
            f"its guarantee bounds an attacker's accuracy only by {acc:.10g} (≥ 1 − "
            f"{1 - ATTACK_BOUND_LIMIT:.0e}: nothing is hidden)"
        )
        lower = "lower the privacy target (a smaller ε, μ or attack accuracy) or "
        if not self.adds_noise:
            if not self.bounds_nothing:
                return exact_release_reason(self.mechanism)
            return (
                f"{self.mechanism} adds no noise here: the release would publish the true "
                f"statistics, and {bound}; {lower}pass `allow_exact=True` to release them "
                "exactly"
            )
        parts = [
            f"{s.statistic} has noise SD {s.noise_sd:.3g}, below {s.resolution_text}"
            for s in self.unjustified[:_NAMED]
        ]
        if len(self.unjustified) > _NAMED:
            parts.append(f"and {len(self.unjustified) - _NAMED} more statistics")
        if self.bounds_nothing:
            parts.append(bound)
        return (
            f"{self.mechanism} would release (near-)exact values: {'; '.join(parts)}; {lower}"
            "pass `allow_exact=True` to release them so"
        )


def exact_release_reason(mechanism: Any) -> str:
    """Why a zero-noise release is refused, naming Theorem 4.4 and the way to allow it
    (``mechanism``: its name, or a calibration)."""
    name = getattr(mechanism, "mechanism", mechanism)
    return (
        f"{name} adds no noise here: the release would publish the true statistics "
        "(Chen & Ohrimenko 2023, Theorem 4.4: the model's own randomness gives the guarantee); "
        "pass `allow_exact=True` to release them exactly"
    )


def _kind_resolutions(cal: Any, m: int) -> list[tuple[float, str]]:
    """Each statistic's resolution from its kind, with its words (0 when unknown)."""
    stats = getattr(getattr(cal, "query", None), "statistics", None)
    n = getattr(cal, "n", None)
    if stats is None or len(stats) != m or n is None:
        return [(0.0, "")] * m
    out = []
    for s in stats:
        r = float(s.resolution(n))
        what = "half a count" if r == 0.5 else f"half of one record's step in n = {n}"
        out.append((r, f"{r:.3g} ({what})"))
    return out


def _mean_differences(cal: Any, m: int) -> np.ndarray | None:
    """Each statistic's largest |E_θi F_k − E_θj F_k| over the protected pairs, by the model
    the calibration rests on (None without one)."""
    model = getattr(cal, "model_", None)
    if model is None or not hasattr(model, "mean_differences"):
        return None
    try:
        d = np.abs(np.asarray(model.mean_differences(), dtype=float))
    except (DistPrivacyError, AttributeError, TypeError, ValueError):
        return None
    if d.ndim != 2 or d.shape[1] != m or d.shape[0] == 0 or not np.isfinite(d).all():
        return None
    return d.max(axis=0)


def _noise_reach(cal: Any, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Each statistic's noise SD, and an upper bound on it computed without squaring (a
    variance can underflow to 0 while the noise is there)."""
    sd = np.asarray(cal.noise_sd, dtype=float)
    B = np.asarray(cal.noise.basis, dtype=float)
    scales = np.asarray(cal.noise.scales, dtype=float)
    if cal.noise.family == "none" or B.size == 0:
        return sd, np.zeros(m)
    reach = np.abs(B * scales[None, :]).max(axis=1) * np.sqrt(B.shape[1])
    return sd, reach


def exactness(cal: Any, value: Any = None) -> Exactness:
    """The gate's findings for calibration ``cal`` (module docstring); ``value`` (F(D), the
    vector to release) adds the float-resolution test.

    Parameters
    ----------
    cal : Calibration
    value : array (m,), optional

    Returns
    -------
    Exactness
    """
    names = tuple(cal.statistic_names)
    m = len(names)
    sd, reach = _noise_reach(cal, m)
    spread = (
        np.zeros(m)
        if cal.statistic_scales is None
        else np.asarray(cal.statistic_scales, dtype=float)
    )
    kinds = _kind_resolutions(cal, m)
    floats = (
        np.zeros(m)
        if value is None
        else UNDERFLOW_ULPS * np.spacing(np.abs(np.asarray(value, dtype=float)))
    )
    diffs = _mean_differences(cal, m)
    adds = bool(cal.adds_noise)
    found = []
    for k, name in enumerate(names):
        candidates = [
            kinds[k],
            (
                NEAR_EXACT_TOLERANCE * spread[k],
                f"{NEAR_EXACT_TOLERANCE * spread[k]:.3g} ({NEAR_EXACT_TOLERANCE:g} × its "
                f"spread {spread[k]:.3g} under the model)",
            ),
            (floats[k], f"{floats[k]:.3g} (the float resolution of its value)"),
        ]
        res, text = max(candidates, key=lambda c: c[0])
        noise = float(sd[k]) if sd[k] > 0 else float(reach[k])
        # No noise, up to the float rounding of the mechanism's own linear algebra (a
        # direction orthogonal to a statistic, computed by an SVD, leaves ~1e-17 of it).
        noise_free = reach[k] == 0 or noise <= _ZERO * spread[k]
        if not (noise_free or noise < res):
            continue
        moves = None if diffs is None else float(diffs[k])
        justified = adds and moves is not None and moves <= res
        found.append(
            ExactStatistic(
                statistic=name,
                noise_sd=0.0 if noise_free else noise,
                resolution=float(res),
                resolution_text=text if res > 0 else "any resolution",
                justified=bool(justified),
                mean_difference=moves,
            )
        )
    return Exactness(
        mechanism=str(cal.mechanism),
        statistics=tuple(found),
        adds_noise=adds,
        max_attack_accuracy=float(cal.max_attack_accuracy),
    )


def check_exact(cal: Any, value: Any, allow_exact: bool) -> Exactness:
    """The gate: the findings of :func:`exactness` for releasing ``value`` with ``cal``, or
    a refusal when they need ``allow_exact`` and it is False.

    Raises
    ------
    ExactReleaseError
        One line naming the (near-)exact statistics, their noise SD against their resolution,
        an attack bound that rounds to 1, and the fix (a lower target, or ``allow_exact``).
    """
    found = exactness(cal, value)
    if found.refused and not allow_exact:
        raise ExactReleaseError(found.message())
    return found
