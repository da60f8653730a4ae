"""Words a data steward can sign (issue 23): what is protected, what is released, and the
guarantee as a statement about attackers — before any symbol.

:func:`protected_sentence` says, from a :class:`~distprivacy.spec.ProtectionSpec`, which shares
of the records with the property the release must not reveal ("whether records with
`income==>50K` are 45 % or 55 % of these 100 records"); :func:`guarantee_sentence` turns a
:class:`~distprivacy.guarantee.Guarantee` into the attack it rules out ("no one seeing this
release can guess which of those shares is true with more than 54.3 % accuracy, where 50 % is a
coin flip"), then the figures; :func:`statement` joins them with the released statistics. The
theorem numbers stay in the detailed output, after these words.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = [
    "above_not_significantly",
    "audit_statement",
    "guarantee_sentence",
    "ledger_statement",
    "protected_sentence",
    "released_sentence",
    "statement",
]


def _pct(p: float) -> str:
    x = 100 * float(p)
    return f"{x:.0f} %" if abs(x - round(x)) < 1e-9 else f"{x:.3g} %"


def _join(items: Sequence[str], last: str = "or") -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" {last} " + items[-1]


def protected_sentence(spec: Any) -> str:
    """Which shares of the records with the property the release must not tell apart."""
    values = [float(v) for v in spec.values]
    pairs = {tuple(sorted(p)) for p in spec.pairs}
    every = {(a, b) for i, a in enumerate(values) for b in values[i + 1 :]}
    shares = _join([_pct(v) for v in values])
    what = f"whether records with `{spec.predicate}` are {shares} of these {spec.n} records"
    if pairs and pairs != every and len(values) > 2:
        gap = max(abs(a - b) for a, b in pairs)
        what += f" (any two shares at most {_pct(gap)} apart)"
    return what


def released_sentence(names: Sequence[Any]) -> str:
    """The released statistics, in words: each a :class:`~distprivacy.query.Statistic` or its
    name; every kind says itself (:meth:`~distprivacy.query.Statistic.describe`), a name no
    kind writes stays as it is."""
    from distprivacy.query import Statistic

    words = []
    for n in names:
        stat = n if isinstance(n, Statistic) else Statistic.from_name(str(n))
        words.append(str(n) if stat is None else stat.describe())
    return _join(words, "and")


def guarantee_sentence(g: Any) -> str:
    """The guarantee as the attack it rules out, then (ε, δ) and μ."""
    acc = g.max_attack_accuracy
    if acc is None or not math.isfinite(acc) or acc >= 1:
        attack = "nothing is hidden: an attacker may tell the shares apart for certain"
    else:
        attack = (
            "no one seeing this release can guess which of those shares is true with more "
            f"than {100 * acc:.1f} % accuracy, where 50 % is a coin flip"
        )
    # μ only where the release is μ-GDP (the one rule, Guarantee.figures).
    figures = g.figures() if hasattr(g, "figures") else f"(ε, δ) = ({g.epsilon:.3g}, {g.delta:.3g})"
    basis = (
        "verified for the noise drawn on the model fitted to the data"
        if g.verified
        else "resting on the assumptions listed"
    )
    return f"{attack}; {figures}; {basis}"


def statement(
    spec: Any, names: Sequence[Any], g: Any, *, released: bool, demonstration: bool = False
) -> str:
    """One or two sentences: what is protected, what is (or would be) released (``names``: the
    statistics, or their names), the guarantee.

    ``spec`` None (a user's model file, no protected property in words): the guarantee alone.
    ``demonstration``: the released dataset was drawn at random from the data (no target
    given), and the headline says so.
    """
    what = released_sentence(names)
    head = (
        f"This DEMONSTRATION publishes {what} of a dataset drawn at random from the data (not "
        "a dataset you gave), with added noise."
        if released and demonstration
        else f"This release publishes {what} with added noise."
        if released
        else f"Releasing {what} with this noise"
    )
    verb = "It keeps secret" if released else "would keep secret"
    if spec is None:
        tail = guarantee_sentence(g)
        return f"{head}{'' if released else '.'} {tail[0].upper()}{tail[1:]}."
    return f"{head} {verb} {protected_sentence(spec)}: {guarantee_sentence(g)}."


def audit_statement(spec: Any, results: Sequence[Any], samples: int) -> str:
    """What an audit did and found, in words: the game it played on real data and, per the
    mechanisms' own promises, which held (``results``:
    :class:`~distprivacy.mechanism_audit.AuditResult`)."""
    head = (
        f"This audit draws {samples:,} real datasets of {spec.n} records at each of two shares "
        f"of records with `{spec.predicate}`, releases each with every mechanism, and attacks "
        "the releases to guess the share"
    )
    if not results:
        return head + "."
    refuted = [r.mechanism for r in results if r.refuted]
    best = max(results, key=lambda r: r.best_accuracy)
    found = (
        f"the best attack guessed right {100 * best.best_accuracy:.1f} % of the time "
        f"(against {best.mechanism}), where 50 % is a coin flip"
    )
    if refuted:
        verdict = (
            f"{_join(refuted, 'and')} did worse than promised: the attacks beat "
            "the accuracy its guarantee allows — do not rely on it for these data"
        )
    elif close := [c for r in results if (c := above_not_significantly(r)) is not None]:
        verdict = (
            "no promise was refuted, but "
            + "; ".join(close)
            + (
                "; more real datasets can settle it (an audit can refute a promise, never "
                "prove one)"
            )
        )
    else:
        verdict = (
            f"every mechanism ({len(results)}) kept its promise: no attack came above the "
            "accuracy its guarantee allows (an audit can refute a promise, never prove one)"
        )
    return f"{head}: {found}; {verdict}."


def above_not_significantly(result: Any) -> str | None:
    """When the best attack on a mechanism guessed right more often than its guarantee allows
    but its confidence interval still reaches below the bound (not refuted): that, in words
    that do not contradict the numbers ("above …, though not significantly"); None otherwise
    (``result``: an :class:`~distprivacy.audit.AuditResult`)."""
    bound = getattr(result, "accuracy_bound", None)
    attacks = [
        a for a in getattr(result, "attacks", ()) if bound is not None and a.accuracy > bound
    ]
    if not attacks or getattr(result, "refuted", False):
        return None
    top = max(attacks, key=lambda a: a.accuracy)
    lo, hi = top.accuracy_interval
    return (
        f"{result.mechanism}'s best attack ({top.attack}) guessed right "
        f"{100 * top.accuracy:.1f} % of the time, above the {100 * bound:.1f} % its guarantee "
        f"allows though not significantly (its confidence interval, {100 * lo:.1f} % to "
        f"{100 * hi:.1f} %, reaches below the bound)"
    )


def ledger_statement(budget: Any, releases: int, datasets: int) -> str:
    """A ledger in words: what it has recorded and what its budget promises for each dataset
    (``budget``: a target, :mod:`distprivacy.targets`)."""
    from distprivacy.profiles import gdp_accuracy

    if hasattr(budget, "accuracy"):
        promise = (
            f"all releases of one dataset together let no one guess its protected share with "
            f"more than {100 * budget.accuracy:.1f} % accuracy"
        )
    elif hasattr(budget, "mu"):
        acc = float(gdp_accuracy(budget.mu))
        promise = (
            f"all releases of one dataset together let no one guess its protected share with "
            f"more than {100 * acc:.1f} % accuracy (μ = {budget.mu:.3g})"
        )
    else:
        promise = (
            f"all releases of one dataset together stay within (ε, δ) = "
            f"({budget.epsilon:.3g}, {budget.delta:.3g})"
        )
    what = f"{releases} release{'s' if releases != 1 else ''} of {datasets} dataset"
    what += "s" if datasets != 1 else ""
    return f"This ledger has recorded {what}; its budget promises that {promise}."
