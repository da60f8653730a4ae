"""Tests of distprivacy.randomness: the one policy for what ``random_state`` means.

``check_random_state(random_state, *, secure)``: None → a SecureGenerator (secure=True) or a
fresh-entropy NumPy generator (secure=False); an integer seed or a SeedSequence → a
reproducible NumPy generator; a generator → itself; anything else → DistPrivacyError. And no
module of the library but randomness.py makes a generator itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from distprivacy.exceptions import DistPrivacyError
from distprivacy.randomness import (
    MAX_SEED,
    SecureGenerator,
    check_random_state,
    is_secure,
)

SRC = Path(__file__).resolve().parents[1] / "src" / "distprivacy"


# --------------------------------------------------------------------------------------------
# None: secure for releases, fresh entropy for simulations
# --------------------------------------------------------------------------------------------


def test_none_secure_is_a_secure_generator():
    gen = check_random_state(None, secure=True)
    assert isinstance(gen, SecureGenerator) and is_secure(gen)


def test_none_not_secure_is_a_fresh_numpy_generator():
    a = check_random_state(None, secure=False)
    b = check_random_state(None, secure=False)
    assert isinstance(a, np.random.Generator) and not is_secure(a)
    assert a is not b
    # Fresh OS entropy each time: two calls give different streams.
    assert not np.array_equal(a.integers(0, 2**63, 4), b.integers(0, 2**63, 4))


def test_secure_is_keyword_only_and_required():
    with pytest.raises(TypeError):
        check_random_state(None)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        check_random_state(None, True)  # type: ignore[misc]


# --------------------------------------------------------------------------------------------
# Seeds: reproducible bit for bit, never secure
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("secure", [True, False])
@pytest.mark.parametrize("seed", [0, 7, 2**32 - 1, 2**64 + 5, MAX_SEED, np.int64(12)])
def test_int_seed_is_reproducible(seed, secure):
    gen = check_random_state(seed, secure=secure)
    assert isinstance(gen, np.random.Generator) and not is_secure(gen)
    ref = np.random.default_rng(int(seed)).random(5)
    assert np.array_equal(gen.random(5), ref)
    assert np.array_equal(check_random_state(seed, secure=secure).random(5), ref)


@pytest.mark.parametrize("secure", [True, False])
def test_seed_sequence_gives_the_stream_of_default_rng(secure):
    seq = np.random.SeedSequence([3, 2_893_457_112])
    gen = check_random_state(seq, secure=secure)
    assert isinstance(gen, np.random.Generator) and not is_secure(gen)
    ref = np.random.default_rng([3, 2_893_457_112]).random(6)
    assert np.array_equal(gen.random(6), ref)
    # The same sequence again gives the same stream (a SeedSequence holds no draw state).
    assert np.array_equal(check_random_state(seq, secure=secure).random(6), ref)


# --------------------------------------------------------------------------------------------
# Generators: passed through as they are
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("secure", [True, False])
def test_generator_is_passed_through(secure):
    gen = np.random.default_rng(1)
    assert check_random_state(gen, secure=secure) is gen
    sec = SecureGenerator()
    assert check_random_state(sec, secure=secure) is sec


def test_a_passed_generator_advances():
    gen = np.random.default_rng(2)
    first = check_random_state(gen, secure=False).random()
    second = check_random_state(gen, secure=False).random()
    ref = np.random.default_rng(2).random(2)
    assert [first, second] == list(ref)


# --------------------------------------------------------------------------------------------
# Everything else is refused, in one line
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        True,
        False,
        1.0,
        float("nan"),
        "1",
        b"1",
        -1,
        MAX_SEED + 1,
        2**128,
        [1, 2],
        np.random.RandomState(0),
        np.random.PCG64(0),
        object(),
    ],
    ids=lambda x: type(x).__name__ + ("" if not isinstance(x, int) else f"={x}"),
)
@pytest.mark.parametrize("secure", [True, False])
def test_bad_inputs_are_refused(bad, secure):
    with pytest.raises(DistPrivacyError) as err:
        check_random_state(bad, secure=secure)
    msg = str(err.value)
    assert "random_state" in msg and "\n" not in msg


# --------------------------------------------------------------------------------------------
# One house: only randomness.py makes generators
# --------------------------------------------------------------------------------------------


def _makes_a_generator(node: ast.Call) -> str | None:
    """``"default_rng"`` or ``"SecureGenerator"`` if the call constructs one, else None."""
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    return name if name in ("default_rng", "SecureGenerator") else None


def test_only_randomness_py_makes_generators():
    """No module of distprivacy but randomness.py calls ``np.random.default_rng(`` or
    ``SecureGenerator(`` itself: every random function passes its ``random_state`` to
    :func:`check_random_state` (issue 15). Calls in docstrings and comments do not count
    (the source is parsed). The failure lists every offending call site."""
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        if path.name == "randomness.py" and path.parent == SRC:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and (what := _makes_a_generator(node)):
                offenders.append(f"{path.relative_to(SRC.parent)}:{node.lineno} {what}(")
    assert not offenders, (
        "these modules make a generator themselves instead of calling "
        "distprivacy.randomness.check_random_state:\n  " + "\n  ".join(offenders)
    )
