"""Training the shadow populations of ``models audit`` / ``models defend`` fast.

Two paths, chosen by :func:`fit_models`:

* **Batched logistic regression.** A binary ``LogisticRegression`` with the L2 penalty and the
  lbfgs/Newton solvers minimises the strictly convex C·Σ log(1 + e^{−s(x·w + b)}) + ½‖w‖². Its
  unique minimiser is found for a whole stack of training sets at once by damped Newton steps
  (batched ``einsum`` Hessians and ``numpy.linalg.solve``, backtracking where a step does not
  decrease the objective) until every model's gradient is below 1e-8 relative to its scale —
  tighter than scikit-learn's own ``tol``, so the models are scikit-learn's up to its solver
  tolerance. The result is returned as ordinary fitted ``LogisticRegression`` objects
  (``coef_``, ``intercept_``, ``classes_``).
* **Anything else** (MLPs, trees, any ``sklearn:MODULE:CLASS``, PyTorch factories): one
  ``clone`` + ``fit`` per model, in parallel with ``joblib`` (chunks of models per task; BLAS
  pinned to one thread per worker with ``threadpoolctl`` so the workers do not oversubscribe
  the cores), each model with its own integer ``random_state`` drawn from the caller's
  generator before any work is dispatched (results do not depend on ``n_jobs``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from distprivacy.exceptions import DistPrivacyError
from distprivacy.inference._user_code import user_code
from distprivacy.randomness import Generator

__all__ = ["batchable_logistic", "fit_models", "newton_logistic"]

#: Models per batch of the Newton solver (bounds the (m, n, d) design stack in memory).
_BATCH = 64


def batchable_logistic(estimator: Any, n_classes: int) -> bool:
    """Whether ``estimator`` is a binary L2 logistic regression :func:`newton_logistic` fits
    exactly (its objective has one minimiser: any converged solver finds it)."""
    from sklearn.linear_model import LogisticRegression

    if type(estimator) is not LogisticRegression or n_classes != 2:
        return False
    p = estimator.get_params()
    return (
        p.get("penalty") in ("l2", "deprecated")
        and p.get("l1_ratio") in (None, 0, 0.0)
        and p.get("fit_intercept") is True
        and p.get("class_weight") is None
        and p.get("solver") in ("lbfgs", "newton-cg", "newton-cholesky")
        and float(p.get("C", 1.0)) > 0
    )


def newton_logistic(
    X: np.ndarray, y: np.ndarray, rows: np.ndarray, C: float = 1.0, *, tol: float = 1e-8
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fit one L2 logistic regression per row of ``rows`` (training-set row positions into X).

    Returns ``(coef (m, d), intercept (m,), iterations (m,))``. Objective per model:
    C·Σ_i log(1 + exp(−s_i z_i)) + ½‖w‖², z = x·w + b, s = 2y − 1 (intercept unpenalised).
    """
    m, n = rows.shape
    d = X.shape[1]
    Xa = np.concatenate([X, np.ones((X.shape[0], 1))], axis=1)
    coef = np.empty((m, d))
    inter = np.empty(m)
    iters = np.zeros(m, dtype=int)
    reg = np.ones(d + 1)
    reg[-1] = 0.0
    for start in range(0, m, _BATCH):
        sl = slice(start, min(m, start + _BATCH))
        A = Xa[rows[sl]]  # (k, n, d+1)
        t = y[rows[sl]].astype(float)  # (k, n)
        k = A.shape[0]
        theta = np.zeros((k, d + 1))

        def objective(th: np.ndarray, A: np.ndarray = A, t: np.ndarray = t) -> np.ndarray:
            z = np.einsum("knd,kd->kn", A, th)
            nll = (np.logaddexp(0.0, z) - t * z).sum(axis=1)
            return C * nll + 0.5 * (reg * th**2).sum(axis=1)

        f = objective(theta)
        active = np.ones(k, dtype=bool)
        for _ in range(100):
            z = np.einsum("knd,kd->kn", A, theta)
            p = 0.5 * (1.0 + np.tanh(0.5 * z))  # stable sigmoid
            g = C * np.einsum("knd,kn->kd", A, p - t) + reg * theta
            scale = np.maximum(1.0, np.abs(theta).max(axis=1)) * max(1.0, C * n)
            active = np.abs(g).max(axis=1) > tol * scale
            if not active.any():
                break
            iters[sl][active] += 1
            w = C * p * (1.0 - p)
            H = np.einsum("kni,kn,knj->kij", A, w, A) + np.diag(reg + 1e-12)[None]
            step = -np.linalg.solve(H, g[..., None])[..., 0]
            step[~active] = 0.0
            slope = (g * step).sum(axis=1)
            lr = np.ones(k)
            for _ in range(40):
                new = objective(theta + lr[:, None] * step)
                bad = active & (new > f + 1e-4 * lr * slope) & (lr > 1e-10)
                if not bad.any():
                    break
                lr[bad] *= 0.5
            theta = theta + lr[:, None] * step
            f = objective(theta)
        else:
            if active.any():
                raise DistPrivacyError(
                    "the batched logistic regression did not converge in 100 Newton steps; "
                    "standardise the features or use a larger C"
                )
        coef[sl] = theta[:, :d]
        inter[sl] = theta[:, d]
    return coef, inter, iters


