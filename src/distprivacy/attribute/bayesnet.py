"""Discrete Bayesian networks over the attributes' distribution parameters φ_1, …, φ_m.

Zhang, Ohrimenko & Cummings (FAccT 2022), Definition 2 and §5: the parameters
(φ_1, …, φ_m) that govern the attributes' conditional marginal distributions form a Bayesian
network, P(φ) = Π_v P(φ_v | φ_parents(v)). Each parameter here takes finitely many values (its
domain) and each node carries a conditional probability table (CPT): an array of shape
``(|dom(p_1)|, …, |dom(p_k)|, |dom(v)|)``, one row per assignment of the parents (in the order
the parents are listed), each row a distribution over the node's values. Parametric conditionals
are built into such tables (:func:`discretized_normal_cpt`).

Exact computation is vectorised: a marginal is one :func:`numpy.einsum` contraction of all the
CPTs, whose greedy contraction order is variable elimination; :meth:`DiscreteBayesNet.joint` is the
whole joint array over the product of the domains (for small networks).
Conditional independence is read off the graph by d-separation (the Bayes-ball / "reachable"
algorithm of Koller & Friedman, *Probabilistic Graphical Models*, Alg. 3.1).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from distprivacy.exceptions import DistPrivacyError
from distprivacy.files import (
    AnyOf,
    Array,
    Field,
    Label,
    ListOf,
    MapOf,
    Number,
    Str,
    Table,
    read_mapping_file,
    validate,
)
from distprivacy.randomness import RandomState, check_random_state

#: Largest number of cells :meth:`DiscreteBayesNet.joint` builds.
MAX_JOINT_CELLS = 5_000_000
#: Tolerance on a CPT row's sum (rows are used as given, never renormalised).
ROW_SUM_TOL = 1e-6
#: np.einsum labels are limited to 52 distinct indices.
MAX_NODES = 52


def _find_cycle(names: Sequence[str], parents: Mapping[str, Sequence[str]]) -> list[str] | None:
    """A directed cycle v_1 → … → v_k → v_1 of the graph (edges parent → child), or None."""
    children: dict[str, list[str]] = {v: [] for v in names}
    for v in names:
        for p in parents[v]:
            children[p].append(v)
    state = dict.fromkeys(names, 0)  # 0 new, 1 on stack, 2 done
    for root in names:
        if state[root]:
            continue
        path = [root]
        iters = [iter(children[root])]
        state[root] = 1
        while iters:
            nxt = next(iters[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                iters.pop()
            elif state[nxt] == 1:
                return [*path[path.index(nxt) :], nxt]
            elif state[nxt] == 0:
                state[nxt] = 1
                path.append(nxt)
                iters.append(iter(children[nxt]))
    return None


def _row_label(parent_names: Sequence[str], parent_values: Sequence[Any]) -> str:
    if not parent_names:
        return "(no parents)"
    return (
        "(" + ", ".join(f"{p}={v}" for p, v in zip(parent_names, parent_values, strict=True)) + ")"
    )


class DiscreteBayesNet:
    """A Bayesian network of discrete parameters with conditional probability tables.

    Parameters
    ----------
    domains : mapping name → sequence
        Each node's values (numbers or strings), distinct, at least one. The mapping's order
        is the order of the axes of :meth:`joint`.
    parents : mapping name → sequence of names, optional
        Each node's parents (missing nodes have none). Must form a directed acyclic graph.
    cpts : mapping name → array_like
        Each node's table, shape ``(*parent cardinalities, cardinality)``: the entry
        ``[j_1, …, j_k, x]`` is P(node = x-th value | parent_1 = j_1-th value, …). Rows are
        non-negative and sum to one (within 1e-6); they are used as given.
    name : str, optional
        A label (e.g. which θ ∈ Θ this network is).

    Raises
    ------
    DistPrivacyError
        On an empty or repeated domain, an unknown parent, a cycle (named), a table of the wrong
        shape, a negative or non-finite probability, or a row not summing to one (the node and
        the row are named).
    """

    def __init__(
        self,
        domains: Mapping[str, Sequence[Any]],
        parents: Mapping[str, Sequence[str]] | None = None,
        cpts: Mapping[str, Any] | None = None,
        *,
        name: str = "",
    ) -> None:
        if not isinstance(domains, Mapping) or not domains:
            raise DistPrivacyError("a Bayesian network needs at least one node; give its domains")
        names = [str(v) for v in domains]
        if len(names) > MAX_NODES:
            raise DistPrivacyError(
                f"the network has {len(names)} nodes; at most {MAX_NODES} are supported"
            )
        if any(not v.strip() for v in names):
            raise DistPrivacyError("a node has an empty name; name every node")
        doms: dict[str, tuple[Any, ...]] = {}
        for v, dom in zip(names, domains.values(), strict=True):
            if isinstance(dom, str | bytes) or not isinstance(dom, Iterable):
                raise DistPrivacyError(f"domain of node {v!r} must be a list of values")
            values = tuple(dom)
            if not values:
                raise DistPrivacyError(f"node {v!r} has an empty domain; give at least one value")
            if len(set(map(str, values))) != len(values):
                raise DistPrivacyError(f"domain of node {v!r} repeats a value: {list(values)}")
            doms[v] = values
        parents = dict(parents or {})
        for v in parents:
            if str(v) not in doms:
                raise DistPrivacyError(
                    f"parents given for unknown node {v!r}; nodes are: {', '.join(names)}"
                )
        pa: dict[str, tuple[str, ...]] = {}
        for v in names:
            ps = parents.get(v, ())
            if isinstance(ps, str):
                ps = (ps,)
            ps = tuple(str(p) for p in ps)
            for p in ps:
                if p not in doms:
                    raise DistPrivacyError(
                        f"node {v!r} has unknown parent {p!r}; nodes are: {', '.join(names)}"
                    )
            if len(set(ps)) != len(ps):
                raise DistPrivacyError(f"node {v!r} lists a parent twice: {list(ps)}")
            pa[v] = ps
        cycle = _find_cycle(names, pa)
        if cycle is not None:
            raise DistPrivacyError(
                "the graph has a cycle " + " → ".join(cycle) + "; a Bayesian network must be a DAG"
            )
        cpts = dict(cpts or {})
        for v in cpts:
            if str(v) not in doms:
                raise DistPrivacyError(
                    f"CPT given for unknown node {v!r}; nodes are: {', '.join(names)}"
                )
        tables: dict[str, np.ndarray] = {}
        for v in names:
            if v not in cpts:
                raise DistPrivacyError(f"node {v!r} has no CPT; give its conditional probabilities")
            tables[v] = self._check_cpt(v, cpts[v], pa[v], doms)
        self.name = str(name)
        self.names: tuple[str, ...] = tuple(names)
        self.domains: dict[str, tuple[Any, ...]] = doms
        self.parents: dict[str, tuple[str, ...]] = pa
        self.cpts: dict[str, np.ndarray] = tables
        self._index = {v: k for k, v in enumerate(names)}
        self.children: dict[str, tuple[str, ...]] = {
            v: tuple(c for c in names if v in pa[c]) for v in names
        }

    @staticmethod
    def _check_cpt(
        v: str, raw: Any, ps: tuple[str, ...], doms: Mapping[str, tuple[Any, ...]]
    ) -> np.ndarray:
        shape = (*(len(doms[p]) for p in ps), len(doms[v]))
        try:
            table = np.asarray(raw, dtype=float)
        except (TypeError, ValueError):
            raise DistPrivacyError(
                f"CPT of node {v!r} is not a numeric array of shape {shape}"
            ) from None
        if table.shape != shape:
            what = f"parents {list(ps)} × " if ps else ""
            raise DistPrivacyError(
                f"CPT of node {v!r} has shape {table.shape} but needs {shape} "
                f"({what}its {len(doms[v])} values)"
            )
        rows = table.reshape(-1, shape[-1])
        parent_rows = list(itertools.product(*(doms[p] for p in ps)))
        bad = ~np.isfinite(rows).all(axis=1) | (rows < 0).any(axis=1)
        if bad.any():
            k = int(np.argmax(bad))
            raise DistPrivacyError(
                f"CPT of node {v!r} row {_row_label(ps, parent_rows[k])} has a negative or "
                f"non-finite probability: {rows[k].tolist()}"
            )
        sums = rows.sum(axis=1)
        off = np.abs(sums - 1.0) > ROW_SUM_TOL
        if off.any():
            k = int(np.argmax(off))
            raise DistPrivacyError(
                f"CPT of node {v!r} row {_row_label(ps, parent_rows[k])} sums to "
                f"{sums[k]:.6g}, not 1; fix that row's probabilities"
            )
        return table

    # ------------------------------------------------------------------ structure
    @property
    def cardinalities(self) -> tuple[int, ...]:
        """Number of values of each node, in :attr:`names` order."""
        return tuple(len(self.domains[v]) for v in self.names)

    def check_nodes(self, nodes: Iterable[str], what: str = "node") -> tuple[str, ...]:
        """Validate node names; return them as a tuple."""
        out = tuple(str(v) for v in nodes)
        for v in out:
            if v not in self._index:
                raise DistPrivacyError(
                    f"unknown {what} {v!r}; the network's nodes are: {', '.join(self.names)}"
                )
        return out

    def same_structure(self, other: DiscreteBayesNet) -> bool:
        """Whether ``other`` has the same nodes, domains and edges (only the CPTs may differ)."""
        return (
            self.names == other.names
            and all(
                list(map(str, self.domains[v])) == list(map(str, other.domains[v]))
                for v in self.names
            )
            and self.parents == other.parents
        )

    def topological_order(self) -> tuple[str, ...]:
        """Nodes with every parent before its children."""
        order: list[str] = []
        placed: set[str] = set()
        while len(order) < len(self.names):
            for v in self.names:
                if v not in placed and all(p in placed for p in self.parents[v]):
                    order.append(v)
                    placed.add(v)
        return tuple(order)

    def ancestors(self, nodes: Iterable[str]) -> set[str]:
        """The nodes together with all their ancestors."""
        out: set[str] = set()
        stack = list(self.check_nodes(nodes))
        while stack:
            v = stack.pop()
            if v not in out:
                out.add(v)
                stack.extend(self.parents[v])
        return out

    def reachable(self, source: str, given: Iterable[str] = ()) -> set[str]:
        """Nodes with an active trail from ``source`` given ``given`` (Koller & Friedman 3.1).

        Observed nodes are never in the result; ``source`` is (when not observed).
        """
        (source,) = self.check_nodes([source])
        observed = set(self.check_nodes(given))
        anc = self.ancestors(observed)
        visited: set[tuple[str, str]] = set()
        found: set[str] = set()
        stack = [(source, "up")]  # "up": arrived from a child; "down": from a parent
        while stack:
            y, d = stack.pop()
            if (y, d) in visited:
                continue
            visited.add((y, d))
            if y not in observed:
                found.add(y)
            if d == "up" and y not in observed:
                stack.extend((p, "up") for p in self.parents[y])
                stack.extend((c, "down") for c in self.children[y])
            elif d == "down":
                if y not in observed:
                    stack.extend((c, "down") for c in self.children[y])
                if y in anc:  # a v-structure through y is active (y or a descendant observed)
                    stack.extend((p, "up") for p in self.parents[y])
        return found

    def d_separated(self, x: str, ys: Iterable[str], given: Iterable[str] = ()) -> bool:
        """Whether ``x`` is d-separated from every node of ``ys`` given ``given``."""
        ys = set(self.check_nodes(ys))
        return not (ys & self.reachable(x, given))

    # ------------------------------------------------------------------ probabilities
    def _factors(self) -> list[Any]:
        ops: list[Any] = []
        for v in self.names:
            ops.append(self.cpts[v])
            ops.append([*(self._index[p] for p in self.parents[v]), self._index[v]])
        return ops

    def marginal(self, nodes: Sequence[str]) -> np.ndarray:
        """P(nodes) as an array with one axis per node, in the order given.

        One einsum contraction of all CPTs (greedy contraction order = variable elimination).
        """
        nodes = self.check_nodes(nodes)
        if len(set(nodes)) != len(nodes):
            raise DistPrivacyError(f"a node is repeated in {list(nodes)}")
        out = [self._index[v] for v in nodes]
        return np.einsum(*self._factors(), out, optimize="greedy")

    def joint(self) -> np.ndarray:
        """The joint P(φ_1, …, φ_m) over the product of the domains (axes in ``names`` order)."""
        cells = math.prod(self.cardinalities)
        if cells > MAX_JOINT_CELLS:
            raise DistPrivacyError(
                f"the joint has {cells} cells (more than {MAX_JOINT_CELLS}); use marginal() "
                "on the nodes you need (variable elimination)"
            )
        return self.marginal(self.names)

    def conditional(self, targets: Sequence[str], given: Sequence[str]) -> np.ndarray:
        """P(targets | given): axes ``(*given, *targets)``; NaN rows where P(given) = 0."""
        targets, given = self.check_nodes(targets), self.check_nodes(given)
        both = self.marginal([*given, *targets])
        axes = tuple(range(len(given), len(given) + len(targets)))
        norm = both.sum(axis=axes, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(norm > 0, both / np.where(norm > 0, norm, 1.0), np.nan)

    def sample(self, size: int, random_state: RandomState) -> np.ndarray:
        """Ancestral samples of the parameters: indices into each domain, shape (size, m).

        Parameters
        ----------
        size : int
            Number of draws.
        random_state : int or numpy.random.Generator
            Seed or generator (explicit: every draw is reproducible; a simulation, so
            :func:`~distprivacy.randomness.check_random_state` with ``secure=False``).
        """
        gen = check_random_state(random_state, secure=False)
        size = int(size)
        idx = np.zeros((size, len(self.names)), dtype=np.int64)
        u = gen.random((size, len(self.names)))
        for v in self.topological_order():
            k = self._index[v]
            table = self.cpts[v]
            rows = table[tuple(idx[:, self._index[p]] for p in self.parents[v])]
            if not self.parents[v]:
                rows = np.broadcast_to(table, (size, table.shape[-1]))
            cum = np.cumsum(rows, axis=1)
            cum[:, -1] = np.inf  # rows sum to one within tolerance; the last value takes the rest
            idx[:, k] = (u[:, [k]] >= cum).sum(axis=1)
        return idx

    # ------------------------------------------------------------------ (de)serialisation
    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (the format :func:`network_from_dict` reads)."""
        out: dict[str, Any] = {
            "domains": {v: list(self.domains[v]) for v in self.names},
            "parents": {v: list(self.parents[v]) for v in self.names if self.parents[v]},
            "cpts": {v: self.cpts[v].tolist() for v in self.names},
        }
        if self.name:
            out["name"] = self.name
        return out

    def __repr__(self) -> str:
        edges = [f"{p}→{v}" for v in self.names for p in self.parents[v]]
        label = f"{self.name!r}, " if self.name else ""
        return f"DiscreteBayesNet({label}nodes={list(self.names)}, edges={edges})"


