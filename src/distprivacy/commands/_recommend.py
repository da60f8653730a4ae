"""``release`` without ``--mechanism``: the mechanism ``calibrate`` recommends (the best
verified one available in this install, :func:`~distprivacy.commands._display.recommend`),
chosen on the fitted model — never on the records released — among the plans of every
mechanism (:func:`distprivacy.workflow.plan_all`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from distprivacy.exceptions import DistPrivacyError

if TYPE_CHECKING:
    from distprivacy.mechanisms.plans import Plan
    from distprivacy.workflow import Planned


def recommended_plan(planned: Planned, utility: str) -> Plan:
    """The plan of the mechanism ``calibrate`` recommends among ``planned``.

    Parameters
    ----------
    planned : Planned
        Every mechanism planned on one fitted model.
    utility : {"scaled", "l2"}
        How noise is costed.

    Returns
    -------
    Plan
        The recommended mechanism's plan.

    Raises
    ------
    DistPrivacyError
        No mechanism that adds noise could be calibrated (with each one's reason).
    """
    from distprivacy.commands._display import recommend

    best = recommend(planned.calibrations, utility)
    if best is None:
        reasons = "; ".join(planned.not_applicable.values())
        raise DistPrivacyError(
            "no mechanism that adds noise could be calibrated" + (f": {reasons}" if reasons else "")
        )
    return next(p for p in planned.plans if p.calibration.mechanism == best["mechanism"])
