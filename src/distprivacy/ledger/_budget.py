"""A secret's budget: a privacy target (:mod:`distprivacy.targets`), kept in the steward's
signed events as plain data, and checked by the one :func:`~distprivacy.targets.met_by`.

* ``EpsDelta(ε, δ)``: the cumulative guarantee's δ at ε is at most δ.
* ``MaxAttackAccuracy(a)``: the cumulative attack bound (exact, unequal covariances
  included) is at most a.
* ``GDP(μ)``: the cumulative guarantee is μ-GDP — its whole privacy profile is the GDP curve
  of its μ — with μ at most the budget's. A release whose fitted Gaussians have unequal
  covariances never is: the privacy loss of N(m₀, Σ₀) against N(m₁, Σ₁) with Σ₀ ≠ Σ₁ has a
  quadratic term, in one of the two orders of the pair a positive-definite one in some
  direction, so the loss has an exponential (chi-square-like) upper tail, P(L > t) ≥ c·e^{−t/λ},
  and δ(ε) ≥ (1 − 1/e)·P(L > ε + 1) decays like e^{−ε/λ}; the GDP curve decays like
  Φ(−ε/μ + μ/2) ≤ e^{−(ε/μ − μ/2)²/2}, faster than any exponential. Whatever μ, the exact
  profile crosses above GDP(μ) at some ε (on Adult, EigM-G labelled μ = 0.3607 already has
  δ(0.944) = 0.00147 against GDP(0.37)'s 0.001, and 24× it at ε = 2). A point guarantee with
  δ > 0 keeps δ(ε′) = δ for ε′ ≥ ε, above every GDP curve too. So a μ budget refuses every
  release whose guarantee is not on the GDP curve (:data:`NOT_GDP`: the steward sets an
  (ε, δ) budget or an attack-accuracy budget instead), and checks μ only for those that are.

The ledger states a cumulative ε at the budget's own δ, or — under a μ or accuracy budget —
at the smallest δ any of the composed releases was calibrated for (:func:`report_delta`),
never at a constant.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from distprivacy.ledger._entry import LedgerEntry, LedgerError
from distprivacy.targets import GDP, EpsDelta, MaxAttackAccuracy, Target, met_by

__all__ = [
    "EXACT_REFUSED",
    "NOT_GDP",
    "budget_from_dict",
    "budget_refusal",
    "budget_text",
    "budget_to_dict",
    "check_budget",
    "composer_delta",
    "release_delta",
    "report_delta",
]

#: Why a ledger refuses an exact release (issue 30): its μ is ∞, above every finite budget, so
#: recording one would spend the budget and reveal the true statistics all the same.
EXACT_REFUSED = (
    "`allow_exact=True` refused: an exact release exceeds every budget; a ledger does not "
    "record one: publish outside the ledger or add noise"
)


#: Why a μ budget cannot hold a guarantee that is not μ-GDP (module docstring).
NOT_GDP = (
    "is not μ-GDP: its fitted Gaussians have unequal covariances (or it holds at one (ε, δ) "
    "point), so its exact δ(ε) rises above every GDP curve at large ε; give the secret an "
    "(ε, δ) budget (`budget=EpsDelta(E, D)`) or an attack-accuracy budget "
    "(`budget=MaxAttackAccuracy(A)`)"
)


def check_budget(budget: Any) -> Target:
    """``budget`` if it is a target (``GDP``, ``EpsDelta`` with δ > 0 and finite ε, or
    ``MaxAttackAccuracy``); one line otherwise."""
    if not isinstance(budget, GDP | EpsDelta | MaxAttackAccuracy):
        raise LedgerError(
            "a budget is GDP(mu), EpsDelta(epsilon, delta) or MaxAttackAccuracy(a) from "
            f"distprivacy.targets, got {type(budget).__name__}"
        )
    if isinstance(budget, EpsDelta) and not (math.isfinite(budget.epsilon) and budget.delta > 0):
        raise LedgerError("an (ε, δ) budget needs a finite ε and δ > 0")
    if isinstance(budget, GDP) and not math.isfinite(budget.mu):
        raise LedgerError("the budget μ must be finite")
    return budget


def budget_to_dict(budget: Target) -> dict[str, Any]:
    """Plain data, as the steward's events hold it.

    Parameters
    ----------
    budget : GDP, EpsDelta or MaxAttackAccuracy
        The budget (checked as :func:`check_budget` does).

    Returns
    -------
    dict
        ``kind`` (``mu``, ``epsilon-delta`` or ``max-attack-accuracy``; the first two as ledgers
        have always written them) and the budget's figures.
    """
    b = check_budget(budget)
    if isinstance(b, GDP):
        return {"kind": "mu", "mu": b.mu, "epsilon": None, "delta": None}
    if isinstance(b, EpsDelta):
        return {"kind": "epsilon-delta", "mu": None, "epsilon": b.epsilon, "delta": b.delta}
    return {"kind": "max-attack-accuracy", "accuracy": b.accuracy}


def budget_from_dict(raw: Any) -> Target:
    """Inverse of :func:`budget_to_dict` (checked as a new budget is).

    Parameters
    ----------
    raw : mapping
        What :func:`budget_to_dict` wrote.

    Returns
    -------
    GDP, EpsDelta or MaxAttackAccuracy
        The budget.

    Raises
    ------
    LedgerError
        Not a budget this library writes, in one line.
    """
    kind = raw.get("kind") if isinstance(raw, Mapping) else None
    try:
        if kind == "mu":
            return check_budget(GDP(raw["mu"]))
        if kind == "epsilon-delta":
            return check_budget(EpsDelta(raw["epsilon"], raw["delta"]))
        if kind == "max-attack-accuracy":
            return check_budget(MaxAttackAccuracy(raw["accuracy"]))
    except (KeyError, TypeError, ValueError) as e:
        raise LedgerError(f"a malformed budget ({type(e).__name__}: {e})") from None
    raise LedgerError(f"a budget is a μ, (ε, δ) or accuracy budget, got {raw!r:.80}")


def budget_text(budget: Target) -> str:
    """The budget in a few words (``μ = 0.3365-GDP``, ``(ε, δ) = (1, 0.001)``, ``no attacker
    above 55.0% accuracy``)."""
    return check_budget(budget).describe()


def budget_refusal(budget: Target, g: Any) -> str | None:
    """None if the cumulative guarantee ``g`` meets ``budget`` (:func:`met_by`), else why not,
    naming the budget and the figure."""
    if met_by(budget, g):
        return None
    text = budget_text(budget)
    if isinstance(budget, GDP):
        if getattr(g, "curve", None) != "gdp" or g.mu is None:
            return f"the cumulative guarantee {NOT_GDP}"
        if not g.mu <= budget.mu * (1 + 1e-9):
            return f"cumulative μ = {g.mu:.4g} would exceed the budget {text}"
        cap = budget.max_attack_accuracy.accuracy
        return (
            f"cumulative attack bound = {g.max_attack_accuracy:.2%} would exceed the budget "
            f"{text} (Φ(μ/2) = {cap:.2%})"
        )
    if isinstance(budget, EpsDelta):
        d = g.delta_at(budget.epsilon)
        eps = g.epsilon_at(budget.delta)
        return (
            f"cumulative δ = {d:.3g} at ε = {budget.epsilon:.4g} (ε = {eps:.4g} at δ = "
            f"{budget.delta:.3g}) would exceed the budget {text}"
        )
    return f"cumulative attack bound {g.max_attack_accuracy:.2%} would exceed the budget ({text})"


def _target_delta(e: LedgerEntry) -> float | None:
    """The δ a release was calibrated for (its plan's target δ), else the δ it achieved."""
    cal = (e.plan or {}).get("calibration") if isinstance(e.plan, Mapping) else None
    d = cal.get("delta") if isinstance(cal, Mapping) else None
    if not isinstance(d, int | float) or isinstance(d, bool) or not 0 < d < 1:
        d = e.guarantee.delta
    return float(d) if 0 < d < 1 else None


def report_delta(budget: Target, entries: Sequence[LedgerEntry]) -> float:
    """The δ at which the cumulative ε of ``entries`` is stated: an (ε, δ) budget's δ; under
    a μ or accuracy budget :func:`release_delta`."""
    fixed = composer_delta(budget)
    return fixed if fixed is not None else release_delta(entries)


def composer_delta(budget: Target) -> float | None:
    """The ``at_delta`` of :func:`~distprivacy.ledger._compose.plan_composer` under
    ``budget``: an (ε, δ) budget's δ, else None (the releases' own)."""
    return float(budget.delta) if isinstance(budget, EpsDelta) else None


def release_delta(entries: Sequence[LedgerEntry]) -> float:
    """The smallest δ any of ``entries`` was calibrated for (their plans' target δ, else the
    δ they achieved). One line when none has a δ in (0, 1) (nothing to state ε at: give an
    (ε, δ) budget)."""
    ds = [d for d in (_target_delta(e) for e in entries) if d is not None]
    if not ds:
        raise LedgerError(
            "none of these releases states a δ in (0, 1): their cumulative ε has no δ to be "
            "stated at; give the secret an (ε, δ) budget"
        )
    return min(ds)
