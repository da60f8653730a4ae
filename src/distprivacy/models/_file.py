"""Loading a user-supplied model from a JSON or TOML file (:func:`load_model_file`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from distprivacy.checks import check_int, check_path
from distprivacy.files import (
    Array,
    Field,
    Int,
    InvalidFileError,
    Label,
    ListOf,
    Pair,
    Str,
    Table,
    read_mapping_file,
)
from distprivacy.models._gaussian import GaussianModel

#: Largest working memory a model file may imply (bytes); see :func:`model_file_memory`.
MODEL_MEMORY_LIMIT: int = 4 * 2**30

_MODEL_THETA = Table(
    {
        "label": Field(Label(), required=True),
        "mean": Field(Array(("m",), noun="a list of finite numbers (one per statistic)"), True),
        "covariance": Field(
            Array(("m", "m"), noun="an m×m matrix of finite numbers (a list of m rows)"), True
        ),
        "samples": Field(
            Array((None, "m"), noun="a matrix of finite numbers, one row of m per sample")
        ),
    },
    noun='an object {"label": …, "mean": […], "covariance": [[…], …]}',
)

#: The schema of a model file (docs/guide/python.md, "A user-supplied model").
MODEL_FILE_SCHEMA = Table(
    {
        "statistics": Field(
            ListOf(Str(), length="m", unique=True, noun="names", example='["x", "y"]')
        ),
        "thetas": Field(ListOf(_MODEL_THETA, min_len=2, noun="θ objects"), required=True),
        "pairs": Field(
            ListOf(
                Pair(Label(), example='["a", "b"]'),
                min_len=1,
                noun="pairs of θ labels",
                example='[["a", "b"]]',
            ),
            required=True,
        ),
        "record_sensitivities": Field(
            Array(("m",), noun="a list of finite numbers ≥ 0 (one per statistic)", minimum=0.0)
        ),
        "n": Field(Int(minimum=1)),
    },
    noun="an object with thetas and pairs",
)


def model_file_memory(dim: int, lmis: int, sample_pairs: int = 0) -> int:
    """Working memory (bytes) the costliest mechanism needs on a user model, estimated.

    OptM-G solves a semidefinite program with one (m+1)×(m+1) linear matrix inequality per
    protected pair and covariance; the interior-point solver (Clarabel) then needs about
    30·L·m⁴ bytes for L inequalities (measured on 2 to 10 pairs, m = 30 to 100: 0.23 GB at
    m = 50, 2.9 GB at m = 100) and aborts the process when an allocation fails. The exact W∞
    of two sample sets of R and R' rows holds R·R' distances (≈ 24 bytes each with the
    matching's work arrays).

    Parameters
    ----------
    dim : int
        The number of statistics m.
    lmis : int
        The number of inequalities: per unordered pair, 1 if its two covariances are equal,
        else 2.
    sample_pairs : int
        The largest R·R' over the pairs (0 without samples).

    Returns
    -------
    int
        The estimated bytes.
    """
    return int(30 * lmis * dim**4 + 24 * sample_pairs)


def _gib(x: float) -> str:
    return f"{x / 2**30:.3g} GiB" if x >= 2**30 else f"{x / 2**20:.3g} MiB"


def load_model_file(
    path: str | Path, *, memory_limit: int | None = MODEL_MEMORY_LIMIT
) -> GaussianModel:
    """Load a user-supplied model from JSON or TOML, validated strictly.

    The file holds ``thetas`` (a list of at least two objects {"label", "mean", "covariance",
    optional "samples"}), ``pairs`` (a list of [label, label]) and optionally ``statistics``
    (names), ``record_sensitivities`` and ``n``. Example (JSON)::

        {"statistics": ["x", "y"],
         "thetas": [{"label": "a", "mean": [100, 101], "covariance": [[22, -6], [-6, 13]]},
                    {"label": "b", "mean": [99, 102], "covariance": [[22, -6], [-6, 13]]}],
         "pairs": [["a", "b"]]}

    Parameters
    ----------
    path : str or Path
        A ``.json`` or ``.toml`` file.
    memory_limit : int or None
        The most working memory (bytes) the model may imply for the costliest mechanism
        (:func:`model_file_memory`); None for no limit. Default :data:`MODEL_MEMORY_LIMIT`.

    Returns
    -------
    GaussianModel
        The model: per-θ means and covariances (and samples, if given) and the pairs.

    Raises
    ------
    DistPrivacyError
        (:class:`~distprivacy.files.InvalidFileError`) naming the file, the key path and the
        fix: unknown or missing keys, a value of the wrong type (``true`` for ``n``, a string
        for a list), ragged or mis-sized matrices, non-finite numbers, a covariance that is not
        symmetric positive semidefinite, or a model above the memory limit.
    """
    p = check_path(path, "path")
    if memory_limit is not None:
        check_int(memory_limit, "memory_limit", low=1)
    src = f"model file {p.name!r}"
    raw = read_mapping_file(p, "model file", MODEL_FILE_SCHEMA)
    thetas = raw["thetas"]
    has_samples = [("samples" in t) for t in thetas]
    if any(has_samples) and not all(has_samples):
        k = has_samples.index(False)
        raise InvalidFileError(
            f"{src}: thetas[{k}] has no samples; give samples for every θ or for none"
        )
    labels = [t["label"] for t in thetas]
    seen: dict[str, int] = {}
    for k, lab in enumerate(labels):
        if lab in seen:
            raise InvalidFileError(
                f"{src}: thetas[{k}].label repeats {lab!r} (thetas[{seen[lab]}]); give every θ "
                "a distinct label"
            )
        seen[lab] = k
    index = {lab: k for k, lab in enumerate(labels)}
    for k, pair in enumerate(raw["pairs"]):
        for x in pair:
            if x not in index:
                raise InvalidFileError(
                    f"{src}: pairs[{k}] names unknown θ {x!r}; known: {', '.join(labels)}"
                )
    means = np.stack([t["mean"] for t in thetas])
    covs = np.stack([t["covariance"] for t in thetas])
    if memory_limit is not None:
        dim = means.shape[1]
        unordered = {tuple(sorted((index[a], index[b]))) for a, b in raw["pairs"] if a != b}
        lmis = sum(1 if np.array_equal(covs[i], covs[j]) else 2 for i, j in unordered)
        rr = 0
        if all(has_samples):
            rr = max(
                (len(thetas[i]["samples"]) * len(thetas[j]["samples"]) for i, j in unordered),
                default=0,
            )
        need = model_file_memory(dim, lmis, rr)
        if need > memory_limit:
            what = (
                f"OptM-G's semidefinite program on {dim} statistics with {lmis} pair "
                f"constraint{'s' if lmis > 1 else ''}, which grows as m⁴ per constraint"
            )
            if 24 * rr > 30 * lmis * dim**4:
                what = f"the exact W∞ of two sample sets of {rr:,} sample pairs"
            raise InvalidFileError(
                f"{src} implies about {_gib(need)} of working memory ({what}); the limit is "
                f"{_gib(memory_limit)}: give fewer statistics, pairs or samples"
            )
    return GaussianModel(
        thetas=labels,
        means=means,
        covariances=covs,
        pairs=raw["pairs"],
        statistic_names=raw.get("statistics"),
        samples=[t["samples"] for t in thetas] if all(has_samples) else None,
        record_sensitivities=raw.get("record_sensitivities"),
        n=raw.get("n"),
        source=src,
    )
