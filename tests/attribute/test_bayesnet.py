"""Discrete Bayesian networks: exact joint/marginals against brute-force enumeration,
d-separation, sampling, parametric CPTs, file formats and validation errors."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from bayes_reference import brute_joint, random_network

from distprivacy.attribute.bayesnet import (
    DiscreteBayesNet,
    discretized_normal_cpt,
    load_networks,
    network_from_dict,
    networks_from_dict,
)
from distprivacy.exceptions import DistPrivacyError

CHAIN = DiscreteBayesNet(
    {"a": [0, 1], "b": [0, 1], "c": [0, 1]},
    {"b": ["a"], "c": ["b"]},
    {"a": [0.3, 0.7], "b": [[0.9, 0.1], [0.2, 0.8]], "c": [[0.5, 0.5], [0.1, 0.9]]},
)


@pytest.mark.parametrize("seed", range(6))
def test_joint_and_marginals_match_brute_force(seed):
    net = random_network(seed)
    bj = brute_joint(net)
    joint = net.joint()
    assert joint.shape == net.cardinalities
    for combo, p in bj.items():
        assert joint[combo] == pytest.approx(p, rel=1e-12, abs=1e-15)
    assert joint.sum() == pytest.approx(1.0, abs=1e-12)
    # a marginal in a permuted order, and a conditional
    keep = [net.names[3], net.names[0]]
    idx = [net.names.index(v) for v in keep]
    bm = np.zeros([len(net.domains[v]) for v in keep])
    for combo, p in bj.items():
        bm[tuple(combo[k] for k in idx)] += p
    np.testing.assert_allclose(net.marginal(keep), bm, rtol=1e-12, atol=1e-15)
    cond = net.conditional([keep[0]], [keep[1]])  # axes (given, target)
    np.testing.assert_allclose(cond, (bm / bm.sum(axis=0, keepdims=True)).T, rtol=1e-12)


def test_chain_numbers_by_hand():
    # P(b=1) = 0.3·0.1 + 0.7·0.8 = 0.59; P(c=1) = 0.41·0.5 + 0.59·0.9 = 0.736
    assert CHAIN.marginal(["b"])[1] == pytest.approx(0.59)
    assert CHAIN.marginal(["c"])[1] == pytest.approx(0.736)
    # P(c=1 | a=0) = 0.9·0.5 + 0.1·0.9 = 0.54
    assert CHAIN.conditional(["c"], ["a"])[0, 1] == pytest.approx(0.54)


def test_conditional_on_impossible_value_is_nan():
    net = DiscreteBayesNet(
        {"a": [0, 1], "b": [0, 1]}, {"b": ["a"]}, {"a": [1.0, 0.0], "b": [[0.5, 0.5], [0.5, 0.5]]}
    )
    cond = net.conditional(["b"], ["a"])
    assert np.isnan(cond[1]).all() and cond[0].tolist() == [0.5, 0.5]


def test_d_separation_textbook_cases():
    z = {"x": [0, 1], "y": [0, 1], "z": [0, 1], "w": [0, 1]}
    u = [0.5, 0.5]
    t = [[0.6, 0.4], [0.3, 0.7]]
    t2 = [[[0.6, 0.4], [0.3, 0.7]], [[0.2, 0.8], [0.5, 0.5]]]
    # collider x → z ← y, z → w
    col = DiscreteBayesNet(z, {"z": ["x", "y"], "w": ["z"]}, {"x": u, "y": u, "z": t2, "w": t})
    assert col.d_separated("x", ["y"])
    assert not col.d_separated("x", ["y"], ["z"])
    assert not col.d_separated("x", ["y"], ["w"])  # observed descendant of the collider
    # chain and fork
    assert CHAIN.d_separated("a", ["c"], ["b"]) and not CHAIN.d_separated("a", ["c"])
    fork = DiscreteBayesNet(
        {"x": [0, 1], "y": [0, 1], "z": [0, 1]}, {"x": ["z"], "y": ["z"]}, {"z": u, "x": t, "y": t}
    )
    assert fork.d_separated("x", ["y"], ["z"]) and not fork.d_separated("x", ["y"])


@pytest.mark.parametrize("seed", range(4))
def test_d_separation_agrees_with_numeric_independence(seed):
    """d-separated ⇒ independent (exactly); d-connected ⇒ dependent for generic CPTs."""
    net = random_network(100 + seed)
    joint = net.joint()
    names = net.names
    seen = set()
    for x, y in itertools.combinations(names, 2):
        for given in [(), *[(g,) for g in names if g not in (x, y)]]:
            keep = [x, y, *given]
            ax = tuple(k for k, v in enumerate(names) if v not in keep)
            kept = [v for v in names if v in keep]
            pm = np.transpose(joint.sum(axis=ax), [kept.index(v) for v in keep])
            pm = pm.reshape(pm.shape[0], pm.shape[1], -1)
            pz = pm.sum(axis=(0, 1))
            gap = np.abs(pm * pz - pm.sum(1, keepdims=True) * pm.sum(0, keepdims=True)).max()
            sep = net.d_separated(x, [y], given)
            seen.add(sep)
            assert gap < 1e-12 if sep else gap > 1e-8
    assert seen == {True, False}  # both cases were exercised


def test_sampling_frequencies_match_marginals():
    n = 200_000
    idx = CHAIN.sample(n, random_state=7)
    for k, v in enumerate(CHAIN.names):
        p = CHAIN.marginal([v])[1]
        freq = idx[:, k].mean()
        assert abs(freq - p) < 5 * math.sqrt(p * (1 - p) / n)  # 5 standard errors
    assert np.array_equal(idx, CHAIN.sample(n, random_state=7))  # reproducible bit for bit


def test_discretized_normal_cpt():
    t = discretized_normal_cpt([60, 65, 70], [[0, 1]], intercept=60, coefficients=[10], sd=3)
    assert t.shape == (2, 3)
    np.testing.assert_allclose(t.sum(axis=1), 1.0)
    assert t[0].argmax() == 0 and t[1].argmax() == 2
    w = np.exp(-0.5 * (np.array([60, 65, 70]) - 60) ** 2 / 9)
    np.testing.assert_allclose(t[0], w / w.sum())
    with pytest.raises(DistPrivacyError, match="sd > 0"):
        discretized_normal_cpt([1, 2], sd=0)
    with pytest.raises(DistPrivacyError, match="one coefficient per parent"):
        discretized_normal_cpt([1, 2], [[0, 1]], coefficients=[])


def test_dict_roundtrip_and_parametric_spec(tmp_path):
    raw = CHAIN.to_dict()
    again = network_from_dict(raw)
    assert again.same_structure(CHAIN)
    np.testing.assert_allclose(again.joint(), CHAIN.joint())
    spec = {
        "domains": {"g": [0, 1], "h": [60, 65, 70]},
        "parents": {"h": ["g"]},
        "theta": [
            {"name": "A", "cpts": {"g": [0.5, 0.5], "h": [[0.2, 0.3, 0.5], [0.5, 0.3, 0.2]]}},
            {
                "name": "B",
                "cpts": {
                    "g": [0.4, 0.6],
                    "h": {"discretized_normal": {"intercept": 70, "coefficients": {"g": -8}}},
                },
            },
        ],
    }
    nets = networks_from_dict(spec)
    assert [n.name for n in nets] == ["A", "B"]
    np.testing.assert_allclose(
        nets[1].cpts["h"],
        discretized_normal_cpt([60, 65, 70], [[0, 1]], intercept=70, coefficients=[-8], sd=1.0),
    )
    path = tmp_path / "net.json"
    path.write_text(json.dumps(spec))
    assert [n.name for n in load_networks(path)] == ["A", "B"]
    toml = tmp_path / "net.toml"
    toml.write_text(
        'domains = { a = [0, 1], b = [0, 1] }\nparents = { b = ["a"] }\n'
        "[cpts]\na = [0.3, 0.7]\nb = [[0.9, 0.1], [0.2, 0.8]]\n"
    )
    (net,) = load_networks(toml)
    assert net.marginal(["b"])[1] == pytest.approx(0.59)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {
                "domains": {"a": [0, 1], "b": [0, 1], "c": [0, 1]},
                "parents": {"a": ["c"], "b": ["a"], "c": ["b"]},
                "cpts": {},
            },
            r"the graph has a cycle a → b → c → a",
        ),
        (
            {
                "domains": {"a": [0, 1], "b": [0, 1]},
                "parents": {"b": ["a"]},
                "cpts": {"a": [0.3, 0.7], "b": [[0.9, 0.1], [0.2, 0.7]]},
            },
            r"CPT of node 'b' row \(a=1\) sums to 0.9, not 1",
        ),
        (
            {"domains": {"a": [0, 1]}, "parents": {"a": ["zz"]}, "cpts": {"a": [0.5, 0.5]}},
            r"node 'a' has unknown parent 'zz'",
        ),
        (
            {"domains": {"a": [0, 1]}, "cpts": {"a": [0.5, 0.25, 0.25]}},
            r"CPT of node 'a' has shape \(3,\) but needs \(2,\)",
        ),
        (
            {"domains": {"a": [0, 1]}, "cpts": {"a": [1.5, -0.5]}},
            r"CPT of node 'a' row \(no parents\) has a negative or non-finite probability",
        ),
        ({"domains": {"a": []}, "cpts": {"a": []}}, r"node 'a' has an empty domain"),
        ({"domains": {"a": [1, 1]}, "cpts": {"a": [0.5, 0.5]}}, r"repeats a value"),
        ({"domains": {"a": [0, 1]}, "cpts": {}}, r"node 'a' has no CPT"),
        (
            {"domains": {"a": [0, 1]}, "cpts": {"a": [0.5, 0.5], "q": [1.0]}},
            r"CPT given for unknown node 'q'",
        ),
        (
            {"domains": {"a": [0, 1]}, "parents": {"a": ["a"]}, "cpts": {}},
            r"cycle a → a",
        ),
        ({"domains": {}, "cpts": {}}, r"at least one node"),
    ],
)
def test_validation_errors_are_one_line(kwargs, message):
    with pytest.raises(DistPrivacyError, match=message) as err:
        DiscreteBayesNet(kwargs["domains"], kwargs.get("parents"), kwargs["cpts"])
    assert "\n" not in str(err.value)


def test_joint_size_guard_and_unknown_nodes():
    m = 23  # 2^23 > MAX_JOINT_CELLS cells
    names = [f"v{k}" for k in range(m)]
    net = DiscreteBayesNet(
        {v: [0, 1] for v in names},
        {names[k]: [names[k - 1]] for k in range(1, m)},
        {v: ([0.5, 0.5] if k == 0 else [[0.9, 0.1], [0.1, 0.9]]) for k, v in enumerate(names)},
    )
    with pytest.raises(DistPrivacyError, match="use marginal"):
        net.joint()
    # variable elimination still gives the end of the chain: P(v22 = 1) = 0.5 by symmetry
    assert net.marginal([names[-1]])[1] == pytest.approx(0.5)
    with pytest.raises(DistPrivacyError, match="unknown node 'nope'"):
        net.marginal(["nope"])


def test_file_errors(tmp_path):
    with pytest.raises(DistPrivacyError, match="not found"):
        load_networks(tmp_path / "missing.json")
    bad = tmp_path / "net.yaml"
    bad.write_text("x")
    with pytest.raises(DistPrivacyError, match=r"must end in \.json or \.toml"):
        load_networks(bad)
    broken = tmp_path / "net.json"
    broken.write_text("{not json")
    with pytest.raises(DistPrivacyError, match="is not valid"):
        load_networks(broken)
    with pytest.raises(DistPrivacyError, match="either 'cpts'"):
        networks_from_dict({"domains": {"a": [0]}, "cpts": {"a": [1]}, "theta": [{}]})
    with pytest.raises(DistPrivacyError, match="unknown network field"):
        network_from_dict({"domains": {"a": [0]}, "cpts": {"a": [1]}, "edges": []})
