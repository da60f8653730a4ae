"""Running the user's estimator code: whatever it raises becomes one line naming the estimator
(issue 31). Used wherever the library calls into an estimator (:mod:`._fit`, :mod:`.saved`,
:mod:`.defend`, :mod:`.torch_estimator`, :mod:`.estimators`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from distprivacy.exceptions import DistPrivacyError

__all__ = ["EstimatorError", "estimator_label", "one_line", "user_code"]

#: Longest message of the user's exception kept in the one line.
_MAX_DETAIL = 300


class EstimatorError(DistPrivacyError):
    """The user's estimator (its constructor, ``fit``, ``predict_proba`` or factory) raised, or
    returned something unusable; the message names the estimator and what it raised."""


def one_line(exc: BaseException) -> str:
    """``Type: message`` on one line, the message cut at 300 characters."""
    text = " ".join(str(exc).split())
    if len(text) > _MAX_DETAIL:
        text = text[: _MAX_DETAIL - 1] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _public_module(module: str) -> str:
    """``sklearn.linear_model._logistic`` → ``sklearn.linear_model`` (scikit-learn's private
    submodules dropped: the path a user imports the class from)."""
    if not module.startswith("sklearn."):
        return module
    return ".".join(p for p in module.split(".") if not p.startswith("_"))


def estimator_label(estimator: Any) -> str:
    """How an estimator is named in messages: a label given as text as it is; an estimator
    that names itself (``estimator_name()``, e.g. a TorchEstimator: its factory spec
    ``torch:net.py:make``) by that name; any other by ``sklearn:MODULE:CLASS`` of its class."""
    if isinstance(estimator, str):
        return estimator
    named = getattr(type(estimator), "estimator_name", None)
    if callable(named):
        with contextlib.suppress(Exception):
            return str(named(estimator))
    cls = type(estimator)
    return f"sklearn:{_public_module(cls.__module__)}:{cls.__qualname__}"


@contextlib.contextmanager
def user_code(estimator: Any, where: str) -> Iterator[None]:
    """Run the user's code: any exception but the library's own becomes one
    :class:`EstimatorError` naming ``estimator`` (an object or its label) and ``where``
    (``"training"``, ``"predict_proba"``, …)."""
    try:
        yield
    except DistPrivacyError:
        raise
    except Exception as exc:
        raise EstimatorError(
            f"the estimator {estimator_label(estimator)} raised {one_line(exc)} (in {where}); "
            "fix it or choose another estimator"
        ) from exc
