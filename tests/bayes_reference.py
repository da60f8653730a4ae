"""Reference pieces shared by the Bayesian-network and Markov-quilt tests: random discrete
networks and the joint distribution by brute-force enumeration (itertools, tests only)."""

from __future__ import annotations

import itertools

import numpy as np

from distprivacy.attribute.bayesnet import DiscreteBayesNet


def random_network(
    seed: int, m: int = 5, edge_p: float = 0.5, zeros: bool = False
) -> DiscreteBayesNet:
    """A random DAG (edges from earlier to later nodes) with Dirichlet(1) CPTs; with ``zeros``,
    the first row of every CPT with parents is deterministic, so zero probabilities appear."""
    rng = np.random.default_rng(seed)
    names = [f"x{k}" for k in range(m)]
    cards = rng.integers(2, 4, size=m)
    domains = {v: list(range(int(c))) for v, c in zip(names, cards, strict=True)}
    parents = {names[j]: [names[i] for i in range(j) if rng.random() < edge_p] for j in range(m)}
    cpts = {}
    for v in names:
        shape = (*(len(domains[p]) for p in parents[v]), len(domains[v]))
        t = rng.dirichlet(np.ones(shape[-1]), size=shape[:-1])
        if zeros and parents[v]:
            flat = t.reshape(-1, shape[-1])
            flat[0] = 0.0
            flat[0, 0] = 1.0
        cpts[v] = t
    return DiscreteBayesNet(domains, parents, cpts, name=f"random{seed}")


def brute_joint(net: DiscreteBayesNet) -> dict[tuple[int, ...], float]:
    """P(assignment) = Π P(v | parents) by enumerating every assignment."""
    out = {}
    for combo in itertools.product(*(range(len(net.domains[v])) for v in net.names)):
        a = dict(zip(net.names, combo, strict=True))
        p = 1.0
        for v in net.names:
            p *= float(net.cpts[v][(*(a[q] for q in net.parents[v]), a[v])])
        out[combo] = p
    return out
