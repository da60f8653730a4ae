"""Batched training: hundreds of small binary classifiers trained as one NumPy computation.

Suri & Evans (*Formalizing Distribution Inference Risks*, §3.2 and Appendix A.2) train 1,000
models per distribution for the victim and 1,000 for the adversary, one at a time. Here all the
models of a population are trained together: the parameters of ``m`` models live in one
``(m, P)`` array whose per-layer views are stacked tensors ``W_l: (m, d_l, d_{l+1})`` and
``b_l: (m, d_{l+1})``; each step gathers every model's own minibatch (``X[idx]`` with ``idx`` of
shape ``(m, B)``), runs the forward and backward passes as batched matrix products
(``np.matmul`` over the leading model axis) with hand-written gradients, and applies one Adam
(or SGD) update to all parameters of all models at once.

The mathematics is exactly scikit-learn's ``MLPClassifier(solver="adam")`` for a binary task
(so that the benchmark compares like with like):

* architecture ``d_0 → hidden… → 1``, ReLU hidden units (or tanh / identity), one logit,
  probability ``σ(z)``; logistic regression is ``hidden=()``;
* initialisation Glorot-uniform, weights *and* biases ``U(−r, r)`` with
  ``r = sqrt(6 / (d_in + d_out))``;
* minibatch loss ``mean_i BCE(σ(z_i), y_i) + (l2 / 2) · Σ_l ‖W_l‖² / B`` (biases not penalised),
  so ``∂/∂W_l = (a_lᵀ δ_l + l2 · W_l) / B``, ``∂/∂b_l = mean_i δ_l``, ``δ_L = (σ(z) − y)``
  before the division by ``B``;
* Adam with ``β₁ = 0.9, β₂ = 0.999, ε = 1e−8`` and the step size
  ``lr · sqrt(1 − β₂ᵗ) / (1 − β₁ᵗ)`` (scikit-learn's form);
* each epoch visits every training row once in a fresh random order, in minibatches of
  ``batch_size`` (the last one smaller if ``batch_size`` does not divide ``n``); no early
  stopping (scikit-learn's ``tol`` rule is not applied: every model runs ``epochs`` epochs).

Randomness: model ``k`` draws its initial parameters and then its shuffling schedule (one
permutation of its rows per epoch, ``Generator.permuted``) from its own generator
``np.random.default_rng(seeds[k])``. A model therefore comes out the same whether it is trained
alone or among any other models, in any chunk and with any number of threads (bit for bit on
a given machine and NumPy/BLAS build; across builds, to floating-point rounding). The only loop
over models draws these numbers (a handful of vectorised calls per model); everything else is
array operations.

Precision: float32 by default (parameters, optimiser state, activations): twice the arithmetic
throughput and half the memory traffic of float64, ample for models this small. Pass
``dtype=np.float64`` for reference computations.

Memory: models are trained in chunks whose working set (parameters, gradients, Adam moments,
shuffling schedule, activations of one minibatch) fits in ``memory_limit`` bytes; the result
is bit-for-bit the same for every chunking.
"""

from __future__ import annotations

import itertools
import math
import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from distprivacy.checks import check_int, check_number
from distprivacy.exceptions import DistPrivacyError
from distprivacy.inference._seeds import integer_seed
from distprivacy.inference.population import ACTIVATIONS, ModelPopulation
from distprivacy.randomness import RandomState, SecureGenerator, check_random_state
from distprivacy.resources import check_memory

__all__ = [
    "CENSUS_HIDDEN",
    "TrainingSettings",
    "init_parameters",
    "model_seeds",
    "train_population",
]

#: Hidden layers of the Census MLPs of Suri & Evans (Appendix A.1).
CENSUS_HIDDEN: tuple[int, ...] = (32, 16, 8)

_BETA1 = 0.9
_BETA2 = 0.999
_EPS = 1e-8
OPTIMIZERS = ("adam", "sgd")


