"""What a guarantee checked on the data, and what it assumes — in sentences a steward reads
(issue 33, "verified vs assumed, in words").

:func:`checked_and_assumed` says, for a calibration, each thing that was checked on the data
with the figure measured, and each thing that is assumed with the command that tests it
(``distprivacy audit``). A guarantee verified on the fitted Gaussian model (unequal covariances
included) does not rest on the theorem's equal-covariance or translation hypotheses — those are
listed only where the guarantee does rest on them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from distprivacy.mechanisms.calibration import (
    BASIS_EQUAL_COVARIANCES,
    BASIS_FITTED,
    BASIS_SAMPLES,
    BASIS_UNCONDITIONAL,
)

__all__ = ["AUDIT", "Verification", "checked_and_assumed"]

#: The command that tests the modelling assumptions on real datasets drawn from the data.
AUDIT = "`distprivacy audit` tests it by attacking releases of real datasets drawn from the data"


@dataclass(frozen=True)
class Verification:
    """What a guarantee checked on the data (each with its measured figure) and what it
    assumes (each with the command that tests it)."""

    checked: tuple[str, ...]
    assumed: tuple[str, ...]


def _model_words(cal: Any) -> str:
    model = getattr(cal, "model_", None)
    method = str(getattr(model, "method_", "") or "")
    if "monte-carlo" in method:
        return "fitted to the data (moments from Monte-Carlo datasets drawn from it)"
    if method:
        return "fitted to the data (exact moments)"
    return "of the plan"


def checked_and_assumed(cal: Any, *, released: bool = False) -> Verification:
    """The checks and the assumptions of ``cal``'s guarantee, in words (module docstring).

    Parameters
    ----------
    cal : Calibration
    released : bool
        Whether a dataset was released with it (its plausibility under the model was then
        checked before the noise was drawn).
    """
    g = cal.guarantee
    n = getattr(cal, "n", None)
    records = f"{n} records" if n else "n records"
    checked: list[str] = []
    assumed: list[str] = []
    if cal.basis == BASIS_UNCONDITIONAL:
        k = cal.details.get("group_size")
        whole = k is not None and n is not None and k >= n
        checked.append(
            "nothing about the data needs checking: the guarantee holds for every pair of "
            f"datasets differing in at most {k if k is not None else 'k'} records (group "
            "differential privacy)"
        )
        if not whole:
            assumed.append(
                f"the protected shares' datasets differ in at most {k} records; it says nothing "
                "about datasets differing in more"
            )
        return Verification(tuple(checked), tuple(assumed))
    if cal.basis == BASIS_FITTED:
        checked.append(
            f"the exact privacy of this noise on the Gaussian model {_model_words(cal)}, each "
            f"share with its own covariance: δ = {g.delta:.3g} at ε = {g.epsilon:.3g} (the δ "
            f"asked: {cal.delta:.3g}), no attacker above {g.max_attack_accuracy:.1%} accuracy"
        )
    elif cal.basis == BASIS_SAMPLES:
        checked.append(
            "the Wasserstein distance between the Monte-Carlo datasets' statistics of each "
            f"protected pair (the noise scale: {cal.sensitivity_label} = {cal.sensitivity:.4g})"
            if cal.sensitivity is not None
            else "the Wasserstein distance between the Monte-Carlo datasets' statistics"
        )
    else:
        for a in cal.assumptions:  # the figure measured on the data, when the text holds one
            if "measured" in a:
                checked.append(f"measured for the assumption below: {a}")
    if released:
        checked.append(
            "the released dataset's statistics are plausible under the model (within the χ² "
            "limit at level 10⁻¹² of a protected share), checked before the noise was drawn"
        )
    if cal.basis in (BASIS_FITTED, BASIS_SAMPLES):
        what = (
            "the statistics of a dataset of "
            f"{records} are Gaussian under each protected share, with the means and covariances "
            "fitted (a normal approximation)"
            if cal.basis == BASIS_FITTED
            else "the Monte-Carlo datasets represent the datasets of each protected share"
        )
        assumed.append(f"{what}; {AUDIT}")
    else:
        if cal.basis == BASIS_EQUAL_COVARIANCES:
            assumed.append(
                "the statistics are Gaussian under each protected share with one covariance per "
                f"pair (the paper's modelling assumption); {AUDIT}"
            )
        assumed += [f"{a}; {AUDIT}" for a in cal.assumptions]
    assumed.append(
        f"the {records} released are drawn from the population the model was fitted on, as "
        "the protected share says"
    )
    return Verification(tuple(checked), tuple(dict.fromkeys(assumed)))
