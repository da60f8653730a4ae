"""The Attribute-Private Markov Quilt Mechanism (Zhang, Ohrimenko & Cummings 2022, Alg. 2):
max-influence against brute-force enumeration, quilts against numeric independence, the
calibration against an unpruned brute-force search, the school example (Example 1), errors,
and statistical tests of the released noise."""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

import numpy as np
import pytest
from bayes_reference import brute_joint, random_network
from scipy import special, stats

from distprivacy.attribute.bayesnet import DiscreteBayesNet
from distprivacy.attribute.markov_quilt import (
    AttributeQuiltMechanism,
    CountQuery,
    SumQuery,
    markov_quilts,
    max_influence,
    parse_column_query,
    quilt_for,
    sample_school_records,
    school_networks,
)
from distprivacy.exceptions import DistPrivacyError, ExactReleaseError
from distprivacy.spec import Predicate


# ------------------------------------------------------------------ brute force (tests only)
def perturbed(net: DiscreteBayesNet, seed: int) -> DiscreteBayesNet:
    """Same graph, other CPTs (a second θ for Θ)."""
    rng = np.random.default_rng(seed)
    cpts = {}
    for v, t in net.cpts.items():
        new = t * rng.uniform(0.5, 1.5, size=t.shape)
        cpts[v] = new / new.sum(axis=-1, keepdims=True)
    return DiscreteBayesNet(net.domains, net.parents, cpts, name=net.name + "'")


def brute_tables(net, secret, targets):
    """P(secret = a) and P(targets = t, secret = a) by summing the enumerated joint."""
    si = net.names.index(secret)
    ti = [net.names.index(t) for t in targets]
    pa, pta = defaultdict(float), defaultdict(float)
    for combo, p in brute_joint(net).items():
        pa[combo[si]] += p
        pta[(combo[si], tuple(combo[k] for k in ti))] += p
    return pa, pta


def brute_influence(nets, secret, targets):
    """Definition 7 by loops: sup over θ, values a, b with P > 0, and φ_A."""
    best = -math.inf
    for net in nets:
        pa, pta = brute_tables(net, secret, targets)
        vals = [a for a in range(len(net.domains[secret])) if pa[a] > 0]
        if len(vals) < 2:
            continue
        for t in itertools.product(*(range(len(net.domains[x])) for x in targets)):
            for a, b in itertools.permutations(vals, 2):
                num, den = pta[(a, t)] / pa[a], pta[(b, t)] / pa[b]
                if num == 0:
                    continue
                best = max(best, math.inf if den == 0 else math.log(num / den))
            if len(vals) >= 2 and not targets:
                best = max(best, 0.0)
    return best


def brute_independent(net, secret, remote, quilt, tol=1e-12):
    """max |P(r, i | q) − P(r | q) P(i | q)| over everything, by enumeration."""
    joint = brute_joint(net)
    idx = {v: net.names.index(v) for v in net.names}
    pq, prq, piq, priq = (defaultdict(float) for _ in range(4))
    for combo, p in joint.items():
        q = tuple(combo[idx[v]] for v in quilt)
        r = tuple(combo[idx[v]] for v in remote)
        i = combo[idx[secret]]
        pq[q] += p
        prq[(r, q)] += p
        piq[(i, q)] += p
        priq[(r, i, q)] += p
    gap = 0.0
    for (r, i, q), p in priq.items():
        if pq[q] > 0:
            gap = max(gap, abs(p / pq[q] - prq[(r, q)] / pq[q] * piq[(i, q)] / pq[q]))
    return gap


