"""The Attribute-Private Markov Quilt Mechanism (Zhang, Ohrimenko & Cummings, FAccT 2022, §5).

Distributional attribute privacy (Definition 5) hides the parameter φ_i that governs a sensitive
attribute's distribution. The parameters form a Bayesian network
(:class:`~distprivacy.attribute.bayesnet.DiscreteBayesNet`); Θ is a finite class of such networks
sharing one graph. The pieces of Algorithm 2:

* **max-influence** (Definition 7), exact for discrete networks::

      e_Θ(X_A | X_i) = sup_{θ ∈ Θ} max_{a, b ∈ Φ_i} max_{φ_A}
                           log P(φ_A | φ_i = a, θ) / P(φ_A | φ_i = b, θ)

  (values a, b of φ_i with probability zero under θ are no secret under θ — Definition 1 only
  compares secrets with P(s | θ) ≠ 0 — and are skipped; a φ_A possible under a but not under b
  gives +∞);
* **Markov quilts** (Definition 6): X_Q whose removal splits the rest into X_N ∋ X_i and X_R with
  φ_R ⊥ φ_i | φ_Q, read off the graph by d-separation;
* **Δ_{A∩N}F**: the largest change of F when the columns of the queried attributes that lie in
  X_N change arbitrarily (A-column neighbours, §5.1);
* the **release** F(X) + Lap(max_{i ∈ C} b_i), b_i the smallest Δ_{A∩N}F / (ε − e_Θ(X_Q | X_i))
  over the quilts with e_Θ(X_Q | X_i) < ε, and at most Δ_A F / ε (the whole-network bound, the
  trivial quilt X_Q = ∅, X_N = everything, which Algorithm 2 starts from).

Theorem 3: the mechanism is (ε, 0)-distributional attribute private. Theorem 4 (accuracy): the
release is within α = b·ln(1/β) of F(X) with probability 1 − β (:meth:`QuiltCalibration.accuracy`;
see docs/markov_quilt.md for how this reads the paper's statement).
"""

from __future__ import annotations

import itertools
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import special

from distprivacy.accounting import check_epsilon
from distprivacy.attribute.bayesnet import DiscreteBayesNet, discretized_normal_cpt
from distprivacy.exceptions import DistPrivacyError
from distprivacy.noise import NoiseDistribution
from distprivacy.randomness import RandomState, check_random_state
from distprivacy.spec import Predicate, check_column

THEOREM = (
    "Zhang, Ohrimenko & Cummings (FAccT 2022), Algorithm 2 (Attribute-Private Markov Quilt "
    "Mechanism), Theorem 3: (ε, 0)-distributional attribute privacy"
)
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


# ---------------------------------------------------------------------------- queries
class ColumnQuery(ABC):
    """A real-valued query F(X) over some attributes' columns, with its column sensitivity."""

    name: str

    @property
    @abstractmethod
    def attributes(self) -> tuple[str, ...]:
        """A: the attributes (columns) F reads."""

    @abstractmethod
    def evaluate(self, data: pd.DataFrame) -> float:
        """F(X) of a dataset."""

    @abstractmethod
    def column_sensitivity(self, columns: Iterable[str], n_records: int) -> float:
        """Δ_S F: the largest |F(X) − F(X')| over size-n datasets identical outside columns S."""


@dataclass(frozen=True)
class CountQuery(ColumnQuery):
    """F(X) = Σ_j 1[every condition holds for record j] (the school example's counts).

    Δ_S F = n when S meets the conditions' columns, else 0: changing one queried column can turn
    every record from satisfying the conjunction to not (each condition is assumed satisfiable and
    falsifiable on its column's domain, true for thresholds on numeric columns).
    """

    conditions: tuple[Predicate, ...]

    def __post_init__(self) -> None:
        if not self.conditions:
            raise DistPrivacyError("a count query needs at least one condition, e.g. height>66")

    @property
    def name(self) -> str:  # type: ignore[override]
        return "count:" + "&".join(str(c) for c in self.conditions)

    @property
    def attributes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.column for c in self.conditions))

    def evaluate(self, data: pd.DataFrame) -> float:
        mask = np.ones(len(data), dtype=bool)
        for c in self.conditions:
            mask &= c.evaluate(data)
        return float(mask.sum())

    def column_sensitivity(self, columns: Iterable[str], n_records: int) -> float:
        return float(n_records) if set(columns) & set(self.attributes) else 0.0


