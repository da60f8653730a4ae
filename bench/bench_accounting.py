"""Benchmark of exact accounting, OptM-G and the audit on Adult (income, p ∈ {0.45, 0.55}).

Run: ``python bench/bench_accounting.py [--data DIR]``. Prints the time of each stage, and the
ratio of the exact unequal-covariance profile (Gil-Pelaez integral, accuracy 1e-10) to a
Monte-Carlo estimate of the same δ with 10⁶ samples (standard error ~3e-5), measured in the same
run.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from bench_core import timed  # the same best-of-n timer (bench/ is on sys.path)
from scipy import stats

from distprivacy.datasets import load_data
from distprivacy.mechanism_audit import audit_model
from distprivacy.mechanisms import make_mechanism
from distprivacy.models import ExactModel
from distprivacy.profiles import gaussian_profile, gdp_delta, gdp_mu
from distprivacy.query import ADULT_DEFAULT_STATISTICS, Query
from distprivacy.request import GaussianOptions
from distprivacy.spec import ProtectionSpec
from distprivacy.targets import EpsDelta


def mc_delta(P, Q, eps: float, size: int, seed: int = 0) -> float:
    """E_P[(1 − e^{ε − L})₊], L = log p/q, by Monte Carlo."""
    x = np.random.default_rng(seed).multivariate_normal(P[0], P[1], size)
    L = stats.multivariate_normal(P[0], P[1]).logpdf(x) - stats.multivariate_normal(
        Q[0], Q[1]
    ).logpdf(x)
    return float(np.mean(np.clip(1 - np.exp(eps - L), 0, None)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=None)
    args = ap.parse_args()
    data = load_data(args.data)
    spec = ProtectionSpec("income==>50K", 100, [0.45, 0.55])
    q = Query.parse(ADULT_DEFAULT_STATISTICS)
    model = ExactModel().fit(data, spec, q)
    rows = []
    t, _ = timed(lambda: [gdp_mu(e, 1e-3) for e in np.logspace(-1, 1, 20)])
    rows.append(("exact μ for (ε, δ), 20 values of ε", t))
    t, _ = timed(lambda: gdp_delta(np.logspace(-1, 1, 1000), 0.4))
    rows.append(("μ-GDP δ(ε) at 1000 values of ε (vectorised)", t))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = make_mechanism(
            "DauM-G", EpsDelta(1.0, 1e-3), GaussianOptions(covariances="pooled")
        ).calibrate(model)
    Z = cal.noise_covariance
    P = (model.means_[0], model.covariances_[0] + Z)
    Q = (model.means_[1], model.covariances_[1] + Z)
    t_exact, (d_exact, err) = timed(lambda: gaussian_profile(*P, *Q, 1.0))
    rows.append((f"unequal-covariance δ(1), exact (δ = {d_exact:.6f} ± {err:.0e})", t_exact))
    t_mc, d_mc = timed(lambda: mc_delta(P, Q, 1.0, 1_000_000), repeat=1)
    rows.append((f"same δ by Monte Carlo, 10^6 samples (δ ≈ {d_mc:.6f})", t_mc))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ("DauM-G", "OptM-G"):
            for cov in ("pooled", "fitted"):
                t, c = timed(
                    lambda n=name, cv=cov: make_mechanism(
                        n, EpsDelta(1.0, 1e-3), GaussianOptions(covariances=cv)
                    ).calibrate(model)
                )
                rows.append(
                    (f"calibrate {name}, covariances={cov} (E‖Z‖ = {c.expected_l2_error:.3f})", t)
                )
        opt = make_mechanism("OptM-G", EpsDelta(1.0, 1e-3)).calibrate(model)
    for attacks in (("likelihood-ratio",), ("logistic",), ("boosting",), ("knn",)):
        t, r = timed(
            lambda a=attacks: audit_model(
                opt, model, data, spec, q, samples_per_value=20_000, attacks=a, random_state=0
            ),
            repeat=1,
        )
        rows.append(
            (
                f"audit OptM-G, 20,000 datasets/θ, {attacks[0]} "
                f"(ε_lb = {r.epsilon_lower_bound:.3f})",
                t,
            )
        )
    width = max(len(r[0]) for r in rows)
    print(f"{'stage':<{width}}  seconds")
    for name, t in rows:
        print(f"{name:<{width}}  {t:8.4f}")
    print(f"exact profile vs Monte Carlo (10^6 samples): {t_mc / t_exact:.0f}x faster")


if __name__ == "__main__":
    main()
