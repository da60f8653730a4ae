"""``distprivacy reproduce local-distp``: the location-privacy experiment of Kawamoto & Murakami
(004 §VII) on a generated city.

Our copy of the paper lost its data set, grid and headline numbers (notes on 004,
"Experiments"), so the experiment runs on a synthetic city built by
:func:`distprivacy.local.domains.clustered_city` (seeded): a rows × cols grid (1 km cells),
two attribute groups (say, two genders) whose location distributions λ0, λ1 share downtown
hotspots but have their own. An observer sees one obfuscated location (or tuple) and tries to
tell which group the user belongs to; the protection is the exact DistP of the pair (λ0, λ1),
reported as ε at a fixed δ (default 1e-3), and the utility is the service quality loss
SQL = Σ_x π[x] Σ_y A(x)[y]·d(x, y) with π = (λ0 + λ1)/2.

Outputs (CSV, PNG, report.md): the city; ε against SQL for randomized response, planar Laplace,
Gaussian and the exponential mechanism (exact profiles), and for tupling over RR (Monte Carlo
with certified ε); the dummies k each tupling base needs to reach a target ε; the theorem-based
guarantees beside the exact values; a Bayes-factor reading of each guarantee. This module
computes the numbers; :mod:`distprivacy.experiments._local_report` draws the figures and writes
the report.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import brentq

from distprivacy.experiments._local_report import (
    COLORS,
    DPI,
    plot_city,
    plot_eps_k,
    plot_eps_sql,
    report_text,
)
from distprivacy.experiments._local_settings import Settings
from distprivacy.experiments._run import write_run
from distprivacy.local.distp import (
    TuplingMonteCarlo,
    distp_epsilon,
    distp_profile,
    epsilon_for_delta,
    n_count_vectors,
)
from distprivacy.local.domains import Domain, clustered_city, grid
from distprivacy.local.guarantees import (
    domain_wasserstein_1,
    domain_wasserstein_inf,
    kl_divergence,
    kl_xdp_constant,
    tupling_hoeffding,
)
from distprivacy.local.mechanisms import (
    ExponentialMechanism,
    FiniteMechanism,
    RandomizedResponse,
    SnappedGaussian,
    SnappedLaplace,
    TuplingMechanism,
)
from distprivacy.local.utility import service_quality_loss
from distprivacy.outputs import check_output_dir
from distprivacy.profiles import gdp_epsilon
from distprivacy.randomness import check_random_state

__all__ = ["COLORS", "DPI", "EXACT_LIMIT", "Settings", "run"]

#: Tupling profiles are computed exactly (count-vector enumeration) up to this many vectors.
EXACT_LIMIT = 40_000


def _base(n: int, eps: float) -> FiniteMechanism:
    if math.isinf(eps):
        return FiniteMechanism(np.eye(n), name="identity")
    return RandomizedResponse(n, eps)


def _base_label(eps: float) -> str:
    return "no noise" if math.isinf(eps) else f"RR ε={eps:g}"


# ---------------------------------------------------------------------------------------------
# Families of mechanisms with one noise parameter
# ---------------------------------------------------------------------------------------------


def _families(g: Domain) -> dict[str, tuple[Callable[[float], FiniteMechanism], str, tuple]]:
    """name → (constructor from the parameter, parameter name, sweep range (lo, hi, more noise
    when the parameter grows?))."""
    n = g.size
    return {
        "RR": (lambda e: RandomizedResponse(n, e), "epsilon", (0.3, 14.0, False)),
        "Laplace": (lambda e: SnappedLaplace(g, e), "epsilon per km", (0.01, 8.0, False)),
        "Gaussian": (lambda s: SnappedGaussian(g, s), "sigma (km)", (0.15, 40.0, True)),
        "Exponential": (
            lambda e: ExponentialMechanism(g, e),
            "epsilon per km",
            (0.01, 16.0, False),
        ),
    }


def _theorem(name: str, param: float, g: Domain, winf: float, delta: float) -> tuple[float, float]:
    """The theorem-based (ε, δ) of a family member for the pair (notes on 004)."""
    if name == "RR":
        return param, 0.0  # ε-local DP ⇒ ε-DistP
    if name == "Laplace":
        return param * winf, 0.0  # ε·W∞
    if name == "Exponential":
        return param * winf, 0.0  # ε·d-XDP ⇒ ε·W∞ as well
    mu = g.diameter / param  # Gaussian: μ-GDP over the whole grid ⇒ DistP
    return gdp_epsilon(delta, mu), delta


def _curves(
    g: Domain, lam0: np.ndarray, lam1: np.ndarray, pi: np.ndarray, st: Settings, winf: float
) -> pd.DataFrame:
    rows = []
    for name, (make, pname, (lo, hi, _)) in _families(g).items():
        for param in np.geomspace(lo, hi, st.sweep):
            mech = make(float(param))
            eps = distp_epsilon(mech, lam0, lam1, st.delta).epsilon
            th_eps, th_delta = _theorem(name, float(param), g, winf, st.delta)
            rows.append(
                {
                    "mechanism": name,
                    "parameter": pname,
                    "value": float(param),
                    "k": 0,
                    "sql_km": service_quality_loss(mech, pi, g),
                    "epsilon": eps,
                    "epsilon_certified": eps,
                    "theorem_epsilon": th_eps,
                    "theorem_delta": th_delta,
                }
            )
    return pd.DataFrame(rows)


def _rr_reuse(mc_id: TuplingMonteCarlo, m: int, eps: float) -> TuplingMonteCarlo:
    """Samples of the identity-base tupling read for base RR(ε) (exact affine reuse)."""
    if math.isinf(eps):
        return mc_id
    rr = RandomizedResponse(m, eps)
    other = (1.0 - rr.keep_probability) / (m - 1)
    return mc_id.affine(rr.keep_probability - other, m * other)


def _tupling(
    g: Domain,
    lam0: np.ndarray,
    lam1: np.ndarray,
    pi: np.ndarray,
    st: Settings,
    seed: int,
    progress: Callable[[str], None],
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Tupling over RR(ε_base) (and over no noise) for every k.

    One Monte-Carlo sample per k (identity base) serves every RR base by exact affine reuse
    (:meth:`TuplingMonteCarlo.affine`). Returns (ε against k for the highlighted bases, ε–SQL
    curves for ``curve_ks``, the least-SQL base meeting each target for every k). Confidence:
    α/2 for the family of (k, base, target) tests, α/2 split evenly over the certified ε's
    (each Bonferroni-corrected over the fixed certification grid), so every certified
    statement in the report holds simultaneously with probability ≥ 1 − α.
    """
    m = g.size
    gen = check_random_state(
        np.random.SeedSequence([seed, 2]), secure=False
    )  # the Monte-Carlo draws (a simulation)
    base_grid = np.geomspace(1.0, 14.0, st.base_grid).tolist()
    all_bases = [math.inf, *base_grid]
    sql = {eb: service_quality_loss(_base(m, eb), pi, g) for eb in {*all_bases, *st.bases}}
    n_cert = len(st.ks) * len(st.bases) + len(st.curve_ks) * len(base_grid)
    alpha_tests = st.alpha / 2
    alpha_cert = st.alpha / 2 / n_cert
    family = len(st.targets) * len(all_bases) * len(st.ks)
    targets = np.asarray(st.targets)
    tk_rows, curve_rows, cal_rows = [], [], []
    for k in st.ks:
        progress(f"local-distp: tupling k={k}")
        t0 = time.perf_counter()
        mc_id = None
        exact_k = n_count_vectors(k, m) <= EXACT_LIMIT
        if k >= 1:
            mech_id = TuplingMechanism(_base(m, math.inf), k)
            mc_id = TuplingMonteCarlo(mech_id, lam0, lam1, n_samples=st.n_samples, random_state=gen)
        # (a) ε against k for the highlighted bases
        for eb in st.bases:
            base = _base(m, eb)
            hoeff = tupling_hoeffding(base.lift(lam0), base.lift(lam1), k, st.delta)
            if mc_id is None or exact_k:  # small k: exact (k = 0 is the base itself)
                eps = distp_epsilon(TuplingMechanism(base, k), lam0, lam1, st.delta).epsilon
                cert, method = eps, "exact" if k == 0 else "enumeration"
            else:
                mc = _rr_reuse(mc_id, m, eb)
                eps = mc.point_epsilon(st.delta)
                cert = mc.certified_epsilon(st.delta, alpha=alpha_cert)
                method = "monte-carlo"
            tk_rows.append(
                {
                    "base": _base_label(eb),
                    "base_epsilon": eb,
                    "k": k,
                    "sql_km": sql[eb],
                    "method": method,
                    "epsilon": eps,
                    "epsilon_certified": cert,
                    "hoeffding_epsilon": hoeff.epsilon,
                }
            )
        # (b) ε–SQL curves over the base grid
        if k in st.curve_ks and mc_id is not None:
            for eb in base_grid:
                mc = _rr_reuse(mc_id, m, eb)
                curve_rows.append(
                    {
                        "mechanism": f"Tupling k={k}",
                        "parameter": "base RR epsilon",
                        "value": eb,
                        "k": k,
                        "sql_km": sql[eb],
                        "epsilon": mc.point_epsilon(st.delta),
                        "epsilon_certified": mc.certified_epsilon(st.delta, alpha=alpha_cert),
                        "theorem_epsilon": math.nan,
                        "theorem_delta": st.delta,
                    }
                )
        # (c) equal privacy: the least-noise base whose certified δ(target) ≤ δ
        best: dict[float, tuple[float, float]] = {}
        for eb in all_bases:
            if mc_id is None or exact_k:
                mech = TuplingMechanism(_base(m, eb), k)
                up = distp_profile(mech, lam0, lam1, targets, limit=EXACT_LIMIT).delta
            else:
                prof = _rr_reuse(mc_id, m, eb).profile(targets, alpha=alpha_tests, family=family)
                up = prof.delta_upper
            for t, u in zip(st.targets, up, strict=True):
                if u <= st.delta and (t not in best or sql[eb] < best[t][1]):
                    best[t] = (eb, sql[eb])
        for t in st.targets:
            eb, q = best.get(t, (math.nan, math.nan))
            cal_rows.append(
                {
                    "target_epsilon": t,
                    "mechanism": "Tupling over RR",
                    "parameter": "base RR ε",
                    "value": eb,
                    "k": k,
                    "sql_km": q,
                    "epsilon": math.nan,
                    "epsilon_certified": t if np.isfinite(q) else math.nan,
                    "theorem_epsilon": math.nan,
                    "theorem_delta": st.delta,
                }
            )
        for r in tk_rows[-len(st.bases) :]:
            r["seconds"] = time.perf_counter() - t0
    return pd.DataFrame(tk_rows), pd.DataFrame(curve_rows), pd.DataFrame(cal_rows)


