"""Models of f_θ, the distribution of F(Data) when Data ~ θ.

Three ways to obtain the per-θ mean vectors μ_θ and covariance matrices Σ_θ the mechanisms need:

* :class:`MonteCarloModel` — Chen & Ohrimenko (2023), Appendix C.1: sample many size-n subsets
  with the property fixed, compute F on each, take the sample mean and covariance. Vectorised:
  subsets are rows of index matrices, F is a gather and a reduction.
* :class:`ExactModel` — for linear statistics (means, sums, counts), the exact mean and covariance
  under simple random sampling without replacement inside each property group (the
  finite-population formulas), from one pass over the data.
* :class:`GaussianModel` — user-supplied (the paper's "domain expert", §2.2): per θ a mean vector,
  a covariance matrix and optionally samples; loadable from JSON or TOML with
  :func:`load_model_file`.

All fitted models expose ``thetas_``, ``means_`` (T, m), ``covariances_`` (T, m, m),
``pair_indices_``, ``statistic_names_``, ``samples_`` (list of (R, m) arrays, or None),
``record_sensitivities_`` (m,) or None, and ``query_`` and ``spec_``: the
:class:`~distprivacy.query.Query` and :class:`~distprivacy.spec.ProtectionSpec` a model fitted
on data was fitted with (None for a user-supplied model), so that a calibration can evaluate F
on a dataset to release it.

The parts live in private sub-modules, all re-exported here: ``_base`` (:class:`FModel`),
``distprivacy.sampling`` (random datasets as index matrices, re-exported), ``_exact``,
``_monte_carlo``, ``_gaussian``,
``_file`` (:func:`load_model_file`) and ``_fit`` (:func:`fit_model`).
"""

from __future__ import annotations

from distprivacy.models._base import Data, FModel, ProgressCallback
from distprivacy.models._exact import ExactModel
from distprivacy.models._file import (
    MODEL_FILE_SCHEMA,
    MODEL_MEMORY_LIMIT,
    load_model_file,
    model_file_memory,
)
from distprivacy.models._fit import fit_model
from distprivacy.models._gaussian import GaussianModel
from distprivacy.models._monte_carlo import MonteCarloModel
from distprivacy.sampling import (
    sample_statistics,
    sample_statistics_bytes,
    sample_without_replacement,
)

__all__ = [
    "MODEL_FILE_SCHEMA",
    "MODEL_MEMORY_LIMIT",
    "Data",
    "ExactModel",
    "FModel",
    "GaussianModel",
    "MonteCarloModel",
    "ProgressCallback",
    "fit_model",
    "load_model_file",
    "model_file_memory",
    "sample_statistics",
    "sample_statistics_bytes",
    "sample_without_replacement",
]
