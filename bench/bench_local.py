"""Benchmark of local DistP: exact vs Monte-Carlo tupling profiles, and the exact calculators.

Run: ``python bench/bench_local.py``. Prints the time of each stage (best of 3) and ratios
measured in the same run:

* exact enumeration of the tupling profile (multisets of the k+1 entries) against Monte Carlo
  with 10⁵ samples, on a small output set where both are possible, and the Monte-Carlo error
  against the exact value;
* the vectorised profile (sorted likelihood ratios, all ε at once) against a per-ε loop;
* the reuse of one identity-base sample for many RR bases (affine reuse) against fresh
  sampling per base.
"""

from __future__ import annotations

import numpy as np
from bench_core import timed  # the same best-of-n timer (bench/ is on sys.path)

from distprivacy.local import (
    FiniteMechanism,
    RandomizedResponse,
    SnappedLaplace,
    TuplingMechanism,
    clustered_city,
    grid,
    privacy_profile,
)
from distprivacy.local.distp import TuplingMonteCarlo, tupling_profile_exact
from distprivacy.local.guarantees import domain_wasserstein_1, domain_wasserstein_inf


def loop_profile(P: np.ndarray, Q: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """One pass over the outputs per ε (what a direct transcription of the definition does)."""
    out = []
    for e in eps:
        out.append(
            max(np.maximum(P - np.exp(e) * Q, 0).sum(), np.maximum(Q - np.exp(e) * P, 0).sum())
        )
    return np.array(out)


def main() -> None:
    rows: list[tuple[str, float]] = []
    rng = np.random.default_rng(0)
    m = 6
    lam, lam2 = rng.dirichlet(np.ones(m)), rng.dirichlet(np.ones(m))
    mech = TuplingMechanism(RandomizedResponse(m, 2.0), 8)
    eps = np.linspace(0, 0.3, 31)
    t_exact, exact = timed(lambda: tupling_profile_exact(mech, lam, lam2, eps))
    rows.append((f"tupling profile, exact enumeration (|Y| = {m}, k = 8), 31 ε", t_exact))
    t_mc, prof = timed(
        lambda: TuplingMonteCarlo(mech, lam, lam2, n_samples=100_000, random_state=1).profile(eps)
    )
    rows.append(("tupling profile, Monte Carlo N = 1e5, 31 ε", t_mc))
    err = float(np.max(np.abs(prof.delta - exact)))
    width = float(np.max(prof.delta_upper - prof.delta_lower))

    g = grid(16)
    lam0, lam1 = clustered_city(g, random_state=0)
    lap = SnappedLaplace(g, 0.5)
    t, _ = timed(lambda: SnappedLaplace(g, 0.5).matrix_)
    rows.append(("planar Laplace transition matrix on 16×16 (quadrature)", t))
    P, Q = lap.lift(lam0), lap.lift(lam1)
    many = np.linspace(0, 3, 2000)
    t_vec, a = timed(lambda: privacy_profile(P, Q, many))
    t_loop, b = timed(lambda: loop_profile(P, Q, many))
    assert np.allclose(a, b, atol=1e-12)
    rows.append(("exact profile, 256 outputs, 2000 ε (sorted ratios)", t_vec))
    rows.append(("exact profile, 256 outputs, 2000 ε (loop over ε)", t_loop))
    t, _ = timed(lambda: domain_wasserstein_inf(lam0, lam1, g), repeat=1)
    rows.append(("W∞ on the 16×16 city (bottleneck + LP max flow)", t))
    t, _ = timed(lambda: domain_wasserstein_1(lam0, lam1, g), repeat=1)
    rows.append(("W1 on the 16×16 city (transport LP)", t))

    ident = TuplingMechanism(FiniteMechanism(np.eye(g.size)), 50)
    bases = np.geomspace(1, 14, 20)

    def fresh() -> None:
        for e in bases:
            TuplingMonteCarlo(
                TuplingMechanism(RandomizedResponse(g.size, e), 50),
                lam0,
                lam1,
                n_samples=50_000,
                random_state=2,
            )

    def reuse() -> None:
        mc = TuplingMonteCarlo(ident, lam0, lam1, n_samples=50_000, random_state=2)
        for e in bases:
            rr = RandomizedResponse(g.size, e)
            o = (1 - rr.keep_probability) / (g.size - 1)
            mc.affine(rr.keep_probability - o, g.size * o)

    t_fresh, _ = timed(fresh, repeat=1)
    t_reuse, _ = timed(reuse, repeat=1)
    rows.append(("tupling k = 50 over 20 RR bases, fresh samples (N = 5e4 each)", t_fresh))
    rows.append(("tupling k = 50 over 20 RR bases, one sample + affine reuse", t_reuse))

    w = max(len(r[0]) for r in rows)
    print(f"{'stage':<{w}}  seconds")
    for name, t in rows:
        print(f"{name:<{w}}  {t:8.4f}")
    print(
        f"Monte Carlo / exact time (small case): {t_mc / t_exact:.1f}x; "
        f"max |MC − exact| = {err:.2e}, interval width ≤ {width:.2e} (α = 1e-3)"
    )
    print(f"vectorised profile vs loop over ε: {t_loop / t_vec:.0f}x faster")
    print(f"affine reuse vs fresh sampling: {t_fresh / t_reuse:.1f}x faster")


if __name__ == "__main__":
    main()
