"""The attribute-privacy frameworks (S, Q, Θ) of Zhang, Ohrimenko & Cummings (FAccT 2022).

Both are instantiations of (ε, δ)-Pufferfish privacy (Def. 1; Kifer & Machanavajjhala 2014):
for every θ ∈ Θ and every pair (s_a, s_b) ∈ Q with P(s_a | θ), P(s_b | θ) > 0,
P(M(X) ∈ T | s_a, θ) ≤ e^ε P(M(X) ∈ T | s_b, θ) + δ.

* **Dataset attribute privacy** (Def. 4): the secrets are events s_a^i = 1[g_i(X_i) ∈ U_a^i]
  about a function g_i of the i-th (sensitive) column of the dataset itself; Θ holds the
  distributions over n i.i.d. records.
* **Distributional attribute privacy** (Def. 5): the secrets are events s_a^i = 1[φ_i ∈ Φ_a^i]
  about the parameter φ_i that governs the i-th column.

§3 ("Dataset vs. Distributional privacy"): when g_i is an unbiased estimator of φ_i (the share of
records with a binary attribute estimates its Bernoulli parameter), distributional secrets can be
stated as dataset secrets on the estimator (:meth:`DistributionalAttributeFramework.to_dataset`).
With point secrets on the share of records satisfying a predicate and Θ the single distribution
"draw n records from the population", dataset attribute privacy is the distribution privacy of
Chen & Ohrimenko (2023): θ_p there is the distribution of n records conditioned on round(p·n) of
them satisfying the predicate, which is exactly the conditioning on the secret g = p here (they
draw without replacement from a finite dataset, i.i.d. records differ only in that)
(:meth:`DatasetAttributeFramework.from_protection_spec`, :meth:`~DatasetAttributeFramework.
to_protection_spec`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from distprivacy.exceptions import DistPrivacyError
from distprivacy.resources import check_memory

Kind = Literal["dataset", "distributional"]
KINDS = ("dataset", "distributional")

_INTERVAL = re.compile(r"^\s*([\[(])\s*([^,]+?)\s*,\s*([^,]+?)\s*([\])])\s*$")


def _number(value: Any, name: str) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise DistPrivacyError(f"{name} must be a number, got {value!r}") from None
    if math.isnan(x):
        raise DistPrivacyError(f"{name} must be a number, got NaN")
    return x


# ---------------------------------------------------------------------------------------------
# Value sets U_a / Φ_a
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ValueSet:
    """An interval of values of g_i(X_i) (U_a) or of φ_i (Φ_a); a point when low == high.

    Parameters
    ----------
    low, high : float
        End points, low ≤ high (±inf allowed for half-lines).
    closed_low, closed_high : bool
        Whether each end point belongs to the set (a point is closed at both ends).
    """

    low: float
    high: float
    closed_low: bool = True
    closed_high: bool = True

    def __post_init__(self) -> None:
        lo, hi = _number(self.low, "a secret's lower end"), _number(self.high, "upper end")
        if lo > hi:
            raise DistPrivacyError(f"a secret's interval has low {lo:g} > high {hi:g}")
        if lo == hi and not (self.closed_low and self.closed_high):
            raise DistPrivacyError(f"the interval around {lo:g} is empty; use the point {lo:g}")
        if (math.isinf(lo) and self.closed_low) or (math.isinf(hi) and self.closed_high):
            raise DistPrivacyError("an infinite end point must be open, e.g. (0, inf)")
        object.__setattr__(self, "low", lo)
        object.__setattr__(self, "high", hi)

    @classmethod
    def point(cls, value: float) -> ValueSet:
        """The singleton {value}."""
        v = _number(value, "a secret's value")
        return cls(v, v)

    @classmethod
    def parse(cls, text: str | float) -> ValueSet:
        """``0.5`` (a point), ``(0.25, 0.5)``, ``[0.25, 0.5)``, ``(-inf, 0)`` ..."""
        if isinstance(text, int | float | np.floating | np.integer):
            return cls.point(float(text))
        m = _INTERVAL.match(str(text))
        if m:
            lo = _number(m.group(2), f"the lower end of {text!r}")
            hi = _number(m.group(3), f"the upper end of {text!r}")
            return cls(lo, hi, m.group(1) == "[", m.group(4) == "]")
        try:
            return cls.point(float(str(text)))
        except (TypeError, ValueError, DistPrivacyError):
            raise DistPrivacyError(
                f"cannot read the secret {text!r}; write a value like 0.5 or an interval like "
                "(0.25,0.5) or [0.5,0.75]"
            ) from None

    @property
    def is_point(self) -> bool:
        return self.low == self.high

    @property
    def centre(self) -> float:
        """Midpoint of the set (a point: the point)."""
        return 0.5 * (self.low + self.high)

    def contains(self, x: float | np.ndarray) -> np.ndarray | bool:
        """Vectorised membership test."""
        x = np.asarray(x, dtype=float)
        lo = (x >= self.low) if self.closed_low else (x > self.low)
        hi = (x <= self.high) if self.closed_high else (x < self.high)
        out = lo & hi
        return bool(out) if out.ndim == 0 else out

    def intersects(self, low: float, high: float) -> bool:
        """Whether the set meets the closed interval [low, high]."""
        if self.high < low or self.low > high:
            return False
        if self.high == low:
            return self.closed_high
        if self.low == high:
            return self.closed_low
        return True

    def sup_distance(self, other: ValueSet) -> float:
        """sup over a in self, b in other of |a − b| (the paper's d(U) = max |a − b|)."""
        return max(abs(other.high - self.low), abs(self.high - other.low))

    def centre_distance(self, other: ValueSet) -> float:
        """|centre(self) − centre(other)| (the paper's arithmetic in §4.2, see docs)."""
        return abs(self.centre - other.centre)

    def __str__(self) -> str:
        if self.is_point:
            return f"{self.low:g}"
        return (
            f"{'[' if self.closed_low else '('}{self.low:g}, {self.high:g}"
            f"{']' if self.closed_high else ')'}"
        )


# ---------------------------------------------------------------------------------------------
# Secrets and pairs
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Secret:
    """A secret s_a^i: g_i(X_i) ∈ U_a (dataset, Def. 4) or φ_i ∈ Φ_a (distributional, Def. 5).

    Parameters
    ----------
    attribute : str
        The sensitive attribute i ∈ C.
    values : ValueSet
        U_a or Φ_a.
    kind : {"dataset", "distributional"}
    function : str
        What g_i (or φ_i) is, e.g. ``"share of records with gender == female"``.
    """

    attribute: str
    values: ValueSet
    kind: Kind = "dataset"
    function: str = "mean"

    def __post_init__(self) -> None:
        if not isinstance(self.attribute, str) or not self.attribute:
            raise DistPrivacyError("a secret needs the name of its sensitive attribute")
        if self.kind not in KINDS:
            raise DistPrivacyError(f"secret kind must be one of {KINDS}, got {self.kind!r}")
        if not isinstance(self.values, ValueSet):
            object.__setattr__(self, "values", ValueSet.parse(self.values))

    def __str__(self) -> str:
        what = f"g_{self.attribute}" if self.kind == "dataset" else f"φ_{self.attribute}"
        op = "=" if self.values.is_point else "∈"
        return f"{what} {op} {self.values}"


@dataclass(frozen=True)
class SecretPair:
    """A discriminative pair (s_a^i, s_b^i) ∈ Q: both on the same attribute, different sets."""

    first: Secret
    second: Secret

    def __post_init__(self) -> None:
        if self.first.attribute != self.second.attribute:
            raise DistPrivacyError(
                f"a secret pair must be about one attribute, got {self.first.attribute!r} and "
                f"{self.second.attribute!r} (Def. 4: Q ⊆ pairs on the same i ∈ C)"
            )
        if self.first.kind != self.second.kind:
            raise DistPrivacyError("a secret pair mixes a dataset and a distributional secret")
        if self.first.values == self.second.values:
            raise DistPrivacyError(f"the secret pair joins {self.first} to itself")

    @property
    def attribute(self) -> str:
        return self.first.attribute

    def distance(self, reading: str = "sup") -> float:
        """|a − b| between the two secrets: ``"sup"`` = sup over the sets (the literal d(U)),
        ``"centres"`` = between the sets' midpoints (the paper's §4.2 arithmetic)."""
        if reading == "sup":
            return self.first.values.sup_distance(self.second.values)
        if reading == "centres":
            return self.first.values.centre_distance(self.second.values)
        raise DistPrivacyError(f"unknown pair-distance reading {reading!r}; use sup or centres")

    def __str__(self) -> str:
        return f"({self.first}, {self.second})"


def pairs_from_sets(
    attribute: str,
    sets: Sequence[str | float | ValueSet],
    *,
    kind: Kind = "dataset",
    function: str = "mean",
    pairs: Iterable[tuple[int, int]] | None = None,
) -> tuple[SecretPair, ...]:
    """Secret pairs on one attribute: all pairs of ``sets`` (or the given index pairs)."""
    vs = [s if isinstance(s, ValueSet) else ValueSet.parse(s) for s in sets]
    if len(vs) < 2:
        raise DistPrivacyError("give at least two secrets, e.g. (0.25,0.5) and (0.5,0.75)")
    secrets = [Secret(attribute, v, kind, function) for v in vs]
    idx = (
        [(i, j) for i in range(len(vs)) for j in range(i + 1, len(vs))]
        if pairs is None
        else list(pairs)
    )
    for i, j in idx:
        if not (0 <= i < len(vs) and 0 <= j < len(vs)):
            raise DistPrivacyError(f"pair index ({i}, {j}) is out of range for {len(vs)} secrets")
    return tuple(SecretPair(secrets[i], secrets[j]) for i, j in idx)


# ---------------------------------------------------------------------------------------------
# Attributes and Θ
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AttributeDomain:
    """What the values of a sensitive attribute's g_i and φ_i can be under Θ.

    Parameters
    ----------
    name : str
    binary : bool
        A 0/1 column (g_i = share of ones, support {0, 1/n, ..., 1}; φ_i = its Bernoulli p).
        Otherwise a continuous column (g_i = its mean, any real value has positive density).
    parameter_range : (float, float)
        The closed hull of the values φ_i takes over Θ (Bernoulli p, or the column's mean).
    """

    name: str
    binary: bool = False
    parameter_range: tuple[float, float] = (-math.inf, math.inf)

    def __post_init__(self) -> None:
        lo, hi = (_number(v, f"{self.name}'s parameter range") for v in self.parameter_range)
        if lo > hi:
            raise DistPrivacyError(f"{self.name}'s parameter range has low {lo:g} > high {hi:g}")
        if self.binary and not (0.0 <= lo and hi <= 1.0):
            raise DistPrivacyError(
                f"{self.name} is binary: its Bernoulli parameter range must lie in [0, 1]"
            )
        object.__setattr__(self, "parameter_range", (lo, hi))

    def producible_values(self, secret: Secret, n: int) -> np.ndarray | None:
        """The values of g_i in the secret's set that some θ ∈ Θ gives positive probability,
        for a binary column's share (multiples of 1/n); None when the set is a continuum."""
        if secret.kind == "distributional" or not self.binary:
            return None
        lo, hi = self.parameter_range
        # shares (int64, then float64), the masks and the selection: about 40 bytes per share
        check_memory(
            40.0 * (n + 1), f"the {n + 1} possible shares k/n of a binary column (n = {n})"
        )
        shares = np.arange(n + 1) / n
        if hi == 0.0:  # every θ has p = 0: only the share 0 can occur
            possible = shares == 0.0
        elif lo == 1.0:  # every θ has p = 1
            possible = shares == 1.0
        else:  # some p ∈ (0, 1) gives every share k/n positive probability
            possible = np.ones(n + 1, dtype=bool)
        return shares[secret.values.contains(shares) & possible]

    def can_produce(self, secret: Secret, n: int) -> bool:
        """Whether some θ ∈ Θ gives the secret positive probability (or density, for a point
        of a continuous mean)."""
        lo, hi = self.parameter_range
        if secret.kind == "distributional":
            return secret.values.intersects(lo, hi)
        values = self.producible_values(secret, n)
        return True if values is None else bool(values.size)


@dataclass(frozen=True)
class AttributeFramework:
    """Common part of the two frameworks: attributes, sensitive set C, pairs Q, size n.

    Validation (at construction): every pair's attribute is in C, every secret has the
    framework's kind, and every secret can be produced by some θ ∈ Θ (Def. 1 only constrains
    pairs with P(s | θ) ≠ 0; a secret no θ can produce is almost surely a mistake).
    """

    pairs: tuple[SecretPair, ...]
    domains: tuple[AttributeDomain, ...]
    n: int
    kind: Kind = field(default="dataset")

    def __post_init__(self) -> None:
        pairs = tuple(self.pairs)
        if not pairs:
            raise DistPrivacyError("the set of secret pairs Q is empty; give at least one pair")
        if isinstance(self.n, bool) or not isinstance(self.n, int | np.integer) or self.n < 1:
            raise DistPrivacyError(f"the dataset size n must be a positive integer, got {self.n!r}")
        doms = {d.name: d for d in self.domains}
        for p in pairs:
            if p.first.kind != self.kind:
                raise DistPrivacyError(
                    f"secret {p.first} is {p.first.kind} but the framework is {self.kind}"
                )
            if p.attribute not in doms:
                raise DistPrivacyError(
                    f"secret pair {p} is about {p.attribute!r}, which is not a sensitive "
                    f"attribute ({', '.join(doms) or 'none declared'})"
                )
            for s in (p.first, p.second):
                if not doms[s.attribute].can_produce(s, int(self.n)):
                    raise DistPrivacyError(
                        f"no distribution in Θ can produce the secret {s} "
                        f"({_support_text(doms[s.attribute], s.kind, int(self.n))}); "
                        "fix the secret or widen Θ"
                    )
        object.__setattr__(self, "pairs", pairs)
        object.__setattr__(self, "n", int(self.n))

    @property
    def sensitive(self) -> tuple[str, ...]:
        """C, the sensitive attributes that appear in Q (in order of first appearance)."""
        return tuple(dict.fromkeys(p.attribute for p in self.pairs))

    @property
    def secrets(self) -> tuple[Secret, ...]:
        """S, the secrets appearing in Q."""
        return tuple(dict.fromkeys(s for p in self.pairs for s in (p.first, p.second)))

    def pairs_for(self, attribute: str) -> tuple[SecretPair, ...]:
        return tuple(p for p in self.pairs if p.attribute == attribute)

    def diameter(self, attribute: str, reading: str = "sup") -> float:
        """max over Q's pairs on ``attribute`` of |a − b| (d(U) in §4.2): ``"sup"`` over the
        values each secret can take (the multiples of 1/n in it, for a binary share), or
        ``"centres"``, the distance of the sets' midpoints (the paper's arithmetic)."""
        ps = self.pairs_for(attribute)
        if not ps:
            raise DistPrivacyError(f"no secret pair is about {attribute!r}")
        dom = {d.name: d for d in self.domains}[attribute]
        d = max(self._pair_distance(p, dom, reading) for p in ps)
        if not math.isfinite(d):
            raise DistPrivacyError(
                f"the secrets on {attribute!r} are unbounded, so d(U) is infinite and no noise "
                "suffices; bound the secret intervals"
            )
        return d

    def _pair_distance(self, pair: SecretPair, dom: AttributeDomain, reading: str) -> float:
        """|a − b| of one pair; with ``"sup"`` on a binary share, over the shares k/n each set
        can actually take (Eq. 1 only involves secrets of positive probability)."""
        if reading != "sup":
            return pair.distance(reading)
        a = dom.producible_values(pair.first, self.n)
        b = dom.producible_values(pair.second, self.n)
        if a is None or b is None:
            return pair.distance(reading)
        return float(max(abs(a.max() - b.min()), abs(b.max() - a.min())))

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "n": self.n,
            "sensitive": list(self.sensitive),
            "pairs": [[str(p.first), str(p.second)] for p in self.pairs],
        }


