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

__all__ = ["guarantee_sentence", "protected_sentence", "released_sentence", "statement"]


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


def released_sentence(names: Sequence[str]) -> str:
    """The released statistics, in words."""
    words = []
    for n in names:
        kind, _, arg = str(n).partition("(")
        arg = arg.rstrip(")")
        words.append(
            {
                "mean": f"the mean of {arg}",
                "sum": f"the sum of {arg}",
                "count": f"the number of records with {arg}",
                "proportion": f"the share of records with {arg}",
            }.get(kind, str(n))
        )
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
    figures = f"(ε, δ) = ({g.epsilon:.3g}, {g.delta:.3g})"
    if g.mu is not None and math.isfinite(g.mu):
        figures += f", μ = {g.mu:.3g}"
    basis = "verified for the noise used" if g.verified else "resting on stated assumptions"
    return f"{attack}; {figures}, {basis}"


def statement(spec: Any, names: Sequence[str], g: Any, *, released: bool) -> str:
    """One or two sentences: what is protected, what is (or would be) released, the guarantee.

    ``spec`` None (a user's model file, no protected property in words): the guarantee alone.
    """
    what = released_sentence(names)
    head = (
        f"This release publishes {what} with added noise."
        if released
        else f"Releasing {what} with this noise"
    )
    verb = "It keeps secret" if released else "would keep secret"
    if spec is None:
        tail = guarantee_sentence(g)
        return f"{head}{'' if released else '.'} {tail[0].upper()}{tail[1:]}."
    return f"{head} {verb} {protected_sentence(spec)}: {guarantee_sentence(g)}."
