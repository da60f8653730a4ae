"""``ledger show``: a ledger as plain data — its budgets, releases and the cumulative guarantee
of each secret (or, in a schema-2 ledger, each dataset and property), recomputed by the exact
joint accounting and stated at the budget's δ or the releases' own (see
:mod:`distprivacy.ledger`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from distprivacy._json import jsonable
from distprivacy.guarantee import Guarantee
from distprivacy.ledger._budget import (
    budget_refusal,
    budget_text,
    budget_to_dict,
    composer_delta,
    report_delta,
)
from distprivacy.ledger._chain import unbounded_guarantee
from distprivacy.ledger._compose import plan_composer
from distprivacy.ledger._entry import Composer, LedgerEntry
from distprivacy.ledger._verify import secret_composer
from distprivacy.targets import EpsDelta

if TYPE_CHECKING:
    from distprivacy.ledger import Ledger


def show_ledger(ledger: Ledger, compose: Composer | None = None) -> dict[str, Any]:
    """Plain data: ``budget``, ``releases`` (a list) and ``cumulative`` (a list, one per
    dataset and property: ``mu``, ``epsilon`` at the budget's δ, ``delta``,
    ``max_attack_accuracy``, the theorem and the number of releases). The cumulative
    guarantee is recomputed with ``compose`` (default :func:`plan_composer` at the budget's
    δ: the exact profile, so ε(δ) and δ(ε) are the true figures), or, when that cannot be
    done without the data, the one stored at the last release (``recomputed`` false)."""
    if not ledger.read_only:
        return _show_secrets(ledger, compose)
    entries = ledger.releases()
    groups: dict[tuple[str, str], list[LedgerEntry]] = {}
    for e in entries:
        groups.setdefault((e.fingerprint, e.property), []).append(e)
    budget = ledger.budget
    if compose is None:
        compose = plan_composer(at_delta=composer_delta(budget))
    cumulative = []
    for key, group in groups.items():
        last = group[-1]
        d = report_delta(budget, group)
        recomputed = True
        if any(e.unbounded for e in group):
            g = unbounded_guarantee()
        else:
            try:
                g = compose(group)
            except Exception:
                g, recomputed = last.cumulative, False
        assert g is not None
        eps = g.epsilon_at(d)
        cumulative.append(
            {
                "fingerprint": key[0],
                "property": last.property_text or key[1],
                "releases": len(group),
                "mu": g.mu,
                "gdp": g.is_gdp,  # μ is a GDP parameter only then (issue 33)
                "epsilon": eps,
                "delta": g.delta_at(eps) if math.isfinite(eps) else 1.0,
                "at_delta": d,
                "delta_at_budget_epsilon": _delta_at_budget(g, budget),
                "max_attack_accuracy": g.max_attack_accuracy,
                "within_budget": budget_refusal(budget, g) is None,
                "theorem": g.theorem,
                "recomputed": recomputed,
                "exhausted_by_exact_release": any(e.unbounded for e in group),
            }
        )
    return jsonable(
        {
            "ledger": str(ledger.path),
            "budget": budget_to_dict(budget),
            "identity_columns": (None if (ic := ledger.identity_columns) is None else list(ic)),
            "releases": [e.to_dict() for e in entries],
            "cumulative": cumulative,
        }
    )


def _delta_at_budget(g: Guarantee, budget: Any) -> float | None:
    """The cumulative δ at an (ε, δ) budget's ε (None for another budget)."""
    return g.delta_at(budget.epsilon) if isinstance(budget, EpsDelta) else None


_CUMULATIVE_KEYS = (
    "releases", "mu", "gdp", "epsilon", "delta", "at_delta", "delta_at_budget_epsilon",
    "max_attack_accuracy", "within_budget", "theorem", "recomputed",
)  # fmt: skip


def _dataset_dict(v: Any) -> dict[str, Any]:
    return {
        "name": v.name,
        "version": v.version,
        "rows": v.rows,
        "path": v.path,
        "shared": dict(v.shared),
    }


def _show_secrets(ledger: Ledger, compose: Composer | None) -> dict[str, Any]:
    """:func:`show_ledger` of a ledger of secrets: per secret, its budget, datasets, approved
    plans and the cumulative guarantee of all its releases (recomputed)."""
    entries = ledger.releases()
    reg = ledger.registry
    compose = compose or secret_composer(ledger)
    secrets = []
    for s in reg.secrets.values():
        group = [e for e in entries if e.property == s.key]
        g, recomputed = None, True
        if group:
            try:
                g = compose(group)
            except Exception:
                g, recomputed = group[-1].cumulative, False
        item: dict[str, Any] = {
            "secret": s.name,
            "property": s.property,
            "budget": budget_to_dict(s.budget),
            "budget_text": budget_text(s.budget),
            "population": dict(s.population),
            "datasets": [_dataset_dict(v) for v in reg.versions_of(s.name)],
            "plans": [
                {"name": p.name, **dict(p.summary)}
                for p in reg.plans.values()
                if p.secret == s.name
            ],
            "releases": len(group),
            "recomputed": recomputed,
        }
        if g is not None:
            d = report_delta(s.budget, group)
            eps = g.epsilon_at(d)
            item.update(
                {
                    "mu": g.mu,
                    "gdp": g.is_gdp,
                    "epsilon": eps,
                    "delta": g.delta_at(eps) if math.isfinite(eps) else 1.0,
                    "at_delta": d,
                    "delta_at_budget_epsilon": _delta_at_budget(g, s.budget),
                    "max_attack_accuracy": g.max_attack_accuracy,
                    "within_budget": budget_refusal(s.budget, g) is None,
                    "theorem": g.theorem,
                }
            )
        secrets.append(item)
    cumulative = [
        {
            "fingerprint": f"secret:{x['secret']}",
            "secret": x["secret"],
            "property": x["property"],
            "budget": x["budget_text"],
            **{k: x[k] for k in _CUMULATIVE_KEYS},
        }
        for x in secrets
        if "mu" in x
    ]
    return jsonable(
        {
            "ledger": str(ledger.path),
            "schema": ledger.version,
            "cumulative": cumulative,
            "steward": ledger.steward.fingerprint,
            "secrets": secrets,
            "events": [
                {"seq": e.seq, "time": e.time, "kind": e.kind, "subject": e.subject}
                for e in reg.events
            ],
            "releases": [e.to_dict() for e in entries],
        }
    )