def _support_text(dom: AttributeDomain, kind: str, n: int) -> str:
    lo, hi = dom.parameter_range
    if kind == "distributional":
        return f"φ_{dom.name} ranges over [{lo:g}, {hi:g}] in Θ"
    return f"g_{dom.name} is a share of {n} records, a multiple of 1/{n} in [0, 1]"


@dataclass(frozen=True)
class DatasetAttributeFramework(AttributeFramework):
    """(S, Q, Θ) of dataset attribute privacy (Zhang et al. 2022, Def. 4)."""

    kind: Kind = field(default="dataset")

    @classmethod
    def from_protection_spec(cls, spec: Any) -> DatasetAttributeFramework:
        """The distribution-privacy spec (predicate, n, values p, pairs Ψ) as point secrets on
        g = share of the n records satisfying the predicate (the two coincide, module doc)."""
        attr = str(spec.predicate)
        dom = AttributeDomain(attr, binary=True, parameter_range=(0.0, 1.0))
        shares = [k / spec.n for k in spec.counts]
        secrets = [
            Secret(attr, ValueSet.point(s), "dataset", f"share of records with {attr}")
            for s in shares
        ]
        seen: set[frozenset[int]] = set()
        pairs = []
        for i, j in spec.pair_indices:
            key = frozenset((i, j))
            if key not in seen:
                seen.add(key)
                pairs.append(SecretPair(secrets[i], secrets[j]))
        return cls(pairs=tuple(pairs), domains=(dom,), n=spec.n)

    def to_protection_spec(self) -> Any:
        """The equivalent :class:`distprivacy.spec.ProtectionSpec`, when there is one: exactly
        one sensitive binary attribute named by a predicate (``income==>50K``), point secrets
        on the share of records satisfying it."""
        from distprivacy.spec import ProtectionSpec

        if len(self.sensitive) != 1:
            raise DistPrivacyError(
                "only one sensitive attribute translates to a distribution-privacy spec"
            )
        attr = self.sensitive[0]
        dom = {d.name: d for d in self.domains}[attr]
        if not dom.binary:
            raise DistPrivacyError(
                f"{attr!r} is not binary: distribution privacy protects the share of records "
                "satisfying a predicate"
            )
        if any(not s.values.is_point for s in self.secrets):
            raise DistPrivacyError(
                "interval secrets have no distribution-privacy counterpart (θ_p fixes the "
                "share p exactly); use point secrets"
            )
        values = tuple(dict.fromkeys(s.values.low for s in self.secrets))
        pairs = [(p.first.values.low, p.second.values.low) for p in self.pairs]
        return ProtectionSpec(attr, self.n, values, pairs=pairs)


@dataclass(frozen=True)
class DistributionalAttributeFramework(AttributeFramework):
    """(S, Q, Θ) of distributional attribute privacy (Zhang et al. 2022, Def. 5)."""

    kind: Kind = field(default="distributional")

    def to_dataset(self) -> DatasetAttributeFramework:
        """§3: state the secrets on an unbiased estimator of φ_i instead — the share of ones of
        a binary attribute estimates its Bernoulli p (the column mean estimates a Gaussian
        mean). A dataset attribute private mechanism for the result is then distributional
        attribute private for these secrets (the paper's remark in §3)."""
        pairs = []
        for p in self.pairs:
            a, b = (
                Secret(s.attribute, s.values, "dataset", f"unbiased estimator of φ_{s.attribute}")
                for s in (p.first, p.second)
            )
            pairs.append(SecretPair(a, b))
        return DatasetAttributeFramework(pairs=tuple(pairs), domains=self.domains, n=self.n)
