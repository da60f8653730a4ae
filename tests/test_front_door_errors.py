"""The library's errors are the library's (issue 31): the thirteen front-door calls measured
to raise a foreign exception (AttributeError, ValueError from ``float()``, Python's own
TypeError) now raise a one-line :class:`DistPrivacyTypeError` — a ``DistPrivacyError`` and a
``TypeError`` — naming the parameter, what it got and what it expects; and
``GDP(μ).max_attack_accuracy`` answers for every μ. The hypothesis sweep over every entry
point is tests/test_front_door_hypothesis.py."""

from __future__ import annotations

import math
from pathlib import Path

import mpmath
import numpy as np
import pytest

import distprivacy as dp
from distprivacy.checks import (
    check_bool,
    check_callable,
    check_dataframe,
    check_instance,
    check_keywords,
    check_path,
    check_text,
    check_texts,
    shown,
)
from distprivacy.exceptions import DistPrivacyError, DistPrivacyTypeError
from distprivacy.ledger import LedgerError, LedgerTypeError
from distprivacy.targets import GDP, EpsDelta, MaxAttackAccuracy, met_by


def _model() -> dp.GaussianModel:
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    return dp.GaussianModel(["a", "b"], [[0.0, 0.0], [1.0, 0.5]], [cov, cov], [("a", "b")])


@pytest.fixture(scope="module")
def plan() -> dp.Plan:
    model = _model()
    return dp.Plan.from_calibration(dp.DauM(EpsDelta(1.0, 1e-3)).calibrate(model), model)


def _refused(call, *words: str, kind: type[Exception] = DistPrivacyTypeError) -> str:
    """The one-line library TypeError of ``call``, holding each of ``words``."""
    with pytest.raises(kind) as e:
        call()
    err = e.value
    assert isinstance(err, DistPrivacyError) and isinstance(err, TypeError), type(err)
    text = str(err)
    assert text and "\n" not in text
    for w in words:
        assert w in text, (w, text)
    return text


# -- the thirteen measured calls --------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "shows"),
    [(None, "None"), (Path("plan.json"), "PosixPath"), ({"format": "plan"}, "dict")],
    ids=["None", "path", "dict"],
)
def test_ledger_approve_refuses_what_is_not_a_plan(tmp_path, bad, shows):
    """Measured: AttributeError ('NoneType' object has no attribute 'seal'). Plans are now
    approved with the steward's key (`Ledger.approve`); `Ledger.seal` refuses everything."""
    from distprivacy.ledger import StewardKey

    steward = StewardKey.generate(tmp_path / "steward.key")
    with dp.Ledger.init(
        tmp_path / "l.db", steward=steward, secret="s", protect="income==>50K",
        budget=dp.GDP(1.0),
    ) as led:  # fmt: skip
        text = _refused(lambda: led.approve(steward, bad, "p"), "plan", "a Plan", shows,
                        kind=LedgerTypeError)  # fmt: skip
        with pytest.raises(LedgerError, match="ledger approve"):
            led.seal(bad)
    assert text.startswith("plan must be a Plan")
    assert issubclass(LedgerTypeError, LedgerError)  # still the ledger's error


def test_release_with_a_plan_refuses_values_that_are_not_numbers(plan):
    """Measured: ValueError from float('abc')."""
    _refused(lambda: dp.release(plan=plan, values="abc"), "values", "real numbers", "'abc'")


def test_release_refuses_data_of_the_wrong_type():
    """Measured: TypeError from deep inside (dp.release(data=5))."""
    _refused(lambda: dp.release(data=5), "data", "DataFrame", "int 5")


def test_release_refuses_a_target_that_is_not_a_table(plan):
    """Measured: AttributeError: columns (an ndarray as the target)."""
    _refused(lambda: dp.release(plan=plan, target=np.zeros((3, 2))), "target", "DataFrame",
             "ndarray of shape (3, 2)")  # fmt: skip


@pytest.mark.parametrize("name", ["progress", "on_step"])
def test_release_refuses_callbacks_that_cannot_be_called(name):
    """Measured: "'int' object is not callable" (progress=5, on_step=5)."""
    _refused(lambda: dp.release(**{name: 5}), name, "function", "int 5")


def test_release_names_an_unknown_keyword_and_the_valid_ones():
    """Measured: TypeError from make_mechanism() (dp.release(bogus=1))."""
    text = _refused(lambda: dp.release(bogus=1), "release()", "'bogus'")
    from distprivacy.workflow import MECHANISM_OPTIONS

    assert all(option in text for option in MECHANISM_OPTIONS)


def test_met_by_refuses_a_guarantee_that_is_none():
    """Measured: AttributeError ('NoneType' object has no attribute 'mu')."""
    _refused(lambda: met_by(GDP(1.0), None), "guarantee", "None")
    _refused(lambda: met_by(None, _model()), "target", "privacy target")
    # A GDP has delta_at, mu and an attack bound too, but a target is not a guarantee.
    _refused(lambda: met_by(GDP(1.0), GDP(0.5)), "guarantee", "got the target GDP")


