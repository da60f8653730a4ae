"""The permutation-invariant network of Ganju et al. (CCS 2018), the white-box meta-classifier
Suri & Evans use (§3.2), in NumPy with hand-written gradients, and :class:`RatioRegressor`, its
regression form (§3.3, Fig. 2 right)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from distprivacy.exceptions import DistPrivacyError
from distprivacy.inference.attacks._base import (
    Population,
    _check_arch,
    _check_fitted,
    _check_pair,
    _check_population,
    _ModelAttack,
)
from distprivacy.randomness import RandomState, check_random_state


def _pin_init(
    layer_sizes: Sequence[int], hidden: int, rep: int, gen: np.random.Generator
) -> list[np.ndarray]:
    """Parameters [A_0, a_0, B_0, c_0, ..., v, c] (He-normal weights, zero biases)."""
    params: list[np.ndarray] = []
    n_layers = len(layer_sizes) - 1
    for layer in range(n_layers):
        u = (layer_sizes[0] if layer == 0 else rep) + 1
        params += [
            gen.standard_normal((u, hidden)) * math.sqrt(2.0 / u),
            np.zeros(hidden),
            gen.standard_normal((hidden, rep)) * math.sqrt(2.0 / hidden),
            np.zeros(rep),
        ]
    params += [gen.standard_normal(n_layers * rep) * math.sqrt(1.0 / (n_layers * rep)), np.zeros(1)]
    return params


def _pin_forward(
    params: Sequence[np.ndarray], W: Sequence[np.ndarray], b: Sequence[np.ndarray]
) -> tuple[np.ndarray, list[tuple[np.ndarray, ...]], np.ndarray]:
    """Output (m,), per-layer caches and the concatenated layer summaries z (m, L·k).

    Layer 0: neuron j of layer 1 is the vector (W_0[:, j], b_0[j]) — the input features have a
    fixed order. Layer l > 0: neuron j of layer l+1 is (Σ_i W_l[i, j] r_i / d_l, b_l[j]) with r_i
    the representations of layer l's neurons, so any permutation of the hidden neurons leaves the
    output unchanged. φ_l(x) = relu(x A + a) B + c; the layer's summary is the mean of φ_l over
    its neurons; ρ(z) = z·v + c.
    """
    caches = []
    summaries = []
    R_prev = None
    for layer, (Wl, bl) in enumerate(zip(W, b, strict=True)):
        A, a, B, c = params[4 * layer : 4 * layer + 4]
        if layer == 0:
            X = np.concatenate([np.swapaxes(Wl, 1, 2), bl[..., None]], axis=2)
        else:
            mixed = np.matmul(np.swapaxes(Wl, 1, 2), R_prev) / Wl.shape[1]
            X = np.concatenate([mixed, bl[..., None]], axis=2)
        P1 = X @ A + a
        H = np.maximum(P1, 0.0)
        R = H @ B + c
        caches.append((X, P1, H))
        summaries.append(R.mean(axis=1))
        R_prev = R
    z = np.concatenate(summaries, axis=1)
    v, c0 = params[-2], params[-1]
    return z @ v + c0[0], caches, z


def _flat(a: np.ndarray) -> np.ndarray:
    """(m, j, c) -> (m·j, c): sums over models and neurons become one matrix product."""
    return a.reshape(-1, a.shape[-1])


def _pin_backward(
    params: Sequence[np.ndarray],
    W: Sequence[np.ndarray],
    caches: Sequence[tuple[np.ndarray, ...]],
    z: np.ndarray,
    g: np.ndarray,
) -> list[np.ndarray]:
    """Gradients of Σ_m g_m · out_m with respect to every parameter (same order as params)."""
    n_layers = len(W)
    v = params[-2]
    rep = params[3].shape[0]
    grads: list[np.ndarray] = [np.empty(0)] * len(params)
    grads[-2] = z.T @ g
    grads[-1] = np.array([g.sum()])
    dz = g[:, None] * v[None, :]
    dR_next = None
    for layer in range(n_layers - 1, -1, -1):
        A, _a, B, _c = params[4 * layer : 4 * layer + 4]
        X, P1, H = caches[layer]
        width = H.shape[1]
        dS = dz[:, layer * rep : (layer + 1) * rep]
        dR = np.broadcast_to(dS[:, None, :] / width, (dS.shape[0], width, rep))
        if dR_next is not None:
            dR = dR + dR_next
        grads[4 * layer + 2] = _flat(H).T @ _flat(dR)
        grads[4 * layer + 3] = dR.sum(axis=(0, 1))
        dP1 = (dR @ B.T) * (P1 > 0)
        grads[4 * layer] = _flat(X).T @ _flat(dP1)
        grads[4 * layer + 1] = dP1.sum(axis=(0, 1))
        if layer > 0:
            dmixed = (dP1 @ A.T)[..., :rep]
            Wl = W[layer]
            dR_next = np.matmul(Wl, dmixed) / Wl.shape[1]
    return grads


class PermutationInvariantNetwork(_ModelAttack):
    """The permutation-invariant meta-classifier of Ganju et al. (CCS 2018), used by Suri & Evans
    (§3.2) as the state-of-the-art white-box attack.

    Each layer l has its own network φ_l, shared by all neurons of the layer (a DeepSets
    encoder): φ_l maps a neuron's incoming weights and bias to a vector of size ``rep``; the
    vectors are averaged over the layer's neurons; ρ maps the concatenated layer summaries to a
    logit (``task="classification"``) or to a number (``task="regression"``). For layers after
    the first, a neuron's input combines the previous layer's neuron representations weighted
    by its incoming weights (Σ_i w_ij r_i), so the output is invariant to every permutation of
    the hidden neurons — the property Ganju et al. build the network for. Parameters are divided
    by each layer's standard deviation over the training models before use.

    Trained with Adam on the binary cross-entropy (classification) or the squared error on the
    standardised target (regression), with L2 weight decay; all models of a minibatch in one
    batched computation, gradients written out by hand (checked against finite differences in
    the tests).

    Parameters
    ----------
    hidden, rep : int
        Width of φ's hidden layer and of each neuron's representation (Suri & Evans' code: 64, 8).
    epochs, batch_size, lr, weight_decay : training settings.
    validation_fraction : float
        Share of the training models held out (at random) for early stopping: the parameters
        of the epoch with the least held-out loss are kept (``best_epoch_``); 0 trains on all
        models for ``epochs`` epochs.
    task : {"classification", "regression"}
    random_state : int, Generator or None
        Initialisation and minibatch order.
    """

    name = "meta-classifier (permutation-invariant network)"

    def __init__(
        self,
        *,
        hidden: int = 32,
        rep: int = 8,
        epochs: int = 60,
        batch_size: int = 64,
        lr: float = 3e-3,
        weight_decay: float = 1e-4,
        validation_fraction: float = 0.0,
        task: str = "classification",
        random_state: RandomState = None,
    ) -> None:
        self.validation_fraction = validation_fraction
        self.hidden = hidden
        self.rep = rep
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.task = task
        self.random_state = random_state

    def _validate(self) -> None:
        for name in ("hidden", "rep", "epochs", "batch_size"):
            v = getattr(self, name)
            if not isinstance(v, int | np.integer) or v < 1:
                raise DistPrivacyError(f"{name} must be a positive integer, got {v!r}")
        for name in ("lr", "weight_decay"):
            v = getattr(self, name)
            if not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
                raise DistPrivacyError(f"{name} must be a finite number ≥ 0, got {v!r}")
        v = self.validation_fraction
        if not isinstance(v, int | float) or not 0 <= v < 1:
            raise DistPrivacyError(f"validation_fraction must be in [0, 1), got {v!r}")
        if self.lr == 0:
            raise DistPrivacyError("lr must be positive, got 0")
        if self.task not in ("classification", "regression"):
            raise DistPrivacyError(
                f"task must be 'classification' or 'regression', got {self.task!r}"
            )

    def _inputs(self, pop: Population) -> tuple[list[np.ndarray], list[np.ndarray]]:
        W = [
            np.asarray(w, dtype=float) / s for w, s in zip(pop.weights, self.w_scales_, strict=True)
        ]
        b = [
            np.asarray(x, dtype=float) / s for x, s in zip(pop.biases, self.b_scales_, strict=True)
        ]
        return W, b

    def fit_arrays(self, pops: Sequence[Any], targets: np.ndarray) -> PermutationInvariantNetwork:
        """Train on the models of ``pops`` (stacked in order) with one target per model."""
        self._validate()
        for i, p in enumerate(pops):
            _check_population(p, f"population {i}")
            if tuple(p.layer_sizes) != tuple(pops[0].layer_sizes):
                raise DistPrivacyError(
                    f"population {i} has layers {tuple(p.layer_sizes)}, population 0 "
                    f"{tuple(pops[0].layer_sizes)}; train all with the same hidden layers"
                )
        t = np.asarray(targets, dtype=float)
        n = sum(p.n_models for p in pops)
        if t.shape != (n,) or not np.isfinite(t).all():
            raise DistPrivacyError(f"need one finite target per model ({n}), got shape {t.shape}")
        self.layer_sizes_ = tuple(pops[0].layer_sizes)
        Ws = [
            np.concatenate([np.asarray(p.weights[k], float) for p in pops])
            for k in range(len(pops[0].weights))
        ]
        bs = [
            np.concatenate([np.asarray(p.biases[k], float) for p in pops])
            for k in range(len(pops[0].biases))
        ]
        self.w_scales_ = [float(w.std()) or 1.0 for w in Ws]
        self.b_scales_ = [float(x.std()) or 1.0 for x in bs]
        # float32 arithmetic (twice as fast; ample for a meta-classifier), float64 scales
        Ws = [(w / s).astype(np.float32) for w, s in zip(Ws, self.w_scales_, strict=True)]
        bs = [(x / s).astype(np.float32) for x, s in zip(bs, self.b_scales_, strict=True)]
        if self.task == "regression":
            self.target_mean_ = float(t.mean())
            self.target_scale_ = float(t.std()) or 1.0
            t = (t - self.target_mean_) / self.target_scale_
        t = t.astype(np.float32)
        from threadpoolctl import threadpool_limits

        # The matrices are small: one BLAS thread is many times faster than several fighting
        # for two cores (measured 30×), and the result does not depend on it.
        with threadpool_limits(limits=1, user_api="blas"):
            self._train(Ws, bs, t, n)
        return self

    def _loss(self, out: np.ndarray, t: np.ndarray) -> float:
        if self.task == "classification":
            return float(np.mean(np.logaddexp(0, out) - t * out))
        return float(0.5 * np.mean((out - t) ** 2))

    def _train(self, Ws: list[np.ndarray], bs: list[np.ndarray], t: np.ndarray, n: int) -> None:
        gen = check_random_state(self.random_state, secure=False)
        params = [
            p.astype(np.float32) for p in _pin_init(self.layer_sizes_, self.hidden, self.rep, gen)
        ]
        perm = gen.permutation(n)
        n_val = round(self.validation_fraction * n) if n >= 10 else 0
        val, train = perm[:n_val], perm[n_val:]
        m1 = [np.zeros_like(p) for p in params]
        m2 = [np.zeros_like(p) for p in params]
        beta1, beta2, eps = 0.9, 0.999, 1e-8
        step = 0
        losses, val_losses = [], []
        best = (math.inf, 0, [p.copy() for p in params])
        for epoch in range(self.epochs):
            order = train[gen.permutation(train.size)]
            total = 0.0
            for start in range(0, train.size, self.batch_size):
                idx = order[start : start + self.batch_size]
                out, caches, z = _pin_forward(params, [w[idx] for w in Ws], [x[idx] for x in bs])
                if self.task == "classification":
                    g = (0.5 * (1 + np.tanh(out / 2)) - t[idx]) / idx.size
                else:
                    g = (out - t[idx]) / idx.size
                total += self._loss(out, t[idx]) * idx.size
                grads = _pin_backward(params, [w[idx] for w in Ws], caches, z, g)
                step += 1
                for k, (p_, g_) in enumerate(zip(params, grads, strict=True)):
                    if p_.ndim == 2 or k == len(params) - 2:
                        g_ = g_ + self.weight_decay * p_
                    m1[k] = beta1 * m1[k] + (1 - beta1) * g_
                    m2[k] = beta2 * m2[k] + (1 - beta2) * g_**2
                    mh = m1[k] / (1 - beta1**step)
                    vh = m2[k] / (1 - beta2**step)
                    params[k] = p_ - self.lr * mh / (np.sqrt(vh) + eps)
            losses.append(total / train.size)
            if n_val:
                out, _, _ = _pin_forward(params, [w[val] for w in Ws], [x[val] for x in bs])
                val_losses.append(self._loss(out, t[val]))
                if val_losses[-1] < best[0]:
                    best = (val_losses[-1], epoch + 1, [p.copy() for p in params])
        if n_val:
            self.params_ = best[2]
            self.best_epoch_ = best[1]
        else:
            self.params_ = params
            self.best_epoch_ = self.epochs
        self.loss_curve_ = np.array(losses)
        self.validation_curve_ = np.array(val_losses)

    def fit(self, pop0: Population, pop1: Population) -> PermutationInvariantNetwork:
        """Train to tell the adversary's G0 models (label 0) from its G1 models (label 1)."""
        _check_pair(pop0, pop1)
        if self.task != "classification":
            raise DistPrivacyError(
                "fit(pop0, pop1) trains a classifier; for task='regression' use RatioRegressor"
            )
        y = np.r_[np.zeros(pop0.n_models), np.ones(pop1.n_models)]
        return self.fit_arrays([pop0, pop1], y)

    def decision_function(self, pop: Population) -> np.ndarray:
        """Raw output per model: the logit of G1 (classification) or the prediction
        (regression, on the target's scale)."""
        _check_fitted(self, "params_")
        _check_arch(self, pop)
        W, b = self._inputs(pop)
        out, _, _ = _pin_forward(self.params_, W, b)
        if self.task == "regression":
            return out * self.target_scale_ + self.target_mean_
        return out

    def predict(self, pop: Population) -> np.ndarray:
        out = self.decision_function(pop)
        if self.task == "regression":
            return out
        return (out > 0).astype(int)


class RatioRegressor:
    """Predict the ratio α of the training distribution from a model's parameters (the regression
    meta-classifier of Suri & Evans §3.3, Fig. 2 right), with the permutation-invariant network.

    Parameters
    ----------
    **network : keyword arguments of :class:`PermutationInvariantNetwork` (``task`` is fixed to
        ``"regression"``).
    """

    def __init__(self, **network: Any) -> None:
        if "task" in network:
            raise DistPrivacyError("RatioRegressor always regresses; do not pass task")
        self.network = network

    @staticmethod
    def _ratios(pops: Sequence[Any], ratios: Sequence[float] | None) -> np.ndarray:
        if ratios is None:
            try:
                ratios = [float(p.meta["ratio"]) for p in pops]
            except (KeyError, TypeError, ValueError):
                raise DistPrivacyError(
                    "a population has no meta['ratio']; pass ratios=[...] (one per population)"
                ) from None
        if len(ratios) != len(pops):
            raise DistPrivacyError(f"{len(ratios)} ratios for {len(pops)} populations")
        return np.concatenate(
            [np.full(p.n_models, float(r)) for p, r in zip(pops, ratios, strict=True)]
        )

    def fit(self, pops: Sequence[Any], ratios: Sequence[float] | None = None) -> RatioRegressor:
        """Train on populations each trained at one ratio (``ratios`` or ``pop.meta['ratio']``)."""
        if not pops:
            raise DistPrivacyError("give at least one population to fit the ratio regressor")
        self.network_ = PermutationInvariantNetwork(task="regression", **self.network)
        self.network_.fit_arrays(list(pops), self._ratios(pops, ratios))
        return self

    def predict(self, pop: Population) -> np.ndarray:
        """Predicted α per model."""
        _check_fitted(self, "network_")
        return self.network_.predict(pop)

    def score(self, pops: Sequence[Any], ratios: Sequence[float] | None = None) -> float:
        """Mean squared error of the predicted α over all models of ``pops``."""
        t = self._ratios(pops, ratios)
        pred = np.concatenate([self.predict(p) for p in pops])
        return float(np.mean((pred - t) ** 2))
