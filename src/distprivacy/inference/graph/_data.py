"""Graphs for the node-classification game: an undirected graph with node features and labels,
the loaders (networkx's karate club, a stochastic block model drawn with networkx, OGB's
ogbn-arxiv from a directory the user supplies), node splits and induced subgraphs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from distprivacy.exceptions import DistPrivacyError
from distprivacy.randomness import RandomState, check_random_state
from distprivacy.resources import check_memory

#: The files :func:`ogbn_arxiv` reads, as OGB's loader unpacks them (``ogbn_arxiv/raw/``).
OGBN_ARXIV_FILES: tuple[str, ...] = (
    "edge.csv.gz",
    "node-feat.csv.gz",
    "node-label.csv.gz",
)

#: Optional file of ogbn-arxiv: the publication year of every paper (kept in ``Graph.extra``).
OGBN_ARXIV_YEARS = "node_year.csv.gz"


@dataclass(frozen=True)
class Graph:
    """An undirected simple graph with node features and class labels.

    Attributes
    ----------
    edges : int64 array (2, E)
        Each undirected edge once, ``edges[0] < edges[1]``, no self-loops, no duplicates.
    features : float32 array (N, d)
    labels : int64 array (N,)
        Classes 0..n_classes−1.
    name : str
    extra : dict
        Per-node arrays a loader keeps (e.g. ``year`` for ogbn-arxiv).
    """

    edges: np.ndarray
    features: np.ndarray
    labels: np.ndarray
    name: str = "graph"
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        e, X, y = self.edges, self.features, self.labels
        if e.ndim != 2 or e.shape[0] != 2:
            raise DistPrivacyError(f"edges must have shape (2, E), got {e.shape}")
        if X.ndim != 2 or X.shape[0] == 0 or y.shape != (X.shape[0],):
            raise DistPrivacyError("features must be (N, d) and labels (N,) for N ≥ 1 nodes")
        if e.size and (e.min() < 0 or e.max() >= X.shape[0] or np.any(e[0] >= e[1])):
            raise DistPrivacyError("edges must be pairs i < j of node indices below N")
        if not np.isfinite(X).all():
            raise DistPrivacyError("node features have NaN or infinite entries")
        if y.size and y.min() < 0:
            raise DistPrivacyError("labels must be 0..n_classes−1")

    @property
    def n_nodes(self) -> int:
        return int(self.features.shape[0])

    @property
    def n_edges(self) -> int:
        return int(self.edges.shape[1])

    @property
    def n_features(self) -> int:
        return int(self.features.shape[1])

    @property
    def n_classes(self) -> int:
        return int(self.labels.max()) + 1

    def degrees(self) -> np.ndarray:
        """(N,): each node's number of neighbours."""
        return np.bincount(self.edges.ravel(), minlength=self.n_nodes)

    def mean_degree(self) -> float:
        """2E / N (self-loops, which the GCN adds, are not counted)."""
        return 2.0 * self.n_edges / self.n_nodes

    def subgraph(self, nodes: np.ndarray) -> Graph:
        """The subgraph induced by ``nodes`` (indices, renumbered 0..len−1 in that order)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        new = np.full(self.n_nodes, -1, dtype=np.int64)
        new[nodes] = np.arange(nodes.size)
        e = new[self.edges]
        e = e[:, (e >= 0).all(axis=0)]
        e = np.sort(e, axis=0)
        return Graph(
            e,
            self.features[nodes],
            self.labels[nodes],
            self.name,
            {k: np.asarray(v)[nodes] for k, v in self.extra.items()},
        )


def canonical_edges(src: np.ndarray, dst: np.ndarray, n: int) -> np.ndarray:
    """Undirected simple edges (2, E), i < j, from directed pairs (self-loops and duplicates
    dropped: the graph is made bidirectional as Suri & Evans do for ogbn-arxiv)."""
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
        raise DistPrivacyError(f"edge endpoints must be node indices in [0, {n})")
    lo, hi = np.minimum(src, dst), np.maximum(src, dst)
    keep = lo != hi
    key = np.unique(lo[keep] * n + hi[keep])
    return np.stack([key // n, key % n])


def _networkx():
    try:
        import networkx
    except ImportError:
        raise DistPrivacyError(
            "the graph game needs networkx: pip install 'distprivacy[torch]'"
        ) from None
    return networkx


def _standardise(X: np.ndarray) -> np.ndarray:
    sd = X.std(axis=0)
    return ((X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)).astype(np.float32)


def _from_networkx(g, labels: np.ndarray, name: str) -> Graph:
    nx = _networkx()
    nodes = list(g.nodes())
    index = {v: i for i, v in enumerate(nodes)}
    n = len(nodes)
    pairs = np.array([(index[u], index[v]) for u, v in g.edges()], dtype=np.int64).reshape(-1, 2)
    edges = canonical_edges(pairs[:, 0], pairs[:, 1], n)
    deg = np.array([g.degree(v) for v in nodes], dtype=float)
    clus = nx.clustering(g)
    core = nx.core_number(g)
    pr = nx.pagerank(g)
    X = np.column_stack(
        [
            np.log1p(deg),
            [clus[v] for v in nodes],
            [core[v] for v in nodes],
            np.array([pr[v] for v in nodes]) * n,
        ]
    )
    return Graph(edges, _standardise(X), labels, name)


def karate_club() -> Graph:
    """Zachary's karate club as networkx ships it (34 members, 78 ties).

    Label: the ``club`` each member joined (Mr. Hi 0, Officer 1). The graph has no node
    attributes, so the features are structural, computed once on the whole graph (log(1 +
    degree), clustering coefficient, core number, N × PageRank; standardised) and stay fixed
    when the game prunes nodes, as ogbn-arxiv's word embeddings do.
    """
    g = _networkx().karate_club_graph()
    labels = np.array([g.nodes[v]["club"] != "Mr. Hi" for v in g.nodes()], dtype=np.int64)
    return _from_networkx(g, labels, "karate")


def block_model(
    n_nodes: int = 600,
    *,
    n_blocks: int = 3,
    p_in: float = 0.05,
    p_out: float = 0.005,
    feature_noise: float = 1.0,
    random_state: RandomState = None,
) -> Graph:
    """A stochastic block model drawn with networkx (a synthetic graph: nothing downloaded).

    Labels are the blocks; features are the block's one-hot code plus Gaussian noise of standard
    deviation ``feature_noise``, then the structural features of :func:`karate_club`.
    """
    nx = _networkx()
    if not isinstance(n_nodes, int) or n_nodes < 2 * n_blocks or n_blocks < 2:
        raise DistPrivacyError("a block model needs n_blocks ≥ 2 and n_nodes ≥ 2 n_blocks")
    pairs = n_nodes * (n_nodes - 1) / 2.0
    expected_edges = pairs * (p_in / n_blocks + p_out * (1 - 1 / n_blocks))
    # networkx holds a graph as dicts of dicts: a few hundred bytes per edge and per node
    check_memory(400.0 * expected_edges + 1000.0 * n_nodes, f"a block model of {n_nodes} nodes")
    gen = check_random_state(random_state, secure=False)
    sizes = [n_nodes // n_blocks + (i < n_nodes % n_blocks) for i in range(n_blocks)]
    p = np.full((n_blocks, n_blocks), p_out)
    np.fill_diagonal(p, p_in)
    g = nx.stochastic_block_model(sizes, p.tolist(), seed=int(gen.integers(2**31 - 1)))
    labels = np.repeat(np.arange(n_blocks), sizes).astype(np.int64)
    base = _from_networkx(g, labels, f"sbm:{n_nodes}")
    onehot = np.eye(n_blocks)[labels] + feature_noise * gen.standard_normal((n_nodes, n_blocks))
    X = np.column_stack([_standardise(onehot), base.features]).astype(np.float32)
    return Graph(base.edges, X, labels, base.name)


def _read_csv(path: Path, dtype: type) -> np.ndarray:
    import pandas as pd

    try:
        return pd.read_csv(path, header=None, dtype=dtype).to_numpy()
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        msg = " ".join(str(exc).split())[:200]
        raise DistPrivacyError(f"cannot read {path} ({msg}); is it OGB's file?") from None


def ogbn_arxiv(directory: str | Path) -> Graph:
    """OGB's ogbn-arxiv from the files OGB's loader unpacks (nothing is downloaded).

    ``directory`` is the dataset folder (``…/ogbn_arxiv``) or its ``raw`` folder, holding
    ``edge.csv.gz`` (one directed citation ``src,dst`` per line), ``node-feat.csv.gz`` (128
    floats per paper), ``node-label.csv.gz`` (one subject area 0..39 per paper) and, optionally,
    ``node_year.csv.gz``. The citations are made undirected (reverse edges added, self-loops and
    duplicates dropped), as Suri & Evans do.
    """
    d = Path(directory).expanduser()
    if (d / "raw").is_dir():
        d = d / "raw"
    missing = [f for f in OGBN_ARXIV_FILES if not (d / f).is_file()]
    if missing:
        raise DistPrivacyError(
            f"{d} lacks {', '.join(missing)}; give the ogbn_arxiv folder OGB's loader unpacks "
            "(with raw/edge.csv.gz, raw/node-feat.csv.gz, raw/node-label.csv.gz)"
        )
    X = _read_csv(d / "node-feat.csv.gz", np.float32)
    y = _read_csv(d / "node-label.csv.gz", np.int64)
    e = _read_csv(d / "edge.csv.gz", np.int64)
    if y.shape != (X.shape[0], 1) or e.ndim != 2 or e.shape[1] != 2:
        raise DistPrivacyError(
            f"{d}: expected one label per feature row and edges as two columns; got labels "
            f"{y.shape}, features {X.shape}, edges {e.shape}"
        )
    extra = {}
    if (d / OGBN_ARXIV_YEARS).is_file():
        years = _read_csv(d / OGBN_ARXIV_YEARS, np.int64)
        if years.shape != (X.shape[0], 1):
            raise DistPrivacyError(f"{d}: {OGBN_ARXIV_YEARS} must hold one year per paper")
        extra["year"] = years[:, 0]
    edges = canonical_edges(e[:, 0], e[:, 1], X.shape[0])
    return Graph(edges, np.ascontiguousarray(X), y[:, 0], "ogbn-arxiv", extra)


GRAPH_NAMES = ("karate", "sbm[:N]", "ogbn-arxiv:DIR")


def load_graph(spec: str, random_state: RandomState = None) -> Graph:
    """A graph by name: ``karate``, ``sbm`` or ``sbm:N`` (a block model of N nodes drawn with
    ``random_state``), ``ogbn-arxiv:DIR``."""
    text = str(spec).strip()
    if text == "karate":
        return karate_club()
    if text == "sbm" or text.startswith("sbm:"):
        n = text.partition(":")[2] or "600"
        if not n.isdigit():
            raise DistPrivacyError(f"bad graph {spec!r}; write sbm:N with N a node count")
        return block_model(int(n), random_state=random_state)
    if text.startswith("ogbn-arxiv:"):
        return ogbn_arxiv(text.partition(":")[2])
    raise DistPrivacyError(f"unknown graph {spec!r}; use one of {', '.join(GRAPH_NAMES)}")


def split_nodes(graph: Graph, random_state: RandomState = None) -> tuple[Graph, Graph]:
    """Disjoint halves of the nodes (stratified by label) for the victim and the adversary
    (Suri & Evans §3.1: non-overlapping splits), each as its induced subgraph."""
    gen = check_random_state(random_state, secure=False)
    keys = gen.random(graph.n_nodes)
    order = np.lexsort((keys, graph.labels))  # by label, random within a label
    first = order[0::2] if gen.random() < 0.5 else order[1::2]
    mask = np.zeros(graph.n_nodes, dtype=bool)
    mask[first] = True
    victim = np.flatnonzero(mask)
    adversary = np.flatnonzero(~mask)
    return graph.subgraph(victim), graph.subgraph(adversary)