# -- GDP(μ).max_attack_accuracy for every μ -----------------------------------------------------


@pytest.mark.parametrize("mu", [16.6, 17.0, 40.0, 1e3, 1e300])
def test_a_huge_mu_has_the_honest_attack_bound_one(mu):
    """Φ(μ/2) is within 1e-16 of 1: the bound is 1.0 (no protection), never a refusal, and
    its μ is not finite, which to_gdp says in one line."""
    bound = GDP(mu).max_attack_accuracy
    assert isinstance(bound, MaxAttackAccuracy) and bound.accuracy == 1.0
    with pytest.raises(DistPrivacyError, match="no finite μ"):
        bound.to_gdp()
    with pytest.raises(DistPrivacyError):
        MaxAttackAccuracy(1.0)  # as a target, 1 is still refused


def test_the_attack_bound_is_exact_and_monotone_over_every_mu():
    """Φ(μ/2) to the last bits (mpmath, 40 digits) where a float can tell it from 0.5 and 1;
    above 0.5 and non-decreasing from μ = 1e-300 to 1e300."""
    mus = np.geomspace(1e-300, 1e300, 2000)
    acc = np.array([GDP(float(m)).max_attack_accuracy.accuracy for m in mus])
    assert np.all(np.diff(acc) >= 0) and acc[0] == math.nextafter(0.5, 1.0) and acc[-1] == 1.0
    with mpmath.workdps(40):
        for mu in (1e-12, 0.3, 2.0, 10.0, 16.0, 16.5):
            exact = float(mpmath.ncdf(mpmath.mpf(mu) / 2))
            assert GDP(mu).max_attack_accuracy.accuracy == pytest.approx(exact, rel=1e-15)


# -- the checks themselves ----------------------------------------------------------------------


def test_the_type_error_is_a_type_error_and_a_library_error():
    assert issubclass(DistPrivacyTypeError, DistPrivacyError)
    assert issubclass(DistPrivacyTypeError, TypeError)
    assert issubclass(DistPrivacyError, ValueError) and dp.DistPrivacyTypeError is not None


def test_shown_is_one_short_line():
    import pandas as pd

    assert shown(None) == "None" and shown("abc") == "str 'abc'" and shown(5) == "int 5"
    assert shown(pd.DataFrame({"a": range(50)})) == "DataFrame of shape (50, 1)"
    assert shown(np.zeros((2, 3))) == "ndarray of shape (2, 3)"
    long = shown("x" * 500 + "\n" + "y")
    assert "\n" not in long and len(long) <= 70 and long.endswith("…")

    class Broken:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    assert shown(Broken()) == "Broken (unprintable)"


def test_the_checks_name_the_parameter_what_it_got_and_what_it_expects(tmp_path):
    _refused(lambda: check_instance(3, "plan", dp.Plan, "a Plan"), "plan must be a Plan", "int 3")
    assert check_instance(None, "plan", dp.Plan, "a Plan", optional=True) is None
    _refused(lambda: check_callable(5, "progress"), "progress must be a function", "int 5")
    _refused(lambda: check_dataframe([1], "target"), "target", "DataFrame", "list [1]")
    _refused(lambda: check_bool(1, "allow_exact"), "allow_exact must be True or False")
    _refused(lambda: check_text(b"x", "modeling"), "modeling must be a text", "bytes")
    with pytest.raises(DistPrivacyError, match="unknown utility 'x'; use one of a, b"):
        check_text("x", "utility", choices=("a", "b"))
    assert check_texts(["a", "b"], "names") == ("a", "b")
    _refused(lambda: check_texts("ab", "names"), "names must be a list of texts")
    _refused(lambda: check_path(3.5, "path"), "path must be a path", "float 3.5")
    assert check_path("~/x", "path") == Path.home() / "x"
    for bad in ("", "a\x00b", "~no_such_user_31/x"):
        with pytest.raises(DistPrivacyError) as e:
            check_path(bad, "path")
        assert not isinstance(e.value, TypeError) and "\n" not in str(e.value)
    text = _refused(lambda: check_keywords({"bogus": 1}, ("a", "b"), "f()"), "f()", "'bogus'")
    assert text.endswith("valid: a, b")
    check_keywords({"a": 1}, ("a", "b"), "f()")  # a known keyword passes


def test_rule_of_anything_but_its_name_is_a_library_error():
    assert dp.Rule("exact") is dp.Rule.EXACT and dp.Rule(dp.Rule.CLASSIC) is dp.Rule.CLASSIC
    _refused(lambda: dp.Rule(np.array([])), "calibration rule", "ndarray")
    with pytest.raises(DistPrivacyError, match="unknown calibration rule 'x'"):
        dp.Rule("x")
