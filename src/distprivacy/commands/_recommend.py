"""``release`` without ``--mechanism``: the mechanism ``calibrate`` recommends (the best
verified one available in this install, :func:`~distprivacy.commands._display.recommend`),
chosen on the fitted model — never on the records released — when the release calibrates."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from distprivacy.exceptions import DistPrivacyError
from distprivacy.mechanisms import Mechanism

if TYPE_CHECKING:
    from distprivacy.commands._settings import Settings
    from distprivacy.mechanisms import Calibration
    from distprivacy.models import FModel


class Recommended(Mechanism):
    """Calibrates every registered mechanism with the command's settings (as ``calibrate``
    does) and returns the recommended one's calibration; its name is the one ``calibrate``
    prints."""

    name = "the recommended mechanism"
    theorem = "the recommended mechanism's own"

    def __init__(self, s: Settings, names: list[str]) -> None:
        self.settings = s
        self.names = names
        self.delta = s.delta

    def __repr__(self) -> str:
        return "Recommended()"

    def calibrate(self, model: FModel) -> Calibration:
        """Calibrate every mechanism on ``model`` and return the recommended calibration."""
        import dataclasses

        from distprivacy.commands._common import calibrate_many
        from distprivacy.commands._display import recommend

        # No progress bar of its own: the release's bar is live (rich allows one at a time).
        quiet = dataclasses.replace(self.settings, as_json=True)
        cals, skipped = calibrate_many(model, self.names, quiet)
        best = recommend(cals, self.settings.utility)
        if best is None:
            raise DistPrivacyError(
                "no mechanism that adds noise could be calibrated"
                + (f": {'; '.join(skipped.values())}" if skipped else "")
            )
        return next(c for c in cals if c.mechanism == best["mechanism"])

    def _calibrate(self, model: FModel) -> Calibration:  # pragma: no cover (calibrate above)
        return self.calibrate(model)


def recommended(s: Settings) -> Any:
    """The mechanism ``release`` uses when none is named."""
    from distprivacy.commands._common import mechanism_names

    return Recommended(s, mechanism_names((), s))