def _calibrate(
    g: Domain, lam0: np.ndarray, lam1: np.ndarray, pi: np.ndarray, st: Settings, winf: float
) -> pd.DataFrame:
    """Each one-parameter family calibrated to exact ε(δ) = target (Brent on the log param)."""
    rows = []
    for name, (make, pname, (lo, hi, _)) in _families(g).items():

        def gap(logp: float, target: float, make=make) -> float:
            return distp_epsilon(make(math.exp(logp)), lam0, lam1, st.delta).epsilon - target

        for target in st.targets:
            a, b = math.log(lo), math.log(hi)
            if np.sign(gap(a, target)) == np.sign(gap(b, target)):
                param = math.nan
            else:
                param = math.exp(brentq(gap, a, b, args=(target,), xtol=1e-10, rtol=1e-10))
            mech = make(param) if math.isfinite(param) else None
            eps = distp_epsilon(mech, lam0, lam1, st.delta).epsilon if mech else math.nan
            th = _theorem(name, param, g, winf, st.delta) if mech else (math.nan, math.nan)
            rows.append(
                {
                    "target_epsilon": target,
                    "mechanism": name,
                    "parameter": pname,
                    "value": param,
                    "k": 0,
                    "sql_km": service_quality_loss(mech, pi, g) if mech else math.nan,
                    "epsilon": eps,
                    "epsilon_certified": eps,
                    "theorem_epsilon": th[0],
                    "theorem_delta": th[1],
                }
            )
    return pd.DataFrame(rows)