# ------------------------------------------------------------------ max-influence
@pytest.mark.parametrize("seed", range(8))
def test_max_influence_matches_brute_force(seed):
    net = random_network(seed, zeros=seed % 2 == 1)
    nets = [net, perturbed(net, seed + 50)]
    rng = np.random.default_rng(seed)
    secret = net.names[int(rng.integers(len(net.names)))]
    others = [v for v in net.names if v != secret]
    for size in (0, 1, 2, 3):
        for targets in itertools.islice(itertools.combinations(others, size), 4):
            got = max_influence(nets, secret, targets).value
            want = brute_influence(nets, secret, list(targets))
            if math.isinf(want):
                assert math.isinf(got)
            else:
                assert got == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_max_influence_hand_computed_and_witness():
    # a → b: P(b=1|a=0) = 0.2, P(b=1|a=1) = 0.6 → max log ratio = log(0.8/0.4) = log 2
    net = DiscreteBayesNet(
        {"a": ["lo", "hi"], "b": [0, 1]},
        {"b": ["a"]},
        {"a": [0.5, 0.5], "b": [[0.8, 0.2], [0.4, 0.6]]},
    )
    infl = max_influence(net, "a", ["b"])
    assert infl.value == pytest.approx(math.log(3.0))  # log(0.6/0.2) = log 3 > log 2
    assert infl.secret_values == ("hi", "lo") and infl.target_values == {"b": 1}
    # restricting the protected values to one pair still needs two of them
    with pytest.raises(DistPrivacyError, match="at least two distinct secret values"):
        max_influence(net, "a", ["b"], secret_values=["lo"])


def test_impossible_values_are_skipped_and_unreachable_targets_are_infinite():
    # P(a = 2) = 0: that value is no secret (Definition 1 needs P(s | θ) ≠ 0)
    net = DiscreteBayesNet(
        {"a": [0, 1, 2], "b": [0, 1]},
        {"b": ["a"]},
        {"a": [0.5, 0.5, 0.0], "b": [[0.5, 0.5], [0.25, 0.75], [1.0, 0.0]]},
    )
    assert max_influence(net, "a", ["b"]).value == pytest.approx(math.log(2.0))
    # b = 1 impossible when a = 0 but possible when a = 1: infinite influence
    det = DiscreteBayesNet(
        {"a": [0, 1], "b": [0, 1]}, {"b": ["a"]}, {"a": [0.5, 0.5], "b": [[1.0, 0.0], [0.5, 0.5]]}
    )
    assert math.isinf(max_influence(det, "a", ["b"]).value)


def test_secret_no_distribution_can_produce_is_an_error():
    net = DiscreteBayesNet(
        {"a": [0, 1, 2], "b": [0, 1]},
        {"b": ["a"]},
        {"a": [1.0, 0.0, 0.0], "b": [[0.5, 0.5], [0.25, 0.75], [0.5, 0.5]]},
    )
    with pytest.raises(DistPrivacyError, match=r"no network in Θ gives two protected values"):
        max_influence(net, "a", ["b"])
    with pytest.raises(DistPrivacyError, match=r"impossible under every θ: \[1, 2\]"):
        AttributeQuiltMechanism(net, query="count:b>0", secrets="a", epsilon=1.0)


@pytest.mark.parametrize("seed", range(3))
def test_max_influence_is_monotone_in_the_target_set(seed):
    net = random_network(20 + seed, m=6)
    secret, rest = net.names[0], net.names[1:]
    for small in itertools.combinations(rest, 2):
        big = (*small, next(v for v in rest if v not in small))
        assert max_influence(net, secret, small).value <= (
            max_influence(net, secret, big).value + 1e-12
        )


# ------------------------------------------------------------------ quilts
@pytest.mark.parametrize("seed", range(5))
def test_quilts_separate_exactly_and_are_maximal(seed):
    """R ⊥ X_i | X_Q by enumeration, and every nearby node is dependent on X_i (generic CPTs),
    so no remote set could be larger."""
    net = random_network(200 + seed, m=5, edge_p=0.6)
    secret = net.names[seed % 5]
    quilts = markov_quilts(net, secret)
    assert quilts[0].trivial
    assert len(quilts) == 2 ** (len(net.names) - 1)  # every subset once (no query: no pruning)
    for q in quilts:
        assert set(q.quilt) | set(q.nearby) | set(q.remote) == set(net.names)
        assert secret in q.nearby and not set(q.quilt) & set(q.remote)
        if q.remote:
            assert brute_independent(net, secret, q.remote, q.quilt) < 1e-12
        if q.quilt or q.remote:  # (the trivial quilt keeps everything nearby by definition)
            for v in q.nearby:
                if v != secret:
                    assert brute_independent(net, secret, [v], q.quilt) > 1e-9


def test_quilt_errors():
    big = random_network(1, m=18, edge_p=0.1)
    with pytest.raises(DistPrivacyError, match=r"2\^17 subsets; pin a quilt"):
        markov_quilts(big, "x0")
    net = random_network(1)
    with pytest.raises(DistPrivacyError, match="cannot contain 'x0' itself"):
        quilt_for(net, "x0", ["x0"])
    with pytest.raises(DistPrivacyError, match="unknown quilt node 'zz'"):
        quilt_for(net, "x0", ["zz"])


