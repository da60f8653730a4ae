"""Finite input domains, 2-D location grids with a metric, validated distributions over them.

Kawamoto & Murakami ("Differentially Private Obfuscation Mechanisms for Hiding Probability
Distributions"; our copy ``004``) work with a finite input set X, a ground metric d on it, and
pairs (λ, λ′) of input distributions to be made indistinguishable. Here:

* :class:`Domain` — n points in R^dim with a metric (``"euclidean"``, ``"manhattan"`` or
  ``"discrete"``); :func:`grid` builds a rows × cols city grid of cell centres, :func:`line` a
  1-D domain {0, …, n−1}.
* :func:`check_distribution` — the single validation point for probability vectors (sums to
  one within 1e-9, non-negative, finite, of the domain's size); every bad input raises
  :class:`~distprivacy.exceptions.DistPrivacyError` with a one-line message.
* :func:`clustered_city` — the documented synthetic generator used by the experiment: two
  attribute groups whose location distributions differ (shared downtown hotspots, group-specific
  hotspots, a uniform background), reproducible from ``random_state`` (synthetic data:
  :func:`~distprivacy.randomness.check_random_state` with ``secure=False``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from distprivacy.checks import check_positive
from distprivacy.exceptions import DistPrivacyError
from distprivacy.randomness import RandomState, check_random_state
from distprivacy.resources import check_memory

__all__ = [
    "METRICS",
    "Domain",
    "check_distribution",
    "clustered_city",
    "grid",
    "line",
]

METRICS = ("euclidean", "manhattan", "discrete")
_SUM_TOL = 1e-9


@dataclass(frozen=True)
class Domain:
    """A finite set of n points in R^dim with a metric.

    Parameters
    ----------
    points : array_like, shape (n, dim)
        Coordinates of the points (e.g. cell centres, in km).
    metric : {"euclidean", "manhattan", "discrete"}
        Ground metric d used by W∞, W1, the exponential mechanism and service quality loss.
    shape : tuple of int, optional
        (rows, cols) for a grid, (n,) for a line; informational (plots, snapping).
    cell : float
        Cell side (grid spacing) in the units of ``points``.
    """

    points: np.ndarray
    metric: str = "euclidean"
    shape: tuple[int, ...] = ()
    cell: float = 1.0
    _dist: np.ndarray | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        pts = np.asarray(self.points, dtype=float)
        if pts.ndim == 1:
            pts = pts[:, None]
        if pts.ndim != 2 or pts.shape[0] < 2:
            raise DistPrivacyError(
                f"a domain needs at least 2 points as an (n, dim) array, got shape {pts.shape}"
            )
        if not np.isfinite(pts).all():
            raise DistPrivacyError("domain points contain NaN or infinite values; pass finite ones")
        if self.metric not in METRICS:
            raise DistPrivacyError(
                f"unknown metric {self.metric!r}; choose from {', '.join(METRICS)}"
            )
        check_positive(self.cell, "cell size")
        object.__setattr__(self, "points", pts)

    @property
    def size(self) -> int:
        """Number of points n."""
        return int(self.points.shape[0])

    @property
    def distances(self) -> np.ndarray:
        """(n, n) matrix of d(x, y) (computed once)."""
        if self._dist is None:
            n, dim = self.points.shape
            check_memory(
                8.0 * n * n * (dim + 2), f"the {n}×{n} distance matrix of a {n}-point domain"
            )
            diff = self.points[:, None, :] - self.points[None, :, :]
            if self.metric == "euclidean":
                D = np.sqrt(np.sum(diff**2, axis=-1))
            elif self.metric == "manhattan":
                D = np.sum(np.abs(diff), axis=-1)
            else:
                D = (np.abs(diff).sum(axis=-1) > 0).astype(float)
            object.__setattr__(self, "_dist", D)
        return self._dist  # type: ignore[return-value]

    @property
    def diameter(self) -> float:
        """max d(x, y)."""
        return float(self.distances.max())

    def to_dict(self) -> dict[str, Any]:
        """Plain data: a grid or a line by its sizes, any other domain by its points."""
        out: dict[str, Any] = {"metric": self.metric, "shape": list(self.shape), "cell": self.cell}
        if not _is_regular(self):
            out["points"] = self.points.tolist()
        return out

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Domain:
        """Inverse of :meth:`to_dict`."""
        if not isinstance(raw, Mapping):
            raise DistPrivacyError(f"a domain must be an object, got {type(raw).__name__}")
        shape = tuple(int(v) for v in raw.get("shape", ()))
        cell = float(raw.get("cell", 1.0))
        metric = str(raw.get("metric", "euclidean"))
        if "points" in raw:
            return cls(np.asarray(raw["points"], dtype=float), metric, shape, cell)
        if len(shape) == 1 and metric == "euclidean":
            return line(shape[0], cell=cell)
        if len(shape) == 2:
            return grid(shape[0], shape[1], cell=cell, metric=metric)
        raise DistPrivacyError("a domain needs its points, or the shape of a grid or line")


def _is_regular(domain: Domain) -> bool:
    """Whether ``domain`` is exactly the grid or line its shape and cell describe."""
    shape = domain.shape
    if len(shape) == 1 and domain.metric == "euclidean":
        ref = line(shape[0], cell=domain.cell) if shape[0] >= 2 else None
    elif len(shape) == 2 and shape[0] * shape[1] >= 2:
        ref = grid(shape[0], shape[1], cell=domain.cell, metric=domain.metric)
    else:
        return False
    return ref is not None and np.array_equal(ref.points, domain.points)


def grid(rows: int, cols: int | None = None, *, cell: float = 1.0, metric: str = "euclidean"):
    """A rows × cols grid of cell centres (row-major order: index = row·cols + col).

    Cell (r, c) has centre (c·cell, r·cell); x is the column coordinate, y the row coordinate.
    """
    cols = rows if cols is None else cols
    for name, v in (("rows", rows), ("cols", cols)):
        if not isinstance(v, int | np.integer) or isinstance(v, bool) or v < 1:
            raise DistPrivacyError(f"grid {name} must be a positive integer, got {v!r}")
    if rows * cols < 2:
        raise DistPrivacyError("a grid needs at least 2 cells; use rows·cols ≥ 2")
    # The cell indices, their (row, col) split and the points: about 64 bytes per cell.
    check_memory(64.0 * rows * cols, f"a {rows}×{cols} grid ({rows * cols} cells)")
    r, c = np.divmod(np.arange(rows * cols), cols)
    pts = np.column_stack([c, r]).astype(float) * cell
    return Domain(pts, metric=metric, shape=(int(rows), int(cols)), cell=float(cell))


def line(n: int, *, cell: float = 1.0) -> Domain:
    """The 1-D domain {0, cell, …, (n−1)·cell} with |x − y|."""
    if not isinstance(n, int | np.integer) or isinstance(n, bool) or n < 2:
        raise DistPrivacyError(f"a line domain needs an integer n ≥ 2 points, got {n!r}")
    pts = np.arange(n, dtype=float)[:, None] * cell
    return Domain(pts, metric="euclidean", shape=(int(n),), cell=float(cell))


def check_distribution(p: ArrayLike, size: int | None = None, name: str = "distribution"):
    """Validate a probability vector and return it as a float array.

    Raises
    ------
    DistPrivacyError
        Not 1-D numbers, NaN/inf, negative entries, a sum differing from one by more than 1e-9,
        or (when ``size`` is given) a length different from the domain's size.
    """
    try:
        arr = np.asarray(p, dtype=float)
    except (TypeError, ValueError) as exc:
        raise DistPrivacyError(f"{name} must be a 1-D array of probabilities") from exc
    if arr.ndim != 1 or arr.size == 0:
        raise DistPrivacyError(f"{name} must be a non-empty 1-D array, got shape {arr.shape}")
    if size is not None and arr.size != size:
        raise DistPrivacyError(
            f"{name} has {arr.size} entries but the domain has {size} points; "
            "give one probability per domain point"
        )
    if not np.isfinite(arr).all():
        raise DistPrivacyError(f"{name} contains NaN or infinite values; pass finite numbers")
    if (arr < 0).any():
        raise DistPrivacyError(f"{name} has negative entries; probabilities must be ≥ 0")
    total = float(arr.sum())
    if abs(total - 1.0) > _SUM_TOL:
        raise DistPrivacyError(
            f"{name} sums to {total:.12g}, not 1; normalise it (divide by its sum) first"
        )
    return arr


def clustered_city(
    domain: Domain,
    *,
    random_state: RandomState = None,
    shared_hotspots: int = 3,
    group_hotspots: int = 3,
    background: float = 0.15,
    spread: tuple[float, float] = (1.0, 2.5),
    share: float = 0.5,
) -> tuple[np.ndarray, np.ndarray]:
    """Location distributions (λ0, λ1) of two attribute groups on a grid.

    Generator (documented, reproducible from ``random_state``, an int seed or a NumPy
    Generator; None draws fresh OS entropy): each group's density on the grid is

        ``background / n  +  (1 − background) · (share · S(x) + (1 − share) · G_g(x))``

    where S is a mixture of ``shared_hotspots`` isotropic Gaussian bumps (the "downtown" both
    groups visit; same centres, widths and weights for both groups) and G_g a mixture of
    ``group_hotspots`` bumps drawn independently per group (e.g. where each group lives or
    works). Centres are uniform on the grid's bounding box, widths uniform in ``spread`` (in
    cell units), weights Dirichlet(1,…,1). Each mixture is normalised over the grid's cells,
    so λ_g sums to one exactly up to rounding; every cell has mass ≥ background/n > 0.

    Returns
    -------
    (lambda0, lambda1) : two arrays of shape (n,)
    """
    if not (0 < background < 1):
        raise DistPrivacyError(f"background must be in (0, 1), got {background!r}")
    if not (0 <= share <= 1):
        raise DistPrivacyError(f"share must be in [0, 1], got {share!r}")
    if shared_hotspots < 0 or group_hotspots < 1:
        raise DistPrivacyError("need shared_hotspots ≥ 0 and group_hotspots ≥ 1")
    gen = check_random_state(random_state, secure=False)
    if not isinstance(gen, np.random.Generator):
        raise DistPrivacyError(
            "clustered_city simulates data: pass an integer seed or a numpy Generator"
        )
    pts = domain.points / domain.cell
    lo, hi = pts.min(axis=0), pts.max(axis=0)

    def mixture(k: int) -> np.ndarray:
        centres = gen.uniform(lo, hi, size=(k, pts.shape[1]))
        widths = gen.uniform(*spread, size=k)
        weights = gen.dirichlet(np.ones(k))
        sq = np.sum((pts[:, None, :] - centres[None, :, :]) ** 2, axis=-1)
        bumps = np.exp(-sq / (2 * widths**2))
        bumps /= bumps.sum(axis=0, keepdims=True)
        return bumps @ weights

    S = mixture(shared_hotspots) if shared_hotspots else np.zeros(domain.size)
    s = share if shared_hotspots else 0.0
    n = domain.size
    out = []
    for _ in range(2):
        dens = background / n + (1 - background) * (s * S + (1 - s) * mixture(group_hotspots))
        out.append(dens / dens.sum())
    return out[0], out[1]
