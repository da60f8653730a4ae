"""Many two-layer graph convolutional networks (Kipf & Welling 2017) trained at once in PyTorch.

out = Â relu(Â X W₁ + b₁) W₂ + b₂ with Â = D̃^{-1/2} (A + I) D̃^{-1/2} (self-loops added, as
Suri & Evans do). Each model k has its own pruned graph (a keep-mask over one node set) and its
own weights; the m graphs of a chunk form one block-diagonal sparse matrix, so a training step
is one sparse product and two batched dense products (``torch.bmm``) for all models of the
chunk — no loop over models. Nothing but plain ``torch`` (no torch_geometric).

The trained weights form a :class:`GCNPopulation` with the stacked layout of
:class:`~distprivacy.inference.population.ModelPopulation` (``weights[l]`` of shape
``(m, d_l, d_{l+1})``), so the sorted-weights meta-classifier reads it as it is: hidden channels
of a GCN are exchangeable exactly as an MLP's neurons are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from distprivacy.exceptions import DistPrivacyError
from distprivacy.inference.graph._data import Graph
from distprivacy.inference.torch_estimator import require_torch, torch_seed, torch_session
from distprivacy.randomness import RandomState
from distprivacy.resources import check_memory

#: Target size of one chunk's node activations during training (bytes).
CHUNK_BYTES: int = 128 * 2**20

Progress = Callable[[int, int], None]


def _normalised_adjacency(torch, graph: Graph, keep: np.ndarray):
    """Block-diagonal Â for the keep-masks ``keep`` (m, N), as one sparse (mN, mN) tensor."""
    m, n = keep.shape
    u, v = graph.edges
    live = keep[:, u] & keep[:, v]  # (m, E)
    k_idx, e_idx = np.nonzero(live)
    rows = np.concatenate([k_idx * n + u[e_idx], k_idx * n + v[e_idx]])
    cols = np.concatenate([k_idx * n + v[e_idx], k_idx * n + u[e_idx]])
    loops = np.flatnonzero(keep.ravel())  # self-loops of the kept nodes only
    rows = np.concatenate([rows, loops])
    cols = np.concatenate([cols, loops])
    deg = np.bincount(rows, minlength=m * n).astype(np.float64)
    with np.errstate(divide="ignore"):
        inv = np.where(deg > 0, 1.0 / np.sqrt(deg), 0.0)
    vals = (inv[rows] * inv[cols]).astype(np.float32)
    idx = torch.from_numpy(np.stack([rows, cols]).astype(np.int64))
    return torch.sparse_coo_tensor(
        idx, torch.from_numpy(vals), (m * n, m * n), check_invariants=False
    ).coalesce()


@dataclass(frozen=True)
class GCNPopulation:
    """``m`` trained two-layer GCNs of one architecture (stacked weights).

    Attributes
    ----------
    weights : (W₁ (m, d, h), W₂ (m, h, c))
    biases : (b₁ (m, h), b₂ (m, c))
    meta : dict
        ``label`` (b), ``degree`` (the target), ``achieved`` (per model), settings.
    """

    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]
    meta: dict = field(default_factory=dict)
    activation: str = "relu"

    @property
    def n_models(self) -> int:
        return int(self.weights[0].shape[0])

    def __len__(self) -> int:
        return self.n_models

    @property
    def layer_sizes(self) -> tuple[int, ...]:
        return (self.weights[0].shape[1], self.weights[0].shape[2], self.weights[1].shape[2])

    def flat_parameters(self) -> np.ndarray:
        """(m, p): W₁, b₁, W₂, b₂ flattened per model."""
        m = self.n_models
        parts = [
            a.reshape(m, -1) for pair in zip(self.weights, self.biases, strict=True) for a in pair
        ]
        return np.concatenate(parts, axis=1)

    def outputs(self, graph: Graph, keep: np.ndarray | None = None) -> np.ndarray:
        """(m, N, c) float32: every model's logits on ``graph`` (pruned to ``keep`` if given).

        Â X is computed once for all models; the second propagation is one sparse product on
        the models' stacked hidden channels.
        """
        torch = require_torch()
        if graph.n_features != self.layer_sizes[0]:
            raise DistPrivacyError(
                f"the graph has {graph.n_features} node features but the models take "
                f"{self.layer_sizes[0]}"
            )
        keep = np.ones(graph.n_nodes, dtype=bool) if keep is None else np.asarray(keep, bool)
        n, m, h, c = graph.n_nodes, self.n_models, self.layer_sizes[1], self.layer_sizes[2]
        chunk = max(1, int(CHUNK_BYTES // max(1, 4 * n * max(h, c))))
        out = np.empty((m, n, c), dtype=np.float32)
        with torch.no_grad():
            A = _normalised_adjacency(torch, graph, keep[None, :])
            AX = torch.sparse.mm(A, torch.from_numpy(graph.features))  # (N, d)
            for s in range(0, m, chunk):
                W1 = torch.from_numpy(self.weights[0][s : s + chunk])
                b1 = torch.from_numpy(self.biases[0][s : s + chunk])
                W2 = torch.from_numpy(self.weights[1][s : s + chunk])
                b2 = torch.from_numpy(self.biases[1][s : s + chunk])
                k = W1.shape[0]
                H = torch.relu(torch.einsum("nd,mdh->mnh", AX, W1) + b1[:, None, :])
                Z = torch.bmm(H, W2)  # (k, N, c)
                Z = torch.sparse.mm(A, Z.permute(1, 0, 2).reshape(n, k * c))
                out[s : s + k] = (Z.reshape(n, k, c).permute(1, 0, 2) + b2[:, None, :]).numpy()
        return out

    def _scored(self, graph: Graph, keep: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        keep = np.ones(graph.n_nodes, dtype=bool) if keep is None else np.asarray(keep, bool)
        if not keep.any():
            raise DistPrivacyError("the evaluation graph keeps no node")
        z = self.outputs(graph, keep)[:, keep, :].astype(np.float64)
        return z, graph.labels[keep]

    def loss(self, graph: Graph, keep: np.ndarray | None = None) -> np.ndarray:
        """(m,): each model's mean cross-entropy on the kept nodes of ``graph``."""
        z, y = self._scored(graph, keep)
        z = z - z.max(axis=2, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=2, keepdims=True))
        return -logp[:, np.arange(y.size), y].mean(axis=1)

    def accuracy(self, graph: Graph, keep: np.ndarray | None = None) -> np.ndarray:
        """(m,): each model's accuracy on the kept nodes of ``graph``."""
        z, y = self._scored(graph, keep)
        return (z.argmax(axis=2) == y[None, :]).mean(axis=1)