def discretized_normal_cpt(
    values: Sequence[float],
    parent_values: Sequence[Sequence[float]] = (),
    *,
    intercept: float = 0.0,
    coefficients: Sequence[float] = (),
    sd: float = 1.0,
) -> np.ndarray:
    """A CPT from a linear-Gaussian conditional, restricted to the node's numeric values.

    Row for parent values (u_1, …, u_k): P(x) ∝ exp(−(x − μ)² / (2 sd²)) over the node's
    values x, with μ = intercept + Σ_k coefficients_k · u_k (the normal density at the domain
    points, normalised over the domain: a documented model choice, not a correction).

    Returns
    -------
    ndarray of shape (*map(len, parent_values), len(values))
    """
    x = np.asarray(values, dtype=float)
    if x.ndim != 1 or x.size == 0 or not np.isfinite(x).all():
        raise DistPrivacyError("a discretized normal CPT needs finite numeric node values")
    if len(coefficients) != len(parent_values):
        raise DistPrivacyError(
            f"a discretized normal CPT needs one coefficient per parent: got "
            f"{len(coefficients)} coefficients for {len(parent_values)} parents"
        )
    if not (math.isfinite(sd) and sd > 0):
        raise DistPrivacyError(f"a discretized normal CPT needs sd > 0, got {sd}")
    grids = np.meshgrid(*[np.asarray(u, dtype=float) for u in parent_values], indexing="ij")
    mu = np.full(grids[0].shape if grids else (), float(intercept))
    for c, g in zip(coefficients, grids, strict=True):
        mu = mu + float(c) * g
    logp = -0.5 * ((x - mu[..., None]) / sd) ** 2
    logp -= logp.max(axis=-1, keepdims=True)
    p = np.exp(logp)
    return p / p.sum(axis=-1, keepdims=True)


