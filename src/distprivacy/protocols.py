"""The protocols every wing of the library follows (issue 32 item 4), so that code handling
one calibration, or one mechanism, handles them all.

The wings differ in what a mechanism is calibrated *on* — a model of f_θ (the core,
:mod:`distprivacy.mechanisms`), a Gaussian attribute problem, Bayesian networks or
Pufferfish conditionals (:mod:`distprivacy.attribute`), pairs of input distributions
(:mod:`distprivacy.local`) — so ``calibrate`` takes different arguments in each. What comes out
is the same everywhere:

* :class:`~distprivacy.guarantee.Calibrated` — every calibration of every wing (the core's
  :class:`~distprivacy.mechanisms.Calibration`, ``APGMCalibration``, ``QuiltCalibration``,
  ``WassersteinCalibration``, ``LocalCalibration``): ``mechanism``, ``statistic_names``,
  ``guarantee``, ``summary()``, ``release(value, random_state)``, ``to_dict()`` /
  ``from_dict()``.
* :class:`CalibratingMechanism` — a mechanism of the core or of the attribute wing: its
  shorthand ``name``, the ``theorem`` its guarantee rests on, and ``calibrate(...)`` returning
  a :class:`~distprivacy.guarantee.Calibrated`.
* :class:`LocalRandomizer` — the local wing's sibling of it. A local mechanism's noise is given
  (a transition matrix), not calibrated: it has a ``name``, a ``theorem`` and ``sample(x)``;
  :func:`distprivacy.local.calibrate_local` computes the guarantee it gives the pairs it must
  protect, and returns a :class:`~distprivacy.guarantee.Calibrated` like every other wing.

``tests/test_wing_protocols.py`` checks every mechanism and calibration class each wing
exports against these protocols.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from distprivacy.guarantee import Calibrated

__all__ = ["Calibrated", "CalibratingMechanism", "LocalRandomizer"]


@runtime_checkable
class CalibratingMechanism(Protocol):
    """A mechanism that calibrates its noise on a problem of its wing.

    Attributes
    ----------
    name : str
        Its shorthand (the registry's name for a core mechanism).
    theorem : str
        The result its guarantee rests on (paper and number).
    """

    name: str
    theorem: str

    def calibrate(self, *args: Any, **kwargs: Any) -> Calibrated:
        """The calibration (noise and guarantee) for the wing's problem."""
        ...


@runtime_checkable
class LocalRandomizer(Protocol):
    """A local mechanism: fixed noise applied to each record (its guarantee for given pairs
    of input distributions is :func:`distprivacy.local.calibrate_local`'s).

    Attributes
    ----------
    name : str
        Its label (e.g. ``RR(ε=4)``).
    theorem : str
        The result its guarantee rests on.
    """

    name: str
    theorem: str

    def sample(self, x: Any, *, random_state: Any = None) -> Any:
        """The obfuscated output of each input."""
        ...
