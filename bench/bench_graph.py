"""Benchmark of the graph game (Suri & Evans §3–4, mean node degree) and the PyTorch wing.

Run: ``python bench/bench_graph.py`` (needs the [torch] extra). Prints

* the time to train 100 two-layer GCNs (16 hidden channels, 100 epochs, full batch) on pruned
  graphs of networkx's karate club (34 nodes) and of a 600-node block model's half (300 nodes),
  batched (one block-diagonal sparse product per step) and one model at a time, and the ratio;
* the time to fit 100 TorchEstimators (a 2-layer MLP, 1,000 rows, 20 epochs) one after another;
* the attacks' accuracy and advantage with 95 % intervals on the karate club (victim and
  adversary share its 34 nodes: too small to halve), 50 victim models per distribution,
  for mean degrees 3 vs 4, 3.5 vs 4 and the null game 4 vs 4; and on the block model's halves
  (disjoint, as Suri & Evans) for 4 vs 5.5.
"""

from __future__ import annotations

import os
import platform
import time

import numpy as np
import torch

from distprivacy.inference.graph import (
    DegreeTransformer,
    block_model,
    karate_club,
    run_graph_game,
    split_nodes,
    train_gcns,
)
from distprivacy.inference.torch_estimator import TorchEstimator
from distprivacy.randomness import check_random_state


def _mlp(n_features: int, n_classes: int) -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Linear(n_features, 16), torch.nn.ReLU(), torch.nn.Linear(16, n_classes)
    )


def _gcn_times(name: str, graph, target: float) -> None:
    keep = DegreeTransformer(target, random_prune=0.05).sample(graph, 100, random_state=0).keep
    t = time.perf_counter()
    pop = train_gcns(graph, keep, random_state=1)
    batched = time.perf_counter() - t
    t = time.perf_counter()
    for k in range(10):
        train_gcns(graph, keep[k : k + 1], random_state=k)
    single = (time.perf_counter() - t) * 10
    acc = pop.accuracy(graph)
    print(
        f"{name} ({graph.n_nodes} nodes, mean degree {graph.mean_degree():.2f} -> {target:g}): "
        f"100 GCNs batched {batched:6.2f} s; one at a time {single:6.2f} s (10 timed, x10); "
        f"speed-up {single / batched:4.1f}x; train-graph accuracy median {np.median(acc):.3f}"
    )


def _games(name: str, graph, pairs, split: bool) -> None:
    for d0, d1 in pairs:
        t = time.perf_counter()
        r = run_graph_game(graph, (d0, d1), n_models=50, split=split, random_state=0)
        total = time.perf_counter() - t
        print(
            f"{name} mean degree {d0:g} vs {d1:g} (split={split}, 50+50 victim, 50+50 shadow; "
            f"200 GCNs in {r.train_seconds:.1f} s, game {total:.1f} s)"
        )
        for k, o in r.outcomes.items():
            print(
                f"  {k:15s} accuracy {o.accuracy:.3f} [{o.accuracy_ci[0]:.3f}, "
                f"{o.accuracy_ci[1]:.3f}]  advantage {o.advantage:.3f} "
                f"[{o.advantage_ci[0]:.3f}, {o.advantage_ci[1]:.3f}]"
            )


def main() -> None:
    print(
        f"# python bench/bench_graph.py   ({os.cpu_count()}-core VM, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; torch {torch.__version__}, "
        f"Python {platform.python_version()}, 1 torch thread)"
    )
    karate = karate_club()
    sbm_half = split_nodes(block_model(600, random_state=0), random_state=0)[0]
    _gcn_times("karate", karate, 4.0)
    _gcn_times("sbm:600 half", sbm_half, 5.0)
    gen = check_random_state(0, secure=False)
    X = gen.standard_normal((1000, 10)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    t = time.perf_counter()
    for s in range(100):
        TorchEstimator(_mlp, epochs=20, batch_size=100, random_state=s).fit(X, y)
    print(
        f"100 TorchEstimators (MLP 10-16-2, 1000 rows, 20 epochs): {time.perf_counter() - t:.2f} s"
    )
    _games("karate", karate, [(3.0, 4.0), (3.5, 4.0), (4.0, 4.0)], split=False)
    _games("sbm:600", block_model(600, random_state=0), [(4.0, 5.5)], split=True)


if __name__ == "__main__":
    main()