@dataclass(frozen=True)
class SumQuery(ColumnQuery):
    """F(X) = Σ_j X_col^j (or the mean) of a column whose values lie in [lower, upper].

    Δ_S F = n·(upper − lower) (sum) or upper − lower (mean) when col ∈ S, else 0. Values outside
    the declared range are an error at release (never clipped).
    """

    column: str
    lower: float
    upper: float
    mean: bool = False

    def __post_init__(self) -> None:
        if not (math.isfinite(self.lower) and math.isfinite(self.upper)):
            raise DistPrivacyError(f"the range of {self.column!r} must be finite")
        if self.upper <= self.lower:
            raise DistPrivacyError(
                f"the range of {self.column!r} is empty: [{self.lower}, {self.upper}]; "
                "write [LOW,HIGH] with LOW < HIGH"
            )

    @property
    def name(self) -> str:  # type: ignore[override]
        kind = "mean" if self.mean else "sum"
        return f"{kind}:{self.column}[{self.lower:g},{self.upper:g}]"

    @property
    def attributes(self) -> tuple[str, ...]:
        return (self.column,)

    def evaluate(self, data: pd.DataFrame) -> float:
        check_column(data, self.column)
        col = data[self.column]
        if not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
            raise DistPrivacyError(f"{self.name} needs a numeric column {self.column!r}")
        x = col.to_numpy(dtype=float)
        bad = ~np.isfinite(x) | (x < self.lower) | (x > self.upper)
        if bad.any():
            raise DistPrivacyError(
                f"{int(bad.sum())} values of {self.column!r} are missing or outside the declared "
                f"range [{self.lower:g}, {self.upper:g}]; widen the range (never clipped)"
            )
        if len(x) == 0:
            raise DistPrivacyError(f"cannot compute {self.name} of an empty dataset")
        return float(x.mean() if self.mean else x.sum())

    def column_sensitivity(self, columns: Iterable[str], n_records: int) -> float:
        if self.column not in set(columns):
            return 0.0
        width = self.upper - self.lower
        return float(width if self.mean else n_records * width)


_SUM_RE = re.compile(
    r"^(sum|mean):\s*([^\[\]]+?)\s*\[\s*([-+0-9.eE]+)\s*,\s*([-+0-9.eE]+)\s*\]\s*$"
)


def parse_column_query(text: str) -> ColumnQuery:
    """``count:height>66&sat>1300``, ``sum:weight[80,300]`` or ``mean:weight[80,300]``."""
    text = (text or "").strip()
    if text.startswith("count:"):
        parts = [p for p in text[len("count:") :].split("&")]
        if not all(p.strip() for p in parts):
            raise DistPrivacyError(
                f"empty condition in {text!r}; write count:COND&COND, e.g. count:height>66&sat>1300"
            )
        return CountQuery(tuple(Predicate.parse(p) for p in parts))
    m = _SUM_RE.match(text)
    if m:
        try:
            lo, hi = float(m.group(3)), float(m.group(4))
        except ValueError:
            raise DistPrivacyError(f"cannot read the range in {text!r}") from None
        return SumQuery(m.group(2), lo, hi, mean=m.group(1) == "mean")
    raise DistPrivacyError(
        f"cannot parse query {text!r}; write count:COND&COND (e.g. count:height>66&sat>1300), "
        "sum:COL[LOW,HIGH] or mean:COL[LOW,HIGH]"
    )


