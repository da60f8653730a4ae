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


class ResourceLimitError(DistPrivacyError):
    """A request would need more memory than the limit of :mod:`distprivacy.resources`; raised
    before anything is allocated, with the estimate and the limit in the message."""


class ExactReleaseError(DistPrivacyError):
    """A release would publish the true statistics (the calibration adds no noise, Thm 4.4) and
    the caller did not pass ``allow_exact=True`` (``--allow-exact`` on the command line)."""
