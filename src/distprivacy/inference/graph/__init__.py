"""Properties beyond ratios: the graph game of Suri & Evans (*Formalizing Distribution Inference
Risks*, 2021, §3–4): infer the mean node degree of the graph a node classifier was trained on.

:mod:`~distprivacy.inference.graph._data` (graphs, loaders: networkx's karate club, a block model
drawn with networkx, OGB's ogbn-arxiv from a local directory; node splits),
:mod:`~distprivacy.inference.graph._transform` (the degree-pruning transformer G),
:mod:`~distprivacy.inference.graph._gcn` (two-layer GCNs in PyTorch, many trained at once) and
:mod:`~distprivacy.inference.graph._game` (shadow models, the attacks, the advantage). PyTorch is
an optional extra: ``pip install 'distprivacy[torch]'``.
"""

from distprivacy.inference.graph._data import (
    GRAPH_NAMES,
    OGBN_ARXIV_FILES,
    Graph,
    block_model,
    canonical_edges,
    karate_club,
    load_graph,
    ogbn_arxiv,
    split_nodes,
)
from distprivacy.inference.graph._game import GRAPH_ATTACKS, GraphGameResult, run_graph_game
from distprivacy.inference.graph._gcn import GCNPopulation, train_gcns
from distprivacy.inference.graph._transform import DegreeSample, DegreeTransformer

__all__ = [
    "GRAPH_ATTACKS",
    "GRAPH_NAMES",
    "OGBN_ARXIV_FILES",
    "DegreeSample",
    "DegreeTransformer",
    "GCNPopulation",
    "Graph",
    "GraphGameResult",
    "block_model",
    "canonical_edges",
    "karate_club",
    "load_graph",
    "ogbn_arxiv",
    "run_graph_game",
    "split_nodes",
    "train_gcns",
]