# ---------------------------------------------------------------------------- calibration
@dataclass(frozen=True)
class QuiltCandidate:
    """One Markov quilt considered for a secret, with its numbers.

    status is ``"feasible"`` (e < ε; scale = Δ_{A∩N}F / (ε − e)), ``"infeasible"`` (e ≥ ε),
    ``"pruned"`` (contains a quilt already found infeasible, so e ≥ ε by monotonicity) or
    ``"trivial"`` (the whole-network bound Δ_A F / ε).
    """

    quilt: MarkovQuilt
    status: str
    sensitivity: float
    max_influence: Influence | None
    scale: float | None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.quilt.to_dict(),
            "status": self.status,
            "sensitivity": self.sensitivity,
            "max_influence": None if self.max_influence is None else self.max_influence.value,
            "influence_witness": None
            if self.max_influence is None
            else self.max_influence.to_dict(),
            "scale": self.scale,
            "note": self.note,
        }


@dataclass(frozen=True)
class SecretCalibration:
    """Algorithm 2's b_i for one sensitive attribute i: the quilt chosen and every candidate."""

    secret: str
    chosen: QuiltCandidate
    candidates: tuple[QuiltCandidate, ...]
    fallback_used: bool
    pinned: bool
    reason: str

    @property
    def scale(self) -> float:
        """b_i."""
        return float(self.chosen.scale)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, Any]:
        return {
            "secret": self.secret,
            "scale": self.scale,
            "chosen": self.chosen.to_dict(),
            "fallback_used": self.fallback_used,
            "pinned": self.pinned,
            "reason": self.reason,
            "candidates": [c.to_dict() for c in self.candidates],
        }


@dataclass(frozen=True)
class QuiltCalibration:
    """Everything the release will do, inspectable before any noise is drawn.

    Attributes
    ----------
    epsilon : float
    n_records : int
    query : str
    attributes : tuple of str
        A.
    secrets : tuple of SecretCalibration
        One per i ∈ C.
    scale : float
        The Laplace scale max_{i ∈ C} b_i (0: F(X) is released as it is).
    binding_secret : str
        The i attaining the maximum.
    theorem : str
    warnings : tuple of str
    """

    epsilon: float
    n_records: int
    query: str
    attributes: tuple[str, ...]
    secrets: tuple[SecretCalibration, ...]
    scale: float
    binding_secret: str
    theorem: str = THEOREM
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def noise(self) -> NoiseDistribution:
        """The noise Z: Lap(0, scale), or none when the scale is 0."""
        if self.scale == 0:
            return NoiseDistribution.none(1)
        return NoiseDistribution.isotropic("laplace", 1, self.scale)

    def accuracy(self, beta: float) -> float:
        """α with P(|M(X) − F(X)| > α) = β (Theorem 4's accuracy, two-sided Laplace tail).

        α = b·ln(1/β) for Z ~ Lap(b), since P(|Z| > α) = exp(−α/b); 0 when b = 0.
        """
        if not (0 < beta < 1):
            raise DistPrivacyError(f"beta must be in (0, 1), got {beta}")
        return float(self.scale * math.log(1.0 / beta))

    @property
    def expected_abs_error(self) -> float:
        """E|Z| = b for Z ~ Lap(b)."""
        return float(self.scale)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": "attribute-private Markov quilt",
            "theorem": self.theorem,
            "epsilon": self.epsilon,
            "delta": 0.0,
            "n_records": self.n_records,
            "query": self.query,
            "attributes": list(self.attributes),
            "scale": self.scale,
            "binding_secret": self.binding_secret,
            "noise": "none" if self.scale == 0 else f"Laplace(0, {self.scale:.6g})",
            "expected_abs_error": self.expected_abs_error,
            "accuracy_alpha_beta_0.05": self.accuracy(0.05),
            "warnings": list(self.warnings),
            "secrets": [s.to_dict() for s in self.secrets],
        }


@dataclass(frozen=True)
class QuiltRelease:
    """A release M(X) = F(X) + Z (``value`` is an array when several were drawn)."""

    value: float | np.ndarray
    scale: float
    secure: bool
    calibration: QuiltCalibration


def _fmt(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.6g}"


