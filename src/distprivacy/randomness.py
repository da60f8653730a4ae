"""Randomness: the one place that decides what "no randomness given" means.

Every random function of distprivacy takes one argument, ``random_state``, and passes it to
:func:`check_random_state` with an explicit ``secure=`` (the model is diffprivlib's
``check_random_state(seed, secure=...)``):

* ``None`` with ``secure=True`` (every release of private statistics): a
  :class:`SecureGenerator`, driven by the OS's cryptographically secure generator and OpenDP's
  exact samplers. Not reproducible, by design.
* ``None`` with ``secure=False`` (simulations, attacks, experiments): a NumPy generator seeded
  from fresh OS entropy.
* an integer seed in [0, 2¹²⁸ − 1]: ``numpy.random.default_rng(seed)`` — reproducible bit for
  bit, never secure, whatever ``secure`` says. (The command line's ``--seed`` is narrower,
  [0, 2³² − 1], :func:`distprivacy.checks.check_seed`; derived seeds may use 64 bits.)
* a :class:`numpy.random.SeedSequence`: ``numpy.random.default_rng(seq)`` — reproducible, the
  way to pass a seed derived from several integers (``SeedSequence([seed, key])`` gives the
  same stream as ``default_rng([seed, key])``; the same sequence twice gives the same stream).
* a :class:`numpy.random.Generator` or a :class:`SecureGenerator`: used as it is (its state
  advances).

Anything else (a bool, a float, a string, a legacy ``RandomState``) is refused with a one-line
error.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, TypeAlias

from distprivacy.checks import check_bool, check_int, shown
from distprivacy.exceptions import DistPrivacyError, DistPrivacyTypeError
from distprivacy.resources import check_memory

if TYPE_CHECKING:
    import numpy as np

#: Largest integer seed :func:`check_random_state` takes.
MAX_SEED = 2**128 - 1


class _OpenDPDraws:
    """Noise from OpenDP's samplers (exact Gaussian/Laplace sampling from the OS CSPRNG).

    OpenDP draws the standard variates; the library scales and rotates them (floating-point
    post-processing of secure draws).
    """

    secure = True

    def __init__(self) -> None:
        import opendp.prelude as dp

        dp.enable_features("contrib")
        self._dp = dp

    def _draw(self, size: int, family: str) -> np.ndarray:
        import numpy as np

        dp = self._dp
        if size == 0:
            return np.empty(0)
        dom = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=size)
        if family == "gaussian":
            meas = dp.m.make_gaussian(dom, dp.l2_distance(T=float), scale=1.0)
        else:
            meas = dp.m.make_laplace(dom, dp.l1_distance(T=float), scale=1.0)
        return np.asarray(meas([0.0] * size), dtype=float)

    def standard_normal(self, size: int) -> np.ndarray:
        return self._draw(int(size), "gaussian")

    def standard_laplace(self, size: int) -> np.ndarray:
        return self._draw(int(size), "laplace")


class SecureGenerator:
    """The part of :class:`numpy.random.Generator`'s interface that local samplers use, driven
    by the OS's cryptographically secure generator (``os.urandom``) and OpenDP's samplers.

    ``random`` gives 53-bit uniform doubles on [0, 1); ``integers`` is exactly uniform
    (rejection of the 64-bit words above the largest multiple of the range, redrawn in one
    vectorised step); ``choice`` with probabilities inverts the CDF at a secure uniform;
    ``gamma`` with an integer shape k is a sum of k exponentials −log(1 − U); ``laplace`` and
    ``standard_normal`` come from OpenDP (:class:`_OpenDPDraws`). Floating-point transforms of
    secure draws are post-processing. Not reproducible by design: for experiments pass a seed.
    """

    secure = True

    def __init__(self) -> None:
        self._noise: _OpenDPDraws | None = None

    @property
    def _opendp(self) -> _OpenDPDraws:
        if self._noise is None:
            self._noise = _OpenDPDraws()
        return self._noise

    @staticmethod
    def _count(size: int | tuple[int, ...] | None) -> tuple[tuple[int, ...], int]:
        if size is None:
            shape: tuple = ()
        elif isinstance(size, tuple | list):
            shape = tuple(size)
        else:
            shape = (size,)
        shape = tuple(check_int(s, "size", low=0) for s in shape)
        n = math.prod(shape)
        check_memory(16.0 * n, f"{n} secure random draws")
        return shape, n

    @staticmethod
    def _words(n: int) -> np.ndarray:
        import numpy as np

        return np.frombuffer(os.urandom(8 * n), dtype=np.uint64).copy()

    def random(self, size: int | tuple[int, ...] | None = None) -> np.ndarray:
        """Uniform doubles on [0, 1) with 53 random bits each."""
        import numpy as np

        shape, n = self._count(size)
        return ((self._words(n) >> np.uint64(11)) * 2.0**-53).reshape(shape)

    def uniform(
        self, low: float = 0.0, high: float = 1.0, size: int | tuple[int, ...] | None = None
    ) -> np.ndarray:
        """Uniform on [low, high)."""
        return low + (high - low) * self.random(size)

    def integers(
        self, low: int, high: int | None = None, size: int | tuple[int, ...] | None = None
    ) -> np.ndarray:
        """Exactly uniform integers on [low, high) (``high`` exclusive, as NumPy's)."""
        import numpy as np

        if high is None:
            low, high = 0, low
        span = int(high) - int(low)
        if span <= 0:
            raise DistPrivacyError(f"integers needs low < high, got [{low}, {high})")
        shape, n = self._count(size)
        limit = (2**64 // span) * span  # words ≥ limit would bias the remainder
        words = self._words(n)
        bad = words >= np.uint64(limit) if limit < 2**64 else np.zeros(n, dtype=bool)
        while bad.any():
            words[bad] = self._words(int(bad.sum()))
            bad = words >= np.uint64(limit)
        return (int(low) + (words % np.uint64(span)).astype(np.int64)).reshape(shape)

    def choice(
        self,
        a: int,
        size: int | tuple[int, ...] | None = None,
        p: np.ndarray | None = None,
    ) -> np.ndarray:
        """Draws from range(a), uniform or with probabilities ``p`` (inverse CDF)."""
        import numpy as np

        if p is None:
            return self.integers(0, int(a), size)
        cdf = np.cumsum(np.asarray(p, dtype=float))
        cdf[-1] = 1.0
        shape, _ = self._count(size)
        return np.searchsorted(cdf, self.random(shape), side="right").reshape(shape)

    def standard_normal(self, size: int | tuple[int, ...] | None = None) -> np.ndarray:
        shape, n = self._count(size)
        return self._opendp.standard_normal(n).reshape(shape)

    def laplace(
        self, loc: float = 0.0, scale: float = 1.0, size: int | tuple[int, ...] | None = None
    ) -> np.ndarray:
        shape, n = self._count(size)
        return loc + scale * self._opendp.standard_laplace(n).reshape(shape)

    def gamma(
        self, shape: float, scale: float = 1.0, size: int | tuple[int, ...] | None = None
    ) -> np.ndarray:
        """Gamma with an integer shape k (an Erlang variable: k exponentials summed)."""
        import numpy as np

        k = int(shape)
        if k != shape or k < 1:
            raise DistPrivacyError(
                f"the secure gamma sampler needs an integer shape ≥ 1, got {shape}"
            )
        out_shape, n = self._count(size)
        u = self.random((k, n))
        return (scale * -np.log1p(-u).sum(axis=0)).reshape(out_shape)


#: What every ``random_state`` argument accepts.
#: (A string: NumPy is imported by the functions that draw, not by importing this module.)
RandomState: TypeAlias = (
    "int | np.random.SeedSequence | np.random.Generator | SecureGenerator | None"
)

#: What :func:`check_random_state` returns: something with NumPy's Generator interface.
Generator: TypeAlias = "np.random.Generator | SecureGenerator"


def check_random_state(random_state: RandomState, *, secure: bool) -> Generator:
    """The generator a random function draws from (see the module docstring).

    Parameters
    ----------
    random_state : None, int, numpy.random.SeedSequence, numpy.random.Generator or SecureGenerator
        Where randomness comes from.
    secure : bool
        What ``None`` means: a cryptographically secure generator (True: releases) or fresh
        OS entropy in a NumPy generator (False: simulations). Keyword-only, no default: every
        caller states it.

    Returns
    -------
    numpy.random.Generator or SecureGenerator

    Raises
    ------
    DistPrivacyError
        For anything but None, an integer seed in [0, 2¹²⁸ − 1], a SeedSequence or a
        generator.
    """
    import numpy as np

    check_bool(secure, "secure")
    if random_state is None:
        return SecureGenerator() if secure else np.random.default_rng()
    if isinstance(random_state, np.random.Generator | SecureGenerator):
        return random_state
    if isinstance(random_state, np.random.SeedSequence):
        return np.random.default_rng(random_state)
    if isinstance(random_state, int | np.integer) and not isinstance(random_state, bool):
        return np.random.default_rng(check_int(random_state, "random_state", low=0, high=MAX_SEED))
    raise DistPrivacyTypeError(
        "random_state must be None, an integer seed in [0, 2^128 - 1], a numpy SeedSequence or "
        f"a numpy Generator, got {shown(random_state)}"
    )


def is_secure(generator: object) -> bool:
    """Whether draws from ``generator`` come from a cryptographically secure source."""
    return isinstance(generator, SecureGenerator)
