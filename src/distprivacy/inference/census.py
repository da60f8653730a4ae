"""The Census (UCI Adult) game of Suri & Evans, *Formalizing Distribution Inference Risks*, §3:
its data (42 encoded features, income above $50K as the label, disjoint victim / adversary
splits stratified on sex, race and the label), its distributions (a share α of women or of
whites, label ratio preserved), the populations of models trained on them — with a cache that
reuses a saved population only when everything that made it matches — and the adversary's test
sets.

Used by ``distprivacy models train`` / ``attack`` and by the reproduction
(:mod:`distprivacy.experiments.model_inference`); both derive the same seeds, so a population
trained by the command line equals the reproduction's.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from distprivacy.exceptions import DistPrivacyError
from distprivacy.inference._seeds import integer_seed
from distprivacy.inference.features import adult_encoder, binary_labels
from distprivacy.inference.game import GameSplits, sample_datasets, split_game, train_models
from distprivacy.inference.population import ModelPopulation
from distprivacy.inference.transformers import RatioTransformer, max_dataset_size
from distprivacy.randomness import RandomState

__all__ = [
    "LABEL",
    "PROPERTIES",
    "ROLES",
    "CensusTraining",
    "GameData",
    "TrainingSizes",
    "census_transformer",
    "load_game_data",
    "population_path",
    "population_seed",
    "population_settings",
    "test_sets",
    "train_or_load",
]

#: The Census task: income above $50K.
LABEL = "income==>50K"
#: Properties of Figure 1: name -> (predicate, what the ratio counts).
PROPERTIES: dict[str, tuple[str, str]] = {
    "sex": ("sex==Female", "women"),
    "race": ("race==White", "whites"),
}
#: The two parties of the game.
ROLES = ("victim", "adversary")


class TrainingSizes(Protocol):
    """What :func:`population_settings` reads of a configuration (the reproduction's
    ``Config`` has these attributes, and so has :class:`CensusTraining`)."""

    n_victim: int
    n_adversary: int
    n_train: int
    hidden: tuple[int, ...]
    epochs: int
    batch_size: int
    lr: float
    seed: int


@dataclass(frozen=True)
class CensusTraining:
    """How the game's populations are trained (defaults: the reproduction's).

    ``seed`` is the integer every population's seed is derived from
    (:func:`population_seed`), recorded in the population's settings.
    """

    n_victim: int = 1000
    n_adversary: int = 1000
    n_train: int = 1000
    hidden: tuple[int, ...] = (32, 16, 8)
    epochs: int = 40
    batch_size: int = 200
    lr: float = 1e-3
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("n_victim", "n_adversary", "n_train", "epochs", "batch_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise DistPrivacyError(f"{name} must be a positive integer, got {v!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise DistPrivacyError(f"seed must be a non-negative integer, got {self.seed!r}")


@dataclass(frozen=True)
class GameData:
    """Adult, its 42 encoded features, the labels and the game's disjoint splits."""

    data: pd.DataFrame
    X: np.ndarray
    y: np.ndarray
    splits: GameSplits
    feature_names: tuple[str, ...]
    split_seed: int


def load_game_data(data: pd.DataFrame, random_state: RandomState = None) -> GameData:
    """Encode Adult (:func:`~distprivacy.inference.features.adult_encoder`) and split it into
    victim / adversary train / test parts stratified on sex, race and the label.

    ``random_state`` seeds the split: an integer is the ``split_seed`` recorded with every
    population trained on it; a generator or None (fresh entropy) draws that integer.
    """
    split_seed = integer_seed(random_state)
    enc = adult_encoder()
    X = enc.fit_transform(data)
    y = binary_labels(data, "income", ">50K")
    splits = split_game(data, property=["sex", "race"], label=LABEL, random_state=split_seed)
    return GameData(data, X, y, splits, tuple(enc.feature_names_), split_seed)


def census_transformer(prop: str, ratio: float) -> RatioTransformer:
    """G(α): the ratio filter (Eq. 2) holding the share of ``prop`` at ``ratio`` and the
    label ratio at the pool's."""
    return RatioTransformer(PROPERTIES[prop][0], float(ratio), label=LABEL)


def population_seed(seed: int, prop: str, role: str, ratio: float, b: int) -> int:
    """Independent seed of each population, a function of what it is (not of run order)."""
    key = [int(seed), sorted(PROPERTIES).index(prop), ROLES.index(role), round(ratio * 1000), b]
    return int(np.random.SeedSequence(key).generate_state(1, dtype=np.uint32)[0])