class AttributeQuiltMechanism:
    """The Attribute-Private Markov Quilt Mechanism (Zhang, Ohrimenko & Cummings 2022, Alg. 2).

    Theorem 3: (ε, 0)-distributional attribute privacy for the framework whose secrets are the
    values of φ_i, i ∈ C (all pairs of ``secret_values``, default all of Φ_i) and whose Θ is
    ``networks``. Theorem 4: accuracy b·ln(1/β) (:meth:`QuiltCalibration.accuracy`).

    For each sensitive attribute i, b_i starts at the whole-network bound Δ_A F / ε (the
    trivial quilt) and is lowered to Δ_{A∩N}F / (ε − e_Θ(X_Q | X_i)) for every Markov quilt with
    e_Θ(X_Q | X_i) < ε; the release adds Lap(max_i b_i).

    Parameters
    ----------
    networks : DiscreteBayesNet or sequence of them
        The class Θ of Bayesian networks over the attributes' parameters.
    query : ColumnQuery or str
        F (a string is parsed by :func:`parse_column_query`); its attributes must be nodes.
    secrets : str or sequence of str
        C, the sensitive attributes.
    epsilon : float
        ε > 0.
    quilts : mapping secret → sequence of node names, optional
        Pin the quilt X_Q of a secret (as the paper's Example 1 does) instead of searching; a
        pinned quilt with max-influence ≥ ε is an error.
    secret_values : mapping secret → sequence, optional
        Values of φ_i whose pairs are protected (default every value).
    fallback : bool, default True
        When no Markov quilt (other than the trivial one) has max-influence below ε, use the
        whole-network bound Δ_A F / ε as Algorithm 2 does and say so in the calibration's
        warnings; False refuses with an error instead.

    Attributes
    ----------
    calibration_ : QuiltCalibration
        Set by :meth:`calibrate`.
    """

    def __init__(
        self,
        networks: DiscreteBayesNet | Sequence[DiscreteBayesNet],
        *,
        query: ColumnQuery | str,
        secrets: str | Sequence[str],
        epsilon: float,
        quilts: Mapping[str, Sequence[str]] | None = None,
        secret_values: Mapping[str, Sequence[Any]] | None = None,
        fallback: bool = True,
    ) -> None:
        self.networks = as_network_class(networks)
        net = self.networks[0]
        self.query = parse_column_query(query) if isinstance(query, str) else query
        if not isinstance(self.query, ColumnQuery):
            raise DistPrivacyError("query must be a ColumnQuery or a query string")
        for a in self.query.attributes:
            if a not in net.names:
                raise DistPrivacyError(
                    f"the query reads {a!r}, which is not an attribute of the network "
                    f"(attributes: {', '.join(net.names)})"
                )
        secrets = (secrets,) if isinstance(secrets, str) else tuple(secrets)
        if not secrets:
            raise DistPrivacyError("give at least one sensitive attribute (secret)")
        if len(set(secrets)) != len(secrets):
            raise DistPrivacyError(f"a secret attribute is repeated: {list(secrets)}")
        self.secrets = net.check_nodes(secrets, "secret attribute")
        self.epsilon = check_epsilon(epsilon)
        self.quilts = {str(k): tuple(v) for k, v in (quilts or {}).items()}
        for s in self.quilts:
            if s not in self.secrets:
                raise DistPrivacyError(
                    f"a quilt is pinned for {s!r}, which is not a secret "
                    f"({', '.join(self.secrets)})"
                )
        self.secret_values = {str(k): tuple(v) for k, v in (secret_values or {}).items()}
        for s in self.secret_values:
            if s not in self.secrets:
                raise DistPrivacyError(f"secret values given for {s!r}, which is not a secret")
        for s in self.secrets:
            check_secret(self.networks, s, self.secret_values.get(s))
        self.fallback = bool(fallback)

    # -------------------------------------------------------------- calibration
    def _influence(self, secret: str, nodes: tuple[str, ...]) -> Influence:
        """e_Θ(X_nodes | X_secret), memoised per mechanism."""
        key = (secret, frozenset(nodes))
        cache = self.__dict__.setdefault("_influence_cache", {})
        if key not in cache:
            cache[key] = max_influence(
                self.networks, secret, nodes, secret_values=self.secret_values.get(secret)
            )
        return cache[key]

    def _candidate(self, quilt: MarkovQuilt, n: int) -> QuiltCandidate:
        A = set(self.query.attributes)
        sens = self.query.column_sensitivity(A & set(quilt.nearby), n)
        if quilt.trivial:
            return QuiltCandidate(
                quilt, "trivial", sens, Influence(0.0), sens / self.epsilon, "Δ_A F / ε"
            )
        infl = self._influence(quilt.secret, quilt.quilt)
        if infl.value >= self.epsilon:
            return QuiltCandidate(
                quilt, "infeasible", sens, infl, None, f"e = {_fmt(infl.value)} ≥ ε"
            )
        scale = 0.0 if sens == 0 else sens / (self.epsilon - infl.value)
        return QuiltCandidate(quilt, "feasible", sens, infl, scale, "Δ_{A∩N}F / (ε − e)")

    def _calibrate_secret(self, secret: str, n: int) -> SecretCalibration:
        net = self.networks[0]
        trivial = self._candidate(trivial_quilt(net, secret), n)
        if secret in self.quilts:
            quilt = quilt_for(net, secret, self.quilts[secret])
            cand = self._candidate(quilt, n)
            if cand.status != "feasible" and not quilt.trivial:
                raise DistPrivacyError(
                    f"the pinned quilt {quilt.label()} of {secret!r} has max-influence "
                    f"{_fmt(cand.max_influence.value)} ≥ ε = {self.epsilon:g}; "  # type: ignore[union-attr]
                    "raise ε above it or pin another quilt"
                )
            if quilt.trivial:
                cand = trivial
            return SecretCalibration(
                secret,
                cand,
                (cand,) if quilt.trivial else (cand, trivial),
                False,
                True,
                f"quilt pinned by the caller: {quilt.label()}",
            )
        candidates: list[QuiltCandidate] = [trivial]
        infeasible: list[set[str]] = []
        for quilt in markov_quilts(net, secret, queried=self.query.attributes)[1:]:
            q = set(quilt.quilt)
            blocker = next((b for b in infeasible if b <= q), None)
            if blocker is not None:
                sens = self.query.column_sensitivity(
                    set(self.query.attributes) & set(quilt.nearby), n
                )
                note = "contains infeasible {" + ", ".join(sorted(blocker)) + "}: e ≥ ε"
                candidates.append(QuiltCandidate(quilt, "pruned", sens, None, None, note))
                continue
            cand = self._candidate(quilt, n)
            if cand.status == "infeasible":
                infeasible.append(q)
            candidates.append(cand)
        feasible = [c for c in candidates if c.status == "feasible"]
        # G_i (the quilts with e < ε) is empty exactly when X_Q = ∅ separates nothing and every
        # single node v has e_Θ(X_v | X_i) ≥ ε: each non-empty X_Q holds some v, and the
        # max-influence only grows with X_Q (a ratio of sums is at most the largest ratio). The
        # candidates pruned as dominated are thus still accounted for.
        singles = {v: self._influence(secret, (v,)) for v in net.names if v != secret}
        free = any(not c.quilt.quilt and c.quilt.remote for c in candidates)
        if not free and all(e.value >= self.epsilon for e in singles.values()):
            if singles:
                low = min(singles, key=lambda v: singles[v].value)
                why = (
                    f"no Markov quilt of {secret!r} has max-influence below ε = {self.epsilon:g} "
                    f"(smallest {_fmt(singles[low].value)} for Q={{{low}}})"
                )
            else:
                why = f"{secret!r} has no Markov quilt other than the whole network"
            if not self.fallback:
                raise DistPrivacyError(
                    why + "; raise ε or allow the whole-network bound Δ_A F / ε (fallback)"
                )
            return SecretCalibration(
                secret,
                trivial,
                tuple(candidates),
                True,
                False,
                why + "; fell back to the whole-network bound Δ_A F / ε",
            )
        best = min(
            [trivial, *feasible],
            key=lambda c: (c.scale, c.max_influence.value, len(c.quilt.quilt)),  # type: ignore[union-attr]
        )
        if best.quilt.trivial:
            reason = (
                "the whole-network bound Δ_A F / ε is the smallest b_i "
                "(Markov quilts with e < ε exist but give no smaller scale)"
            )
        else:
            reason = f"smallest Δ_{{A∩N}}F / (ε − e) among {len(feasible)} feasible quilts"
        return SecretCalibration(secret, best, tuple(candidates), False, False, reason)

    def calibrate(self, n_records: int) -> QuiltCalibration:
        """Algorithm 2 without the noise: every b_i, the quilts behind them, the Laplace scale.

        Parameters
        ----------
        n_records : int
            n, the number of records of the dataset to be released (public; Δ depends on it).
        """
        if isinstance(n_records, bool) or not isinstance(n_records, int | np.integer):
            raise DistPrivacyError(f"n_records must be a positive integer, got {n_records!r}")
        n = int(n_records)
        if n < 1:
            raise DistPrivacyError(f"n_records must be a positive integer, got {n_records}")
        per = tuple(self._calibrate_secret(s, n) for s in self.secrets)
        binding = max(per, key=lambda s: s.scale)
        warnings = tuple(f"{s.secret}: {s.reason}" for s in per if s.fallback_used)
        self.calibration_ = QuiltCalibration(
            epsilon=self.epsilon,
            n_records=n,
            query=self.query.name,
            attributes=self.query.attributes,
            secrets=per,
            scale=float(binding.scale),
            binding_secret=binding.secret,
            warnings=warnings,
        )
        return self.calibration_

    # -------------------------------------------------------------- release
    def release(
        self,
        data: pd.DataFrame,
        *,
        rng: RandomState = None,
        size: int | None = None,
    ) -> QuiltRelease:
        """M(X) = F(X) + Z, Z ~ Lap(scale) from :meth:`calibrate` (calibrated for len(data)).

        Parameters
        ----------
        data : DataFrame
            The dataset X (columns named by the network's attributes).
        rng : None, int or numpy.random.Generator
            None (default) draws from OpenDP's secure sampler; a seed or generator is
            reproducible (experiments only).
        size : int, optional
            Draw this many independent releases of the same data (an array), e.g. to test the
            noise distribution.
        """
        if not isinstance(data, pd.DataFrame):
            raise DistPrivacyError("data must be a pandas DataFrame")
        n = len(data)
        if n == 0:
            raise DistPrivacyError("cannot release a query of an empty dataset")
        cal = getattr(self, "calibration_", None)
        if cal is None:
            cal = self.calibrate(n)
        elif cal.n_records != n:
            raise DistPrivacyError(
                f"calibrated for n = {cal.n_records} records but the data has {n}; "
                f"call calibrate(n_records={n}) first"
            )
        value = self.query.evaluate(data)
        source = check_random_state(rng, secure=True)
        z = cal.noise.sample(size, rng=source)
        out = value + (z[:, 0] if size is not None else float(z[0]))
        return QuiltRelease(out, cal.scale, bool(source.secure), cal)


