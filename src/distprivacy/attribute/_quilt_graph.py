"""The class Θ of Bayesian networks, the exact max-influence (Definition 7) and the Markov
quilts (Definition 6) of Zhang, Ohrimenko & Cummings (FAccT 2022, §5).

Part of :mod:`distprivacy.attribute.markov_quilt` (every name is importable from there).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from distprivacy.attribute.bayesnet import DiscreteBayesNet
from distprivacy.exceptions import DistPrivacyError

#: Largest number of non-secret nodes whose subsets are enumerated as candidate quilts.
MAX_ENUMERATED_NODES = 16


# ---------------------------------------------------------------------------- class Θ
def as_network_class(networks: DiscreteBayesNet | Sequence[DiscreteBayesNet]) -> tuple:
    """Θ as a non-empty tuple of networks over one graph (same nodes, domains and edges)."""
    nets = (networks,) if isinstance(networks, DiscreteBayesNet) else tuple(networks)
    if not nets:
        raise DistPrivacyError("the class Θ is empty; give at least one network")
    for k, net in enumerate(nets):
        if not isinstance(net, DiscreteBayesNet):
            raise DistPrivacyError(f"Θ[{k}] is a {type(net).__name__}, not a DiscreteBayesNet")
        if not nets[0].same_structure(net):
            raise DistPrivacyError(
                f"Θ[{k}] has other nodes, domains or edges than Θ[0]; the networks of Θ must "
                "share one graph and differ only in their CPTs"
            )
    return nets


# ---------------------------------------------------------------------------- max-influence
@dataclass(frozen=True)
class Influence:
    """A max-influence e_Θ(X_A | X_i) and where the supremum is attained.

    Attributes
    ----------
    value : float
        The max-influence (nats); 0 for an empty X_A; +inf when some φ_A is possible under one
        value of φ_i and impossible under another.
    network : str or None
        Name (or index) of the θ ∈ Θ attaining it.
    secret_values : tuple or None
        (a, b): the values of φ_i in the numerator and the denominator.
    target_values : dict or None
        The φ_A attaining it.
    """

    value: float
    network: str | None = None
    secret_values: tuple[Any, Any] | None = None
    target_values: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "network": self.network,
            "secret_values": None if self.secret_values is None else list(self.secret_values),
            "target_values": self.target_values,
        }


def _secret_mask(net: DiscreteBayesNet, secret: str, secret_values: Sequence[Any] | None):
    dom = net.domains[secret]
    if secret_values is None:
        return np.ones(len(dom), dtype=bool)
    labels = [str(v) for v in dom]
    mask = np.zeros(len(dom), dtype=bool)
    for v in secret_values:
        if str(v) not in labels:
            raise DistPrivacyError(
                f"secret value {v!r} is not a value of {secret!r}; its values are {list(dom)}"
            )
        mask[labels.index(str(v))] = True
    if mask.sum() < 2:
        raise DistPrivacyError(
            f"give at least two distinct secret values of {secret!r} (a secret pair)"
        )
    return mask


def check_secret(
    networks: DiscreteBayesNet | Sequence[DiscreteBayesNet],
    secret: str,
    secret_values: Sequence[Any] | None = None,
) -> None:
    """Raise unless some θ ∈ Θ gives two protected values of φ_i positive probability.

    Pufferfish privacy (Definition 1) compares only secrets with P(s | θ) ≠ 0; when no θ can
    produce two of them, there is nothing to protect and the request is an error.
    """
    nets = as_network_class(networks)
    nets[0].check_nodes([secret], "secret attribute")
    mask = _secret_mask(nets[0], secret, secret_values)
    dom = nets[0].domains[secret]
    possible = np.zeros(len(dom), dtype=bool)
    for net in nets:
        p = net.marginal([secret])
        if ((p > 0) & mask).sum() >= 2:
            return
        possible |= p > 0
    never = [dom[k] for k in np.flatnonzero(mask & ~possible)]
    raise DistPrivacyError(
        f"no network in Θ gives two protected values of {secret!r} positive probability "
        f"(impossible under every θ: {never}); no secret pair can occur — fix Θ or the secrets"
    )


def max_influence(
    networks: DiscreteBayesNet | Sequence[DiscreteBayesNet],
    secret: str,
    targets: Iterable[str],
    *,
    secret_values: Sequence[Any] | None = None,
) -> Influence:
    """Exact max-influence e_Θ(X_A | X_i) of Definition 7 for discrete networks.

    For each θ: the table P(φ_A | φ_i) (one row per value of φ_i with positive probability
    under θ, restricted to ``secret_values`` when given), then, per column φ_A, the largest
    log(max over rows / min over rows); the supremum over θ ∈ Θ.

    Parameters
    ----------
    networks : DiscreteBayesNet or sequence of them
        Θ (one graph, CPTs may differ).
    secret : str
        The sensitive attribute i.
    targets : iterable of str
        X_A (e.g. a Markov quilt X_Q). Empty gives 0.
    secret_values : sequence, optional
        The values of φ_i whose pairs are protected (default: all of Φ_i, as in Definition 7).

    Returns
    -------
    Influence
    """
    nets = as_network_class(networks)
    net0 = nets[0]
    (secret,) = net0.check_nodes([secret], "secret attribute")
    targets = tuple(net0.check_nodes(targets))
    if secret in targets:
        raise DistPrivacyError(f"the max-influence of {secret!r} on itself is not defined")
    check_secret(nets, secret, secret_values)
    mask = _secret_mask(net0, secret, secret_values)
    dom = net0.domains[secret]
    # One array over Θ: P[t, a, φ_A] = P(φ_i = a, φ_A | θ_t), shape (|Θ|, |Φ_i|, |Φ_A|).
    P = np.stack([net.marginal([secret, *targets]).reshape(len(dom), -1) for net in nets])
    p = P.sum(axis=2)
    valid = (p > 0) & mask  # values of φ_i that are secrets under θ_t
    usable = valid.sum(axis=1) >= 2  # θ_t produces at least one secret pair
    with np.errstate(divide="ignore", invalid="ignore"):
        cond = P / np.where(p > 0, p, 1.0)[:, :, None]
        hi = np.where(valid[:, :, None], cond, -np.inf).max(axis=1)
        lo = np.where(valid[:, :, None], cond, np.inf).min(axis=1)
        ratio = np.where(hi > 0, np.log(hi) - np.log(lo), -np.inf)  # lo = 0 < hi: +inf
    ratio[~usable] = -np.inf
    t, j = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    rows = np.where(valid[t], cond[t, :, j], np.nan)
    cell = np.unravel_index(int(j), tuple(len(net0.domains[x]) for x in targets))
    return Influence(
        value=max(float(ratio[t, j]), 0.0),
        network=nets[t].name or str(t),
        secret_values=(dom[int(np.nanargmax(rows))], dom[int(np.nanargmin(rows))]),
        target_values={x: net0.domains[x][int(c)] for x, c in zip(targets, cell, strict=True)},
    )


# ---------------------------------------------------------------------------- Markov quilts
@dataclass(frozen=True)
class MarkovQuilt:
    """A Markov quilt (X_Q, X_N, X_R) of a secret attribute X_i (Definition 6).

    ``remote`` is the largest set d-separated from ``secret`` given ``quilt`` (a larger remote
    set only lowers the sensitivity Δ_{A∩N}F, so smaller ones are never better).
    """

    secret: str
    quilt: tuple[str, ...]
    nearby: tuple[str, ...]
    remote: tuple[str, ...]

    @property
    def trivial(self) -> bool:
        """The whole-network quilt: X_Q = ∅, X_N = every node, X_R = ∅."""
        return not self.quilt and not self.remote

    def label(self) -> str:
        if self.trivial:
            return "trivial (Q = ∅, N = all)"
        return "Q={" + ", ".join(self.quilt) + "}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "secret": self.secret,
            "quilt": list(self.quilt),
            "nearby": list(self.nearby),
            "remote": list(self.remote),
            "trivial": self.trivial,
        }


def trivial_quilt(network: DiscreteBayesNet, secret: str) -> MarkovQuilt:
    """The whole-network bound: X_Q = ∅, X_N = all nodes, X_R = ∅."""
    (secret,) = network.check_nodes([secret], "secret attribute")
    return MarkovQuilt(secret, (), network.names, ())


def quilt_for(network: DiscreteBayesNet, secret: str, quilt: Iterable[str]) -> MarkovQuilt:
    """The Markov quilt with quilt set ``quilt`` and the largest remote set it separates."""
    (secret,) = network.check_nodes([secret], "secret attribute")
    q = set(network.check_nodes(quilt, "quilt node"))
    if secret in q:
        raise DistPrivacyError(f"a Markov quilt of {secret!r} cannot contain {secret!r} itself")
    near = network.reachable(secret, q) | {secret}
    order = network.names
    return MarkovQuilt(
        secret,
        tuple(v for v in order if v in q),
        tuple(v for v in order if v in near),
        tuple(v for v in order if v not in near and v not in q),
    )


def markov_quilts(
    network: DiscreteBayesNet,
    secret: str,
    *,
    queried: Iterable[str] | None = None,
) -> list[MarkovQuilt]:
    """Enumerate the Markov quilts of ``secret``, smallest quilt sets first.

    Every subset X_Q of the other nodes, each with its largest remote set. With ``queried``
    (the query's attributes A), quilts dominated for that query are pruned: X_Q is dropped when
    some v ∈ X_Q outside A can leave the quilt while X_R stays separated — X_Q \\ {v} then has
    max-influence no larger (marginalising can only shrink the log-ratio) and the same or a
    smaller A ∩ N, so it is never worse. The trivial quilt is always first.
    """
    (secret,) = network.check_nodes([secret], "secret attribute")
    others = [v for v in network.names if v != secret]
    if len(others) > MAX_ENUMERATED_NODES:
        raise DistPrivacyError(
            f"{len(others)} candidate quilt nodes give 2^{len(others)} subsets; pin a quilt "
            f"(quilts=...) when the network has more than {MAX_ENUMERATED_NODES + 1} nodes"
        )
    A = None if queried is None else set(network.check_nodes(queried, "queried attribute"))
    out = [trivial_quilt(network, secret)]
    cache: dict[frozenset, MarkovQuilt] = {}

    def get(qs: frozenset) -> MarkovQuilt:
        if qs not in cache:
            cache[qs] = quilt_for(network, secret, qs)
        return cache[qs]

    for size in range(len(others) + 1):
        for qs in itertools.combinations(others, size):
            quilt = get(frozenset(qs))
            if quilt.trivial:
                continue  # Q = ∅ separating nothing is the trivial quilt, already listed
            if A is not None and any(
                v not in A and set(quilt.remote) <= set(get(frozenset(qs) - {v}).remote) for v in qs
            ):
                continue
            out.append(quilt)
    return out
