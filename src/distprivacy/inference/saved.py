"""Saved populations of the user's own models (issue 24), never pickle.

A *population* is a list of trained classifiers of one kind and one architecture — the shadow
models of the distribution-inference game (Suri & Evans, *Formalizing and Estimating
Distribution Inference Risks*, 2021, §2: models trained on datasets drawn from G0 or G1) — plus a
JSON description (``meta``: the factory, the ratio or label b, seeds, feature names).

* PyTorch populations (:class:`~distprivacy.inference.torch_estimator.TorchEstimator`) are one
  ``safetensors`` file: tensors ``m{i}/{name}`` (each model's ``state_dict``) and a JSON header in
  the file's metadata. Loading rebuilds each network from the factory and loads the weights;
  no code is read from the file.
* scikit-learn populations are one ``skops`` file (:mod:`skops.io`). Loading refuses every type
  that is neither trusted by skops by default nor named by the caller in ``trusted``, with one
  line naming the types.

Files are written atomically (:func:`distprivacy.outputs.atomic_write`) and created 0600 (they
hold models trained on the user's data).

:class:`EstimatorPopulation` turns a loaded population into what the attacks of
:mod:`distprivacy.inference.attacks` read: outputs on a query set (black-box) and one parameter
vector per model (white-box); :func:`attack_features` gives either as an array.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from distprivacy.exceptions import DistPrivacyError
from distprivacy.inference._user_code import EstimatorError, estimator_label, user_code
from distprivacy.outputs import atomic_write, check_output_file

__all__ = [
    "TRUSTED_TYPES",
    "EstimatorPopulation",
    "attack_features",
    "load_population",
    "model_parameters",
    "save_population",
]

_FORMAT = "distprivacy.SavedPopulation"
_VERSION = 1
_TORCH_SUFFIX = ".safetensors"
_SKOPS_SUFFIX = ".skops"

#: scikit-learn's own internal types that skops does not trust by default but that the
#: population files of scikit-learn's trees, forests, boosting and MLPs hold. Every other type
#: beyond skops's defaults must be named by the caller (``trusted=``).
TRUSTED_TYPES: tuple[str, ...] = (
    "sklearn.tree._tree.Tree",
    "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
    "sklearn.neural_network._stochastic_optimizers.AdamOptimizer",
    "sklearn.neural_network._stochastic_optimizers.SGDOptimizer",
)


#: The one-line fix printed when a file format's package is missing.
SAVED_EXTRA = "saved populations need skops and safetensors: pip install 'distprivacy[saved]'"


def _require(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise DistPrivacyError(SAVED_EXTRA) from None


def _one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]


# ------------------------------------------------------------------------------------------------
# Parameters of one model (white-box)
# ------------------------------------------------------------------------------------------------


def model_parameters(model: Any) -> np.ndarray:
    """One model's trained parameters as a flat float64 vector, in a fixed order.

    :class:`TorchEstimator`: ``parameters_vector()`` (registration order). scikit-learn:
    ``coefs_`` then ``intercepts_`` layer by layer (``MLPClassifier``), else ``coef_`` then
    ``intercept_`` (linear models). Models without a fixed-size parameter vector (trees,
    forests, nearest neighbours) are refused: attack them black-box.
    """
    if hasattr(model, "parameters_vector"):
        return np.asarray(model.parameters_vector(), dtype=np.float64)
    if hasattr(model, "coefs_") and hasattr(model, "intercepts_"):
        parts = [a for pair in zip(model.coefs_, model.intercepts_, strict=True) for a in pair]
    elif hasattr(model, "coef_"):
        parts = [model.coef_, np.atleast_1d(getattr(model, "intercept_", np.zeros(0)))]
    else:
        raise DistPrivacyError(
            f"{type(model).__name__} has no fixed-size parameter vector (white-box attacks read "
            "coef_/coefs_ or a PyTorch network's weights); attack it black-box instead"
        )
    return np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in parts])


# ------------------------------------------------------------------------------------------------
# The adapter the attacks read
# ------------------------------------------------------------------------------------------------


def _classes(model: Any) -> np.ndarray:
    classes = np.asarray(getattr(model, "classes_", []))
    if classes.size < 2:
        raise DistPrivacyError(
            f"the attacks read classifiers of at least two classes; a model has {classes.size} "
            f"({classes.tolist()[:5]}); train on a label with two or more values"
        )
    return classes


def _probabilities(model: Any, X: np.ndarray, n_classes: int) -> np.ndarray:
    """One model's ``predict_proba(X)``, checked: (N, K) finite numbers (the user's code
    raising, or returning anything else, is one line naming the estimator)."""
    with user_code(model, "predict_proba"):
        P = np.asarray(model.predict_proba(X), dtype=np.float64)
    if P.shape != (len(X), n_classes) or not np.isfinite(P).all():
        what = f"shape {P.shape}" if P.shape != (len(X), n_classes) else "NaN or infinite values"
        raise EstimatorError(
            f"the estimator {estimator_label(model)}: predict_proba returned {what}; it must "
            f"return finite probabilities of shape (rows, {n_classes})"
        )
    return P


#: Arrays of inputs whose outputs a population keeps (the pairwise games of ``models audit``
#: query each population on the same test sets again and again).
_CACHE_SIZE = 8


@dataclass
class EstimatorPopulation:
    """A list of fitted classifiers seen as a model population.

    It implements what :class:`~distprivacy.inference.attacks.LossTest`,
    :class:`~distprivacy.inference.attacks.ThresholdTest`,
    :class:`~distprivacy.inference.attacks.BlackBoxMetaClassifier` and
    :class:`~distprivacy.inference.attacks.SortedWeightsMetaClassifier` call: ``predict_proba``,
    ``logits`` (log-odds), ``loss`` (mean log loss), ``accuracy`` on (X, y) with labels 0/1 for
    ``classes_[0]``/``classes_[1]`` — or, for models of K > 2 classes (every model with the same
    ``classes_``), labels 0..K−1 for the classes in that order: ``predict_proba`` and
    ``logits`` then give the K probabilities / log-probabilities of each query row side by
    side (m, N·K), the loss is the cross-entropy and the accuracy that of the arg-max;
    ``weights``/``biases`` are the flat parameter vectors as one
    linear "layer" (:func:`model_parameters`), so the sorted-weights meta-classifier reads them
    as they are (there are no hidden neurons to sort). The permutation-invariant network needs a
    real layer structure and is not meant for these.

    Parameters
    ----------
    models
        Fitted classifiers with ``predict_proba`` and ``classes_`` (two classes or more, the
        same for every model).
    meta
        The population's JSON description.
    """

    models: list[Any]
    meta: dict = field(default_factory=dict)
    activation: str = "identity"

    def __post_init__(self) -> None:
        if not self.models:
            raise DistPrivacyError("a population needs at least one model; got none")
        for m in self.models:
            if not hasattr(m, "predict_proba"):
                raise DistPrivacyError(f"{type(m).__name__} has no predict_proba; give classifiers")
        self._params: np.ndarray | None = None
        self._cache: dict[tuple, np.ndarray] = {}

    @property
    def n_classes(self) -> int:
        """Classes of the models (2: binary)."""
        return int(_classes(self.models[0]).size)

    @property
    def n_models(self) -> int:
        return len(self.models)

    def __len__(self) -> int:
        return len(self.models)

    @property
    def n_features(self) -> int:
        return int(getattr(self.models[0], "n_features_in_", -1))

    def parameter_matrix(self) -> np.ndarray:
        """(m, p): every model's :func:`model_parameters` (one layout: same architecture)."""
        if self._params is None:
            vecs = [model_parameters(m) for m in self.models]
            sizes = {v.size for v in vecs}
            if len(sizes) != 1:
                raise DistPrivacyError(
                    f"the models have parameter vectors of different sizes {sorted(sizes)}; "
                    "a white-box attack needs one architecture"
                )
            self._params = np.stack(vecs)
        return self._params

    @property
    def layer_sizes(self) -> tuple[int, ...]:
        """(n_features, n_parameters) when the models have parameter vectors, else
        (n_features,): the signature the attacks compare between populations."""
        try:
            return (self.n_features, int(self.parameter_matrix().shape[1]))
        except DistPrivacyError:
            return (self.n_features,)

    @property
    def n_parameters(self) -> int:
        """Parameters per model (0 for models without a parameter vector, e.g. trees)."""
        try:
            return int(self.parameter_matrix().shape[1])
        except DistPrivacyError:
            return 0

    @property
    def weights(self) -> tuple[np.ndarray, ...]:
        return (self.parameter_matrix()[:, :, None],)

    @property
    def biases(self) -> tuple[np.ndarray, ...]:
        return (np.zeros((self.n_models, 1)),)

    def flat_parameters(self) -> np.ndarray:
        return self.parameter_matrix()

    def probabilities(self, X: np.ndarray) -> np.ndarray:
        """(m, N, K): each model's probabilities of its K classes (cached per input array)."""
        X = np.ascontiguousarray(X)
        import hashlib

        key = (X.shape, str(X.dtype), hashlib.blake2b(X.tobytes(), digest_size=16).digest())
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        K = self.n_classes
        for m in self.models:
            if _classes(m).size != K:
                raise DistPrivacyError(
                    "the models of a population were trained on different sets of classes; "
                    "train every model on data holding every label value"
                )
        P = np.stack([_probabilities(m, X, K) for m in self.models])
        if len(self._cache) >= _CACHE_SIZE:
            self._cache.pop(next(iter(self._cache)))
        self._cache[key] = P
        return P

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """(m, N): each model's probability of ``classes_[1]`` — or (m, N·K), every class's
        probability, for K > 2 classes."""
        P = self.probabilities(X)
        return P[:, :, 1] if P.shape[2] == 2 else P.reshape(P.shape[0], -1)

    def logits(self, X: np.ndarray) -> np.ndarray:
        """(m, N): log-odds of ``classes_[1]`` (probabilities clipped to [1e-12, 1 − 1e-12]) —
        or (m, N·K), every class's log-probability, for K > 2 classes."""
        P = self.probabilities(X)
        if P.shape[2] > 2:
            return np.log(np.clip(P, 1e-12, 1.0)).reshape(P.shape[0], -1)
        p = np.clip(P[:, :, 1], 1e-12, 1 - 1e-12)
        return np.log(p) - np.log1p(-p)

    def _labels(self, y: np.ndarray, n: int) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        K = self.n_classes
        if y.shape != (n,) or not np.isin(y, np.arange(K)).all():
            raise DistPrivacyError(f"y must hold one label 0..{K - 1} per row ({n})")
        return y.astype(int)

    def loss(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """(m,): each model's mean log loss (cross-entropy) on (X, y)."""
        P = self.probabilities(X)
        y = self._labels(y, P.shape[1])
        p = np.clip(P[:, np.arange(P.shape[1]), y], 1e-12, 1.0)
        return -np.log(p).mean(axis=1)

    def accuracy(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """(m,): each model's accuracy on (X, y) (the most probable class)."""
        P = self.probabilities(X)
        y = self._labels(y, P.shape[1])
        return (P.argmax(axis=2) == y[None, :]).mean(axis=1)


def attack_features(
    pop: EstimatorPopulation, query: np.ndarray | None = None, *, white_box: bool = False
) -> np.ndarray:
    """What a meta-classifier reads of each model, (m, p).

    ``white_box=False``: the log-odds on the query set ``query`` (q rows: p = q).
    ``white_box=True``: the parameter vectors (:func:`model_parameters`).
    """
    if white_box:
        return pop.parameter_matrix()
    if query is None:
        raise DistPrivacyError("black-box features need a query set; pass query=X")
    return pop.logits(query)


# ------------------------------------------------------------------------------------------------
# Files
# ------------------------------------------------------------------------------------------------


def _kind(models: Sequence[Any]) -> str:
    from distprivacy.inference.torch_estimator import TorchEstimator

    torch_like = [isinstance(m, TorchEstimator) for m in models]
    if all(torch_like):
        return "torch"
    if any(torch_like):
        raise DistPrivacyError("a population holds one kind of model; got PyTorch and others")
    return "sklearn"


def _write_private(path: Path, write: Any) -> Path:
    """Atomic write of a new 0600 file (an older file at ``path`` is made 0600 first)."""
    if path.exists():
        if not path.is_file():
            raise DistPrivacyError(f"{path} exists and is not a regular file; give another path")
        os.chmod(path, 0o600)
    old = os.umask(0o077)
    try:
        return atomic_write(path, write)
    finally:
        os.umask(old)


def _check_meta(meta: Any) -> dict:
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        raise DistPrivacyError(f"meta must be a dict, got {type(meta).__name__}")
    try:
        json.dumps(meta)
    except (TypeError, ValueError) as exc:
        raise DistPrivacyError(
            f"meta must be JSON-serialisable ({_one_line(exc)}); convert arrays to lists"
        ) from None
    return dict(meta)


def save_population(path: str | os.PathLike[str], models: Sequence[Any], meta: dict) -> Path:
    """Save fitted models and their description; the kind decides the format.

    PyTorch (every model a fitted :class:`TorchEstimator` whose ``factory`` is a spec string
    ``"torch:FILE.py:make"``, so the file can name it) → ``.safetensors``; anything else →
    ``.skops``. The suffix is appended when missing; the written path is returned.
    """
    models = list(models)
    if not models:
        raise DistPrivacyError("save_population needs at least one fitted model; got none")
    meta = _check_meta(meta)
    kind = _kind(models)
    path = Path(path)
    suffix = _TORCH_SUFFIX if kind == "torch" else _SKOPS_SUFFIX
    if path.suffix != suffix:
        path = path.with_name(path.name + suffix)
    path = check_output_file(path, option="path")
    if kind == "torch":
        return _save_torch(path, models, meta)
    return _save_skops(path, models, meta)


def _save_torch(path: Path, models: list[Any], meta: dict) -> Path:
    save_file = _require("safetensors.numpy").save_file
    first = models[0]
    if not isinstance(first.factory, str):
        raise DistPrivacyError(
            "a saved PyTorch population names its factory; build the TorchEstimator with "
            "factory='torch:FILE.py:make' rather than a function object"
        )
    tensors: dict[str, np.ndarray] = {}
    for i, m in enumerate(models):
        if not hasattr(m, "module_"):
            raise DistPrivacyError(f"model {i} is not fitted; fit every model before saving")
        if m.factory != first.factory or m.n_features_in_ != first.n_features_in_:
            raise DistPrivacyError("every model of a population has one factory and input width")
        for name, arr in m.state_arrays().items():
            tensors[f"m{i}/{name}"] = np.ascontiguousarray(arr)
    params = {k: v for k, v in first.get_params().items() if k not in ("factory", "random_state")}
    header = {
        "format": _FORMAT,
        "version": _VERSION,
        "kind": "torch",
        "factory": first.factory,
        "n_models": len(models),
        "n_features": int(first.n_features_in_),
        "classes": np.asarray(first.classes_).tolist(),
        "params": params,
        "seeds": [m.seed_ for m in models],
        "meta": meta,
    }
    return _write_private(
        path, lambda tmp: save_file(tensors, str(tmp), metadata={"distprivacy": json.dumps(header)})
    )


def _save_skops(path: Path, models: list[Any], meta: dict) -> Path:
    sio = _require("skops.io")
    header = {"format": _FORMAT, "version": _VERSION, "kind": "sklearn", "meta": meta}
    obj = {"header": json.dumps(header), "models": models}

    def write(tmp: Path) -> None:
        try:
            sio.dump(obj, tmp)
        except Exception as exc:  # skops refuses objects it cannot serialise
            raise DistPrivacyError(
                f"cannot save these models with skops ({_one_line(exc)}); save a population of "
                "scikit-learn estimators"
            ) from None

    return _write_private(path, write)


def load_population(
    path: str | os.PathLike[str],
    *,
    factory: Any = None,
    trusted: Sequence[str] = (),
) -> EstimatorPopulation:
    """Load a population saved by :func:`save_population`.

    Parameters
    ----------
    path
        A ``.safetensors`` (PyTorch) or ``.skops`` (scikit-learn) file.
    factory
        PyTorch only, required: the factory to rebuild the networks with — a function or a
        spec ``"torch:FILE.py:make"``. The file names the factory it was trained with, but
        importing it runs code, so it is never imported unless you pass it (the error
        message quotes the saved spec).
    trusted
        scikit-learn only: type names (as skops reports them) to trust beyond skops's defaults.
        :data:`TRUSTED_TYPES` (scikit-learn's own tree and optimiser types) are trusted too;
        any other untrusted type is refused with one line.
    """
    p = Path(path)
    if not p.is_file():
        raise DistPrivacyError(f"population file {p} not found; give a saved population")
    if p.suffix == _TORCH_SUFFIX:
        return _load_torch(p, factory)
    if p.suffix == _SKOPS_SUFFIX:
        return _load_skops(p, trusted)
    raise DistPrivacyError(
        f"{p} is neither a .safetensors (PyTorch) nor a .skops (scikit-learn) population"
    )


def _load_torch(p: Path, factory: Any) -> EstimatorPopulation:
    safe_open = _require("safetensors").safe_open

    from distprivacy.inference.torch_estimator import (
        estimator_from_state,
        load_torch_factory,
        require_torch,
    )

    require_torch()
    try:
        with safe_open(str(p), framework="numpy") as fh:
            raw = (fh.metadata() or {}).get("distprivacy")
            header = json.loads(raw) if raw else None
            tensors = {k: fh.get_tensor(k) for k in fh.keys()}
    except (OSError, ValueError, json.JSONDecodeError) as exc:
        raise DistPrivacyError(
            f"{p} is not a readable safetensors file ({_one_line(exc)})"
        ) from None
    if not isinstance(header, dict) or header.get("format") != _FORMAT:
        raise DistPrivacyError(f"{p} is not a distprivacy population (no header)")
    n, classes, d, params, spec = _torch_header(p, header)
    if factory is None:
        raise DistPrivacyError(
            f"{p} was trained with factory {spec!r}; loading runs that code, so pass it "
            f"explicitly (load_population(path, factory={spec!r}) or your function)"
        )
    states: list[dict[str, np.ndarray]] = [{} for _ in range(n)]
    for key, arr in tensors.items():
        head, _, name = key.partition("/")
        if not head.startswith("m") or not head[1:].isdigit() or int(head[1:]) >= n:
            raise DistPrivacyError(f"{p} holds an unexpected tensor {key!r}; the file is damaged")
        states[int(head[1:])][name] = arr
    make = load_torch_factory(factory) if isinstance(factory, str) else factory  # import once
    models = [estimator_from_state(make, s, classes, d, **params) for s in states]
    seeds = header.get("seeds")
    seeds = seeds if isinstance(seeds, list) and len(seeds) == n else [None] * n
    for m, seed in zip(models, seeds, strict=True):
        m.seed_ = seed
        m.factory = factory
    meta = dict(header.get("meta", {}))
    meta.setdefault("factory", header["factory"])
    return EstimatorPopulation(models, meta)


def _torch_header(p: Path, header: dict) -> tuple[int, np.ndarray, int, dict, str]:
    """The checked fields of a PyTorch population's header (one line if any is damaged)."""
    from distprivacy.inference.torch_estimator import TorchEstimator

    allowed = set(TorchEstimator(None).get_params()) - {"factory", "random_state"}
    try:
        n, d = header["n_models"], header["n_features"]
        classes, params, spec = header["classes"], header["params"], header["factory"]
        ok = (
            all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in (n, d))
            and isinstance(classes, list)
            and len(classes) >= 2
            and isinstance(params, dict)
            and set(params) <= allowed
            and isinstance(spec, str)
        )
    except (KeyError, TypeError):
        ok = False
    if not ok:
        raise DistPrivacyError(f"{p} has a damaged population header; save the population again")
    return n, np.asarray(classes), d, params, spec


def _load_skops(p: Path, trusted: Sequence[str]) -> EstimatorPopulation:
    sio = _require("skops.io")
    try:
        untrusted = sio.get_untrusted_types(file=p)
    except Exception as exc:  # a damaged or foreign file
        raise DistPrivacyError(f"{p} is not a readable skops file ({_one_line(exc)})") from None
    refused = sorted(set(untrusted) - set(trusted) - set(TRUSTED_TYPES))
    if refused:
        raise DistPrivacyError(
            f"{p} holds types that are not trusted: {', '.join(refused)}; load it only if you "
            "trust its author, naming them in trusted=[...]"
        )
    try:
        obj = sio.load(p, trusted=list(untrusted))
    except Exception as exc:
        raise DistPrivacyError(f"cannot load {p} ({_one_line(exc)})") from None
    if not isinstance(obj, dict) or "header" not in obj or "models" not in obj:
        raise DistPrivacyError(f"{p} is not a distprivacy population (no header)")
    header = json.loads(obj["header"])
    if header.get("format") != _FORMAT:
        raise DistPrivacyError(f"{p} is not a distprivacy population (no header)")
    return EstimatorPopulation(list(obj["models"]), dict(header.get("meta", {})))
