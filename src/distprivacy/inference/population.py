"""A population of small binary classifiers of one architecture, stored as stacked tensors.

``m`` models with layer sizes ``(d_0, d_1, ..., d_L = 1)`` are held as weight tensors of shape
``(m, d_l, d_{l+1})`` and bias matrices of shape ``(m, d_{l+1})``. Logistic regression is the
one-layer case. Every evaluation (logits, loss, accuracy) is one batched matrix product per
layer for all models at once (``np.matmul`` broadcasts over the leading model axis); the models
are processed in chunks so that the activations of a chunk take at most about
:data:`CHUNK_BYTES` bytes.

This is the object the attacks of Suri & Evans (§3.2: loss test, threshold test,
meta-classifiers) read: a victim's or an adversary's models trained on datasets drawn from one
distribution transformer G_b (``meta["label"] = b``).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from distprivacy.exceptions import DistPrivacyError
from distprivacy.files import (
    MAX_DEPTH,
    MAX_NPZ_BYTES,
    Custom,
    Field,
    Int,
    InvalidFileError,
    MapOf,
    Str,
    Table,
    nesting_depth,
    read_npz,
    validate,
)
from distprivacy.outputs import atomic_write

__all__ = ["ACTIVATIONS", "CHUNK_BYTES", "ModelPopulation", "activate", "population_file"]

#: Hidden-layer activations understood by :class:`ModelPopulation`.
ACTIVATIONS: tuple[str, ...] = ("relu", "tanh", "identity")

#: Target size of the hidden activations of one chunk of models during evaluation (bytes).
CHUNK_BYTES: int = 256 * 2**20

_FORMAT_VERSION = 1
_JSON_KINDS = ("bool", "number", "str", "dict", "list", "null")
_MISSING = object()


def activate(z: np.ndarray, activation: str) -> np.ndarray:
    """Apply a hidden-layer activation (``"relu"``, ``"tanh"`` or ``"identity"``)."""
    if activation == "relu":
        return np.maximum(z, 0, out=z) if z.flags.writeable else np.maximum(z, 0)
    if activation == "tanh":
        return np.tanh(z)
    if activation == "identity":
        return z
    raise DistPrivacyError(
        f"unknown activation {activation!r}; use one of {', '.join(ACTIVATIONS)}"
    )


def _check_meta(meta: Any, m: int) -> dict:
    if not isinstance(meta, dict):
        raise DistPrivacyError(f"meta must be a dict, got {type(meta).__name__}; pass a dict")
    per_model = meta.get("per_model", {})
    if not isinstance(per_model, dict) or not all(
        isinstance(v, list) and len(v) == m for v in per_model.values()
    ):
        raise DistPrivacyError(
            f'meta["per_model"] must map names to lists of one entry per model ({m})'
        )
    try:
        json.dumps(meta)
    except (TypeError, ValueError) as exc:
        raise DistPrivacyError(
            f"meta must be JSON-serialisable ({' '.join(str(exc).split())}); "
            "convert arrays to lists and numpy scalars to Python numbers"
        ) from None
    return meta


@dataclass(frozen=True)
class ModelPopulation:
    """``m`` feed-forward binary classifiers of one architecture, as stacked tensors.

    Parameters
    ----------
    weights
        One array per layer; layer ``l`` has shape ``(m, d_l, d_{l+1})``. The last layer has
        ``d_L = 1`` (one logit). Logistic regression is a single layer.
    biases
        One array per layer; layer ``l`` has shape ``(m, d_{l+1})``.
    activation
        Activation of the hidden layers (``"relu"``, ``"tanh"``, ``"identity"``); the last layer
        is linear (a logit; probabilities are its sigmoid).
    meta
        JSON-serialisable description, e.g. ``property``, ``ratio``, ``label`` (0/1 for G0/G1),
        ``feature_names``, training settings. Values that differ between models live in
        ``meta["per_model"]``, a dict of lists with one entry per model (e.g. ``seed``); they
        follow the models through :meth:`subset` and :meth:`concat`.

    Notes
    -----
    All arrays share one floating dtype (float32 for populations from
    :func:`distprivacy.inference.training.train_population`). Inputs ``X`` are cast to it.
    """

    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]
    activation: str = "relu"
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        weights = tuple(np.asarray(w) for w in self.weights)
        biases = tuple(np.asarray(b) for b in self.biases)
        if len(weights) == 0:
            raise DistPrivacyError("a model population needs at least one layer; pass weights")
        if len(weights) != len(biases):
            raise DistPrivacyError(
                f"{len(weights)} weight arrays but {len(biases)} bias arrays; pass one of each "
                "per layer"
            )
        if self.activation not in ACTIVATIONS:
            raise DistPrivacyError(
                f"unknown activation {self.activation!r}; use one of {', '.join(ACTIVATIONS)}"
            )
        dtype = np.result_type(*weights, *biases)
        if not np.issubdtype(dtype, np.floating):
            raise DistPrivacyError(f"weights must be floating point, got {dtype}; cast them")
        m = weights[0].shape[0] if weights[0].ndim == 3 else -1
        d_in = weights[0].shape[1] if weights[0].ndim == 3 else -1
        for layer, (w, b) in enumerate(zip(weights, biases, strict=True)):
            if w.ndim != 3 or b.ndim != 2:
                raise DistPrivacyError(
                    f"layer {layer}: weights must be (m, d_in, d_out) and biases (m, d_out), "
                    f"got {w.shape} and {b.shape}"
                )
            if w.shape[0] != m or b.shape[0] != m:
                raise DistPrivacyError(
                    f"layer {layer}: {w.shape[0]} models in the weights and {b.shape[0]} in the "
                    f"biases, layer 0 has {m}; every layer must hold the same models"
                )
            if w.shape[1] != d_in:
                raise DistPrivacyError(
                    f"layer {layer}: input size {w.shape[1]} but the previous layer outputs "
                    f"{d_in}; the layer sizes must chain"
                )
            if b.shape[1] != w.shape[2]:
                raise DistPrivacyError(
                    f"layer {layer}: biases of size {b.shape[1]} for {w.shape[2]} outputs; "
                    "they must match"
                )
            d_in = w.shape[2]
        if d_in != 1:
            raise DistPrivacyError(
                f"the last layer has {d_in} outputs; binary classifiers output one logit"
            )
        if m == 0:
            raise DistPrivacyError("a model population needs at least one model")
        object.__setattr__(self, "weights", tuple(w.astype(dtype, copy=False) for w in weights))
        object.__setattr__(self, "biases", tuple(b.astype(dtype, copy=False) for b in biases))
        object.__setattr__(self, "meta", _check_meta(self.meta, m))

    # ------------------------------------------------------------------ shape
    @property
    def n_models(self) -> int:
        """Number of models ``m``."""
        return int(self.weights[0].shape[0])

    @property
    def layer_sizes(self) -> tuple[int, ...]:
        """``(d_0, d_1, ..., 1)``: input size, hidden sizes, one output."""
        return (int(self.weights[0].shape[1]), *(int(w.shape[2]) for w in self.weights))

    @property
    def dtype(self) -> np.dtype:
        """Floating dtype of the parameters."""
        return self.weights[0].dtype

    @property
    def n_parameters(self) -> int:
        """Number of parameters of one model ``P``."""
        return int(
            sum(w[0].size + b[0].size for w, b in zip(self.weights, self.biases, strict=True))
        )

    def __len__(self) -> int:
        return self.n_models

    # ------------------------------------------------------------------ evaluation
    def _check_x(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X)
        d0 = self.layer_sizes[0]
        if X.ndim == 2:
            if X.shape[1] != d0:
                raise DistPrivacyError(
                    f"X has {X.shape[1]} features but the models take {d0}; encode X the way "
                    "the training data was encoded"
                )
        elif X.ndim == 3:
            if X.shape[0] != self.n_models or X.shape[2] != d0:
                raise DistPrivacyError(
                    f"per-model X must be ({self.n_models}, N, {d0}), got {X.shape}"
                )
        else:
            raise DistPrivacyError(
                f"X must be (N, {d0}) shared by all models or ({self.n_models}, N, {d0}) per "
                f"model, got shape {X.shape}"
            )
        if not np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.complexfloating):
            raise DistPrivacyError(f"X must be real numbers, got dtype {X.dtype}")
        X = X.astype(self.dtype, copy=False)
        if not np.all(np.isfinite(X)):
            raise DistPrivacyError("X holds NaN or infinite values; clean or impute them first")
        return X

    def _chunk(self, n_rows: int) -> int:
        """Models per chunk so that one chunk's activations (all layers) fit CHUNK_BYTES."""
        per_model = max(1, n_rows * sum(self.layer_sizes[1:]) * self.dtype.itemsize)
        return max(1, min(self.n_models, CHUNK_BYTES // per_model))

    def logits(self, X: np.ndarray) -> np.ndarray:
        """Logits of every model on ``X``.

        Parameters
        ----------
        X
            ``(N, d_0)`` inputs shared by all models, or ``(m, N, d_0)`` one set per model.

        Returns
        -------
        ndarray
            ``(m, N)`` logits, in the population's dtype.
        """
        X = self._check_x(X)
        N = X.shape[-2]
        out = np.empty((self.n_models, N), dtype=self.dtype)
        step = self._chunk(N)
        last = len(self.weights) - 1
        for start in range(0, self.n_models, step):
            sl = slice(start, start + step)
            h = X if X.ndim == 2 else X[sl]
            for layer, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
                h = np.matmul(h, w[sl])
                h += b[sl][:, None, :]
                if layer < last:
                    h = activate(h, self.activation)
            out[sl] = h[:, :, 0]
        return out

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Probability of label 1 for every model and row, ``(m, N)`` (sigmoid of the logits)."""
        z = self.logits(X)
        return _sigmoid(z)

    def _check_y(self, y: np.ndarray, N: int) -> np.ndarray:
        y = np.asarray(y)
        if y.shape not in ((N,), (self.n_models, N)):
            raise DistPrivacyError(
                f"y must have shape ({N},) or ({self.n_models}, {N}) to match X, got {y.shape}"
            )
        if not np.all((y == 0) | (y == 1)):
            raise DistPrivacyError("y must hold binary labels 0/1; encode the labels first")
        return y.astype(self.dtype, copy=False)

    def loss(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Mean binary cross-entropy (natural log) of each model on ``(X, y)``, shape ``(m,)``.

        Computed stably from the logits: ``log(1 + e^z) − y z``.
        """
        z = self.logits(X)
        y = self._check_y(y, z.shape[1])
        return (np.logaddexp(0, z) - y * z).mean(axis=1, dtype=np.float64)

    def accuracy(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Share of rows each model classifies correctly (logit > 0 ⇔ label 1), ``(m,)``."""
        z = self.logits(X)
        y = self._check_y(y, z.shape[1])
        return ((z > 0) == (y == 1)).mean(axis=1)

    # ------------------------------------------------------------------ parameters
    def flat_parameters(self) -> np.ndarray:
        """All parameters, ``(m, P)``: layer by layer, the weights (row-major ``(d_in, d_out)``)
        then the biases."""
        m = self.n_models
        parts = []
        for w, b in zip(self.weights, self.biases, strict=True):
            parts.append(w.reshape(m, -1))
            parts.append(b)
        return np.concatenate(parts, axis=1)

    # ------------------------------------------------------------------ combine
    def subset(self, idx: np.ndarray | slice | list[int]) -> ModelPopulation:
        """The models selected by ``idx`` (integer indices, a boolean mask or a slice).

        ``meta`` is kept; the per-model lists in ``meta["per_model"]`` are subset too.
        """
        if isinstance(idx, slice):
            sel = np.arange(self.n_models)[idx]
        else:
            sel = np.asarray(idx)
            if sel.dtype == bool:
                if sel.shape != (self.n_models,):
                    raise DistPrivacyError(
                        f"a boolean mask must have {self.n_models} entries, got {sel.shape}"
                    )
                sel = np.flatnonzero(sel)
            elif sel.ndim != 1 or not (sel.size == 0 or np.issubdtype(sel.dtype, np.integer)):
                raise DistPrivacyError("idx must be a 1-D integer array, a boolean mask or a slice")
        if sel.size == 0:
            raise DistPrivacyError("the selection is empty; a population needs at least one model")
        if sel.min() < -self.n_models or sel.max() >= self.n_models:
            raise DistPrivacyError(
                f"model indices must lie in [0, {self.n_models}), got {sel.min()}..{sel.max()}"
            )
        meta = dict(self.meta)
        if "per_model" in meta:
            meta["per_model"] = {
                k: [v[int(i)] for i in sel] for k, v in self.meta["per_model"].items()
            }
        return ModelPopulation(
            weights=tuple(w[sel] for w in self.weights),
            biases=tuple(b[sel] for b in self.biases),
            activation=self.activation,
            meta=meta,
        )

    def concat(self, *others: ModelPopulation) -> ModelPopulation:
        """Stack this population and ``others`` (same architecture and activation).

        Nothing in ``meta`` is lost: entries equal in every part stay at the top level; entries
        that differ (or are missing from some part, as ``None``) become per-model lists in
        ``meta["per_model"]``, e.g. ``label`` → ``[0, …, 0, 1, …, 1]`` when a G0 and a G1
        population are stacked. Existing per-model lists are concatenated.
        """
        pops = (self, *others)
        for p in others:
            if not isinstance(p, ModelPopulation):
                raise DistPrivacyError(
                    f"can only concatenate ModelPopulation, got {type(p).__name__}"
                )
            if p.layer_sizes != self.layer_sizes or p.activation != self.activation:
                raise DistPrivacyError(
                    f"cannot concatenate populations of different architectures: "
                    f"{self.layer_sizes}/{self.activation} and {p.layer_sizes}/{p.activation}"
                )
        keys = [k for p in pops for k in p.meta if k != "per_model"]
        keys = list(dict.fromkeys(keys))
        meta: dict[str, Any] = {}
        varying: list[str] = []
        for k in keys:
            first = pops[0].meta.get(k, _MISSING)
            if all(k in p.meta and p.meta[k] == first for p in pops):
                meta[k] = first
            else:
                varying.append(k)
        pm_keys = list(dict.fromkeys(k for p in pops for k in p.meta.get("per_model", {})))
        per_model: dict[str, list] = {}
        for k in pm_keys:
            per_model[k] = [
                x for p in pops for x in p.meta.get("per_model", {}).get(k, [None] * p.n_models)
            ]
        for k in varying:
            if k in per_model:
                raise DistPrivacyError(
                    f"meta key {k!r} is both a per-model list and a population-wide value; "
                    "rename one of them"
                )
            per_model[k] = [p.meta.get(k) for p in pops for _ in range(p.n_models)]
        if per_model:
            meta["per_model"] = per_model
        return ModelPopulation(
            weights=tuple(
                np.concatenate([p.weights[i] for p in pops]) for i in range(len(self.weights))
            ),
            biases=tuple(
                np.concatenate([p.biases[i] for p in pops]) for i in range(len(self.biases))
            ),
            activation=self.activation,
            meta=meta,
        )

    # ------------------------------------------------------------------ I/O
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the population to an ``.npz`` file (arrays, activation, meta as JSON).

        The suffix ``.npz`` is appended if missing; the written path is returned. The file is
        written atomically (:func:`distprivacy.outputs.atomic_write`): an interrupted save leaves
        the previous file, or none, never a cut one.
        """
        path = population_file(path)
        if not path.parent.is_dir():
            raise DistPrivacyError(f"directory {path.parent} does not exist; create it first")
        arrays: dict[str, np.ndarray] = {}
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            arrays[f"W{i}"] = w
            arrays[f"b{i}"] = b
        header = {
            "format": "distprivacy.ModelPopulation",
            "version": _FORMAT_VERSION,
            "n_layers": len(self.weights),
            "activation": self.activation,
            "meta": self.meta,
        }

        def write(tmp: Path) -> None:
            with open(tmp, "wb") as fh:
                np.savez(fh, header=np.array(json.dumps(header)), **arrays)

        # A temporary file renamed into place: an interrupted save leaves the old file or none.
        return atomic_write(path, write)

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], *, max_bytes: int = MAX_NPZ_BYTES
    ) -> ModelPopulation:
        """Read a population written by :meth:`save`, validated strictly.

        The archive is checked before its arrays are read (declared uncompressed size at most
        ``max_bytes``, default 2 GiB; dtypes; shapes that fit their members), then its header
        (format, version, number of layers, activation, meta; no other keys) and its arrays
        (``W0``, ``b0``, … and nothing else; finite floats).

        Raises
        ------
        DistPrivacyError
            A one-line message naming the file and what is wrong.
        """
        path = Path(path)
        if not path.is_file():
            raise DistPrivacyError(f"no model population file {path}; check the path")
        what = "model population file"
        src = f"{what} {path.name!r}"
        bad = f"{path} is not a model population file written by ModelPopulation.save"

        def check_names(names: list[str]) -> None:
            odd = [k for k in names if k != "header" and not re.fullmatch(r"[Wb][0-9]{1,2}", k)]
            if "header" not in names or odd:
                why = f"it has array {odd[0]!r}" if odd else "it has no header"
                raise InvalidFileError(f"{bad}: {why}")

        arrays = read_npz(
            path, what, max_bytes=max_bytes, kinds={"header": "U"}, check_names=check_names
        )
        if arrays["header"].shape != ():
            raise InvalidFileError(f"{bad}: it has no header")
        text = str(arrays.pop("header"))
        if nesting_depth(text) > MAX_DEPTH:
            raise InvalidFileError(f"{bad}: its header is nested deeper than {MAX_DEPTH} levels")
        try:
            raw = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise InvalidFileError(
                f"{bad}: its header is not JSON ({' '.join(str(exc).split())[:80]})"
            ) from None
        if not isinstance(raw, dict) or raw.get("format") != "distprivacy.ModelPopulation":
            raise InvalidFileError(f"{bad}: its header has no format 'distprivacy.ModelPopulation'")
        header = validate(raw, _HEADER_SCHEMA, f"{src}: header")
        n = header["n_layers"]
        expected = {f"{k}{i}" for i in range(n) for k in ("W", "b")}
        if set(arrays) != expected:
            missing = sorted(expected - set(arrays))
            extra = sorted(set(arrays) - expected)
            detail = f"lacks {', '.join(missing)}" if missing else f"has extra {', '.join(extra)}"
            raise InvalidFileError(
                f"{src} {detail}; a population of {n} layer{'s' if n > 1 else ''} holds exactly "
                f"{', '.join(sorted(expected))} (write it with ModelPopulation.save)"
            )
        for key, arr in arrays.items():
            if not np.isfinite(arr).all():
                raise InvalidFileError(f"{src}: array {key!r} holds NaN or infinite values")
        try:
            return cls(
                weights=tuple(arrays[f"W{i}"] for i in range(n)),
                biases=tuple(arrays[f"b{i}"] for i in range(n)),
                activation=header["activation"],
                meta=header.get("meta", {}),
            )
        except DistPrivacyError as exc:
            raise InvalidFileError(f"{src}: {exc}") from None


_HEADER_SCHEMA = Table(
    {
        "format": Field(Str(("distprivacy.ModelPopulation",)), required=True),
        "version": Field(Int(minimum=1, maximum=_FORMAT_VERSION), required=True),
        "n_layers": Field(Int(minimum=1, maximum=64), required=True),
        "activation": Field(Str(ACTIVATIONS), required=True),
        "meta": Field(MapOf(Custom(lambda v, p, c: v, "any JSON value", _JSON_KINDS))),
    },
    noun="an object",
)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    """Numerically stable logistic function."""
    out = np.empty_like(z)
    pos = z >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-z[pos]))
    ez = np.exp(z[~pos])
    out[~pos] = ez / (1.0 + ez)
    return out


def population_file(path: str | os.PathLike[str]) -> Path:
    """The file :meth:`ModelPopulation.save` writes for ``path``: ``.npz`` appended if missing."""
    path = Path(path)
    return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")