# ---------------------------------------------------------------------------- worked example
#: The school example's graph (Figure 1 as read from Example 1's quilt; see docs/markov_quilt.md).
SCHOOL_PARENTS = {
    "sat": ["income"],
    "gender": ["income"],
    "height": ["gender"],
    "weight": ["gender", "height"],
}
SCHOOL_DOMAINS = {
    "income": [0.2, 0.5, 0.8],  # share of students from high-income families
    "sat": [0.1, 0.25, 0.5],  # P(SAT > 1300)
    "gender": [0.0, 0.5, 1.0],  # share of female students (boys', mixed, girls' school)
    "height": [63.0, 66.0, 69.0],  # mean height, inches
    "weight": [120.0, 145.0, 170.0],  # mean weight, pounds
}


def school_networks() -> list[DiscreteBayesNet]:
    """Θ for Example 1 (§5.1): two networks on the school graph, income the secret.

    The paper gives the graph (Figure 1) but no numbers; these CPTs are our documented choice:
    SAT depends strongly on income (e(X_s | X_i) = ln 16 > 1), gender weakly
    (e_Θ(X_gndr | X_i) = ln 1.8 ≈ 0.588 under θ_strong), height on gender, weight on gender and
    height (a discretized normal: mean −110 + 3.9·height − 10·gender, sd 15).
    """
    d = SCHOOL_DOMAINS
    weight = discretized_normal_cpt(
        d["weight"], [d["gender"], d["height"]], intercept=-110.0, coefficients=[-10.0, 3.9], sd=15
    )
    shared = {
        "income": [0.3, 0.4, 0.3],
        "sat": [[0.80, 0.15, 0.05], [0.20, 0.60, 0.20], [0.05, 0.15, 0.80]],
        "height": [[0.10, 0.30, 0.60], [0.25, 0.50, 0.25], [0.60, 0.30, 0.10]],
        "weight": weight,
    }
    weak = [[0.10, 0.80, 0.10], [0.10, 0.80, 0.10], [0.15, 0.70, 0.15]]
    strong = [[0.10, 0.80, 0.10], [0.12, 0.76, 0.12], [0.18, 0.64, 0.18]]
    return [
        DiscreteBayesNet(d, SCHOOL_PARENTS, {**shared, "gender": weak}, name="θ_weak"),
        DiscreteBayesNet(d, SCHOOL_PARENTS, {**shared, "gender": strong}, name="θ_strong"),
    ]


