"""Saved populations of any kind for ``distprivacy models attack`` and ``models info``.

``.npz`` files are :class:`~distprivacy.inference.population.ModelPopulation` (``models train``);
``.safetensors`` (PyTorch) and ``.skops`` (scikit-learn) files are the user's own models
(:func:`distprivacy.inference.saved.load_population`), read as an
:class:`~distprivacy.inference.saved.EstimatorPopulation`, which the attacks of
:mod:`distprivacy.inference.attacks` take as they are (loss and threshold tests, black-box and
sorted-weights meta-classifiers; not the permutation-invariant network).

Wiring (commands/models.py): ``_load = load_any`` — ``from distprivacy.commands._models_saved
import load_any`` and return ``load_any(path)`` from ``_load``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: Suffixes of the user's saved populations (everything else is read as a ModelPopulation).
SAVED_SUFFIXES: tuple[str, ...] = (".safetensors", ".skops")


def load_any(path: str, *, factory: Any = None, trusted: tuple[str, ...] = ()) -> Any:
    """The population in ``path``: a ModelPopulation (``.npz``) or an EstimatorPopulation
    (``.safetensors``: ``factory`` — e.g. the ``--estimator torch:FILE.py:make`` the user
    gives — is required; ``.skops``: ``trusted`` names extra skops types to accept)."""
    if Path(path).suffix in SAVED_SUFFIXES:
        from distprivacy.inference.saved import load_population

        return load_population(path, factory=factory, trusted=trusted)
    from distprivacy.inference.population import ModelPopulation

    return ModelPopulation.load(path)
