"""Reproduction of the synthetic hospital experiment of Zhang, Ohrimenko & Cummings (FAccT 2022,
§4.2 "Experiments"), with our exact accounting and the Pufferfish Wasserstein Mechanism beside
the paper's Algorithm 1, and a figure of the error against the correlation V_ij.

The paper's text has typos; the readings chosen here (each reproduces the paper's printed numbers,
see docs/attribute_privacy.md):

* "If female, heights N(65, 3) and heights N(70, 3) otherwise": female heights N(65, 3²),
  others N(70, 3²) — the second argument of N is a standard deviation throughout (the printed
  conditional variances 4.5 = 15²/50, 2 = 10²/50 and 0.08 = 2²/50 only come out this way).
* "weights N(3.6 x_w − 90, 15)": x_w is the height x_h, weight = 3.6·height − b + N(0, 15²).
  With b = 90 the expected average weight is 3.6·67 − 90 = 151.2 (sd 2.9 over 50 patients),
  3.5 sd below the paper's 161.33; b = 80 gives 161.2, so the data are simulated with b = 80
  (the end of Θ's range k₂ ∈ (80, 90)). The intercept changes no sensitivity, variance or error.
* Var(F₁ | s) = 4.5 = 15²/50: the paper's conditional variance of the average weight leaves out
  the spread of the heights (k₁² Var(height | gender)); leaving it out can only lower min Var and
  so add noise, so this reading is conservative (still private).
* max|a − b| = 0.25 for a ∈ (.25, .5), b ∈ (.5, .75): the distance between the centres of the two
  secret intervals (0.375 and 0.625). The literal max |a − b| over the shares of 50 patients the
  two open intervals can hold is 37/50 − 13/50 = 0.48 ("literal" rows).
* Temperature: Alg. 1's classic c gives σ² = (c·0.075)² − 0.08 = 2.2e-4 > 0, a negligible noise
  (E|Z| = 0.012); exact accounting gives σ² = 0 — the paper's "no noise".
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from distprivacy.attribute.framework import (
    AttributeDomain,
    DatasetAttributeFramework,
    pairs_from_sets,
)
from distprivacy.attribute.gaussian import (
    AttributeGaussianMechanism,
    GaussianTheta,
    RegressionTheta,
)
from distprivacy.attribute.pufferfish import GaussianConditional, PufferfishWassersteinMechanism
from distprivacy.exceptions import require_extra
from distprivacy.experiments._run import write_run
from distprivacy.outputs import check_output_dir, save_figure
from distprivacy.randomness import RandomState, check_random_state
from distprivacy.targets import EpsDelta

EPSILON = 1.0
DELTA = 1e-3
N_PATIENTS = 50
RUNS = 100
QUERIES = ("weight", "blood_pressure", "temperature")

#: The paper's printed numbers (§4.2): sensitivity, conditional variance, mean absolute error
#: over 100 runs (None: "Algorithm 1 does not inject noise"), true average of its dataset.
PAPER: dict[str, dict[str, float | None]] = {
    "weight": {"sensitivity": 6.125, "variance": 4.5, "error": 18.90, "true_mean": 161.33},
    "blood_pressure": {"sensitivity": 2.5, "variance": 2.0, "error": 7.40, "true_mean": 102.18},
    "temperature": {"sensitivity": 0.075, "variance": 0.08, "error": None, "true_mean": 98.58},
}
TOLERANCE = 0.15  # the issue's ±15 % on the errors (averages of 100 runs)

#: The readings of the paper's typos (module docstring), as printed in the report.
READINGS = (
    "* N(m, s): s is a standard deviation (4.5 = 15²/50, 2 = 10²/50, 0.08 = 2²/50).",
    '* "heights N(65, 3) and heights N(70, 3) otherwise": women N(65, 3²), others N(70, 3²).',
    '* "weights N(3.6 x_w − 90, 15)": weight = 3.6·height − 80 + N(0, 15²); x_w is the height, '
    "and −80 (not −90) gives the paper's average weight 161.33 (−90 would give 151.2 ± 2.9).",
    "* Var(F₁ | s) = 4.5 leaves out k₁² Var(height | gender): a smaller variance, so more noise "
    "(conservative).",
    "* max |a − b| = 0.25 for a ∈ (.25, .5), b ∈ (.5, .75): the distance of the intervals' "
    "centres; the literal max over the shares of 50 patients, 0.74 − 0.26 = 0.48, is in the "
    '"literal" rows.',
)


@dataclass(frozen=True)
class HospitalData:
    """The data-generating distribution of the paper (our readings, module docstring)."""

    n: int = N_PATIENTS
    p_female: float = 0.6
    height_female: tuple[float, float] = (65.0, 3.0)
    height_other: tuple[float, float] = (70.0, 3.0)
    weight_slope: float = 3.6
    weight_intercept: float = 80.0
    weight_sd: float = 15.0
    bp_female: tuple[float, float] = (100.0, 3.0)
    bp_other: tuple[float, float] = (106.0, 3.0)
    temperature: tuple[float, float] = (98.6, 0.5)

    def simulate(self, random_state: RandomState) -> pd.DataFrame:
        """One dataset of n patients (gender 1 = female), from a seed or generator."""
        g = check_random_state(random_state, secure=False)
        female = g.random(self.n) < self.p_female
        z = g.standard_normal((4, self.n))
        hf, ho = self.height_female, self.height_other
        height = np.where(female, hf[0] + hf[1] * z[0], ho[0] + ho[1] * z[0])
        weight = self.weight_slope * height - self.weight_intercept + self.weight_sd * z[1]
        bf, bo = self.bp_female, self.bp_other
        bp = np.where(female, bf[0] + bf[1] * z[2], bo[0] + bo[1] * z[2])
        temp = self.temperature[0] + self.temperature[1] * z[3]
        return pd.DataFrame(
            {
                "gender": female.astype(int),
                "height": height,
                "weight": weight,
                "blood_pressure": bp,
                "temperature": temp,
            }
        )


def hospital_framework(n: int = N_PATIENTS) -> DatasetAttributeFramework:
    """Secrets: share of women in (0.25, 0.5) vs (0.5, 0.75); Θ's gender ~ Bernoulli(p),
    p ∈ (0.25, 0.75)."""
    gender = AttributeDomain("gender", binary=True, parameter_range=(0.25, 0.75))
    pairs = pairs_from_sets(
        "gender", ["(0.25,0.5)", "(0.5,0.75)"], function="share of female patients"
    )
    return DatasetAttributeFramework(pairs=pairs, domains=(gender,), n=n)


def _product_range(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    prods = [x * y for x in a for y in b]
    return min(prods), max(prods)


def hospital_theta() -> RegressionTheta:
    """Θ of the paper in the two §4.2 quantities per query j (sensitive: gender):

    * weight: slope = k₁ (μ_F − μ_O), k₁ ∈ [3, 3.5], μ_F ∈ [64, 66], μ_O ∈ [69, 71]; residual
      variance 15² (the paper's reading, module docstring);
    * blood pressure: slope = b_F − b_O ∈ [6, 10]; residual variance 10²;
    * temperature: slope = t_F − t_O ∈ [0, 0.3]; residual variance 2².
    """
    k1 = (3.0, 3.5)
    height_gap = (64.0 - 71.0, 66.0 - 69.0)
    slopes = {
        ("gender", "weight"): _product_range(k1, height_gap),
        ("gender", "blood_pressure"): (6.0, 10.0),
        ("gender", "temperature"): (0.0, 0.3),
    }
    resid = {
        ("gender", "weight"): 15.0**2,
        ("gender", "blood_pressure"): 10.0**2,
        ("gender", "temperature"): 2.0**2,
    }
    return RegressionTheta(slopes, resid)


def _wasserstein(theta: RegressionTheta, query: str, d: float, n: int) -> Any:
    """The Wasserstein Mechanism on the worst θ (largest |slope|): the conditionals of the
    average are N(slope·a, τ²/n) at the two secrets' points at distance d."""
    lo, hi = theta.slopes[("gender", query)]
    var = theta.residual_variances[("gender", query)][0] / n
    conds = {
        f"slope={s:g}": {
            "a": GaussianConditional([0.0], [[var]]),
            "b": GaussianConditional([s * d], [[var]]),
        }
        for s in (lo, hi)
    }
    return PufferfishWassersteinMechanism(epsilon=EPSILON).calibrate(conds, [("a", "b")])


def _ours_distribution_privacy(sens: float, var: float, rule: str) -> Any:
    """Chen & Ohrimenko's EigM-G (Thm 4.5) on the translated problem: θ_a, θ_b = the two
    secrets, F ~ N(μ̄_a, V̄) and N(μ̄_b, V̄) under the worst θ (module doc of
    :mod:`distprivacy.attribute.framework`)."""
    import warnings

    from distprivacy.mechanisms import make_mechanism
    from distprivacy.models import GaussianModel
    from distprivacy.request import GaussianOptions

    model = GaussianModel(
        thetas=["s_a", "s_b"],
        means=[[0.0], [sens]],
        covariances=[[[var]], [[var]]],
        pairs=[("s_a", "s_b")],
        statistic_names=["F"],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the classic-rule caveat is reported in the table
        target, options = EpsDelta(EPSILON, DELTA), GaussianOptions(rule)
        return make_mechanism("EigM-G", target, options).calibrate(model)


def hospital_table(
    *, runs: int = RUNS, random_state: RandomState = 0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The §4.2 table: per query, reading and mechanism, the sensitivity, conditional
    variance, noise variance, exact expected |error| and the mean |error| of ``runs`` releases
    (one simulated dataset, as in the paper), beside the paper's numbers.

    Returns (table, data): the rows and the simulated dataset.
    """
    gen = check_random_state(random_state, secure=False)
    data = HospitalData().simulate(gen)
    theta = hospital_theta()
    fw = hospital_framework()
    rows = []
    for query in QUERIES:
        truth = float(data[query].mean())
        for reading in ("centres", "sup"):
            d_u = fw.diameter("gender", reading)
            label = "paper (d(U)=0.25)" if reading == "centres" else f"literal (d(U)={d_u:g})"
            for rule in ("classic", "exact"):
                cal = AttributeGaussianMechanism(EpsDelta(EPSILON, DELTA), rule=rule).calibrate(
                    fw, theta, query, pair_distance=reading
                )
                released = cal.release(truth, gen, size=runs, allow_exact=True).values
                rows.append(
                    {
                        "query": query,
                        "reading": label,
                        "mechanism": f"APGM ({rule})",
                        "sensitivity": cal.sensitivity,
                        "conditional_variance": cal.conditional_variance,
                        "noise_variance": cal.noise_variance,
                        "adds_noise": cal.adds_noise,
                        "expected_abs_error": cal.expected_error,
                        "measured_abs_error": float(np.mean(np.abs(released - truth))),
                        "delta_achieved": cal.delta_achieved,
                        "true_mean": truth,
                    }
                )
                if reading == "centres":
                    ours = _ours_distribution_privacy(
                        cal.sensitivity, cal.conditional_variance, rule
                    )
                    z = ours.sample_noise(runs, gen)[:, 0]
                    rows.append(
                        {
                            "query": query,
                            "reading": label,
                            "mechanism": f"EigM-G ({rule}), distribution privacy",
                            "sensitivity": float(ours.sensitivity or cal.sensitivity),
                            "conditional_variance": cal.conditional_variance,
                            "noise_variance": float(ours.noise_covariance[0, 0]),
                            "adds_noise": bool(ours.noise_covariance[0, 0] > 0),
                            "expected_abs_error": float(ours.expected_l2_error),
                            "measured_abs_error": float(np.mean(np.abs(z))),
                            "delta_achieved": float(ours.delta_achieved),
                            "true_mean": truth,
                        }
                    )
            w = _wasserstein(theta, query, fw.diameter("gender", reading), fw.n)
            released = w.release(truth, gen, size=runs, allow_exact=True).values
            rows.append(
                {
                    "query": query,
                    "reading": label,
                    "mechanism": "Pufferfish Wasserstein (Laplace, δ=0)",
                    "sensitivity": w.sensitivity,
                    "conditional_variance": math.nan,
                    "noise_variance": w.noise_variance,
                    "adds_noise": w.sensitivity > 0,
                    "expected_abs_error": w.expected_error,
                    "measured_abs_error": float(np.mean(np.abs(released - truth))),
                    "delta_achieved": 0.0,
                    "true_mean": truth,
                }
            )
    table = pd.DataFrame(rows)
    table["paper_sensitivity"] = table["query"].map(lambda q: PAPER[q]["sensitivity"])
    table["paper_variance"] = table["query"].map(lambda q: PAPER[q]["variance"])
    table["paper_error"] = table["query"].map(lambda q: PAPER[q]["error"])
    table["paper_true_mean"] = table["query"].map(lambda q: PAPER[q]["true_mean"])
    return table, data


def paper_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rows that reproduce the paper: its reading, Alg. 1 with the classic c."""
    return table[
        (table["reading"] == "paper (d(U)=0.25)") & (table["mechanism"] == "APGM (classic)")
    ].reset_index(drop=True)


def correlation_sweep(
    *,
    points: int = 41,
    runs: int = RUNS,
    random_state: RandomState = 0,
    v_ii: float = 0.25,
    v_jj: float = 100.0,
) -> pd.DataFrame:
    """Error of Alg. 1 against V_ij for one Gaussian θ (§4.2: σ² increases with V_ij): sensitive
    X_i with variance ``v_ii`` (a Bernoulli(0.5) share), query X_j with variance ``v_jj``
    (blood-pressure-like), n = 50, the hospital's secret pairs (paper reading)."""
    gen = check_random_state(random_state, secure=False)
    fw = hospital_framework()
    vmax = 0.99 * math.sqrt(v_ii * v_jj)
    rows = []
    for v in np.linspace(0.0, vmax, points):
        theta = GaussianTheta(("gender", "x"), np.array([[v_ii, v], [v, v_jj]]))
        for rule in ("classic", "exact"):
            cal = AttributeGaussianMechanism(EpsDelta(EPSILON, DELTA), rule=rule).calibrate(
                fw, theta, "x", pair_distance="centres"
            )
            z = cal.release(0.0, gen, size=runs, allow_exact=True).values
            rows.append(
                {
                    "v_ij": float(v),
                    "correlation": float(v / math.sqrt(v_ii * v_jj)),
                    "rule": rule,
                    "sensitivity": cal.sensitivity,
                    "conditional_variance": cal.conditional_variance,
                    "noise_variance": cal.noise_variance,
                    "expected_abs_error": cal.expected_error,
                    "measured_abs_error": float(np.mean(np.abs(z))),
                    "noise_threshold": noise_threshold(
                        v_ii, v_jj, fw.n, fw.diameter("gender", "centres"), cal.multiplier
                    ),
                }
            )
    return pd.DataFrame(rows)


def noise_threshold(v_ii: float, v_jj: float, n: int, d: float, multiplier: float) -> float:
    """The V_ij above which Alg. 1 adds noise: (r d V_ij/V_ii)² = (V_jj − V_ij²/V_ii)/n, r = c/ε
    (classic) or 1/μ* (exact)."""
    return math.sqrt(v_jj / n / ((multiplier * d / v_ii) ** 2 + 1.0 / (n * v_ii)))


# ---------------------------------------------------------------------------------------------
# Both frameworks on the same real data (Adult)
# ---------------------------------------------------------------------------------------------

ADULT_PROPERTY = "income==>50K"
ADULT_VALUES = (0.45, 0.55)
ADULT_N = 100


def adult_comparison(frame: pd.DataFrame, *, quick: bool) -> pd.DataFrame:
    """Alg. 1 beside our distribution-privacy mechanisms on the main paper's default problem
    (Adult, protect the share of income > 50K, 0.45 vs 0.55, n = 100, the five statistics of
    its §5.1, exact finite-population moments): the same problem stated both ways
    (:meth:`DatasetAttributeFramework.from_protection_spec`). The conditional covariances of
    the two secrets differ slightly on real data, so Alg. 1's δ is computed exactly with both
    (:func:`delta_with_moments`), as our mechanisms' is (``covariances="fitted"``)."""
    import warnings

    from distprivacy.attribute.gaussian import delta_with_moments
    from distprivacy.mechanisms import make_mechanism
    from distprivacy.models import ExactModel
    from distprivacy.query import ADULT_DEFAULT_STATISTICS, Query
    from distprivacy.request import GaussianOptions
    from distprivacy.spec import ProtectionSpec

    spec = ProtectionSpec(ADULT_PROPERTY, ADULT_N, ADULT_VALUES)
    query = Query.parse(ADULT_DEFAULT_STATISTICS)
    model = ExactModel().fit(frame, spec, query)
    fw = DatasetAttributeFramework.from_protection_spec(spec)
    means, covs = model.means_[None], model.covariances_[None]  # one θ, two secrets
    rows = []
    for rule in ("classic", "exact"):
        mech = AttributeGaussianMechanism(EpsDelta(EPSILON, DELTA), rule=rule)
        cal = mech.calibrate_moments(fw.sensitive[0], means, covs, [(0, 1)], query.names)
        rows.append(
            {
                "framework": "attribute privacy (Zhang et al. 2022)",
                "mechanism": "APGM (Alg. 1)",
                "rule": rule,
                "expected_l2_error": cal.expected_error,
                "delta_achieved": delta_with_moments(cal, means, covs, [(0, 1)]),
            }
        )
    names = ("ExpM-G", "EigM-G") if quick else ("ExpM-G", "EigM-G", "DauM-G", "OptM-G")
    rules = ("classic",) if quick else ("classic", "exact")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the classic-rule caveat is reported in the table
        for name in names:
            for rule in rules:
                options = GaussianOptions(rule, utility="l2")
                cal = make_mechanism(name, EpsDelta(EPSILON, DELTA), options).calibrate(model)
                rows.append(
                    {
                        "framework": "distribution privacy (Chen & Ohrimenko 2023)",
                        "mechanism": name,
                        "rule": rule,
                        "expected_l2_error": float(cal.expected_l2_error),
                        "delta_achieved": float(cal.delta_achieved),
                    }
                )
    return pd.DataFrame(rows)


def _load_adult(data_dir: str | None) -> tuple[pd.DataFrame | None, str]:
    """Adult from ``data_dir``, else from DISTPRIVACY_DATA or the cache (never downloaded by
    this target); (None, why) when it is not available locally."""
    from distprivacy.datasets import load_adult
    from distprivacy.exceptions import DataUnavailableError

    try:
        return load_adult(data_dir, download=data_dir is not None), ""
    except DataUnavailableError as e:
        return None, str(e).splitlines()[0]


# ---------------------------------------------------------------------------------------------
# Figure and report
# ---------------------------------------------------------------------------------------------

_RULE_COLORS = {"classic": "#d62728", "exact": "#2ca02c"}


def plot(sweep: pd.DataFrame, table: pd.DataFrame, path: Path) -> Path:
    """Left: error against V_ij (expected and measured, both rules). Right: the hospital's mean
    absolute errors, the paper's beside ours."""
    require_extra("matplotlib", "drawing the figures")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 4.8))
    ax, bx = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.2, 1]})
    for rule, g in sweep.groupby("rule", sort=False):
        c = _RULE_COLORS[str(rule)]
        ax.plot(g["v_ij"], g["expected_abs_error"], color=c, label=f"APGM {rule}: E|Z| (exact)")
        ax.plot(
            g["v_ij"][::4],
            g["measured_abs_error"][::4],
            "o",
            mfc="none",
            color=c,
            label=f"APGM {rule}: mean |error| of {RUNS} runs",
        )
        ax.axvline(float(g["noise_threshold"].iloc[0]), color=c, ls=":", lw=1)
    ax.set_xlabel("covariance V_ij of the protected share and the released attribute")
    ax.set_ylabel("mean absolute error of the release")
    ax.set_title(
        "Less correlated queries need less noise (§4.2)\n"
        "V_ii = 0.25, V_jj = 100, n = 50, ε = 1, δ = 1e-3; dotted: noise starts",
        fontsize=10,
    )
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)

    labels = {
        "weight": "average weight",
        "blood_pressure": "avg blood pressure",
        "temperature": "avg temperature",
    }
    sel = table[table["reading"] == "paper (d(U)=0.25)"]
    series = [
        ("paper (Alg. 1)", None, "#7f7f7f"),
        ("APGM classic (ours)", "APGM (classic)", _RULE_COLORS["classic"]),
        ("APGM exact (ours)", "APGM (exact)", _RULE_COLORS["exact"]),
        ("Pufferfish Wasserstein", "Pufferfish Wasserstein (Laplace, δ=0)", "#1f77b4"),
    ]
    x = np.arange(len(QUERIES))
    width = 0.2
    for k, (name, mech, color) in enumerate(series):
        if mech is None:
            vals = [PAPER[q]["error"] or 0.0 for q in QUERIES]
        else:
            vals = [
                float(
                    sel[(sel["query"] == q) & (sel["mechanism"] == mech)][
                        "measured_abs_error"
                    ].iloc[0]
                )
                for q in QUERIES
            ]
        bars = bx.bar(x + (k - 1.5) * width, vals, width, color=color, label=name)
        bx.bar_label(bars, fmt="%.2f", fontsize=7, padding=1)
    bx.set_xticks(x, [labels[q] for q in QUERIES])
    bx.set_ylabel(f"mean absolute error over {RUNS} runs")
    bx.set_title(
        "Hospital experiment: the paper's errors beside ours\n"
        "(paper reading d(U) = 0.25; paper: no noise for temperature)",
        fontsize=10,
    )
    bx.legend(fontsize=8)
    bx.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path, dpi=150)
    return path


