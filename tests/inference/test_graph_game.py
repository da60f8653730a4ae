"""The graph game (Suri & Evans §3–4: infer a training graph's mean node degree): graphs and
loaders, the degree-pruning transformer, batched GCNs and the game end to end on networkx's
karate club."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from distprivacy.exceptions import DistPrivacyError  # noqa: E402
from distprivacy.inference.graph import (  # noqa: E402
    DegreeTransformer,
    Graph,
    block_model,
    canonical_edges,
    karate_club,
    load_graph,
    ogbn_arxiv,
    run_graph_game,
    split_nodes,
    train_gcns,
)


def _induced_mean_degree(graph: Graph, keep: np.ndarray) -> float:
    """2E/N of the subgraph ``keep`` induces, by an independent count over the edge list."""
    e = sum(1 for u, v in graph.edges.T if keep[u] and keep[v])
    return 2 * e / keep.sum()


def test_karate_club_as_networkx_ships_it():
    g = karate_club()
    assert (g.n_nodes, g.n_edges) == (34, 78)  # Zachary's 34 members and 78 ties
    assert g.mean_degree() == pytest.approx(2 * 78 / 34)
    assert g.n_classes == 2 and g.labels.sum() == 17  # 17 joined each club
    assert g.degrees()[33] == 17 and g.degrees()[0] == 16  # the two leaders
    assert np.allclose(g.features.mean(axis=0), 0, atol=1e-6)


def test_edges_are_made_undirected_and_simple():
    e = canonical_edges(np.array([0, 1, 2, 2, 3]), np.array([1, 0, 2, 3, 2]), 4)
    assert e.tolist() == [[0, 2], [1, 3]]
    with pytest.raises(DistPrivacyError, match="node indices"):
        canonical_edges(np.array([0]), np.array([4]), 4)
    import networkx as nx

    nodes = [0, 1, 2, 8, 33]
    sub = karate_club().subgraph(np.array(nodes))
    ties = {tuple(sorted((nodes.index(u), nodes.index(v))))
            for u, v in nx.karate_club_graph().subgraph(nodes).edges()}  # fmt: skip
    assert sub.n_nodes == 5 and set(map(tuple, sub.edges.T.tolist())) == ties


def test_split_is_disjoint_and_stratified():
    g = block_model(90, random_state=0)
    a, b = split_nodes(g, random_state=1)
    assert a.n_nodes + b.n_nodes == 90
    assert abs(np.bincount(a.labels) - np.bincount(b.labels)).max() <= 1
    # disjoint: the features (continuous noise) of the halves share no row
    assert not (a.features[:, None, :3] == b.features[None, :, :3]).all(axis=2).any()


def test_degree_transformer_reaches_the_target_it_reports():
    g = karate_club()
    for target in (3.0, 4.0):
        s = DegreeTransformer(target, random_prune=0.05).sample(g, 8, random_state=3)
        got = [_induced_mean_degree(g, k) for k in s.keep]
        np.testing.assert_allclose(s.mean_degree, got, rtol=1e-12)
        assert np.all(np.abs(s.mean_degree - target) <= 0.25)
        assert np.all(s.keep.sum(axis=1) >= 17)  # min_keep = 1/2
    again = DegreeTransformer(3.0, random_prune=0.05).sample(g, 8, random_state=3)
    assert np.array_equal(again.keep, DegreeTransformer(3.0, 0.05).sample(g, 8, 3).keep)
    with pytest.raises(DistPrivacyError, match=r"cannot prune karate .* to mean degree 9"):
        DegreeTransformer(9.0).sample(g, 2, random_state=0)
    with pytest.raises(DistPrivacyError, match="target"):
        DegreeTransformer(0.0)


def _dense_forward(pop, graph: Graph) -> np.ndarray:
    """The GCN of Kipf & Welling written out with a dense Â, one model at a time."""
    n = graph.n_nodes
    A = np.eye(n)
    A[graph.edges[0], graph.edges[1]] = A[graph.edges[1], graph.edges[0]] = 1
    d = A.sum(axis=1)
    A_hat = A / np.sqrt(np.outer(d, d))
    out = []
    for k in range(pop.n_models):
        H = np.maximum(A_hat @ graph.features @ pop.weights[0][k] + pop.biases[0][k], 0)
        out.append(A_hat @ H @ pop.weights[1][k] + pop.biases[1][k])
    return np.stack(out)


@pytest.mark.slow
def test_batched_gcns_compute_kipf_welling_and_learn():
    g = karate_club()
    keep = DegreeTransformer(4.0, random_prune=0.05).sample(g, 6, random_state=0).keep
    pop = train_gcns(g, keep, hidden=8, epochs=60, random_state=1)
    assert pop.layer_sizes == (4, 8, 2) and pop.flat_parameters().shape == (6, 4 * 8 + 8 + 16 + 2)
    np.testing.assert_allclose(pop.outputs(g), _dense_forward(pop, g), rtol=1e-4, atol=1e-5)
    # trained: far above the 50 % of the majority class on the whole graph
    assert pop.accuracy(g).min() > 0.75
    # a model only sees its own pruned graph: pruning one model's graph changes no other's
    keep2 = keep.copy()
    keep2[0] = True
    pop2 = train_gcns(g, keep2, hidden=8, epochs=60, random_state=1)
    np.testing.assert_allclose(pop2.weights[0][1:], pop.weights[0][1:], rtol=1e-5, atol=1e-6)
    assert not np.allclose(pop2.weights[0][0], pop.weights[0][0])


@pytest.mark.slow
def test_the_game_shows_the_advantage_and_the_null_game_contains_half():
    """Karate club (the largest labelled graph networkx ships; too small to halve, so victim and
    adversary share its nodes, split=False). Mean degree 3 vs 4: the black-box meta-classifier
    is far above chance. The null game 4 vs 4: every attack's 95 % interval holds 50 %."""
    g = karate_club()
    game = run_graph_game(g, (3.0, 4.0), n_models=30, split=False, random_state=0)
    o = game.outcomes["meta-outputs"]
    assert o.n0 == o.n1 == 30
    assert o.accuracy_ci[0] > 0.5 and o.advantage_ci[0] > 0
    assert set(game.outcomes) == {"loss-test", "threshold-test", "meta-weights", "meta-outputs"}
    assert abs(game.achieved["victim"][0] - 3.0) <= 0.25
    null = run_graph_game(g, (4.0, 4.0), n_models=30, split=False, random_state=0)
    for name, o in null.outcomes.items():
        assert o.accuracy_ci[0] <= 0.5 <= o.accuracy_ci[1], name
        assert o.advantage_ci[0] == 0.0, name
    d = null.to_dict()
    assert d["attacks"]["loss-test"]["n0"] == 30 and d["nodes"]["split"] is False


