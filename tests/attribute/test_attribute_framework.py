"""Tests of the attribute-privacy frameworks (Zhang, Ohrimenko & Cummings 2022, Def. 4, Def. 5)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from distprivacy.attribute.framework import (
    AttributeDomain,
    DatasetAttributeFramework,
    DistributionalAttributeFramework,
    Secret,
    SecretPair,
    ValueSet,
    pairs_from_sets,
)
from distprivacy.exceptions import DistPrivacyError
from distprivacy.spec import ProtectionSpec

GENDER = AttributeDomain("gender", binary=True, parameter_range=(0.25, 0.75))


def hospital(n: int = 50) -> DatasetAttributeFramework:
    pairs = pairs_from_sets("gender", ["(0.25,0.5)", "(0.5,0.75)"])
    return DatasetAttributeFramework(pairs=pairs, domains=(GENDER,), n=n)


@pytest.mark.parametrize(
    ("text", "low", "high", "cl", "ch"),
    [
        ("0.5", 0.5, 0.5, True, True),
        ("(0.25,0.5)", 0.25, 0.5, False, False),
        ("[0.25, 0.5)", 0.25, 0.5, True, False),
        ("(0.5,0.75]", 0.5, 0.75, False, True),
        ("(-inf,0)", -math.inf, 0.0, False, False),
    ],
)
def test_value_set_parse(text: str, low: float, high: float, cl: bool, ch: bool) -> None:
    v = ValueSet.parse(text)
    assert (v.low, v.high, v.closed_low, v.closed_high) == (low, high, cl, ch)


def test_value_set_membership_respects_open_ends() -> None:
    v = ValueSet.parse("(0.25,0.5]")
    got = v.contains(np.array([0.25, 0.3, 0.5, 0.51]))
    assert got.tolist() == [False, True, True, False]
    assert ValueSet.point(0.5).contains(0.5) is True


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("abc", "cannot read the secret"),
        ("(0.6,0.5)", "low 0.6 > high 0.5"),
        ("(0.5,0.5)", "empty"),
        ("[-inf,0)", "infinite end point must be open"),
    ],
)
def test_value_set_bad_input(text: str, match: str) -> None:
    with pytest.raises(DistPrivacyError, match=match):
        ValueSet.parse(text)


def test_hospital_pair_distances() -> None:
    """The literal d(U) = max |a − b| over the shares k/50 in (0.25, 0.5) and (0.5, 0.75) is
    37/50 − 13/50 = 0.48; the paper's arithmetic uses the centres' distance 0.25."""
    fw = hospital()
    assert fw.diameter("gender", "sup") == pytest.approx(0.48)
    assert fw.pairs[0].distance("sup") == pytest.approx(0.5)  # the sets' supremum
    assert fw.diameter("gender", "centres") == pytest.approx(0.25)
    assert fw.sensitive == ("gender",)
    assert len(fw.secrets) == 2
    with pytest.raises(DistPrivacyError, match="unknown pair-distance reading"):
        fw.pairs[0].distance("middle")


def test_unbounded_secrets_have_no_finite_diameter() -> None:
    income = AttributeDomain("income")
    fw = DatasetAttributeFramework(
        pairs=pairs_from_sets("income", ["(-inf,0)", "[0,inf)"]), domains=(income,), n=5
    )
    with pytest.raises(DistPrivacyError, match="unbounded, so d"):
        fw.diameter("income")


def test_secret_pair_validation() -> None:
    a = Secret("gender", ValueSet.point(0.2))
    with pytest.raises(DistPrivacyError, match="about one attribute"):
        SecretPair(a, Secret("race", ValueSet.point(0.3)))
    with pytest.raises(DistPrivacyError, match="to itself"):
        SecretPair(a, Secret("gender", ValueSet.point(0.2)))
    with pytest.raises(DistPrivacyError, match="mixes"):
        SecretPair(a, Secret("gender", ValueSet.point(0.3), "distributional"))
    with pytest.raises(DistPrivacyError, match="kind must be one of"):
        Secret("gender", ValueSet.point(0.2), "individual")  # type: ignore[arg-type]


def test_secret_no_distribution_can_produce_is_an_error() -> None:
    """A share of 50 records is a multiple of 1/50: (0.31, 0.315) contains none."""
    pairs = pairs_from_sets("gender", ["(0.31,0.315)", "0.5"])
    with pytest.raises(DistPrivacyError, match=r"no distribution in Θ can produce .*0\.31"):
        DatasetAttributeFramework(pairs=pairs, domains=(GENDER,), n=50)
    with pytest.raises(DistPrivacyError, match="no distribution in Θ can produce"):
        DatasetAttributeFramework(
            pairs=pairs_from_sets("gender", ["1.5", "0.5"]), domains=(GENDER,), n=50
        )
    # with 64 records the interval holds the share 20/64 = 0.3125
    DatasetAttributeFramework(pairs=pairs, domains=(GENDER,), n=64)


def test_distributional_secret_outside_theta_is_an_error() -> None:
    pairs = pairs_from_sets("gender", ["0.5", "0.9"], kind="distributional")
    with pytest.raises(DistPrivacyError, match=r"φ_gender ranges over \[0.25, 0.75\]"):
        DistributionalAttributeFramework(pairs=pairs, domains=(GENDER,), n=50)


def test_degenerate_bernoulli_range_only_produces_its_share() -> None:
    always_male = AttributeDomain("gender", binary=True, parameter_range=(0.0, 0.0))
    assert always_male.can_produce(Secret("gender", ValueSet.point(0.0)), 10)
    assert not always_male.can_produce(Secret("gender", ValueSet.parse("(0,0.5)")), 10)


def test_framework_validation() -> None:
    with pytest.raises(DistPrivacyError, match="Q is empty"):
        DatasetAttributeFramework(pairs=(), domains=(GENDER,), n=50)
    with pytest.raises(DistPrivacyError, match="positive integer"):
        DatasetAttributeFramework(pairs=hospital().pairs, domains=(GENDER,), n=0)
    with pytest.raises(DistPrivacyError, match="not a sensitive attribute"):
        DatasetAttributeFramework(pairs=pairs_from_sets("race", ["0", "1"]), domains=(GENDER,), n=5)
    with pytest.raises(DistPrivacyError, match="is distributional but the framework is dataset"):
        DatasetAttributeFramework(
            pairs=pairs_from_sets("gender", ["0.3", "0.6"], kind="distributional"),
            domains=(GENDER,),
            n=10,
        )
    with pytest.raises(DistPrivacyError, match="at least two secrets"):
        pairs_from_sets("gender", ["0.3"])
    with pytest.raises(DistPrivacyError, match="out of range"):
        pairs_from_sets("gender", ["0.3", "0.5"], pairs=[(0, 2)])
    with pytest.raises(DistPrivacyError, match="parameter range must lie in"):
        AttributeDomain("gender", binary=True, parameter_range=(0.2, 1.2))


def test_protection_spec_round_trip() -> None:
    """Point secrets on the share of a predicate ↔ the distribution-privacy spec (θ_p)."""
    spec = ProtectionSpec("income==>50K", 100, [0.4, 0.5, 0.6], pairs=[(0.4, 0.5), (0.5, 0.6)])
    fw = DatasetAttributeFramework.from_protection_spec(spec)
    assert fw.n == 100
    assert fw.sensitive == ("income==>50K",)
    assert [(p.first.values.low, p.second.values.low) for p in fw.pairs] == [
        (0.4, 0.5),
        (0.5, 0.6),
    ]
    back = fw.to_protection_spec()
    assert back.values == spec.values
    assert back.counts == spec.counts
    assert set(back.pair_indices) == set(spec.pair_indices)


def test_protection_spec_translation_refuses_what_has_no_counterpart() -> None:
    with pytest.raises(DistPrivacyError, match="interval secrets have no distribution-privacy"):
        hospital().to_protection_spec()
    income = AttributeDomain("income", binary=False)
    fw = DatasetAttributeFramework(
        pairs=pairs_from_sets("income", ["0", "1"]), domains=(income,), n=5
    )
    with pytest.raises(DistPrivacyError, match="is not binary"):
        fw.to_protection_spec()


def test_distributional_to_dataset_uses_the_estimator() -> None:
    """§3: secrets on φ (Bernoulli p) restated on its unbiased estimator (the sample share)."""
    dist = DistributionalAttributeFramework(
        pairs=pairs_from_sets("gender", ["0.25", "0.5", "0.75"], kind="distributional"),
        domains=(GENDER,),
        n=20,
    )
    ds = dist.to_dataset()
    assert ds.kind == "dataset"
    assert all(s.kind == "dataset" for s in ds.secrets)
    assert [str(p) for p in ds.pairs] == [str(p).replace("φ_", "g_") for p in dist.pairs]
    assert dist.to_dict()["kind"] == "distributional"
