"""Beyond the paper, on the paper's setting: exact accounting against the classic rule, and an
audit of every mechanism on real samples of F.

Both use the split and the models of :class:`~distprivacy.experiments.paper.PaperReproduction`
(income, p ∈ {0.45, 0.55}, n = 100, δ = 0.001):

* ``accounting`` — for each ε of Figure 2's grid, the expected L2 error and the exact guarantee
  (μ, δ achieved at ε, maximum attack accuracy) of the Gaussian mechanisms under three settings:
  the paper's ``classic`` rule, ``exact`` under the paper's modelling assumption (one covariance
  per pair, ``pooled``), and ``exact`` with the fitted unequal covariances enforced (``fitted``,
  the library's default).
* ``audit`` — :func:`distprivacy.mechanism_audit.audit` of each mechanism at ε ∈ {0.2, 1, 5, 10}
  on real datasets drawn from the *test* split (never seen by the model), the likelihood-ratio
  attacker knowing the moments of f_θ on its auxiliary split.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from distprivacy.experiments import reference as ref
from distprivacy.experiments.paper import PaperReproduction
from distprivacy.mechanism_audit import audit, draw_pair_samples
from distprivacy.models import ExactModel
from distprivacy.targets import EpsDelta

#: (label, rule, covariances, mechanisms) of the accounting comparison.
ACCOUNTING_SETTINGS = (
    ("classic (paper)", "classic", "fitted", ("ExpM-G", "EigM-G", "DauM-G", "OptM-G")),
    ("exact, pooled", "exact", "pooled", ("ExpM-G", "EigM-G", "DauM-G", "OptM-G")),
    ("exact, fitted", "exact", "fitted", ("DauM-G", "OptM-G")),
)
#: Mechanisms audited; the Gaussian ones under both rules.
AUDIT_MECHANISMS = ("ExpM-L", "DirM-L", "ExpM-G", "EigM-G", "DauM-G", "OptM-G")


def accounting(repro: PaperReproduction) -> pd.DataFrame:
    """The accounting comparison (module docstring), one row per (setting, mechanism, ε)."""
    repro.progress("Exact accounting against the classic rule")
    model = repro.model("income", 0.1)
    d = repro.config.delta
    extra = (*repro.config.table_epsilons, *repro.config.audit_epsilons)
    grid = sorted({*repro.config.fig2_epsilons, *extra})
    # The enforced (fitted) setting searches, so it runs on every other point of the grid.
    coarse = sorted({*repro.config.fig2_epsilons[::2], *extra})
    rows = []
    for label, rule, cov, names in ACCOUNTING_SETTINGS:
        for name in names:
            for eps in grid if cov == "pooled" or rule == "classic" else coarse:
                cal = repro.calibrate(name, EpsDelta(eps, d), model, rule, cov, profile=True)
                acct = cal.accounting
                unequal = acct.unequal or {}
                rows.append(
                    {
                        "setting": label,
                        "rule": rule,
                        "covariances": cov,
                        "mechanism": name,
                        "epsilon": eps,
                        "delta": d,
                        "l2_exact": cal.expected_l2_error,
                        "mu": cal.mu,
                        "mu_target": acct.target_mu,
                        "delta_target": _gdp_delta(eps, acct.target_mu),
                        "delta_shared": acct.shared.delta_at_epsilon,
                        "delta_unequal": unequal.get("delta_at_epsilon", np.nan),
                        "delta_achieved": cal.delta_achieved,
                        "epsilon_at_delta": cal.epsilon_at(d),
                        "max_attack_accuracy": cal.max_attack_accuracy,
                        "paper_l2": ref.TABLE2.get((name, _near(eps)), np.nan)
                        if rule == "classic"
                        else np.nan,
                    }
                )
    return pd.DataFrame(rows)


def _gdp_delta(eps: float, mu: float) -> float:
    """δ_μ(ε) of μ-GDP: the δ the rule's target μ* achieves at ε (the classic rule's ε/c falls
    short of its nominal δ for ε > 1 whatever the data)."""
    from distprivacy.profiles import gdp_delta

    return float(gdp_delta(eps, mu))


def _near(eps: float) -> float:
    """The Table-2 ε (0.2, 1, 5) that ``eps`` rounds to, else ``eps``."""
    for e in (0.2, 1.0, 5.0):
        if abs(eps - e) <= 1e-9:
            return e
    return eps


def accounting_summary(df: pd.DataFrame) -> pd.DataFrame:
    """The issue's acceptance figures: at ε = 0.2 and 1, the best pooled-exact error against the
    paper's DauM-G (Table 2), and the classic rule's achieved δ at the largest ε."""
    rows = []
    for eps, paper_key, bound in ((0.2, 0.2, 0.55), (1.0, 1.0, 0.65)):
        for setting in ("exact, pooled", "exact, fitted"):
            sub = df[(df.setting == setting) & np.isclose(df.epsilon, eps)]
            if sub.empty:
                continue
            best = sub.loc[sub.l2_exact.idxmin()]
            paper = ref.TABLE2[("DauM-G", paper_key)]
            rows.append(
                {
                    "check": f"best {setting} E‖Z‖ at ε = {eps:g} vs paper DauM-G",
                    "mechanism": best.mechanism,
                    "value": float(best.l2_exact),
                    "reference": paper,
                    "ratio": float(best.l2_exact) / paper,
                    "required_ratio": bound if setting == "exact, pooled" else np.nan,
                }
            )
    pooled = df[df.setting == "exact, pooled"].pivot_table(
        index="epsilon", columns="mechanism", values="l2_exact"
    )
    if {"OptM-G", "DauM-G", "EigM-G"} <= set(pooled.columns):
        ratio = pooled["OptM-G"] / pooled[["DauM-G", "EigM-G"]].min(axis=1)
        worst = ratio.idxmax()
        rows.append(
            {
                "check": "OptM-G E‖Z‖ over min(DauM-G, EigM-G), exact pooled, worst ε of the grid",
                "mechanism": "OptM-G",
                "value": float(pooled.loc[worst, "OptM-G"]),
                "reference": float(pooled.loc[worst, ["DauM-G", "EigM-G"]].min()),
                "ratio": float(ratio.max()),
                "required_ratio": 1.0,
            }
        )
    top = df[(df.rule == "classic")]
    if not top.empty:
        e_max = top.epsilon.max()
        for _, r in top[np.isclose(top.epsilon, e_max)].iterrows():
            rows.append(
                {
                    "check": f"classic rule at ε = {e_max:g}: exact δ of its μ* = ε/c vs nominal",
                    "mechanism": r.mechanism,
                    "value": float(r.delta_target),
                    "reference": float(r.delta),
                    "ratio": float(r.delta_target) / float(r.delta),
                    "required_ratio": np.nan,
                }
            )
    return pd.DataFrame(rows)


def audit_table(repro: PaperReproduction) -> pd.DataFrame:
    """Audit every mechanism of :data:`AUDIT_MECHANISMS` at ``config.audit_epsilons`` (module
    docstring); one row per (mechanism, rule, ε, attack)."""
    repro.progress("Audit on real samples of F")
    cfg = repro.config
    model = repro.model("income", 0.1)
    spec = repro.spec("income", 0.1)
    clean = draw_pair_samples(
        repro.test, spec, repro.query, (0, 1), cfg.audit_samples, repro.rng("audit/samples")
    )
    attacker = ExactModel().fit(repro.aux, spec, repro.query)
    moments = (list(attacker.means_), list(attacker.covariances_))
    rows = []
    for name in AUDIT_MECHANISMS:
        rules = ("classic", "exact") if name.endswith("-G") else ("exact",)
        for rule in rules:
            for eps in cfg.audit_epsilons:
                delta = cfg.delta if name.endswith("-G") else 0.0
                target = EpsDelta(eps, delta)
                cal = repro.calibrate(name, target, model, rule, "fitted", profile=True)
                res = audit(
                    cal,
                    clean,
                    pair=spec.values,  # type: ignore[arg-type]
                    model_moments=moments,
                    random_state=repro.rng(f"audit/{name}/{rule}/{eps:g}"),
                )
                for a in res.attacks:
                    rows.append(
                        {
                            "mechanism": name,
                            "rule": rule if name.endswith("-G") else "pure ε",
                            "epsilon": eps,
                            "delta": delta,
                            "mu": cal.mu,
                            "attack": a.attack,
                            "epsilon_lower_bound": a.epsilon_lower_bound,
                            "tpr": a.tpr,
                            "fpr": a.fpr,
                            "accuracy": a.accuracy,
                            "accuracy_low": a.accuracy_interval[0],
                            "accuracy_high": a.accuracy_interval[1],
                            "accuracy_bound": res.accuracy_bound,
                            "n_test": a.n_test,
                            "refuted": a.epsilon_lower_bound > eps,
                            "accuracy_exceeded": a.accuracy_interval[0] > res.accuracy_bound,
                        }
                    )
    return pd.DataFrame(rows)