@dataclass(frozen=True)
class TrainingSettings:
    """Validated training settings (defaults: scikit-learn's ``MLPClassifier``'s adam)."""

    hidden: tuple[int, ...] = CENSUS_HIDDEN
    epochs: int = 40
    batch_size: int = 200
    lr: float = 1e-3
    l2: float = 1e-4
    optimizer: str = "adam"
    activation: str = "relu"

    def __post_init__(self) -> None:
        hidden = tuple(self.hidden)
        if any(isinstance(h, bool) or not isinstance(h, int | np.integer) or h < 1 for h in hidden):
            raise DistPrivacyError(
                f"hidden must be a tuple of positive layer widths, e.g. (32, 16, 8), got {hidden}"
            )
        object.__setattr__(self, "hidden", tuple(int(h) for h in hidden))
        for name in ("epochs", "batch_size"):
            object.__setattr__(self, name, check_int(getattr(self, name), name, low=1))
        for name in ("lr", "l2"):
            object.__setattr__(self, name, check_number(getattr(self, name), name, low=0))
        if self.lr == 0:
            raise DistPrivacyError("lr must be > 0; a zero learning rate trains nothing")
        if self.optimizer not in OPTIMIZERS:
            raise DistPrivacyError(
                f"unknown optimizer {self.optimizer!r}; use one of {', '.join(OPTIMIZERS)}"
            )
        if self.activation not in ACTIVATIONS:
            raise DistPrivacyError(
                f"unknown activation {self.activation!r}; use one of {', '.join(ACTIVATIONS)}"
            )


# ---------------------------------------------------------------------------------------------
# Seeds and initialisation
# ---------------------------------------------------------------------------------------------


def model_seeds(random_state: RandomState | Sequence[int], n_models: int | None) -> list[int]:
    """One integer seed per model.

    ``random_state`` an integer: ``SeedSequence(random_state).generate_state(n_models)`` (64-bit
    words; the first ``k`` seeds do not depend on ``n_models``). A generator, or None (fresh
    entropy, ``secure=False``): one integer drawn from it, then as for an integer (the
    per-model seeds are recorded, so the models can be retrained). A sequence: its entries, one
    per model, used as they are (to retrain model ``k`` alone, pass ``[meta_seed_k]``).
    """
    if random_state is None or isinstance(
        random_state, int | np.integer | np.random.Generator | SecureGenerator
    ):
        if n_models is None:
            raise DistPrivacyError(
                "with one integer seed the number of models must be known; pass n_models or "
                "per-model data"
            )
        seed = integer_seed(random_state)  # checks an integer (≥ 0, < 2¹²⁸; not a bool)
        state = np.random.SeedSequence(seed).generate_state(n_models, dtype=np.uint64)
        return [int(s) for s in state]
    if isinstance(random_state, str | bytes) or not isinstance(random_state, Sequence):
        raise DistPrivacyError(
            "random_state must be an integer seed, a generator, None or one integer per model, "
            f"got {type(random_state).__name__} {random_state!r}"
        )
    seeds = list(random_state)
    if not seeds or any(
        isinstance(s, bool) or not isinstance(s, int | np.integer) or s < 0 for s in seeds
    ):
        raise DistPrivacyError("a seed list must hold one non-negative integer per model")
    if n_models is not None and len(seeds) != n_models:
        raise DistPrivacyError(f"{len(seeds)} seeds for {n_models} models; pass one per model")
    return [int(s) for s in seeds]


def _layer_sizes(d_in: int, hidden: tuple[int, ...]) -> tuple[int, ...]:
    return (d_in, *hidden, 1)


def _offsets(sizes: tuple[int, ...]) -> list[tuple[int, int, int]]:
    """(start of W_l, start of b_l, end of b_l) in the flat parameter vector."""
    out = []
    pos = 0
    for d_in, d_out in itertools.pairwise(sizes):
        w0 = pos
        b0 = w0 + d_in * d_out
        pos = b0 + d_out
        out.append((w0, b0, pos))
    return out