def train_gcns(
    graph: Graph,
    keep: np.ndarray,
    *,
    hidden: int = 16,
    epochs: int = 100,
    lr: float = 0.01,
    weight_decay: float = 5e-4,
    n_threads: int = 1,
    meta: dict | None = None,
    random_state: RandomState = None,
    progress: Progress | None = None,
) -> GCNPopulation:
    """Train one GCN per keep-mask: model k learns the labels of the nodes ``keep[k]`` keeps, on
    the graph those nodes induce (full-batch Adam on the mean cross-entropy, Glorot-uniform
    initial weights, zero biases — Kipf & Welling's recipe without dropout).

    Parameters
    ----------
    graph : Graph
        The node set every model's graph is drawn from.
    keep : bool array (m, N)
        Which nodes each model's graph keeps (a :class:`DegreeTransformer` sample).
    hidden, epochs, lr, weight_decay
        Hidden channels and the optimiser.
    n_threads
        Torch threads.
    random_state
        Initial weights (one integer drawn, recorded in ``meta["seed"]``).
    progress
        Called with (steps done, steps in all) as chunks of models train.
    """
    torch = require_torch()
    keep = np.asarray(keep, dtype=bool)
    if keep.ndim != 2 or keep.shape[1] != graph.n_nodes or keep.shape[0] < 1:
        raise DistPrivacyError(f"keep must be a bool array (m, {graph.n_nodes}), got {keep.shape}")
    for name, v in (("hidden", hidden), ("epochs", epochs), ("n_threads", n_threads)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
            raise DistPrivacyError(f"{name} must be a positive integer, got {v!r}")
    if not (lr > 0 and weight_decay >= 0):
        raise DistPrivacyError("lr must be > 0 and weight_decay ≥ 0")
    m, n = keep.shape
    d, c = graph.n_features, graph.n_classes
    # one model at least: its activations (forward and backward) and its sparse Â
    check_memory(
        12.0 * n * max(d, hidden, c) + 48.0 * (graph.n_edges + n) + 8.0 * m * d * hidden,
        f"training GCNs on a graph of {n} nodes and {graph.n_edges} edges",
    )
    seed = torch_seed(random_state)
    chunk = max(1, int(CHUNK_BYTES // max(1, 4 * n * max(d, hidden, c) * 3)))
    W1s, b1s, W2s, b2s = [], [], [], []
    labels = torch.from_numpy(graph.labels)
    X = torch.from_numpy(graph.features)
    total = m * epochs
    with torch_session(seed, int(n_threads)):
        for s in range(0, m, chunk):
            kp = keep[s : s + chunk]
            k = kp.shape[0]
            A = _normalised_adjacency(torch, graph, kp)
            AX = torch.sparse.mm(A, X.repeat(k, 1)).reshape(k, n, d)
            mask = torch.from_numpy(kp)
            counts = mask.sum(dim=1).clamp(min=1).float()
            a1, a2 = np.sqrt(6.0 / (d + hidden)), np.sqrt(6.0 / (hidden + c))
            W1 = ((torch.rand(k, d, hidden) * 2 - 1) * a1).requires_grad_()
            W2 = ((torch.rand(k, hidden, c) * 2 - 1) * a2).requires_grad_()
            b1 = torch.zeros(k, hidden, requires_grad=True)
            b2 = torch.zeros(k, c, requires_grad=True)
            opt = torch.optim.Adam([W1, b1, W2, b2], lr=lr, weight_decay=weight_decay)
            y = labels.repeat(k)
            for epoch in range(epochs):
                opt.zero_grad()
                H = torch.relu(torch.bmm(AX, W1) + b1[:, None, :])
                Z = torch.sparse.mm(A, torch.bmm(H, W2).reshape(k * n, c)).reshape(k, n, c)
                Z = Z + b2[:, None, :]
                ce = torch.nn.functional.cross_entropy(Z.reshape(k * n, c), y, reduction="none")
                # each model's mean over its own kept nodes; the sum keeps models independent
                loss = ((ce.reshape(k, n) * mask).sum(dim=1) / counts).sum()
                if not torch.isfinite(loss):
                    raise DistPrivacyError("GCN training diverged (non-finite loss); lower lr")
                loss.backward()
                opt.step()
                if progress is not None and ((epoch + 1) % 10 == 0 or epoch + 1 == epochs):
                    progress(s * epochs + (epoch + 1) * k, total)
            W1s.append(W1.detach().numpy())
            b1s.append(b1.detach().numpy())
            W2s.append(W2.detach().numpy())
            b2s.append(b2.detach().numpy())
    info = dict(meta or {})
    info.update({"seed": seed, "hidden": hidden, "epochs": epochs, "lr": lr})
    return GCNPopulation(
        (np.concatenate(W1s), np.concatenate(W2s)),
        (np.concatenate(b1s), np.concatenate(b2s)),
        info,
    )