def _fingerprint(*arrays: np.ndarray) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def population_settings(
    cfg: TrainingSizes, prop: str, role: str, ratio: float, b: int, game: GameData
) -> dict[str, Any]:
    """What a saved population must match to be reused: the settings, plus fingerprints of
    the data split and of a small sample of the dataset sampler (so a population made by
    another version of the split or the sampler is retrained, not silently reused)."""
    split_seed = game.split_seed
    rows = getattr(game.splits, f"{role}_train")
    probe = census_transformer(prop, ratio).sample(
        game.data, n=min(20, cfg.n_train), n_datasets=2, rows=rows, random_state=0
    )
    return {
        "property": prop,
        "predicate": PROPERTIES[prop][0],
        "label_predicate": LABEL,
        "role": role,
        "ratio": float(ratio),
        "b": int(b),
        "n_models": cfg.n_victim if role == "victim" else cfg.n_adversary,
        "n_train": cfg.n_train,
        "hidden": list(cfg.hidden),
        "epochs": cfg.epochs,
        "batch_size": cfg.batch_size,
        "lr": cfg.lr,
        "split_seed": int(split_seed),
        "split_fingerprint": _fingerprint(
            *(getattr(game.splits, f) for f in ("victim_train", "victim_test")),
            *(getattr(game.splits, f) for f in ("adversary_train", "adversary_test")),
        ),
        "sampler_fingerprint": _fingerprint(probe),
        "seed": population_seed(cfg.seed, prop, role, ratio, b),
    }


def population_path(pop_dir: Path, settings: dict[str, Any]) -> Path:
    """Where the population of ``settings`` is cached in ``pop_dir``."""
    s = settings
    return pop_dir / f"{s['property']}_{s['role']}_r{s['ratio']:.2f}_b{s['b']}.npz"


def train_or_load(
    game: GameData, settings: dict[str, Any], pop_dir: Path | None, reuse: bool = True
) -> tuple[ModelPopulation, bool]:
    """The population described by ``settings``: loaded from ``pop_dir`` when a file with the
    same settings exists, loads, and ``reuse``, else trained (and saved atomically when
    ``pop_dir`` is given). A cached file that does not load (cut, corrupt) is reported in one
    line on stderr and replaced by a retrained population. Returns (population, loaded?)."""
    path = population_path(pop_dir, settings) if pop_dir is not None else None
    if reuse and path is not None and path.is_file():
        try:
            cached = ModelPopulation.load(path)
        except DistPrivacyError as exc:
            print(
                f"warning: retraining the cached population {path.name}: it does not load "
                f"({str(exc).removeprefix(str(path) + ' ')})",
                file=sys.stderr,
            )
        else:
            if cached.meta.get("settings") == settings:
                return cached, True
    rows = getattr(game.splits, f"{settings['role']}_train")
    pop = train_models(
        game.data,
        game.X,
        game.y,
        census_transformer(settings["property"], settings["ratio"]),
        rows=rows,
        n=settings["n_train"],
        n_models=settings["n_models"],
        random_state=settings["seed"],
        b=settings["b"],
        hidden=tuple(settings["hidden"]),
        epochs=settings["epochs"],
        batch_size=settings["batch_size"],
        lr=settings["lr"],
        meta={
            "settings": settings,
            "property": settings["property"],
            "ratio": settings["ratio"],
            "role": settings["role"],
            "feature_names": list(game.feature_names),
        },
    )
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        pop.save(path)  # atomic: an interrupted save never leaves a cut file
    return pop, False


def test_sets(
    game: GameData,
    prop: str,
    ratios: tuple[float, float],
    n_test: int,
    random_state: RandomState = None,
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray], int]:
    """The adversary's test sets D0 ~ G0, D1 ~ G1 drawn from its test split (rows never used
    for training), of ``n_test`` rows or, if a ratio runs out of rows, the largest size both
    allow. Returns ((X0, y0), (X1, y1), size).

    ``random_state``: an integer seed (the two sets' seeds are derived from it and the ratios);
    a generator or None (fresh entropy) draws that integer.
    """
    rows = game.splits.adversary_test
    ts = [census_transformer(prop, r) for r in ratios]
    n = min(n_test, max_dataset_size(game.data, ts, rows=rows))
    seed = integer_seed(random_state)
    ss = np.random.SeedSequence([seed, 7, round(ratios[0] * 1000), round(ratios[1] * 1000)])
    s0, s1 = (int(s) for s in ss.generate_state(2, dtype=np.uint32))
    out = []
    for t, s in zip(ts, (s0, s1), strict=True):
        idx = sample_datasets(game.data, t, n=n, n_datasets=1, rows=rows, random_state=s)[0]
        out.append((game.X[idx], game.y[idx].astype(int)))
    return out[0], out[1], n