def init_parameters(random_state: RandomState, sizes: tuple[int, ...]) -> np.ndarray:
    """Glorot-uniform initial parameters of one model, flat (float64), layer by layer.

    Weights then biases of each layer are drawn ``U(−r, r)``, ``r = sqrt(6 / (d_in + d_out))``
    (scikit-learn's rule for ReLU networks), in the order of :func:`_offsets`.
    ``random_state``: a seed, a generator (used as it is: its state advances) or None (fresh
    entropy).
    """
    gen = check_random_state(random_state, secure=False)
    parts = []
    for d_in, d_out in itertools.pairwise(sizes):
        r = math.sqrt(6.0 / (d_in + d_out))
        parts.append(gen.uniform(-r, r, d_in * d_out))
        parts.append(gen.uniform(-r, r, d_out))
    return np.concatenate(parts)


def _draw(seeds: list[int], sizes: tuple[int, ...], n: int, epochs: int, dtype) -> tuple:
    """Initial parameters ``(c, P)`` and shuffling schedules ``(c, epochs, n)`` of a chunk."""
    c = len(seeds)
    P = _offsets(sizes)[-1][2]
    theta = np.empty((c, P), dtype=dtype)
    schedule = np.empty((c, epochs, n), dtype=np.int32 if n < 2**31 else np.int64)
    base = np.arange(n, dtype=np.int64)
    perm = np.empty((epochs, n), dtype=np.int64)
    for k, s in enumerate(seeds):  # per-model generators: the only loop over models
        gen = check_random_state(s, secure=False)
        theta[k] = init_parameters(gen, sizes)
        perm[:] = base  # one permutation per epoch, in place (the same draws as
        gen.permuted(perm, axis=1, out=perm)  # gen.permuted(tile(arange(n)), axis=1))
        schedule[k] = perm
    return theta, schedule


# ---------------------------------------------------------------------------------------------
# Input handling
# ---------------------------------------------------------------------------------------------


def _as_data(X, y, indices, n_models):
    """Normalise the inputs to (pool X (N, d), pool y (N,), rows (m, n) into the pool)."""
    X = np.asarray(X)
    y = np.asarray(y)
    if X.ndim == 3:
        if indices is not None:
            raise DistPrivacyError("pass either per-model X (m, n, d) or indices, not both")
        m, n, d = X.shape
        if y.shape != (m, n):
            raise DistPrivacyError(
                f"per-model X {X.shape} needs y of shape ({m}, {n}), got {y.shape}"
            )
        rows = np.arange(m * n, dtype=np.int64).reshape(m, n)
        X = X.reshape(m * n, d)
        y = y.reshape(m * n)
    elif X.ndim == 2:
        if y.shape != (X.shape[0],):
            raise DistPrivacyError(
                f"X has {X.shape[0]} rows but y has shape {y.shape}; they must match"
            )
        if indices is None:
            if n_models is None:
                raise DistPrivacyError(
                    "with a shared X pass indices (one row-index array per model) or n_models "
                    "(every model trains on all of X)"
                )
            rows = np.broadcast_to(np.arange(X.shape[0], dtype=np.int64), (n_models, X.shape[0]))
        else:
            if isinstance(indices, np.ndarray):
                rows = indices
            else:
                lengths = {len(np.asarray(r)) for r in indices}
                if len(lengths) > 1:
                    raise DistPrivacyError(
                        f"datasets of different sizes {sorted(lengths)}; every model must train on "
                        "the same number of rows (game.sample_datasets draws equal sizes)"
                    )
                rows = np.asarray([np.asarray(r) for r in indices])
            if rows.ndim != 2 or (rows.size and not np.issubdtype(rows.dtype, np.integer)):
                raise DistPrivacyError(
                    f"indices must be (m, n) integer row positions into X, got {rows.shape} "
                    f"{rows.dtype}"
                )
            if rows.size and (rows.min() < 0 or rows.max() >= X.shape[0]):
                raise DistPrivacyError(
                    f"indices must lie in [0, {X.shape[0]}) (rows of X), got "
                    f"{rows.min()}..{rows.max()}"
                )
    else:
        raise DistPrivacyError(
            f"X must be (N, d) with indices, or (m, n, d) per model, got shape {X.shape}"
        )
    if rows.shape[0] == 0 or rows.shape[1] == 0:
        raise DistPrivacyError(f"nothing to train: {rows.shape[0]} models × {rows.shape[1]} rows")
    if n_models is not None and rows.shape[0] != n_models:
        raise DistPrivacyError(f"n_models={n_models} but the data describe {rows.shape[0]} models")
    if not np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.complexfloating):
        raise DistPrivacyError(f"X must be real numbers, got dtype {X.dtype}; encode it first")
    if not np.all(np.isfinite(X)):
        raise DistPrivacyError("X holds NaN or infinite values; clean or impute them first")
    if not np.all((y == 0) | (y == 1)):
        raise DistPrivacyError("y must hold binary labels 0/1; encode the labels first")
    return X, y, rows


