"""Errors raised by distprivacy.

Every error carries a one-line message that names the problem and the fix; the command-line
interface prints it without a traceback and exits with status 2.
"""

from __future__ import annotations


class DistPrivacyError(ValueError):
    """Invalid input or an impossible request, with a one-line message naming the fix."""


class NotApplicableError(DistPrivacyError):
    """A mechanism cannot be calibrated for this specification or model (its theorem's
    hypotheses are not met, or the model lacks what it needs, e.g. samples of F)."""


class DataUnavailableError(DistPrivacyError):
    """A data set could not be found, fetched or verified."""
