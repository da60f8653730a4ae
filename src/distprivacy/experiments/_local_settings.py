"""The sizes of one local-DistP run (:mod:`distprivacy.experiments.local_distp`): kept apart so
that the report (:mod:`distprivacy.experiments._local_report`) and the run read it without
importing each other."""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Settings"]


@dataclass(frozen=True)
class Settings:
    """Sizes of one run (``quick`` for CI, else the full experiment)."""

    side: int
    delta: float
    targets: tuple[float, ...]
    ks: tuple[int, ...]
    curve_ks: tuple[int, ...]
    bases: tuple[float, ...]  # RR ε of the highlighted tupling bases; inf = no noise
    base_grid: int  # number of RR bases searched for equal privacy
    sweep: int
    n_samples: int
    alpha: float

    @classmethod
    def make(cls, quick: bool) -> Settings:
        if quick:
            return cls(
                side=8,
                delta=1e-3,
                targets=(0.5, 1.0),
                ks=(0, 1, 5, 20, 50),
                curve_ks=(20,),
                bases=(math.inf, 4.0),
                base_grid=8,
                sweep=8,
                n_samples=20_000,
                alpha=1e-3,
            )
        return cls(
            side=16,
            delta=1e-3,
            targets=(0.25, 0.5, 1.0),
            ks=(0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000),
            curve_ks=(10, 100),
            bases=(math.inf, 8.0, 6.0, 4.0),
            base_grid=24,
            sweep=25,
            n_samples=400_000,
            alpha=1e-3,
        )
