"""The user's own PyTorch model as a scikit-learn classifier (issue 24): :class:`TorchEstimator`
builds a ``torch.nn.Module`` from a factory ``make(n_features, n_classes)`` and trains it with a
standard loop (Adam, cross-entropy, mini-batches, CPU), so that every tool that takes a
scikit-learn estimator — :func:`sklearn.base.clone`, the shadow-model populations of the
distribution-inference game (Suri & Evans, *Formalizing and Estimating Distribution Inference
Risks*, 2021, §2) — takes a PyTorch network too.

:func:`load_torch_factory` reads a factory from a file named on the command line
(``torch:FILE.py:make``). PyTorch is an optional extra: ``pip install 'distprivacy[torch]'``.

Randomness: the initial weights and the mini-batch order come from one integer drawn from
``check_random_state(random_state, secure=False)`` (all of this is simulation); training runs
under ``torch.random.fork_rng`` so the caller's global torch state is left as it was, and the
same ``random_state`` gives the same network bit for bit (on the same machine and threads).
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from distprivacy.exceptions import DistPrivacyError, MissingExtraError, has_extra
from distprivacy.inference._user_code import EstimatorError, estimator_label, user_code
from distprivacy.randomness import RandomState, check_random_state

__all__ = [
    "TORCH_EXTRA",
    "TorchEstimator",
    "TorchUnavailableError",
    "estimator_from_state",
    "load_torch_factory",
    "parse_factory_spec",
    "require_torch",
]

#: The one-line fix printed whenever PyTorch is missing.
TORCH_EXTRA = "PyTorch models need the optional extra: pip install 'distprivacy[torch]'"

#: Seeds handed to torch lie in [0, 2⁶³) (``torch.manual_seed`` takes 64 bits).
_TORCH_SEED_BOUND = 2**63


class TorchUnavailableError(DistPrivacyError):
    """PyTorch is not installed."""


def require_torch() -> Any:
    """The ``torch`` module, or :class:`TorchUnavailableError` with the install line."""
    try:
        import torch
    except ImportError:
        raise TorchUnavailableError(TORCH_EXTRA) from None
    return torch


def torch_seed(random_state: RandomState) -> int:
    """One integer in [0, 2⁶³) drawn from ``check_random_state(random_state, secure=False)``."""
    return int(check_random_state(random_state, secure=False).integers(0, _TORCH_SEED_BOUND))


@contextlib.contextmanager
def torch_session(seed: int, n_threads: int) -> Iterator[Any]:
    """Seeded, thread-pinned torch work that leaves the global torch state as it was."""
    torch = require_torch()
    before = torch.get_num_threads()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        torch.set_num_threads(n_threads)
        try:
            yield torch
        finally:
            torch.set_num_threads(before)


def parse_factory_spec(spec: str) -> tuple[Path, str]:
    """``"torch:FILE.py:make"`` (or ``"FILE.py:make"``) → (path, function name)."""
    text = str(spec)
    if text.startswith("torch:"):
        text = text[len("torch:") :]
    path, sep, name = text.rpartition(":")
    if not sep or not path.strip() or not name.isidentifier():
        raise DistPrivacyError(
            f"bad PyTorch factory {spec!r}; write torch:FILE.py:FUNCTION, e.g. torch:net.py:make"
        )
    if not path.endswith(".py"):
        raise DistPrivacyError(
            f"bad PyTorch factory {spec!r}: {path!r} is not a .py file; write "
            "torch:FILE.py:FUNCTION, e.g. torch:net.py:make"
        )
    return Path(path), name


def load_torch_factory(spec: str) -> Callable[[int, int], Any]:
    """Import ``make`` from ``FILE.py`` named by ``"torch:FILE.py:make"``.

    The file is imported from its path (it need not be on ``sys.path``) under a private module
    name; it runs as ordinary Python code with the user's rights, so only name files you trust.

    Raises
    ------
    TorchUnavailableError
        PyTorch is not installed.
    DistPrivacyError
        The file or the function is missing, or importing the file fails.
    """
    path, name = parse_factory_spec(spec)
    require_torch()
    if not path.is_file():
        raise DistPrivacyError(f"PyTorch factory file {path} not found; give an existing .py file")
    mod_name = f"_distprivacy_factory_{abs(hash(str(path.resolve())))}"
    loader_spec = importlib.util.spec_from_file_location(mod_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise DistPrivacyError(f"cannot import {path}; give a Python file ending in .py")
    module = importlib.util.module_from_spec(loader_spec)
    try:
        loader_spec.loader.exec_module(module)
    except Exception as exc:  # the user's code: any failure becomes one line
        msg = " ".join(f"{type(exc).__name__}: {exc}".split())
        raise DistPrivacyError(f"importing {path} failed ({msg}); fix the file") from None
    sys.modules.pop(mod_name, None)
    make = getattr(module, name, None)
    if not callable(make):
        raise DistPrivacyError(
            f"{path} has no function {name!r}; define {name}(n_features, n_classes) returning "
            "a torch.nn.Module"
        )
    return make


def _check_positive(value: Any, name: str, kind: type) -> None:
    if isinstance(value, bool) or not isinstance(value, kind | np.integer) or value <= 0:
        raise DistPrivacyError(f"{name} must be a positive {kind.__name__}, got {value!r}")


def _estimator_bases() -> tuple[type, ...]:
    """scikit-learn's classifier bases (the ``[models]`` extra), or none: the torch helpers of
    this module work without scikit-learn, and :class:`TorchEstimator` then refuses to be made."""
    if not has_extra("sklearn"):
        return ()
    from sklearn.base import BaseEstimator, ClassifierMixin

    return (ClassifierMixin, BaseEstimator)


_ESTIMATOR_BASES = _estimator_bases()


class TorchEstimator(*_ESTIMATOR_BASES):
    """A scikit-learn classifier around the user's PyTorch network.

    Parameters
    ----------
    factory : callable or str
        ``make(n_features, n_classes)`` returning a ``torch.nn.Module`` that maps a float32
        batch ``(n, n_features)`` to logits ``(n, n_classes)``; or a spec
        ``"torch:FILE.py:make"`` (:func:`load_torch_factory`), which is kept as given so that
        the estimator can be cloned and saved by name.
    epochs, batch_size, lr, weight_decay
        The training loop: ``epochs`` passes over the shuffled rows in mini-batches of
        ``batch_size`` with Adam (learning rate ``lr``, L2 ``weight_decay``) on the mean
        cross-entropy.
    n_threads
        Torch threads during fit and predict (1: small networks are fastest single-threaded,
        and many estimators can then train side by side).
    random_state
        Initial weights and batch order (:func:`torch_seed`).

    Attributes
    ----------
    classes_ : ndarray
        The labels seen in ``fit`` (sorted); column ``j`` of ``predict_proba`` is ``classes_[j]``.
    module_ : torch.nn.Module
        The trained network.
    n_features_in_ : int
    seed_ : int
        The integer the torch seed came from (recorded so the fit can be repeated).
    """

    def __init__(
        self,
        factory: Callable[[int, int], Any] | str,
        *,
        epochs: int = 20,
        batch_size: int = 256,
        lr: float = 1e-3,
        weight_decay: float = 0.0,
        n_threads: int = 1,
        random_state: RandomState = None,
    ) -> None:
        if not _ESTIMATOR_BASES:
            raise MissingExtraError("TorchEstimator (a scikit-learn classifier)", "sklearn")
        self.factory = factory
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.n_threads = n_threads
        self.random_state = random_state

    def _check_settings(self) -> None:
        _check_positive(self.epochs, "epochs", int)
        _check_positive(self.batch_size, "batch_size", int)
        _check_positive(self.n_threads, "n_threads", int)
        for name in ("lr", "weight_decay"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not np.isfinite(v):
                raise DistPrivacyError(f"{name} must be a finite number, got {v!r}")
        if self.lr <= 0 or self.weight_decay < 0:
            raise DistPrivacyError("lr must be > 0 and weight_decay ≥ 0")

    def estimator_name(self) -> str:
        """How messages name this estimator: its factory spec (``torch:net.py:make``), or the
        factory function's name."""
        if isinstance(self.factory, str):
            return self.factory
        return f"torch factory {getattr(self.factory, '__qualname__', type(self.factory).__name__)}"

    def _make(self, n_features: int, n_classes: int) -> Any:
        torch = require_torch()
        make = load_torch_factory(self.factory) if isinstance(self.factory, str) else self.factory
        if not callable(make):
            raise DistPrivacyError("factory must be a callable make(n_features, n_classes)")
        with user_code(self, "its factory"):
            module = make(n_features, n_classes)
        if not isinstance(module, torch.nn.Module):
            raise EstimatorError(
                f"the estimator {estimator_label(self)}: the factory returned "
                f"{type(module).__name__}, not a torch.nn.Module; return the network"
            )
        with user_code(self, "its factory"):
            return module.float()

    @staticmethod
    def _check_x(X: Any, d: int | None = None) -> np.ndarray:
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2 or X.shape[0] == 0:
            raise DistPrivacyError(f"X must be a non-empty 2-D array, got shape {X.shape}")
        if not np.isfinite(X).all():
            raise DistPrivacyError("X has NaN or infinite entries; impute or drop them first")
        if d is not None and X.shape[1] != d:
            raise DistPrivacyError(f"X has {X.shape[1]} features but the model was fit on {d}")
        return X

    def fit(self, X: Any, y: Any) -> TorchEstimator:
        """Train a fresh network on ``(X, y)``."""
        self._check_settings()
        X = self._check_x(X)
        y = np.asarray(y)
        if y.shape != (X.shape[0],):
            raise DistPrivacyError(f"y must have one label per row of X ({X.shape[0]})")
        classes, codes = np.unique(y, return_inverse=True)
        if classes.size < 2:
            raise DistPrivacyError("y holds one class only; a classifier needs two or more")
        seed = torch_seed(self.random_state)
        with torch_session(seed, int(self.n_threads)) as torch:
            module = self._make(X.shape[1], classes.size)
            module.train()
            opt = torch.optim.Adam(module.parameters(), lr=self.lr, weight_decay=self.weight_decay)
            gen = torch.Generator().manual_seed(seed)
            Xt, yt = torch.from_numpy(X), torch.from_numpy(codes.astype(np.int64))
            n, bs = X.shape[0], int(self.batch_size)
            loss_fn = torch.nn.CrossEntropyLoss()
            for _ in range(int(self.epochs)):
                order = torch.randperm(n, generator=gen)
                for start in range(0, n, bs):
                    idx = order[start : start + bs]
                    opt.zero_grad()
                    with user_code(self, "the network's forward pass"):
                        out = module(Xt[idx])
                    shape = tuple(out.shape) if isinstance(out, torch.Tensor) else None
                    if shape is None or len(shape) != 2 or shape[1] != classes.size:
                        got = type(out).__name__ if shape is None else f"shape {shape}"
                        raise EstimatorError(
                            f"the estimator {estimator_label(self)}: the network returned {got}; "
                            f"it must return a tensor of logits of shape (batch, {classes.size})"
                        )
                    with user_code(self, "the loss"):
                        loss = loss_fn(out, yt[idx])
                    if not torch.isfinite(loss):
                        raise DistPrivacyError(
                            "training diverged (non-finite loss); lower lr or scale the features"
                        )
                    with user_code(self, "the network's backward pass"):
                        loss.backward()
                        opt.step()
            module.eval()
        self.module_ = module
        self.classes_ = classes
        self.n_features_in_ = X.shape[1]
        self.seed_ = seed
        return self

    def _fitted(self) -> None:
        if not hasattr(self, "module_"):
            raise DistPrivacyError("TorchEstimator is not fitted; call fit(X, y) first")

    def logits(self, X: Any) -> np.ndarray:
        """The network's outputs, (n, n_classes), float32."""
        self._fitted()
        X = self._check_x(X, self.n_features_in_)
        torch = require_torch()
        before = torch.get_num_threads()
        torch.set_num_threads(int(self.n_threads))
        try:
            with torch.no_grad(), user_code(self, "the network's forward pass"):
                return self.module_(torch.from_numpy(X)).numpy()
        finally:
            torch.set_num_threads(before)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Softmax of the logits, (n, n_classes); columns follow ``classes_``."""
        z = self.logits(X).astype(np.float64)
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        return p / p.sum(axis=1, keepdims=True)

    def predict(self, X: Any) -> np.ndarray:
        self._fitted()
        return self.classes_[np.argmax(self.logits(X), axis=1)]

    def parameter_names(self) -> list[str]:
        """Names of the trained tensors in the order of :meth:`parameters_vector`."""
        self._fitted()
        return [name for name, _ in self.module_.named_parameters()]

    def parameters_vector(self) -> np.ndarray:
        """Every trained parameter, flattened and concatenated, float64.

        The order is the module's registration order (``named_parameters``), which is fixed by
        the factory's code, so two networks from one factory give vectors of one layout (white-
        box attacks compare them coordinate by coordinate).
        """
        self._fitted()
        return np.concatenate(
            [p.detach().cpu().numpy().ravel() for p in self.module_.parameters()]
        ).astype(np.float64)

    def state_arrays(self) -> dict[str, np.ndarray]:
        """The module's ``state_dict`` as NumPy arrays (what populations save)."""
        self._fitted()
        return {k: v.detach().cpu().numpy() for k, v in self.module_.state_dict().items()}


def estimator_from_state(
    factory: Callable[[int, int], Any] | str,
    state: dict[str, np.ndarray],
    classes: np.ndarray,
    n_features: int,
    **params: Any,
) -> TorchEstimator:
    """A fitted :class:`TorchEstimator` from saved weights (the factory rebuilds the module)."""
    torch = require_torch()
    est = TorchEstimator(factory, **params)
    module = est._make(int(n_features), int(np.asarray(classes).size))
    try:
        module.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state.items()})
    except (RuntimeError, KeyError) as exc:
        msg = " ".join(str(exc).split())[:200]
        raise DistPrivacyError(
            f"the saved weights do not fit the factory's network ({msg}); load with the factory "
            "the population was trained with"
        ) from None
    module.eval()
    est.module_ = module
    est.classes_ = np.asarray(classes)
    est.n_features_in_ = int(n_features)
    est.seed_ = None
    return est