def _cpt_from_spec(v: str, spec: Any, domains: Mapping[str, Sequence[Any]], ps: Sequence[str]):
    if isinstance(spec, Mapping):
        params = dict(spec["discretized_normal"])
        coefs = params.get("coefficients", {})
        if isinstance(coefs, Mapping):
            unknown = set(coefs) - set(ps)
            if unknown:
                raise DistPrivacyError(
                    f"CPT of node {v!r} has coefficients for non-parents {sorted(unknown)}; "
                    f"its parents are {list(ps)}"
                )
            coefs = [float(coefs.get(p, 0.0)) for p in ps]
        try:
            return discretized_normal_cpt(
                [float(x) for x in domains[v]],
                [[float(x) for x in domains[p]] for p in ps],
                intercept=float(params.get("intercept", 0.0)),
                coefficients=coefs,
                sd=float(params.get("sd", 1.0)),
            )
        except (TypeError, ValueError) as e:
            if isinstance(e, DistPrivacyError):
                raise
            raise DistPrivacyError(
                f"CPT of node {v!r}: a discretized normal needs numeric domains ({e})"
            ) from None
    return spec


def _network_schema() -> tuple[Table, Table]:
    """The schemas of one network and of a network file (one network or ``theta``)."""
    normal = Table(
        {
            "intercept": Field(Number()),
            "coefficients": Field(
                AnyOf(
                    MapOf(Number(), noun="an object mapping parents to numbers"),
                    ListOf(Number(), noun="numbers (one per parent)"),
                    noun='an object mapping parents to numbers, such as {"g": -8}',
                )
            ),
            "sd": Field(Number(positive=True)),
        },
        noun='an object {"intercept": a, "coefficients": {parent: b}, "sd": s}',
    )
    cpt = AnyOf(
        Array(None, noun="a nested list of probabilities (parents × values)", minimum=0.0),
        Table(
            {"discretized_normal": Field(normal, required=True)},
            noun='{"discretized_normal": {…}}',
        ),
        noun='a nested list of probabilities or {"discretized_normal": {…}}',
    )
    cpts = MapOf(cpt, noun="an object mapping nodes to their CPTs", example='{"a": [0.5, 0.5]}')
    value = AnyOf(Str(), Number(keep_int=True), noun="a number or a string")
    common = {
        "domains": Field(
            MapOf(
                ListOf(value, min_len=1, unique=True, noun="values", example="[0, 1]"),
                noun="an object mapping nodes to their values",
                example='{"a": [0, 1]}',
                min_len=1,
            ),
            required=True,
        ),
        "parents": Field(
            MapOf(
                AnyOf(
                    Str(),
                    ListOf(Str(), unique=True, noun="node names", example='["a"]'),
                    noun='a node name or a list of them, such as ["a", "b"]',
                ),
                noun="an object mapping nodes to their parents",
                example='{"b": ["a"]}',
            )
        ),
        "name": Field(Label()),
    }
    one = Table({**common, "cpts": Field(cpts, required=True)}, key_noun="network field")
    theta = Table(
        {"name": Field(Label()), "cpts": Field(cpts, required=True)},
        noun='an object {"name": …, "cpts": {…}}',
        key_noun="field",
    )
    file = Table(
        {
            **common,
            "cpts": Field(cpts),
            "theta": Field(ListOf(theta, min_len=1, noun="θ objects {name, cpts}")),
        },
        key_noun="network field",
    )
    return one, file


