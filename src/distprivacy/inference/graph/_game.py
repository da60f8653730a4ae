"""The graph game of Suri & Evans (*Formalizing Distribution Inference Risks*, 2021, §3 and
Figure 2): can an adversary tell whether a node classifier was trained on a graph of mean
degree d₀ (G0) or d₁ (G1)?

The graph's nodes are split into disjoint halves (victim, adversary). Each side draws pruned
graphs from its half with the :class:`DegreeTransformer` of each G_b and trains a GCN on each;
the adversary attacks the victim's models with

* the loss test (§3.2): b̂ = 𝟙[l(M, D0) > l(M, D1)] on one pruned graph D_b of its own half per
  distribution;
* the threshold test (§3.2, Appendix A.2): its shadow models' accuracy on D0 and on D1, the one
  where the two distributions differ most, and the threshold maximising the shadow models'
  accuracy (a linear search, :func:`~distprivacy.inference.attacks.best_threshold`);
* the meta-classifier on parameters (§3.2): logistic regression on the sorted weights
  (:class:`~distprivacy.inference.attacks.SortedWeightsMetaClassifier`);
* a black-box meta-classifier: logistic regression on the models' class probabilities on
  ``n_query`` nodes of the adversary's (unpruned) half.

Each attack's guesses on the victim's 2·``n_models`` models give the accuracy and the advantage
|Pr[b̂=1 | b=1] − Pr[b̂=1 | b=0]| with intervals (:func:`~distprivacy.inference.game.advantage`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from distprivacy.exceptions import DistPrivacyError, require_extra
from distprivacy.inference.attacks import SortedWeightsMetaClassifier
from distprivacy.inference.attacks._threshold import best_threshold
from distprivacy.inference.game import GameOutcome, advantage
from distprivacy.inference.graph._data import Graph, split_nodes
from distprivacy.inference.graph._gcn import GCNPopulation, train_gcns
from distprivacy.inference.graph._transform import DegreeTransformer
from distprivacy.randomness import RandomState, check_random_state

#: The attacks :func:`run_graph_game` runs, by name.
GRAPH_ATTACKS: tuple[str, ...] = ("loss-test", "threshold-test", "meta-weights", "meta-outputs")

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class GraphGameResult:
    """What :func:`run_graph_game` measured.

    Attributes
    ----------
    graph : str
    degrees : (float, float)
        Target mean degrees of G0 and G1.
    nodes : dict
        Node counts of the victim's and the adversary's halves and their mean degrees.
    achieved : dict
        Mean achieved degree of each side's drawn graphs per distribution.
    outcomes : dict[str, GameOutcome]
        Each attack's accuracy and advantage with intervals on the victim's models.
    n_models, n_shadow : int
        Victim models and adversary (shadow) models per distribution.
    model_accuracy : dict
        Mean accuracy of the victim's models on the adversary's unpruned half, per distribution.
    train_seconds : float
        Wall time spent training all GCNs.
    """

    graph: str
    degrees: tuple[float, float]
    nodes: dict
    achieved: dict
    outcomes: dict[str, GameOutcome]
    n_models: int
    n_shadow: int
    model_accuracy: dict
    train_seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "graph": self.graph,
            "degrees": list(self.degrees),
            "nodes": self.nodes,
            "achieved": self.achieved,
            "n_models": self.n_models,
            "n_shadow": self.n_shadow,
            "model_accuracy": self.model_accuracy,
            "train_seconds": self.train_seconds,
            "attacks": {k: v.to_dict() for k, v in self.outcomes.items()},
        }


def _softmax_features(pop: GCNPopulation, graph: Graph, nodes: np.ndarray) -> np.ndarray:
    z = pop.outputs(graph)[:, nodes, :].astype(np.float64)
    z -= z.max(axis=2, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=2, keepdims=True)
    return p.reshape(pop.n_models, -1)


def _meta_outputs(
    shadow: tuple[GCNPopulation, GCNPopulation],
    victim: tuple[GCNPopulation, GCNPopulation],
    graph: Graph,
    nodes: np.ndarray,
    seed: int,
) -> tuple[np.ndarray, np.ndarray]:
    require_extra("sklearn", "the graph game's meta-classifier")
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    F = np.concatenate([_softmax_features(p, graph, nodes) for p in shadow])
    y = np.r_[np.zeros(shadow[0].n_models, int), np.ones(shadow[1].n_models, int)]
    clf = make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=2000))
    clf.fit(F, y)
    return tuple(clf.predict(_softmax_features(p, graph, nodes)) for p in victim)


def _threshold(
    shadow: tuple[GCNPopulation, GCNPopulation],
    victim: tuple[GCNPopulation, GCNPopulation],
    graph: Graph,
    tests: tuple[np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    stats = [np.stack([p.accuracy(graph, t) for t in tests], axis=1) for p in shadow]
    gap = np.abs(stats[1].mean(axis=0) - stats[0].mean(axis=0))
    k = int(np.argmax(gap))
    values = np.r_[stats[0][:, k], stats[1][:, k]]
    labels = np.r_[np.zeros(len(stats[0]), int), np.ones(len(stats[1]), int)]
    lam, side, _ = best_threshold(values, labels)
    return tuple((side * (p.accuracy(graph, tests[k]) - lam) > 0).astype(int) for p in victim)


def run_graph_game(
    graph: Graph,
    degrees: tuple[float, float],
    *,
    n_models: int = 50,
    n_shadow: int | None = None,
    hidden: int = 16,
    epochs: int = 100,
    lr: float = 0.01,
    random_prune: float = 0.05,
    tolerance: float = 0.25,
    n_query: int = 100,
    split: bool = True,
    attacks: tuple[str, ...] = GRAPH_ATTACKS,
    level: float = 0.95,
    random_state: RandomState = None,
    progress: Progress | None = None,
) -> GraphGameResult:
    """Play the mean-degree game on ``graph`` (see the module docstring).

    Parameters
    ----------
    graph : Graph
    degrees : (d₀, d₁)
        Target mean degrees of G0 and G1 (equal degrees: the null game, advantage 0).
    n_models, n_shadow
        Victim and adversary models per distribution (``n_shadow`` defaults to ``n_models``).
    hidden, epochs, lr
        The GCNs (:func:`train_gcns`).
    random_prune, tolerance
        The transformers (:class:`DegreeTransformer`).
    n_query
        Nodes of the adversary's half the black-box meta-classifier queries.
    split
        Disjoint node halves for the victim and the adversary (Suri & Evans). ``False`` gives
        both the whole node set — only for graphs too small to halve (the karate club's halves
        hold about 17 nodes and 18 ties, too few to prune to two mean degrees); the game then
        also rewards recognising the victim's nodes, not only the property.
    attacks
        A subset of :data:`GRAPH_ATTACKS`.
    level
        Confidence level of the intervals.
    random_state
        Splits, graphs, initial weights and meta-classifiers (integer seeds derived in turn).
    progress
        Called with (models trained, models in all).
    """
    try:
        d0, d1 = (float(x) for x in degrees)
    except (TypeError, ValueError):
        raise DistPrivacyError("degrees must be two numbers (d0, d1)") from None
    unknown = sorted(set(attacks) - set(GRAPH_ATTACKS))
    if unknown or not attacks:
        raise DistPrivacyError(
            f"unknown attacks {unknown or '(none given)'}; use some of {', '.join(GRAPH_ATTACKS)}"
        )
    n_shadow = n_models if n_shadow is None else n_shadow
    for name, v in (("n_models", n_models), ("n_shadow", n_shadow), ("n_query", n_query)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
            raise DistPrivacyError(f"{name} must be a positive integer, got {v!r}")
    gen = check_random_state(random_state, secure=False)
    seed = lambda: int(gen.integers(0, 2**63))  # noqa: E731 — one draw per use, in order
    victim_g, adv_g = split_nodes(graph, seed()) if split else (graph, graph)
    transformers = [DegreeTransformer(d, random_prune, tolerance) for d in (d0, d1)]
    total = 2 * (n_models + n_shadow)
    done = [0]

    def step(count: int) -> Progress | None:
        if progress is None:
            return None
        start = done[0]
        return lambda k, t: progress(start + round(count * k / t), total)

    train = {"hidden": hidden, "epochs": epochs, "lr": lr}
    pops: dict[str, list[GCNPopulation]] = {"victim": [], "adversary": []}
    achieved: dict[str, list[float]] = {"victim": [], "adversary": []}
    t0 = time.perf_counter()
    for side, g, count in (("victim", victim_g, n_models), ("adversary", adv_g, n_shadow)):
        for b, tr in enumerate(transformers):
            try:
                sample = tr.sample(g, count, seed())
            except DistPrivacyError as exc:
                hint = "; for a graph too small to halve use split=False" if split else ""
                raise DistPrivacyError(f"the {side}'s graph: {exc}{hint}") from None
            meta = {"label": b, "degree": tr.target, "achieved": sample.mean_degree.tolist()}
            pops[side].append(
                train_gcns(
                    g, sample.keep, meta=meta, random_state=seed(), progress=step(count), **train
                )
            )
            done[0] += count
            achieved[side].append(float(sample.mean_degree.mean()))
    train_seconds = time.perf_counter() - t0
    victim = (pops["victim"][0], pops["victim"][1])
    shadow = (pops["adversary"][0], pops["adversary"][1])
    tests = tuple(tr.sample(adv_g, 1, seed()).keep[0] for tr in transformers)
    b = np.r_[np.zeros(n_models, int), np.ones(n_models, int)]
    guesses: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    meta_seed, query_seed = seed(), seed()
    if "loss-test" in attacks:
        guesses["loss-test"] = tuple(
            (p.loss(adv_g, tests[0]) > p.loss(adv_g, tests[1])).astype(int) for p in victim
        )
    if "threshold-test" in attacks:
        guesses["threshold-test"] = _threshold(shadow, victim, adv_g, tests)
    if "meta-weights" in attacks:
        meta = SortedWeightsMetaClassifier(random_state=meta_seed).fit(*shadow)
        guesses["meta-weights"] = tuple(meta.predict(p) for p in victim)
    if "meta-outputs" in attacks:
        q = check_random_state(query_seed, secure=False).permutation(adv_g.n_nodes)[:n_query]
        guesses["meta-outputs"] = _meta_outputs(shadow, victim, adv_g, np.sort(q), meta_seed)
    outcomes = {
        name: advantage(b, np.r_[g0, g1], level=level) for name, (g0, g1) in guesses.items()
    }
    return GraphGameResult(
        graph=graph.name,
        degrees=(d0, d1),
        nodes={
            "victim": victim_g.n_nodes,
            "adversary": adv_g.n_nodes,
            "victim_mean_degree": victim_g.mean_degree(),
            "adversary_mean_degree": adv_g.mean_degree(),
            "split": bool(split),
        },
        achieved=achieved,
        outcomes=outcomes,
        n_models=n_models,
        n_shadow=n_shadow,
        model_accuracy={f"G{i}": float(p.accuracy(adv_g).mean()) for i, p in enumerate(victim)},
        train_seconds=train_seconds,
    )