def _fmt(x: Any, digits: int = 5) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if isinstance(x, bool | np.bool_):
        return "yes" if x else "no"
    if isinstance(x, float | np.floating):
        return f"{float(x):.{digits}g}"
    return str(x)


def _markdown(frame: pd.DataFrame, columns: list[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for _, r in frame.iterrows():
        lines.append("| " + " | ".join(_fmt(r[c]) for c in columns) + " |")
    return "\n".join(lines)


def report_text(
    table: pd.DataFrame,
    sweep: pd.DataFrame,
    data: pd.DataFrame,
    figure: Path,
    *,
    quick: bool,
    seed: int,
    adult: pd.DataFrame | None = None,
    adult_note: str = "",
) -> str:
    """The report's markdown: the paper's hospital table beside ours, the V_ij sweep, the
    simulated data and both frameworks on Adult."""
    rep = paper_rows(table).copy()
    rep["error_ratio"] = rep["measured_abs_error"] / rep["paper_error"].astype(float)
    checks = []
    for _, r in rep.iterrows():
        q = r["query"]
        ok_s = math.isclose(r["sensitivity"], PAPER[q]["sensitivity"], rel_tol=1e-12)
        ok_v = math.isclose(r["conditional_variance"], PAPER[q]["variance"], rel_tol=1e-12)
        if PAPER[q]["error"] is None:
            ok_e = f"paper adds no noise; classic σ² = {r['noise_variance']:.3g}"
        else:
            ok_e = "yes" if abs(r["error_ratio"] - 1) <= TOLERANCE else "NO"
        checks.append((q, ok_s, ok_v, ok_e))
    thresholds = sweep.groupby("rule")["noise_threshold"].first().to_dict()
    exact = table[
        (table["reading"] == "paper (d(U)=0.25)") & (table["mechanism"] == "APGM (exact)")
    ]
    lines = [
        "# Attribute privacy: the synthetic hospital experiment",
        "",
        "Zhang, Ohrimenko & Cummings, *Attribute Privacy: Framework and Mechanisms* "
        "(FAccT 2022), §4.2.",
        "",
        "Produced by `distprivacy reproduce attribute-privacy --out OUT"
        f"{' --quick' if quick else ''}{f' --seed {seed}' if seed else ''}`"
        f" (seed {seed}): {N_PATIENTS} simulated patients, ε = {EPSILON:g}, δ = {DELTA:g}, "
        f"{RUNS} releases per mechanism on one simulated dataset (as in the paper). "
        "Readings of the paper's typos: docs/attribute_privacy.md.",
        "",
        "## Readings of the paper's text",
        "",
        *READINGS,
        "",
        "## The paper's numbers beside ours (its reading, Algorithm 1 with c = √(2 ln(1.25/δ)))",
        "",
        _markdown(
            rep,
            [
                "query",
                "paper_sensitivity",
                "sensitivity",
                "paper_variance",
                "conditional_variance",
                "noise_variance",
                "paper_error",
                "measured_abs_error",
                "expected_abs_error",
                "error_ratio",
                "paper_true_mean",
                "true_mean",
            ],
        ),
        "",
        "| query | Δ equals the paper's | Var equals the paper's | error within ±15 % |",
        "|---|---|---|---|",
        *[f"| {q} | {_fmt(s)} | {_fmt(v)} | {e} |" for q, s, v, e in checks],
        "",
        "Temperature: the classic rule leaves σ² = (c·0.075)² − 0.08 = "
        f"{float(rep[rep['query'] == 'temperature']['noise_variance'].iloc[0]):.3g}, a negligible "
        "noise; with exact accounting Algorithm 1 adds none ("
        f"σ² = {float(exact[exact['query'] == 'temperature']['noise_variance'].iloc[0]):.3g}), "
        "the paper's statement.",
        "",
        "## Every mechanism and reading",
        "",
        "APGM = Algorithm 1 (classic c, or exact μ-GDP accounting); EigM-G = our distribution-"
        "privacy mechanism (Chen & Ohrimenko 2023, Thm 4.5) on the same problem translated to θ_a,"
        " θ_b (it coincides with APGM for a scalar query); Pufferfish Wasserstein = Song et al. "
        "2017, Laplace noise of scale W∞/ε (pure ε). `delta_achieved` is the exact δ at ε = 1.",
        "",
        _markdown(
            table,
            [
                "query",
                "reading",
                "mechanism",
                "sensitivity",
                "conditional_variance",
                "noise_variance",
                "expected_abs_error",
                "measured_abs_error",
                "delta_achieved",
            ],
        ),
        "",
        "## Error against the correlation V_ij",
        "",
        f"![error against V_ij and the hospital errors]({figure.name})",
        "",
        "σ² of Algorithm 1 increases with V_ij: below the dotted lines no noise is needed "
        f"(classic: V_ij ≤ {thresholds['classic']:.3g}, exact: V_ij ≤ {thresholds['exact']:.3g}).",
        "",
        _markdown(
            sweep[sweep["v_ij"].isin(sweep["v_ij"].unique()[:: max(1, len(sweep) // 24)])],
            [
                "v_ij",
                "correlation",
                "rule",
                "sensitivity",
                "noise_variance",
                "expected_abs_error",
                "measured_abs_error",
            ],
        ),
        "",
        f"Simulated data: {len(data)} patients, {int(data['gender'].sum())} women.",
        "",
        "## Both frameworks on Adult",
        "",
        *(
            [
                "The main paper's default problem stated as dataset attribute privacy (point "
                f"secrets g = share of {ADULT_PROPERTY} ∈ {{{', '.join(map(str, ADULT_VALUES))}}}"
                f", n = {ADULT_N}, the five statistics of its §5.1, exact moments), ε = "
                f"{EPSILON:g}, δ = {DELTA:g}. Expected L2 error E‖Z‖₂ and the exact δ at ε "
                "with the fitted (unequal) covariances of the two secrets.",
                "",
                _markdown(
                    adult,
                    ["framework", "mechanism", "rule", "expected_l2_error", "delta_achieved"],
                ),
            ]
            if adult is not None
            else [f"Not run: Adult is not available locally ({adult_note}); pass --data DIR."]
        ),
        "",
    ]
    return "\n".join(lines)


def run(
    out_dir: Path,
    *,
    quick: bool,
    seed: int,
    data_dir: str | None,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    """Write hospital.csv, correlation_sweep.csv, hospital_data.csv, attribute_privacy.png,
    adult_comparison.csv (when Adult is available: ``data_dir``, DISTPRIVACY_DATA or the cache)
    and report.md into ``out_dir`` (atomically, the folder marked ``INCOMPLETE`` until its
    ``manifest.json`` is written: :class:`distprivacy.outputs.RunFolder`). ``quick`` coarsens
    the V_ij sweep and runs fewer of our mechanisms on Adult (the hospital table is always 100
    runs)."""
    out_dir = check_output_dir(out_dir)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    progress("attribute-privacy: hospital table")
    table, data = hospital_table(runs=RUNS, random_state=seed)
    timings["hospital"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    progress("attribute-privacy: error against V_ij")
    sweep = correlation_sweep(points=13 if quick else 41, random_state=seed + 1)
    timings["sweep"] = time.perf_counter() - t1
    t3 = time.perf_counter()
    progress("attribute-privacy: both frameworks on Adult")
    frame, adult_note = _load_adult(data_dir)
    adult = None if frame is None else adult_comparison(frame, quick=quick)
    timings["adult"] = time.perf_counter() - t3
    command = "distprivacy reproduce attribute-privacy" + (" --quick" if quick else "")
    command += f" --seed {seed}" if seed else ""
    figure = out_dir / "attribute_privacy.png"

    def report(_made: Any) -> str:
        return report_text(
            table, sweep, data, figure, quick=quick, seed=seed, adult=adult, adult_note=adult_note
        )

    # Every file is written atomically; the folder is marked INCOMPLETE until manifest.json.
    return write_run(
        out_dir,
        command,
        timings=timings,
        started=t0,
        report=report,
        frames={
            "hospital": table,
            "hospital_data": data,
            "correlation_sweep": sweep,
            "adult_comparison": adult,
        },
        figures=lambda folder: {"figure": plot(sweep, table, figure)},
        stage="figure_report",
        timings_csv=False,
    )
