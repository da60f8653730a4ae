"""Settings of the model-inference reproduction (Suri & Evans §3 on Census): :class:`Config`,
the paper's numbers (:data:`PAPER`) and the attacks' names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from distprivacy.exceptions import DistPrivacyError
from distprivacy.inference.census import LABEL, PROPERTIES, ROLES

__all__ = ["BLACKBOX", "LABEL", "PAPER", "PIN", "PROPERTIES", "ROLES", "SORTED", "Config"]

#: Accuracies (%) the paper reports in §3.3 for Ganju et al.'s two cases (mean ± sd over ten
#: runs; "loss" has no spread), and Ganju et al.'s own figures (footnote 2).
PAPER: dict[str, dict[str, Any]] = {
    "A": {
        "property": "sex",
        "ratios": (0.38, 0.65),
        "loss test": (50.0, None),
        "threshold test": (62.7, 2.0),
        "meta-classifier (permutation-invariant network)": (62.1, 1.7),
        "ganju": 97.0,
    },
    "B": {
        "property": "race",
        "ratios": (0.0, 0.87),
        "loss test": (50.1, None),
        "threshold test": (92.4, 2.6),
        "meta-classifier (permutation-invariant network)": (99.0, 0.1),
        "ganju": 100.0,
    },
}
PIN = "meta-classifier (permutation-invariant network)"
SORTED = "meta-classifier (sorted weights)"
BLACKBOX = "meta-classifier (black-box outputs)"


@dataclass(frozen=True)
class Config:
    """Settings of the reproduction (defaults: the paper's sizes where it gives them).

    ``n_train`` (rows per training set), ``n_test`` (rows of the adversary's test sets D0, D1,
    capped where a ratio runs out of rows), ``epochs`` and the meta-classifier's settings are
    ours: the paper does not state them.
    """

    properties: tuple[str, ...] = ("sex", "race")
    alphas: tuple[float, ...] = tuple(round(0.1 * i, 1) for i in range(11))
    g0_ratio: float = 0.5
    n_victim: int = 1000
    n_adversary: int = 1000
    n_train: int = 1000
    n_test: int = 1000
    hidden: tuple[int, ...] = (32, 16, 8)
    epochs: int = 40
    batch_size: int = 200
    lr: float = 1e-3
    repetitions: int = 5
    n_select: int = 50
    pin_epochs: int = 30
    n_query_blackbox: int = 64
    figure1: bool = True
    cases: tuple[str, ...] = ("A", "B")
    regression: bool = True
    defence: bool = True
    defence_property: str = "sex"
    defence_alpha: float = 0.0
    query_size: int = 16
    epsilons: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
    delta: float = 1e-3
    mechanisms: tuple[str, ...] = ("ExpM-G", "DauM-G", "OptM-G")
    seed: int = 0

    @classmethod
    def quick(cls, seed: int = 0) -> Config:
        """A small run for tests and CI (seconds): few models, α ∈ {0, 1}."""
        return cls(
            alphas=(0.0, 1.0),
            n_victim=40,
            n_adversary=40,
            n_train=200,
            n_test=200,
            epochs=8,
            repetitions=2,
            n_select=10,
            pin_epochs=8,
            n_query_blackbox=16,
            query_size=6,
            epsilons=(1.0, 8.0),
            mechanisms=("ExpM-G",),
            seed=seed,
        )

    def validate(self) -> Config:
        if not self.properties:
            raise DistPrivacyError(
                f"no property to attack; give one or more of {', '.join(PROPERTIES)}"
            )
        for p in self.properties:
            if p not in PROPERTIES:
                raise DistPrivacyError(
                    f"unknown property {p!r}; choose from {', '.join(PROPERTIES)}"
                )
        if self.defence_property not in PROPERTIES:
            raise DistPrivacyError(
                f"unknown defence property {self.defence_property!r}; choose from "
                f"{', '.join(PROPERTIES)}"
            )
        for a in (*self.alphas, self.g0_ratio, self.defence_alpha):
            if not 0 <= a <= 1:
                raise DistPrivacyError(f"ratios must lie in [0, 1], got {a}")
        for c in self.cases:
            if c not in PAPER:
                raise DistPrivacyError(f"unknown case {c!r}; choose from {', '.join(PAPER)}")
        for name in ("n_victim", "n_adversary", "n_train", "n_test", "repetitions", "epochs"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise DistPrivacyError(f"{name} must be a positive integer, got {v!r}")
        if not (self.figure1 or self.cases or self.regression or self.defence):
            raise DistPrivacyError("nothing to run: enable figure1, cases, regression or defence")
        if self.figure1 and not self.alphas:
            raise DistPrivacyError("figure 1 needs at least one α")
        if self.n_victim < 4:
            raise DistPrivacyError("n_victim must be at least 4 (the defence halves it)")
        return self