def _theorem_checks(
    g: Domain, lam0: np.ndarray, lam1: np.ndarray, st: Settings, winf: float, w1: float
) -> pd.DataFrame:
    """Theorem-based guarantees beside the exact values, for a few members of each family."""
    rows = []
    for eps in (0.1, 0.5, 2.0):
        lap = SnappedLaplace(g, eps)
        p, q = lap.lift(lam0), lap.lift(lam1)
        exact_pure = epsilon_for_delta(p, q, 0.0)
        # KL ≤ D∞ ≤ ε·d for an ε·d-XDP mechanism, so c ≤ ε; the matrix's own constant is
        # usually tighter, and the smaller of the two is a valid c
        c = min(kl_xdp_constant(lap, g.distances), eps)
        rows.append(
            {
                "mechanism": "Laplace",
                "parameter": eps,
                "guarantee": "ε·W∞ (δ=0)",
                "theorem": eps * winf,
                "exact": exact_pure,
            }
        )
        rows.append(
            {
                "mechanism": "Laplace",
                "parameter": eps,
                "guarantee": "KL ≤ c·W1, c = min(max KL/d, ε)",
                "theorem": c * w1,
                "exact": max(kl_divergence(p, q), kl_divergence(q, p)),
            }
        )
    for eps in (1.0, 4.0):
        rr = RandomizedResponse(g.size, eps)
        rows.append(
            {
                "mechanism": "RR",
                "parameter": eps,
                "guarantee": "local DP ⇒ DistP (δ=0)",
                "theorem": eps,
                "exact": epsilon_for_delta(rr.lift(lam0), rr.lift(lam1), 0.0),
            }
        )
    for sigma in (1.0, 4.0):
        gs = SnappedGaussian(g, sigma)
        rows.append(
            {
                "mechanism": "Gaussian",
                "parameter": sigma,
                "guarantee": f"local GDP ⇒ DistP (ε at δ={st.delta:g})",
                "theorem": gdp_epsilon(st.delta, g.diameter / sigma),
                "exact": epsilon_for_delta(gs.lift(lam0), gs.lift(lam1), st.delta),
            }
        )
    return pd.DataFrame(rows)