# ------------------------------------------------------------------ calibration vs brute force
def brute_force_scale(nets, secret, attributes, epsilon, n):
    """Algorithm 2 with no pruning: b = min(Δ_A F/ε, min over every Q with e < ε of
    Δ_{A∩N}F/(ε − e)), R the nodes numerically independent of X_i given X_Q."""
    net = nets[0]
    others = [v for v in net.names if v != secret]
    best = n / epsilon if attributes else 0.0
    g_nonempty = False  # some quilt other than the trivial one has e < ε
    for size in range(len(others) + 1):
        for Q in itertools.combinations(others, size):
            R = [
                v
                for v in others
                if v not in Q and brute_independent(net, secret, [v], list(Q)) < 1e-12
            ]
            assert brute_independent(net, secret, R, list(Q)) < 1e-12
            N = set(net.names) - set(Q) - set(R)
            e = brute_influence(nets, secret, list(Q)) if Q else 0.0
            if e >= epsilon:
                continue
            g_nonempty = g_nonempty or bool(Q or R)
            sens = n if set(attributes) & N else 0
            best = min(best, 0.0 if sens == 0 else sens / (epsilon - e))
    return best, g_nonempty


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_calibrated_scale_equals_unpruned_brute_force(seed):
    net = random_network(300 + seed, m=5, edge_p=0.5)
    nets = [net, perturbed(net, seed)]
    rng = np.random.default_rng(seed)
    secret = net.names[int(rng.integers(5))]
    others = [v for v in net.names if v != secret]
    attrs = list(rng.choice(others, size=1 + seed % 2, replace=False))
    query = CountQuery(tuple(Predicate(a, ">", 0) for a in attrs))
    for eps in (0.005, 0.05, 0.3, 1.0, 3.0):
        cal = AttributeQuiltMechanism(nets, query=query, secrets=secret, epsilon=eps).calibrate(40)
        want, g_nonempty = brute_force_scale(nets, secret, attrs, eps, 40)
        assert cal.scale == pytest.approx(want, rel=1e-9, abs=1e-12)
        assert cal.secrets[0].fallback_used == (not g_nonempty)
        for cand in cal.secrets[0].candidates:
            if cand.status == "pruned":  # pruned by monotonicity: really infeasible
                e = brute_influence(nets, secret, list(cand.quilt.quilt))
                assert e >= eps


# ------------------------------------------------------------------ the school example
N_SCHOOL = 200


def school_influence(targets):
    return brute_influence(school_networks(), "income", targets)


def test_school_graph_reads_example_1():
    net = school_networks()[0]
    q = quilt_for(net, "income", ["gender"])
    # Example 1: Q = {gndr}, N = {i, s}, R = {h, w}
    assert set(q.nearby) == {"income", "sat"} and set(q.remote) == {"height", "weight"}


def test_school_height_count_is_released_without_noise():
    """Example 1: F = #students taller than 66 in; A ∩ N = ∅ for Q = {gndr}: no noise."""
    nets = school_networks()
    mech = AttributeQuiltMechanism(nets, query="count:height>66", secrets="income", epsilon=1.0)
    cal = mech.calibrate(N_SCHOOL)
    assert cal.scale == 0.0 and cal.noise.family == "none"
    gender = next(c for c in cal.secrets[0].candidates if c.quilt.quilt == ("gender",))
    assert gender.status == "feasible" and gender.sensitivity == 0 and gender.scale == 0
    assert gender.max_influence.value == pytest.approx(school_influence(["gender"]))
    data, _ = sample_school_records(N_SCHOOL, random_state=3)
    with pytest.raises(ExactReleaseError, match="allow_exact"):
        mech.release(data, random_state=4)
    rel = mech.release(data, random_state=4, allow_exact=True)
    assert rel.value == float((data["height"] > 66).sum())
    # the paper's own quilt pinned: also no noise
    pinned = AttributeQuiltMechanism(
        nets, query="count:height>66", secrets="income", epsilon=1.0, quilts={"income": ["gender"]}
    )
    assert pinned.calibrate(N_SCHOOL).scale == 0.0