def _chunk_size(m: int, n: int, sizes, epochs: int, batch: int, itemsize: int, limit: int) -> int:
    """Largest number of models whose training working set fits in ``limit`` bytes.

    Counts every array :func:`_train_chunk` allocates per model: parameters, gradients, two
    Adam moments and an update buffer (5 P), the shuffling schedule (int32) and one epoch's
    row order (int64), activations and deltas of a minibatch, the ReLU mask, label and scratch
    rows, and the float64 temporaries of the output layer. The per-chunk permutation scratch
    (epochs × n int64) is charged to the chunk.
    """
    per_model = _per_model_bytes(n, sizes, epochs, batch, itemsize)
    fixed = epochs * n * 8
    return int(max(1, min(m, (limit - fixed) // per_model)))


def _per_model_bytes(n: int, sizes, epochs: int, batch: int, itemsize: int) -> int:
    """One model's training working set (see :func:`_chunk_size`)."""
    P = _offsets(sizes)[-1][2]
    B = min(batch, n)
    return (
        5 * P * itemsize
        + epochs * n * 4
        + n * 8
        + B * (2 * sum(sizes) + max(sizes[1:]) + 3) * itemsize
        + B * 8 * 6
        + 2 * P * 8
    )


# ---------------------------------------------------------------------------------------------
# The batched trainer
# ---------------------------------------------------------------------------------------------


def _train_chunk(X, y, rows, seeds, sizes, s: TrainingSettings, dtype) -> tuple:
    """Train one chunk of models; returns flat parameters (c, P) and final-epoch mean loss.

    All per-step arrays are preallocated once per chunk and written with ``out=`` (no
    allocation inside the loop); the last, smaller minibatch uses views of the same buffers.
    """
    c, n = rows.shape
    theta, schedule = _draw(seeds, sizes, n, s.epochs, dtype)
    offs = _offsets(sizes)
    L = len(offs)
    grad = np.zeros_like(theta)
    W = [theta[:, w0:b0].reshape(c, sizes[i], sizes[i + 1]) for i, (w0, b0, _) in enumerate(offs)]
    b = [theta[:, b0:e] for (_, b0, e) in offs]
    gW = [grad[:, w0:b0].reshape(c, sizes[i], sizes[i + 1]) for i, (w0, b0, _) in enumerate(offs)]
    gb = [grad[:, b0:e] for (_, b0, e) in offs]
    # the views must alias the flat buffers (no copies), else updates would be lost
    if not all(np.shares_memory(w, theta) for w in W) or not all(
        np.shares_memory(g, grad) for g in gW
    ):  # pragma: no cover - a NumPy behaviour change
        raise RuntimeError("parameter views do not alias the flat parameter buffer")
    Bmax = min(s.batch_size, n)
    acts = [np.empty((c, Bmax, d), dtype=dtype) for d in sizes]  # acts[0]: gathered inputs
    deltas = [np.empty((c, Bmax, d), dtype=dtype) for d in sizes]  # deltas[0] unused
    mask = np.empty((c, Bmax, max(sizes[1:])), dtype=bool if s.activation == "relu" else dtype)
    ones = np.ones((c, 1, Bmax), dtype=dtype)
    ybuf = np.empty((c, Bmax), dtype=dtype)
    tmp = np.empty((c, Bmax), dtype=dtype)
    adam = s.optimizer == "adam"
    if adam:
        mom1 = np.zeros_like(theta)
        mom2 = np.zeros_like(theta)
    upd = np.empty_like(theta)
    l2_mask = np.zeros(theta.shape[1], dtype=dtype)
    for w0, b0, _ in offs:
        l2_mask[w0:b0] = s.l2
    relu = s.activation == "relu"
    tanh = s.activation == "tanh"
    t = 0
    loss_sum = np.zeros(c, dtype=np.float64)
    for epoch in range(s.epochs):
        # rows of every model in this epoch's order: (c, n) positions into the pool
        order = np.take_along_axis(rows, schedule[:, epoch, :], axis=1)
        last_epoch = epoch == s.epochs - 1
        for start in range(0, n, s.batch_size):
            idx = order[:, start : start + s.batch_size]
            B = idx.shape[1]
            a = [buf[:, :B] for buf in acts]
            dl = [buf[:, :B] for buf in deltas]
            # (c, B, d0): each model's own minibatch (indices were validated: mode='clip' only
            # avoids NumPy's buffered 'raise' path)
            np.take(X, idx, axis=0, out=a[0], mode="clip")
            yb = ybuf[:, :B]
            np.take(y, idx, out=yb, mode="clip")
            for i in range(L):
                np.matmul(a[i], W[i], out=a[i + 1])
                a[i + 1] += b[i][:, None, :]
                if i < L - 1:
                    if relu:
                        np.maximum(a[i + 1], 0, out=a[i + 1])
                    elif tanh:
                        np.tanh(a[i + 1], out=a[i + 1])
            logit = a[L][:, :, 0]
            if last_epoch:
                loss_sum += (np.logaddexp(0, logit) - yb * logit).sum(axis=1, dtype=np.float64)
            # δ_L = σ(z) − y, computed stably: σ(z) = 1/(1+e^{−z}) for z ≥ 0, e^z/(1+e^z) else
            tb = tmp[:, :B]
            dL = dl[L][:, :, 0]
            np.abs(logit, out=tb)
            np.negative(tb, out=tb)
            np.exp(tb, out=tb)  # e^{−|z|}
            np.add(tb, 1, out=dL)
            np.divide(np.where(logit >= 0, 1, tb), dL, out=dL)
            dL -= yb
            invB = dtype.type(1.0 / B)
            for i in range(L - 1, -1, -1):
                delta = dl[i + 1]
                np.matmul(a[i].transpose(0, 2, 1), delta, out=gW[i])  # a_lᵀ δ_l
                np.matmul(ones[:, :, :B], delta, out=gb[i][:, None, :])  # Σ_rows δ_l
                if i > 0:
                    back = dl[i]
                    np.matmul(delta, W[i].transpose(0, 2, 1), out=back)
                    if relu:
                        mk = mask[:, :B, : sizes[i]]
                        np.greater(a[i], 0, out=mk)
                        back *= mk
                    elif tanh:
                        mk = mask[:, :B, : sizes[i]]
                        np.multiply(a[i], a[i], out=mk)
                        np.subtract(1, mk, out=mk)
                        back *= mk
            # all layers at once: grad = (grad + l2 · W) / B (l2_mask is l2 on weights, 0 on biases)
            if s.l2:
                np.multiply(theta, l2_mask, out=upd)
                grad += upd
            grad *= invB
            t += 1
            if adam:
                mom1 *= _BETA1
                np.multiply(grad, 1 - _BETA1, out=upd)
                mom1 += upd
                mom2 *= _BETA2
                np.multiply(grad, grad, out=upd)
                upd *= 1 - _BETA2
                mom2 += upd
                step = s.lr * math.sqrt(1 - _BETA2**t) / (1 - _BETA1**t)
                np.sqrt(mom2, out=upd)
                upd += _EPS
                np.divide(mom1, upd, out=upd)
                upd *= dtype.type(step)
                theta -= upd
            else:
                grad *= dtype.type(s.lr)
                theta -= grad
    return theta, loss_sum / n


def train_population(
    X: np.ndarray,
    y: np.ndarray,
    *,
    indices: np.ndarray | Sequence[np.ndarray] | None = None,
    n_models: int | None = None,
    hidden: Sequence[int] = CENSUS_HIDDEN,
    epochs: int = 40,
    batch_size: int = 200,
    lr: float = 1e-3,
    l2: float = 1e-4,
    random_state: RandomState | Sequence[int] = None,
    optimizer: str = "adam",
    activation: str = "relu",
    dtype: type | np.dtype = np.float32,
    memory_limit: int = 1 << 30,
    n_jobs: int | None = None,
    meta: dict | None = None,
) -> ModelPopulation:
    """Train ``m`` binary classifiers at once (batched matrix products, one optimiser step).

    Parameters
    ----------
    X, y
        Either a shared pool ``X (N, d)``, ``y (N,)`` with ``indices`` (model ``k`` trains on
        rows ``indices[k]``) or ``n_models`` (every model trains on all rows); or per-model
        data ``X (m, n, d)``, ``y (m, n)``. Labels are 0/1.
    indices
        ``(m, n)`` integer row positions into ``X`` (or a list of ``m`` arrays of equal length),
        e.g. from :func:`distprivacy.inference.game.sample_datasets`.
    n_models
        Number of models when ``indices`` is not given for a shared ``X``; otherwise a check.
    hidden
        Hidden-layer widths; ``(32, 16, 8)`` is the Census MLP of Suri & Evans (Appendix A.1),
        ``()`` is logistic regression.
    epochs, batch_size, lr, l2, optimizer, activation
        As scikit-learn's ``MLPClassifier(max_iter=epochs, batch_size=…, learning_rate_init=lr,
        alpha=l2, solver=optimizer)``; see the module docstring for the exact mathematics.
    random_state
        An integer seed (per-model seeds are derived with :func:`model_seeds`), a generator or
        None (one integer drawn from it / from fresh entropy, then the same), or one integer
        per model. Use different seeds for populations that must be independent (e.g. victim
        and adversary). The per-model seeds are recorded, so every model can be retrained.
    dtype
        Floating type of parameters and arithmetic (float32 by default).
    memory_limit
        Bytes the working sets of the chunks being trained at the same time may take together
        (default 1 GiB; 1,000 Census MLPs on 1,000 rows for 40 epochs need about 0.4 GiB).
    n_jobs
        Threads training different chunks at the same time (NumPy releases the GIL in its
        kernels); ``None`` (default) uses every core (``os.cpu_count()``). The models do not
        depend on it.
    meta
        Extra JSON-serialisable description stored in the population's ``meta``.

    Returns
    -------
    ModelPopulation
        ``meta`` holds the settings, ``n_train`` (rows per model), ``train_seconds`` and, per
        model (``meta["per_model"]``), ``seed`` and ``train_loss`` (mean loss over the last
        epoch, as the parameters moved).
    """
    s = TrainingSettings(
        hidden=tuple(hidden) if not isinstance(hidden, int) else (hidden,),
        epochs=epochs,
        batch_size=batch_size,
        lr=lr,
        l2=l2,
        optimizer=optimizer,
        activation=activation,
    )
    dtype = np.dtype(dtype)
    if not np.issubdtype(dtype, np.floating):
        raise DistPrivacyError(f"dtype must be a floating type (float32/float64), got {dtype}")
    if isinstance(memory_limit, bool) or not isinstance(memory_limit, int) or memory_limit < 1:
        raise DistPrivacyError(
            f"memory_limit must be a positive number of bytes, got {memory_limit!r}"
        )
    if n_jobs is None:
        n_jobs = os.cpu_count() or 1
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs < 1:
        raise DistPrivacyError(f"n_jobs must be a positive integer or None, got {n_jobs!r}")
    if meta is not None and not isinstance(meta, dict):
        raise DistPrivacyError(f"meta must be a dict, got {type(meta).__name__}")
    X, y, rows = _as_data(X, y, indices, n_models)
    m, n = rows.shape
    seeds = model_seeds(random_state, m)
    Xd = np.ascontiguousarray(X, dtype=dtype)
    yd = y.astype(dtype)
    sizes = _layer_sizes(X.shape[1], s.hidden)
    chunk = _chunk_size(m, n, sizes, s.epochs, s.batch_size, dtype.itemsize, memory_limit)
    if n_jobs > 1:  # each thread holds one chunk's working set
        chunk = max(1, min(chunk // n_jobs, -(-m // n_jobs)))
    bounds = [(a, min(m, a + chunk)) for a in range(0, m, chunk)]
    # The chunks in flight plus the trained parameters of every model (a chunk holds at least
    # one model, so memory_limit alone does not bound a huge network).
    in_flight = min(m, chunk * min(n_jobs, len(bounds)))
    n_params = _offsets(sizes)[-1][2]
    check_memory(
        float(in_flight) * _per_model_bytes(n, sizes, s.epochs, s.batch_size, dtype.itemsize)
        + float(s.epochs) * n * 8
        + float(m) * n_params * dtype.itemsize,
        f"training {m} model(s) with layer sizes {list(sizes)} ({n_params} parameters each) "
        f"on {n} rows",
    )

    def work(bound: tuple[int, int]):
        lo, hi = bound
        return _train_chunk(Xd, yd, rows[lo:hi], seeds[lo:hi], sizes, s, dtype)

    t0 = time.perf_counter()
    # The matrices are tiny: one BLAS thread per worker (parallelism comes from n_jobs).
    with threadpool_limits(limits=1, user_api="blas"):
        if n_jobs == 1 or len(bounds) == 1:
            results = [work(bd) for bd in bounds]
        else:
            workers = min(n_jobs, len(bounds), os.cpu_count() or 1)
            with ThreadPoolExecutor(max_workers=workers) as ex:
                results = list(ex.map(work, bounds))
    seconds = time.perf_counter() - t0
    theta = np.concatenate([r[0] for r in results]) if len(results) > 1 else results[0][0]
    losses = np.concatenate([r[1] for r in results])
    offs = _offsets(sizes)
    weights = tuple(
        np.ascontiguousarray(theta[:, w0:b0]).reshape(m, sizes[i], sizes[i + 1])
        for i, (w0, b0, _) in enumerate(offs)
    )
    biases = tuple(np.ascontiguousarray(theta[:, b0:e]) for (_, b0, e) in offs)
    info = {
        "model": "mlp" if s.hidden else "logistic_regression",
        "hidden": list(s.hidden),
        "activation": s.activation,
        "epochs": s.epochs,
        "batch_size": s.batch_size,
        "lr": s.lr,
        "l2": s.l2,
        "optimizer": s.optimizer,
        "dtype": dtype.name,
        "n_train": n,
        "train_seconds": round(seconds, 3),
    }
    info.update(meta or {})
    per_model = dict(info.get("per_model", {}))
    per_model["seed"] = seeds
    per_model["train_loss"] = [float(v) for v in losses]
    info["per_model"] = per_model
    return ModelPopulation(weights=weights, biases=biases, activation=s.activation, meta=info)
