"""The distribution transformer of Suri & Evans's graph game (*Formalizing Distribution
Inference Risks*, 2021, §3.1 and Figure 2): prune nodes until the graph's mean degree is a target.

Suri & Evans set G0 to mean degree 13 and G1 to α on ogbn-arxiv, "pruning either high or
low-degree nodes from the original graph", and "randomly prune 1 % of the nodes" for randomness.
:class:`DegreeTransformer` does the same for many graphs at once: a random share of the nodes is
removed first, then the highest-degree nodes, or the lowest-degree ones, or nodes in random
order (whichever gets closest), as many as bring the induced subgraph's mean degree 2E/N
closest to the target. The number removed is chosen exactly over all candidates at once: with
removal order π, an edge survives the removal of the first k nodes iff
k ≤ min(rank(u), rank(v)), so the edge counts of every k are one ``bincount`` and a reversed
cumulative sum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from distprivacy.exceptions import DistPrivacyError
from distprivacy.inference.graph._data import Graph
from distprivacy.randomness import RandomState, check_random_state
from distprivacy.resources import check_memory

#: Random removal orders tried per drawn graph besides highest- and lowest-degree first.
RANDOM_ORDERS: int = 8

#: Draws tried per graph before the target is declared out of reach.
MAX_TRIES: int = 20


@dataclass(frozen=True)
class DegreeSample:
    """Graphs drawn by a :class:`DegreeTransformer`: which nodes each keeps.

    Attributes
    ----------
    keep : bool array (m, N)
    mean_degree : float array (m,)
        The achieved mean degree 2E/N of each kept induced subgraph.
    """

    keep: np.ndarray
    mean_degree: np.ndarray


@dataclass(frozen=True)
class DegreeTransformer:
    """G: a graph → its induced subgraph with mean degree ``target`` (Suri & Evans §3.1).

    Parameters
    ----------
    target : float
        The mean degree 2E/N to reach (self-loops not counted).
    random_prune : float
        Share of the nodes removed at random first (Suri & Evans: 1 %; small graphs need more
        to make the drawn graphs differ).
    tolerance : float
        Largest accepted |achieved − target|; a graph that cannot get that close is refused.
    min_keep : float
        Least share of the nodes a drawn graph keeps (pruning stops there).
    """

    target: float
    random_prune: float = 0.01
    tolerance: float = 0.25
    min_keep: float = 0.5

    def __post_init__(self) -> None:
        if not np.isfinite(self.target) or self.target <= 0:
            raise DistPrivacyError(f"target mean degree must be > 0, got {self.target!r}")
        if not 0 <= self.random_prune < 1:
            raise DistPrivacyError(f"random_prune must be in [0, 1), got {self.random_prune!r}")
        if not 0 < self.min_keep <= 1:
            raise DistPrivacyError(f"min_keep must be in (0, 1], got {self.min_keep!r}")
        if not self.tolerance > 0:
            raise DistPrivacyError(f"tolerance must be > 0, got {self.tolerance!r}")

    def _one(self, graph: Graph, keys: np.ndarray) -> tuple[np.ndarray, float]:
        gen_pick = keys[1]
        n = graph.n_nodes
        n_random = round(self.random_prune * n)
        alive = np.ones(n, dtype=bool)
        alive[np.argsort(gen_pick)[:n_random]] = False
        u, v = graph.edges
        live = alive[u] & alive[v]
        deg = np.bincount(graph.edges[:, live].ravel(), minlength=n)
        n_alive = int(alive.sum())
        cand = np.flatnonzero(alive)
        best: tuple[float, int, np.ndarray, float] | None = None
        # Removal orders among the alive nodes: highest degree first, lowest first (Suri &
        # Evans) and RANDOM_ORDERS random ones (small steps where a hub's removal would jump
        # past the target); ties at random (keys). The best (order, k) is closest to the
        # target, the fewest removals among equals.
        orders = (
            cand[np.lexsort((keys[0, cand], -deg[cand]))],
            cand[np.lexsort((keys[0, cand], deg[cand]))],
            *(cand[np.argsort(r[cand])] for r in keys[2:]),
        )
        lu, lv = u[live], v[live]
        nodes_left = n_alive - np.arange(n_alive + 1)
        for order in orders:
            rank = np.full(n, n, dtype=np.int64)
            rank[order] = np.arange(order.size)
            first_gone = np.minimum(rank[lu], rank[lv])  # the edge dies when k > first_gone
            counts = np.bincount(first_gone, minlength=n_alive + 1)[: n_alive + 1]
            edges_left = np.cumsum(counts[::-1])[::-1]  # edges with first_gone ≥ k
            means = 2.0 * edges_left / np.maximum(nodes_left, 1)
            means[nodes_left < max(2, int(np.ceil(self.min_keep * n)))] = np.nan
            if np.all(np.isnan(means)):
                continue
            k = int(np.nanargmin(np.abs(means - self.target)))
            key = (abs(float(means[k]) - self.target), k)
            if best is None or key < best[:2]:
                best = (key[0], k, order, float(means[k]))
        if best is None:
            return alive, float("nan")
        _, k, order, achieved = best
        keep = alive.copy()
        keep[order[:k]] = False
        return keep, achieved

    def sample(self, graph: Graph, n_graphs: int, random_state: RandomState = None) -> DegreeSample:
        """Draw ``n_graphs`` pruned graphs: a keep-mask per graph.

        Raises
        ------
        DistPrivacyError
            Some drawn graph cannot reach the target within ``tolerance`` (the message names
            the graph's mean degree and the reachable range).
        """
        if isinstance(n_graphs, bool) or not isinstance(n_graphs, int | np.integer) or n_graphs < 1:
            raise DistPrivacyError(f"n_graphs must be a positive integer, got {n_graphs!r}")
        n = graph.n_nodes
        check_memory(
            1.0 * n_graphs * n + 8.0 * (RANDOM_ORDERS + 4) * n, f"{n_graphs} pruned graphs"
        )
        gen = check_random_state(random_state, secure=False)
        keep = np.empty((n_graphs, n), dtype=bool)
        achieved = np.empty(n_graphs)
        # One graph at a time: each draw is O(N + E) vectorised work on its own removal orders
        # (tie-breaking keys, the random prune's keys, RANDOM_ORDERS random orders). A draw that
        # misses the target is redrawn, up to MAX_TRIES times (rejection sampling: the graphs
        # are those of the random prune conditioned on reaching the target).
        for i in range(n_graphs):
            for _ in range(MAX_TRIES):
                keep[i], achieved[i] = self._one(graph, gen.random((2 + RANDOM_ORDERS, n)))
                if abs(achieved[i] - self.target) <= self.tolerance:
                    break
        bad = ~(np.abs(achieved - self.target) <= self.tolerance)
        if bad.any():
            raise DistPrivacyError(
                f"cannot prune {graph.name} (mean degree {graph.mean_degree():.2f}) to mean degree "
                f"{self.target:g} within ±{self.tolerance:g} (reached {achieved[bad][0]:.2f} after "
                f"{MAX_TRIES} draws); "
                "pick a target nearer the graph's mean degree"
            )
        return DegreeSample(keep, achieved)