def sample_school_records(
    n_records: int, rng: int | np.random.Generator, network: DiscreteBayesNet | None = None
) -> tuple[pd.DataFrame, dict[str, float]]:
    """Draw φ from a school network, then n records i.i.d. given φ (naive independence, §3).

    Given φ: income ~ Bernoulli(φ_income) ("high"/"low"), gender ~ Bernoulli(φ_gender)
    ("F"/"M"), height ~ N(φ_height, 3²), weight ~ N(φ_weight, 15²), SAT ~ N(1300 +
    100·Φ⁻¹(φ_sat), 100²) rounded and limited to [400, 1600] (which keeps P(SAT > 1300) = φ_sat).

    Returns
    -------
    (DataFrame, dict)
        The records and the drawn parameters φ.
    """
    gen = np.random.default_rng(rng)
    net = network or school_networks()[0]
    n = int(n_records)
    if n < 1:
        raise DistPrivacyError(f"n_records must be a positive integer, got {n_records}")
    idx = net.sample(1, gen)[0]
    phi = {v: float(net.domains[v][k]) for v, k in zip(net.names, idx, strict=True)}
    u = gen.random((n, 2))
    z = gen.standard_normal((n, 3))
    sat = 1300 + 100 * special.ndtri(phi["sat"]) + 100 * z[:, 2]
    data = pd.DataFrame(
        {
            "income": np.where(u[:, 0] < phi["income"], "high", "low"),
            "gender": np.where(u[:, 1] < phi["gender"], "F", "M"),
            "height": np.round(phi["height"] + 3 * z[:, 0], 1),
            "weight": np.round(phi["weight"] + 15 * z[:, 1], 1),
            "sat": np.clip(np.round(sat), 400, 1600).astype(int),
        }
    )
    return data, phi


__all__ = [
    "THEOREM",
    "AttributeQuiltMechanism",
    "ColumnQuery",
    "CountQuery",
    "Influence",
    "MarkovQuilt",
    "QuiltCalibration",
    "QuiltCandidate",
    "QuiltRelease",
    "SecretCalibration",
    "SumQuery",
    "as_network_class",
    "check_secret",
    "markov_quilts",
    "max_influence",
    "parse_column_query",
    "quilt_for",
    "sample_school_records",
    "school_networks",
    "trivial_quilt",
]