#: The schemas of one network (:func:`network_from_dict`) and of a network file.
NETWORK_SCHEMA, NETWORK_FILE_SCHEMA = _network_schema()


def _build_network(raw: Mapping[str, Any], name: str) -> DiscreteBayesNet:
    domains = raw["domains"]
    parents = raw.get("parents", {})
    cpts = {}
    for v, spec in raw["cpts"].items():
        ps = parents.get(v, ())
        ps = (ps,) if isinstance(ps, str) else tuple(ps)
        if v in domains and all(p in domains for p in ps):
            cpts[v] = _cpt_from_spec(v, spec, domains, ps)
        else:
            cpts[v] = spec  # the constructor names the unknown node or parent
    return DiscreteBayesNet(domains, parents, cpts, name=str(raw.get("name", name)))


def network_from_dict(raw: Mapping[str, Any], *, name: str = "") -> DiscreteBayesNet:
    """Build a network from ``{"domains": …, "parents": …, "cpts": …}`` (checked against
    :data:`NETWORK_SCHEMA`: unknown fields, wrong types and ragged tables are refused).

    A CPT is a nested list of probabilities (shape parents × values) or
    ``{"discretized_normal": {"intercept": a, "coefficients": {parent: b}, "sd": s}}``.
    """
    return _build_network(validate(raw, NETWORK_SCHEMA, "the network"), name)