def _fit_chunk(estimator: Any, X: np.ndarray, y: np.ndarray, rows: np.ndarray, seeds: list) -> list:
    """Fit one clone per training set, BLAS on one thread; scikit-learn's ConvergenceWarning
    (an MLP stopped at ``max_iter``) is silenced: a shadow model is the model the user's
    settings train, converged or not."""
    import warnings

    from sklearn.base import clone
    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    out = []
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for r, seed in zip(rows, seeds, strict=True):
            m = clone(estimator)
            if seed is not None:
                m.set_params(random_state=seed)
            out.append(m.fit(X[r], y[r]))
    return out


def _default_jobs() -> int:
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def fit_models(
    estimator: Any,
    X: np.ndarray,
    y: np.ndarray,
    rows: np.ndarray,
    gen: Generator,
    *,
    n_classes: int,
    n_jobs: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[Any]:
    """One fitted clone of ``estimator`` per training set ``rows[i]`` (row positions into X, y).

    ``progress(k)`` is called after each ``k`` newly fitted models. ``n_jobs``: parallel
    workers for the one-by-one path (default: the CPUs this process may use; 1: no workers).
    """
    from sklearn.base import clone

    rows = np.asarray(rows)
    for r in rows:
        if len(np.unique(y[r])) < n_classes:
            raise DistPrivacyError(
                f"a training set of {rows.shape[1]} rows lacked one of the {n_classes} label "
                "values; raise `n_train`"
            )
    with user_code(estimator, "get_params"):
        takes_seed = "random_state" in estimator.get_params()
    # Drawn whichever path fits the models, so the generator's stream does not depend on it.
    seeds = [int(gen.integers(2**31)) if takes_seed else None for _ in range(len(rows))]
    if batchable_logistic(estimator, n_classes):
        C = float(estimator.get_params()["C"])
        coef, inter, iters = newton_logistic(X, y, rows, C)
        models = []
        for w, b, it in zip(coef, inter, iters, strict=True):
            m = clone(estimator)
            m.coef_, m.intercept_ = w[None, :].copy(), np.array([b])
            m.classes_, m.n_features_in_, m.n_iter_ = np.array([0, 1]), X.shape[1], np.array([it])
            models.append(m)
        if progress is not None:
            progress(len(models))
        return models
    jobs = _default_jobs() if n_jobs is None else int(n_jobs)
    if jobs < 1:
        raise DistPrivacyError(f"n_jobs must be a positive integer, got {n_jobs}")
    size = max(1, min(8, len(rows) // (4 * jobs) or 1))
    chunks = [(rows[i : i + size], seeds[i : i + size]) for i in range(0, len(rows), size)]
    if jobs == 1 or len(chunks) == 1:
        results: Iterable[list] = (_fit_chunk(estimator, X, y, r, s) for r, s in chunks)
    else:
        from joblib import Parallel, delayed

        parallel = Parallel(n_jobs=jobs, return_as="generator")
        results = parallel(delayed(_fit_chunk)(estimator, X, y, r, s) for r, s in chunks)
    models: list = []
    chunks_left = iter(results)
    while True:
        # The user's clone/fit (in a worker or here): whatever it raises is one line naming it.
        with user_code(estimator, "training"):
            part = next(chunks_left, None)
        if part is None:
            return models
        models += part
        if progress is not None:
            progress(len(part))