def test_the_game_refuses_bad_settings():
    g = karate_club()
    with pytest.raises(DistPrivacyError, match="unknown attacks"):
        run_graph_game(g, (3.0, 4.0), attacks=("guess",))
    with pytest.raises(DistPrivacyError, match="two numbers"):
        run_graph_game(g, "3")
    with pytest.raises(DistPrivacyError, match="n_models"):
        run_graph_game(g, (3.0, 4.0), n_models=0)


def _write(path, rows):
    with gzip.open(path, "wt") as fh:
        fh.write("\n".join(",".join(str(x) for x in r) for r in rows) + "\n")


def test_ogbn_arxiv_loader_reads_ogbs_raw_files(tmp_path):
    """A tiny directory in OGB's layout (ogbn_arxiv/raw/*.csv.gz, no headers)."""
    raw = tmp_path / "ogbn_arxiv" / "raw"
    raw.mkdir(parents=True)
    _write(raw / "edge.csv.gz", [(0, 1), (1, 0), (2, 1), (3, 3), (3, 4)])
    _write(raw / "node-feat.csv.gz", [(i, -i, 0.5) for i in range(5)])
    _write(raw / "node-label.csv.gz", [(c,) for c in (0, 2, 1, 2, 0)])
    _write(raw / "node_year.csv.gz", [(2010 + i,) for i in range(5)])
    g = ogbn_arxiv(tmp_path / "ogbn_arxiv")
    assert g.edges.tolist() == [[0, 1, 3], [1, 2, 4]]  # reverse edges merged, self-loop dropped
    assert g.features.shape == (5, 3) and g.features.dtype == np.float32
    assert g.labels.tolist() == [0, 2, 1, 2, 0] and g.n_classes == 3
    assert g.extra["year"].tolist() == [2010, 2011, 2012, 2013, 2014]
    assert load_graph(f"ogbn-arxiv:{raw}").n_edges == 3
    (raw / "node-label.csv.gz").unlink()
    with pytest.raises(DistPrivacyError, match=r"lacks node-label\.csv\.gz"):
        ogbn_arxiv(raw)
    with pytest.raises(DistPrivacyError, match="unknown graph"):
        load_graph("cora")


def test_disjoint_halves_on_a_block_model():
    """Suri & Evans's setting: victim and adversary hold disjoint halves of the nodes."""
    g = block_model(300, random_state=0)
    assert g.n_nodes == 300 and g.n_classes == 3 and g.n_features == 3 + 4
    game = run_graph_game(g, (2.5, 3.0), n_models=6, epochs=30, random_state=1)
    assert game.nodes["victim"] + game.nodes["adversary"] == 300 and game.nodes["split"]
    for side in ("victim", "adversary"):
        assert abs(game.achieved[side][0] - 2.5) <= 0.25
        assert abs(game.achieved[side][1] - 3.0) <= 0.25
    assert all(o.n0 == o.n1 == 6 for o in game.outcomes.values())