def test_school_sat_count_adds_noise_scaled_to_gender_influence():
    """Example 1: adding SAT > 1300 makes A ∩ N = {s}; with the quilt Q = {gndr} the noise is
    Lap(Δ_{s}F / (ε − e_Θ(X_gndr | X_i))), Δ_{s}F = n for a count."""
    nets = school_networks()
    eps = 1.0
    e_gender = school_influence(["gender"])
    assert e_gender == pytest.approx(math.log(1.8))  # the CPTs' design: 0.18 / 0.10 under θ_strong
    mech = AttributeQuiltMechanism(
        nets,
        query="count:height>66&sat>1300",
        secrets="income",
        epsilon=eps,
        quilts={"income": ["gender"]},
    )
    cal = mech.calibrate(N_SCHOOL)
    chosen = cal.secrets[0].chosen
    assert chosen.sensitivity == N_SCHOOL  # Δ_{s}F = n
    assert set(cal.attributes) & set(chosen.quilt.nearby) == {"sat"}
    assert cal.scale == pytest.approx(N_SCHOOL / (eps - e_gender), rel=1e-12)
    assert chosen.max_influence.network == "θ_strong"  # the sup over Θ is attained there
    # Algorithm 2 itself takes the smallest b_i; for a count Δ_{s}F = Δ_{h,s}F = n, so the
    # whole-network bound n/ε beats n/(ε − e) and is what the unpinned mechanism uses.
    auto = AttributeQuiltMechanism(
        nets, query="count:height>66&sat>1300", secrets="income", epsilon=eps
    ).calibrate(N_SCHOOL)
    assert auto.scale == pytest.approx(N_SCHOOL / eps)
    assert auto.secrets[0].chosen.quilt.trivial and not auto.secrets[0].fallback_used
    listed = next(c for c in auto.secrets[0].candidates if c.quilt.quilt == ("gender",))
    assert listed.scale == pytest.approx(cal.scale)
    # SAT depends strongly on income: every quilt holding sat is infeasible at ε = 1
    for c in auto.secrets[0].candidates:
        if "sat" in c.quilt.quilt:
            assert c.status in ("infeasible", "pruned")
            assert school_influence(list(c.quilt.quilt)) >= eps


# ------------------------------------------------------------------ refusals and fallback
def test_no_quilt_below_epsilon_falls_back_or_refuses():
    nets = school_networks()
    eps = 0.04  # below every non-trivial quilt's max-influence (smallest: e(weight | income))
    singles = {v: school_influence([v]) for v in ("sat", "gender", "height", "weight")}
    assert min(singles.values()) == singles["weight"] > eps
    mech = AttributeQuiltMechanism(nets, query="count:height>66", secrets="income", epsilon=eps)
    cal = mech.calibrate(N_SCHOOL)
    sc = cal.secrets[0]
    assert sc.fallback_used and sc.chosen.quilt.trivial
    assert cal.scale == pytest.approx(N_SCHOOL / eps)
    assert cal.warnings and "fell back to the whole-network bound" in cal.warnings[0]
    assert f"smallest {singles['weight']:.6g} for Q={{weight}}" in cal.warnings[0]
    # at ε = 0.5 the quilt Q={height} (e ≈ 0.07) exists, so the SAT count's whole-network
    # bound is Algorithm 2's minimum, not a fallback
    sat = AttributeQuiltMechanism(
        nets, query="count:sat>1300", secrets="income", epsilon=0.5
    ).calibrate(N_SCHOOL)
    assert sat.secrets[0].chosen.quilt.trivial and not sat.secrets[0].fallback_used
    assert not sat.warnings
    strict = AttributeQuiltMechanism(
        nets, query="count:height>66", secrets="income", epsilon=eps, fallback=False
    )
    with pytest.raises(
        DistPrivacyError, match=r"no Markov quilt of 'income' has max-influence"
    ) as e:
        strict.calibrate(N_SCHOOL)
    assert "\n" not in str(e.value)


