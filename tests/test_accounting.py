"""Accounting: classic calibration constant, relaxed-assumption guarantees (Thm 4.6, 4.7)."""

from __future__ import annotations

import math

import pytest

from distprivacy.accounting import (
    classic_c,
    relaxed_guarantee_max_divergence,
    relaxed_guarantee_wasserstein,
)
from distprivacy.checks import check_delta, check_epsilon
from distprivacy.exceptions import DistPrivacyError


def test_classic_c_values():
    assert classic_c(0.001) == pytest.approx(3.7765, abs=1e-4)
    assert classic_c(1e-4) > classic_c(1e-3) > classic_c(1e-2)


def test_theorem_4_6():
    eps, delta, lam, eta = 0.5, 1e-3, 0.1, 1e-4
    e2, d2 = relaxed_guarantee_max_divergence(eps, delta, lam, eta)
    assert e2 == pytest.approx(0.7)
    assert d2 == pytest.approx((1 + math.exp(0.6)) * 1e-4 + math.exp(0.1) * 1e-3)
    # No approximation error: the guarantee is unchanged.
    assert relaxed_guarantee_max_divergence(eps, delta, 0.0, 0.0) == (eps, pytest.approx(delta))


def test_theorem_4_7():
    e2, d2, b = relaxed_guarantee_wasserstein(1.0, 1e-3, W=0.3, lam=0.2)
    assert e2 == pytest.approx(1.4)
    assert d2 == pytest.approx(math.exp(0.2) * 1e-3)
    assert b == pytest.approx(1.5)  # extra Lap(W/λ) on every coordinate


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: relaxed_guarantee_max_divergence(1, 1e-3, -0.1, 0), "lambda"),
        (lambda: relaxed_guarantee_max_divergence(1, 1e-3, 0.1, 1.5), "delta"),
        (lambda: relaxed_guarantee_wasserstein(1, 1e-3, -1, 0.1), "W must"),
        (lambda: relaxed_guarantee_wasserstein(1, 1e-3, 1, 0), "lambda"),
        (lambda: check_epsilon("x"), "number"),
        (lambda: check_delta(0), r"\(0, 1\)"),
    ],
)
def test_bad_arguments(call, match):
    with pytest.raises(DistPrivacyError, match=match):
        call()


def test_delta_zero_allowed_where_pure():
    assert check_delta(0, allow_zero=True) == 0.0
