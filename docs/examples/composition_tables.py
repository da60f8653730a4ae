"""Print the numbers of docs/ledger.md's joint-accounting tables (run: python3
docs/examples/composition_tables.py; Adult from --data DIR, DISTPRIVACY_DATA or the cache)."""

from __future__ import annotations

import math
import sys

import numpy as np

import distprivacy as dp
from distprivacy.composition import joint_accounting
from distprivacy.query import ADULT_DEFAULT_STATISTICS
from distprivacy.targets import EpsDelta

EPS, DELTA = 0.5, 1e-3


def main() -> None:
    data = dp.load_adult(sys.argv[sys.argv.index("--data") + 1] if "--data" in sys.argv else None)
    spec = dp.ProtectionSpec("income==>50K", n=100, values=[0.45, 0.55])
    model = dp.fit_model(data, spec, dp.Query.parse(ADULT_DEFAULT_STATISTICS), method="exact")
    cal = dp.DauM(EpsDelta(EPS, DELTA)).calibrate(model)
    everything, Z = list(range(model.dim)), cal.noise_covariance
    print(f"DauM-G at ε = {EPS}: μ = {cal.mu:.5f}")
    print("releases | μ | μ/μ1 | naive | δ at ε = 0.5 | ε at δ = 1e-3 | attack bound")
    for k in (1, 2, 3):
        rel = [(everything, Z)] * k
        a = joint_accounting(model, rel, epsilon=EPS)
        b = joint_accounting(model, rel, delta=DELTA)
        print(
            f"{k} | {a.mu:.5f} | {a.mu / cal.mu:.4f} | {a.naive_mu:.5f} | {a.delta:.3g} | "
            f"{b.epsilon:.4f} | {a.max_attack_accuracy:.2%}"
        )
    print("\nρ | joint μ, d = (a, −a) | joint μ, d = (a, a) | naive  (a = 0.5, noise variance 3)")
    for rho in (0.0, 0.5, 0.9, 0.99):
        S = np.array([[1.0, rho], [rho, 1.0]])
        mus = []
        for d in ([0.5, -0.5], [0.5, 0.5]):
            m = dp.GaussianModel(["a", "b"], [[0.0, 0.0], d], [S, S], [("a", "b")])
            mus.append(joint_accounting(m, [([0], [[3.0]]), ([1], [[3.0]])], epsilon=1.0))
        print(f"{rho} | {mus[0].mu:.4f} | {mus[1].mu:.4f} | {mus[0].naive_mu:.4f}")
    print("\nTwo Adult statistics, each with its own DauM-G at ε = 0.5: joint μ vs naive")
    names = model.statistic_names_
    for i, j in ((0, 2), (1, 2), (1, 3)):
        sub = [dp.Query.parse(ADULT_DEFAULT_STATISTICS.split(",")[k]) for k in (i, j)]
        own = [
            dp.DauM(EpsDelta(EPS, DELTA)).calibrate(dp.fit_model(data, spec, q, method="exact"))
            for q in sub
        ]
        a = joint_accounting(
            model, [([i], own[0].noise_covariance), ([j], own[1].noise_covariance)], epsilon=EPS
        )
        naive = math.sqrt(own[0].mu ** 2 + own[1].mu ** 2)
        print(f"{names[i]} + {names[j]}: {a.mu:.4f} vs {naive:.4f}")


if __name__ == "__main__":
    main()