def test_pinned_quilt_above_epsilon_is_refused():
    mech = AttributeQuiltMechanism(
        school_networks(),
        query="count:height>66",
        secrets="income",
        epsilon=1.0,
        quilts={"income": ["sat"]},
    )
    with pytest.raises(DistPrivacyError, match=r"pinned quilt Q=\{sat\} .* ≥ ε = 1"):
        mech.calibrate(N_SCHOOL)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"epsilon": 0}, "epsilon must be a positive number"),
        ({"epsilon": -1}, "epsilon must be a positive number"),
        ({"secrets": "shoe"}, "unknown secret attribute 'shoe'"),
        ({"query": "count:shoe>3"}, "the query reads 'shoe', which is not an attribute"),
        ({"query": "median:height"}, "cannot parse query"),
        ({"quilts": {"sat": ["gender"]}}, "a quilt is pinned for 'sat', which is not a secret"),
        ({"secret_values": {"income": [0.3, 0.5]}}, "secret value 0.3 is not a value"),
    ],
)
def test_bad_mechanism_inputs(kwargs, message):
    args = {"query": "count:height>66", "secrets": "income", "epsilon": 1.0, **kwargs}
    with pytest.raises(DistPrivacyError, match=message):
        AttributeQuiltMechanism(
            school_networks(),
            query=args.pop("query"),
            secrets=args.pop("secrets"),
            epsilon=args.pop("epsilon"),
            **args,
        )


def test_theta_must_share_one_graph():
    a = random_network(1)
    b = random_network(2)
    with pytest.raises(DistPrivacyError, match="must share one graph"):
        max_influence([a, b], "x0", ["x1"])


def test_secret_values_restrict_the_pairs():
    nets = school_networks()
    full = max_influence(nets, "income", ["gender"]).value
    part = max_influence(nets, "income", ["gender"], secret_values=[0.2, 0.5]).value
    assert part <= full
    assert part == pytest.approx(math.log(0.12 / 0.10))  # 0.5 vs 0.2 under θ_strong, gender=0


def test_multiple_secrets_take_the_largest_scale():
    nets = school_networks()
    mech = AttributeQuiltMechanism(
        nets, query="count:height>66", secrets=["income", "gender"], epsilon=1.5
    )
    cal = mech.calibrate(N_SCHOOL)
    per = {s.secret: s.scale for s in cal.secrets}
    assert cal.scale == max(per.values()) and cal.binding_secret == max(per, key=per.get)
    assert per["income"] == 0.0 and per["gender"] > 0  # height is a child of gender


def test_queries_and_release_errors():
    q = parse_column_query("mean:height[50,80]")
    assert isinstance(q, SumQuery) and q.column_sensitivity(["height"], 10) == 30
    assert parse_column_query("sum:height[50,80]").column_sensitivity(["height"], 10) == 300
    assert q.column_sensitivity(["sat"], 10) == 0
    with pytest.raises(DistPrivacyError, match="range of 'h' is empty"):
        SumQuery("h", 3, 1)
    data, _ = sample_school_records(50, random_state=1)
    tight = AttributeQuiltMechanism(
        school_networks(), query="sum:height[65,66]", secrets="income", epsilon=1.0
    )
    with pytest.raises(DistPrivacyError, match="outside the declared range"):
        tight.release(data, random_state=0)
    mech = AttributeQuiltMechanism(
        school_networks(), query="count:height>66", secrets="income", epsilon=1.0
    )
    mech.calibrate(40)
    with pytest.raises(
        DistPrivacyError, match=r"calibrated for n = 40 records but the data has 50"
    ):
        mech.release(data, random_state=0)
    with pytest.raises(DistPrivacyError, match="n_records must be a positive integer"):
        mech.calibrate(0)


# ------------------------------------------------------------------ statistical tests
def _noise(eps=1.0, size=60_000, seed=11):
    nets = school_networks()
    mech = AttributeQuiltMechanism(
        nets,
        query="count:height>66&sat>1300",
        secrets="income",
        epsilon=eps,
        quilts={"income": ["gender"]},
    )
    data, _ = sample_school_records(N_SCHOOL, random_state=5)
    cal = mech.calibrate(N_SCHOOL)
    rel = mech.release(data, random_state=np.random.default_rng(seed), size=size)
    return cal, rel.values - mech.query.evaluate(data)


def test_released_noise_is_laplace_with_the_calibrated_scale():
    cal, z = _noise()
    assert cal.scale > 0
    # KS test at a tiny α: the calibrated Laplace law is not rejected
    assert stats.kstest(z, stats.laplace(scale=cal.scale).cdf).pvalue > 1e-4
    # E|Z| = b; the sample mean of |Z| has standard error b / √size
    assert abs(np.abs(z).mean() - cal.scale) < 5 * cal.scale / math.sqrt(z.size)
    # Theorem 4 (two-sided tail): P(|Z| > b ln(1/β)) = β
    beta = 0.05
    hits = int((np.abs(z) > cal.accuracy(beta)).sum())
    assert stats.binomtest(hits, z.size, beta).pvalue > 1e-4