def run(
    out_dir: Path,
    *,
    quick: bool,
    seed: int,
    data_dir: str | None,
    progress: Callable[[str], None],
) -> dict:
    """Run the experiment and write CSVs, PNGs and ``report.md`` into ``out_dir`` (atomically,
    the folder marked ``INCOMPLETE`` until its ``manifest.json`` is written:
    :class:`distprivacy.outputs.RunFolder`).

    ``data_dir`` is unused (the city is generated from ``seed``; nothing is downloaded).
    Returns ``{"report": path, "timings": {"total": s, ...}}``.
    """
    del data_dir
    t_start = time.perf_counter()
    timings: dict[str, float] = {}
    out = check_output_dir(out_dir)
    st = Settings.make(quick)

    def stage(name: str, t0: float) -> None:
        timings[name] = time.perf_counter() - t0

    t0 = time.perf_counter()
    progress("local-distp: generating the city")
    g = grid(st.side)
    lam0, lam1 = clustered_city(g, random_state=seed)
    pi = (lam0 + lam1) / 2
    winf = domain_wasserstein_inf(lam0, lam1, g)
    w1 = domain_wasserstein_1(lam0, lam1, g)
    city = {
        "tv": 0.5 * float(np.abs(lam0 - lam1).sum()),
        "winf": winf,
        "w1": w1,
        "eps_identity": epsilon_for_delta(lam0, lam1, st.delta),
    }
    row, col = np.divmod(np.arange(g.size), st.side)
    city_frame = pd.DataFrame(
        {"cell": np.arange(g.size), "row": row, "col": col, "lambda0": lam0, "lambda1": lam1}
    )
    stage("city", t0)

    t0 = time.perf_counter()
    progress("local-distp: exact profiles of RR, Laplace, Gaussian, exponential")
    curves = _curves(g, lam0, lam1, pi, st, winf)
    calib = _calibrate(g, lam0, lam1, pi, st, winf)
    stage("exact mechanisms", t0)

    t0 = time.perf_counter()
    tk, tcurves, tcal = _tupling(g, lam0, lam1, pi, st, seed, progress)
    stage("tupling", t0)

    equal = pd.concat([calib, tcal], ignore_index=True)
    equal = equal.sort_values(["target_epsilon", "k"], kind="stable").reset_index(drop=True)
    t0 = time.perf_counter()
    checks = _theorem_checks(g, lam0, lam1, st, winf, w1)
    stage("theorem checks", t0)

    progress("local-distp: writing outputs")
    command = (
        "distprivacy reproduce local-distp --out OUT"
        + (" --quick" if quick else "")
        + (f" --seed {seed}" if seed else "")
    )

    def figures(folder: Path) -> dict[str, Any]:
        plot_city(g, lam0, lam1, folder / "city.png")
        plot_eps_sql(curves, tcurves, st, folder / "epsilon_sql.png")
        plot_eps_k(tk, equal, st, folder / "epsilon_k.png")
        return {}

    def report(_made: Any) -> str:
        header = {
            "command": command,
            "mode": "quick settings" if quick else "full settings",
            "seed": seed,
            "seconds": timings["total"],
        }
        return report_text(st, header, city, equal, tk, checks)

    # Every file is written atomically; the folder is marked INCOMPLETE until manifest.json.
    return write_run(
        out,
        command,
        timings=timings,
        started=t_start,
        report=report,
        frames={
            "city": city_frame,
            "curves": pd.concat([curves, tcurves], ignore_index=True),
            "equal_privacy": equal,
            "tupling_k": tk,
            "theorem_checks": checks,
        },
        figures=figures,
    )
