"""Errors raised by distprivacy.

Every error carries a one-line message that names the problem and the fix; the command-line
interface prints it without a traceback and exits with status 2.
"""

from __future__ import annotations

from types import ModuleType


class DistPrivacyError(ValueError):
    """Invalid input or an impossible request, with a one-line message naming the fix.

    A :class:`ValueError` (a bad value); an argument of the wrong type raises its subclass
    :class:`DistPrivacyTypeError`, also a :class:`TypeError`."""


class DistPrivacyTypeError(DistPrivacyError, TypeError):
    """An argument of the wrong type (a number where a path belongs, None where a function
    does, an unknown keyword): a :class:`TypeError`, as Python's convention has it, and a
    :class:`DistPrivacyError`, so one ``except DistPrivacyError`` catches every refusal. The
    message names the parameter, what it got and what it expects
    (:mod:`distprivacy.checks`)."""


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


#: Each optional dependency (its import name) → (its distribution on PyPI, the extra of
#: ``pip install 'distprivacy[EXTRA]'`` that brings it). The core needs none of them.
EXTRAS: dict[str, tuple[str, str]] = {
    "matplotlib": ("matplotlib", "figures"),
    "cvxpy": ("cvxpy", "optimal"),
    "sklearn": ("scikit-learn", "models"),
    "pyspark": ("pyspark", "spark"),
    "torch": ("torch", "torch"),
    "networkx": ("networkx", "torch"),
    "skops": ("skops", "saved"),
    "safetensors": ("safetensors", "saved"),
    "starlette": ("starlette", "serve"),
    "uvicorn": ("uvicorn", "serve"),
    "jinja2": ("jinja2", "serve"),
    "multipart": ("python-multipart", "serve"),
    "psycopg": ("psycopg[binary]", "postgres"),
}


class MissingExtraError(DistPrivacyError):
    """An optional dependency is not installed; the message names the extra that brings it,
    e.g. ``OptM-G needs cvxpy: pip install 'distprivacy[optimal]'``.

    Parameters
    ----------
    what : str
        What needs it (a mechanism, a command, a feature), the subject of the message.
    module : str
        The import name of the missing dependency (a key of :data:`EXTRAS`).
    """

    def __init__(self, what: str, module: str) -> None:
        self.module = module.partition(".")[0]
        self.package, self.extra = EXTRAS[self.module]
        super().__init__(f"{what} needs {self.package}: pip install 'distprivacy[{self.extra}]'")


def require_extra(module: str, what: str) -> ModuleType:
    """Import the optional dependency ``module`` (e.g. ``"cvxpy"``, ``"sklearn.base"``).

    Raises
    ------
    MissingExtraError
        When it is not installed: one line naming ``what`` needs it and the extra to install.
    """
    import importlib

    top = module.partition(".")[0]
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if (e.name or "").partition(".")[0] != top:
            raise  # something else is missing: not the extra's fault
        raise MissingExtraError(what, top) from None


def has_extra(module: str) -> bool:
    """Whether the optional dependency ``module`` is installed (found, not imported)."""
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


# ---------------------------------------------------------------------------------------------
# Warnings: typed, so that code reads the category, never the message text.
# ---------------------------------------------------------------------------------------------


class DistPrivacyWarning(UserWarning):
    """A caveat of a calibration or a release; the subclass says which (``code`` in JSON)."""

    code = "caveat"


class ClassicRuleWarning(DistPrivacyWarning):
    """The classic Gaussian rule c = √(2 ln(1.25/δ)) is used outside its proven range (ε > 1)."""

    code = "classic-rule"


class AssumptionWarning(DistPrivacyWarning):
    """A modelling assumption of the theorem is visibly off in the fitted model (unequal
    covariances, different supports, a translation that is not one)."""

    code = "assumption"


class ShortfallWarning(DistPrivacyWarning):
    """Exact accounting finds the noise achieves a larger δ than the nominal one."""

    code = "shortfall"


class ClassicShortfallWarning(ClassicRuleWarning, ShortfallWarning):
    """A shortfall caused by the classic rule itself (both a classic-rule caveat and a
    shortfall: ignoring either category ignores it)."""

    code = "classic-shortfall"


class MoreNoiseWarning(DistPrivacyWarning):
    """Verifying the guarantee under the fitted model needed more noise than the theorem's."""

    code = "more-noise"


class SwampedWarning(DistPrivacyWarning):
    """The noise swamps a statistic: its SD is at least the statistic's spread across the
    datasets the model describes, or its ±2 SD interval covers a proportion's or count's whole
    range (:mod:`distprivacy.mechanisms._swamped`)."""

    code = "swamped"
    #: The start of the caveat's text (the statistics and their noise SD over spread follow).
    prefix = (
        "noise swamps the statistic (noise SD / its spread across the datasets the model "
        "describes ≥ 1, the ratio after each name: the release says less about this dataset "
        "than the population does; or ±2 SD covers a proportion's or count's whole range)"
    )


class WeakGuaranteeWarning(DistPrivacyWarning):
    """ε so large that the guarantee hides nothing in practice (e^ε beyond any odds)."""

    code = "weak-guarantee"


class LimitWarning(DistPrivacyWarning):
    """A computation ran near a stated limit (time, memory or sample size)."""

    code = "resource"


class ExactValueWarning(DistPrivacyWarning):
    """A statistic is released (near-)exactly by consent (``allow_exact``)."""

    code = "exact"


class SeededNoiseWarning(DistPrivacyWarning):
    """The noise came from a seed: reproducible, so never to be published."""

    code = "seeded"


class DemonstrationWarning(DistPrivacyWarning):
    """A demonstration: the released dataset was drawn at random from the data, not given."""

    code = "demonstration"


class UnrecordedWarning(DistPrivacyWarning):
    """A plan a steward sealed or approved was released outside its ledger: nothing recorded
    it, and no budget was checked."""

    code = "unrecorded"


#: Every warning category, by its JSON code.
WARNING_CODES: dict[str, type[DistPrivacyWarning]] = {
    c.code: c
    for c in (
        DistPrivacyWarning,
        ClassicRuleWarning,
        AssumptionWarning,
        ShortfallWarning,
        ClassicShortfallWarning,
        MoreNoiseWarning,
        SwampedWarning,
        WeakGuaranteeWarning,
        LimitWarning,
        ExactValueWarning,
        SeededNoiseWarning,
        DemonstrationWarning,
        UnrecordedWarning,
    )
}


class Notice(str):
    """One caveat: its text (a ``str``, so it prints and serialises as the message) and its
    ``category``, a :class:`DistPrivacyWarning` subclass that code tests instead of the text.

    Examples
    --------
    >>> n = Notice("the classic rule is outside its range", ClassicRuleWarning)
    >>> n.category is ClassicRuleWarning, n.code
    (True, 'classic-rule')
    """

    category: type[DistPrivacyWarning]

    def __new__(
        cls, message: str, category: type[DistPrivacyWarning] = DistPrivacyWarning
    ) -> Notice:
        obj = super().__new__(cls, message)
        obj.category = category
        return obj

    @property
    def code(self) -> str:
        return self.category.code

    def __reduce__(self):  # pickling keeps the category
        return (Notice, (str(self), self.category))

    def emit(self, stacklevel: int = 2) -> None:
        """Issue it as a Python warning of its category."""
        import warnings

        warnings.warn(str(self), self.category, stacklevel=stacklevel + 1)