def test_a_wrong_noise_scale_is_caught():
    cal, z = _noise()
    for wrong in (0.85 * cal.scale, 1.15 * cal.scale):
        assert stats.kstest(z, stats.laplace(scale=wrong).cdf).pvalue < 1e-6
    # the scale of the whole-network bound, n/ε (what Alg. 2 alone would use), is caught too
    assert stats.kstest(z, stats.laplace(scale=N_SCHOOL / 1.0).cdf).pvalue < 1e-6


def test_release_is_reproducible_and_secure_by_default():
    _, z1 = _noise(size=100, seed=3)
    _, z2 = _noise(size=100, seed=3)
    assert np.array_equal(z1, z2)
    mech = AttributeQuiltMechanism(
        school_networks(),
        query="count:height>66&sat>1300",
        secrets="income",
        epsilon=1.0,
        quilts={"income": ["gender"]},
    )
    data, _ = sample_school_records(N_SCHOOL, random_state=5)
    rel = mech.release(data)  # random_state=None: OpenDP's secure sampler
    assert rel.secure and np.isfinite(rel.value) and rel.value != mech.query.evaluate(data)


# ------------------------------------------------------------------ Theorem 3, exactly
def _school_count_pmfs(net, both: bool, n: int):
    """P(F(X) = k | φ_income = a, θ) for the school data model of sample_school_records:
    given φ, each record counts with probability P(height > 66 | φ_h) [· P(SAT > 1300 | φ_s)],
    so F | φ ~ Binomial(n, p(φ)); mix over φ given income (shape (|Φ_income|, n + 1))."""
    joint = net.joint()  # axes: income, sat, gender, height, weight
    dom = net.domains
    p_h = stats.norm.sf((66 - np.asarray(dom["height"])) / 3)
    p = np.asarray(dom["sat"])[:, None] * p_h[None, :] if both else np.tile(p_h, (3, 1))
    w = joint.sum(axis=(2, 4))  # (income, sat, height)
    w = w / w.sum(axis=(1, 2), keepdims=True)
    k = np.arange(n + 1)
    return (w[..., None] * stats.binom.pmf(k, n, p[..., None])[None]).sum(axis=(1, 2))


def _privacy_loss(pmf, scale, n):
    """max over pairs of secret values and outputs y of log f_a(y) / f_b(y), M = F + Lap(scale)."""
    if scale == 0:
        logf = np.log(pmf)
    else:
        y = np.linspace(-8 * scale, n + 8 * scale, 4001)
        lap = -np.abs(y[:, None] - np.arange(n + 1)[None, :]) / scale
        logf = special.logsumexp(lap[None] + np.log(pmf)[:, None, :], axis=2)
    return float((logf[:, None] - logf[None, :]).max())


def test_theorem_3_holds_exactly_on_the_school_example():
    n, eps = 50, 1.0
    nets = school_networks()
    height = AttributeQuiltMechanism(nets, query="count:height>66", secrets="income", epsilon=eps)
    pinned = AttributeQuiltMechanism(
        nets,
        query="count:height>66&sat>1300",
        secrets="income",
        epsilon=eps,
        quilts={"income": ["gender"]},
    )
    b = pinned.calibrate(n).scale
    assert height.calibrate(n).scale == 0
    e_height = school_influence(["height"])
    losses = []
    for net in nets:
        # the noiseless height count leaks at most e_Θ(X_height | X_income) (its quilt's bound)
        loss_h = _privacy_loss(_school_count_pmfs(net, False, n), 0.0, n)
        assert 0 < loss_h <= e_height + 1e-12
        losses.append(loss_h)
        both = _school_count_pmfs(net, True, n)
        assert _privacy_loss(both, b, n) <= eps
        # without the noise the SAT count is not ε-private: the calibration is not vacuous
        assert _privacy_loss(both, 0.0, n) > eps
    assert max(losses) == pytest.approx(e_height, rel=1e-6)  # the bound is attained (θ_strong)
