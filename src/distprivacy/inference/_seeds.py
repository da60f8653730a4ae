"""Integer seeds from a ``random_state`` (the inference wing derives independent seeds for its
parts — dataset sampler, trainer, each model — with :class:`numpy.random.SeedSequence`, and
records them so that a population can be retrained bit for bit)."""

from __future__ import annotations

import numpy as np

from distprivacy.randomness import RandomState, check_random_state

#: Integer seeds drawn from a generator lie in [0, 2⁶³).
_DRAWN_SEED_BOUND = 2**63


def integer_seed(random_state: RandomState) -> int:
    """The integer seed a derivation starts from.

    An integer ``random_state`` is itself (checked by
    :func:`~distprivacy.randomness.check_random_state`: in [0, 2¹²⁸ − 1]), so integer seeds give
    the same results as before; a generator (or ``None``: fresh OS entropy, ``secure=False``,
    all of this is simulation) gives one draw in [0, 2⁶³), which the caller records.
    """
    if isinstance(random_state, int | np.integer) and not isinstance(random_state, bool):
        check_random_state(random_state, secure=False)
        return int(random_state)
    gen = check_random_state(random_state, secure=False)
    return int(gen.integers(0, _DRAWN_SEED_BOUND))