def _networks(raw: Mapping[str, Any], source: str) -> list[DiscreteBayesNet]:
    if not isinstance(raw, Mapping):
        raise DistPrivacyError(f"{source} must hold an object")
    if "theta" in raw and "cpts" in raw:
        raise DistPrivacyError(
            f"{source}: give either 'cpts' (one network) or 'theta' (a list), not both"
        )
    raw = validate(raw, NETWORK_FILE_SCHEMA, source)
    if "theta" not in raw:
        if "cpts" not in raw:
            raise DistPrivacyError(
                f"{source} needs 'domains' and 'cpts' (one network) or 'theta' (a list of "
                "{name, cpts})"
            )
        return [_build_network(raw, "")]
    shared = {k: v for k, v in raw.items() if k not in ("theta", "name")}
    return [
        _build_network({**shared, "cpts": th["cpts"]}, str(th.get("name", f"θ{k}")))
        for k, th in enumerate(raw["theta"])
    ]


def networks_from_dict(raw: Mapping[str, Any]) -> list[DiscreteBayesNet]:
    """The class Θ: one network, or ``theta``, a list of CPT sets over shared domains/parents.

    ``{"domains": …, "parents": …, "cpts": …}`` is Θ = {that network};
    ``{"domains": …, "parents": …, "theta": [{"name": …, "cpts": …}, …]}`` is Θ = those networks.
    Checked against :data:`NETWORK_FILE_SCHEMA`.
    """
    return _networks(raw, "the network file")


def load_networks(path: str | Path) -> list[DiscreteBayesNet]:
    """Read Θ (one network or a list, see :func:`networks_from_dict`) from JSON or TOML,
    validated strictly (errors name the file, the key path and the fix)."""
    p = Path(path)
    source = f"network file {p.name!r}"
    raw = read_mapping_file(p, "network file")
    try:
        return _networks(raw, source)
    except DistPrivacyError as e:
        if str(e).startswith(source):
            raise
        raise type(e)(f"{source}: {e}") from None


__all__ = [
    "DiscreteBayesNet",
    "discretized_normal_cpt",
    "load_networks",
    "network_from_dict",
    "networks_from_dict",
]
