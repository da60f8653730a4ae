"""The Attribute-Private Markov Quilt Mechanism (Zhang, Ohrimenko & Cummings, FAccT 2022,
Alg. 2): the search over Markov quilts per secret and the release (the algorithm is described
in :mod:`distprivacy.attribute.markov_quilt`).

Part of :mod:`distprivacy.attribute.markov_quilt` (every name is importable from there).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from distprivacy.attribute._quilt_calibration import (
    THEOREM,
    QuiltCalibration,
    QuiltCandidate,
    SecretCalibration,
    quilt_warnings,
)
from distprivacy.attribute._quilt_graph import (
    Influence,
    MarkovQuilt,
    as_network_class,
    check_secret,
    markov_quilts,
    max_influence,
    quilt_for,
    trivial_quilt,
)
from distprivacy.attribute._quilt_queries import ColumnQuery, parse_column_query
from distprivacy.attribute.bayesnet import DiscreteBayesNet
from distprivacy.checks import check_epsilon
from distprivacy.exceptions import DistPrivacyError
from distprivacy.guarantee import Release
from distprivacy.randomness import RandomState


def _fmt(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.6g}"


class AttributeQuiltMechanism:
    """The Attribute-Private Markov Quilt Mechanism (Zhang, Ohrimenko & Cummings 2022, Alg. 2).

    Theorem 3: (ε, 0)-distributional attribute privacy for the framework whose secrets are the
    values of φ_i, i ∈ C (all pairs of ``secret_values``, default all of Φ_i) and whose Θ is
    ``networks``. Theorem 4: accuracy b·ln(1/β) (:meth:`QuiltCalibration.accuracy`).

    For each sensitive attribute i, b_i starts at the whole-network bound Δ_A F / ε (the
    trivial quilt) and is lowered to Δ_{A∩N}F / (ε − e_Θ(X_Q | X_i)) for every Markov quilt with
    e_Θ(X_Q | X_i) < ε; the release adds Lap(max_i b_i).

    Parameters
    ----------
    networks : DiscreteBayesNet or sequence of them
        The class Θ of Bayesian networks over the attributes' parameters.
    query : ColumnQuery or str
        F (a string is parsed by :func:`parse_column_query`); its attributes must be nodes.
    secrets : str or sequence of str
        C, the sensitive attributes.
    epsilon : float
        ε > 0.
    quilts : mapping secret → sequence of node names, optional
        Pin the quilt X_Q of a secret (as the paper's Example 1 does) instead of searching; a
        pinned quilt with max-influence ≥ ε is an error.
    secret_values : mapping secret → sequence, optional
        Values of φ_i whose pairs are protected (default every value).
    fallback : bool, default True
        When no Markov quilt (other than the trivial one) has max-influence below ε, use the
        whole-network bound Δ_A F / ε as Algorithm 2 does and say so in the calibration's
        warnings; False refuses with an error instead.

    Attributes
    ----------
    calibration_ : QuiltCalibration
        Set by :meth:`calibrate`.
    """

    #: The shorthand of its calibrations (``QuiltCalibration.mechanism``).
    name: ClassVar[str] = QuiltCalibration.mechanism
    theorem: ClassVar[str] = THEOREM

    def __init__(
        self,
        networks: DiscreteBayesNet | Sequence[DiscreteBayesNet],
        *,
        query: ColumnQuery | str,
        secrets: str | Sequence[str],
        epsilon: float,
        quilts: Mapping[str, Sequence[str]] | None = None,
        secret_values: Mapping[str, Sequence[Any]] | None = None,
        fallback: bool = True,
    ) -> None:
        self.networks = as_network_class(networks)
        net = self.networks[0]
        self.query = parse_column_query(query) if isinstance(query, str) else query
        if not isinstance(self.query, ColumnQuery):
            raise DistPrivacyError("query must be a ColumnQuery or a query string")
        for a in self.query.attributes:
            if a not in net.names:
                raise DistPrivacyError(
                    f"the query reads {a!r}, which is not an attribute of the network "
                    f"(attributes: {', '.join(net.names)})"
                )
        secrets = (secrets,) if isinstance(secrets, str) else tuple(secrets)
        if not secrets:
            raise DistPrivacyError("give at least one sensitive attribute (secret)")
        if len(set(secrets)) != len(secrets):
            raise DistPrivacyError(f"a secret attribute is repeated: {list(secrets)}")
        self.secrets = net.check_nodes(secrets, "secret attribute")
        self.epsilon = check_epsilon(epsilon)
        self.quilts = {str(k): tuple(v) for k, v in (quilts or {}).items()}
        for s in self.quilts:
            if s not in self.secrets:
                raise DistPrivacyError(
                    f"a quilt is pinned for {s!r}, which is not a secret "
                    f"({', '.join(self.secrets)})"
                )
        self.secret_values = {str(k): tuple(v) for k, v in (secret_values or {}).items()}
        for s in self.secret_values:
            if s not in self.secrets:
                raise DistPrivacyError(f"secret values given for {s!r}, which is not a secret")
        for s in self.secrets:
            check_secret(self.networks, s, self.secret_values.get(s))
        self.fallback = bool(fallback)

    # -------------------------------------------------------------- calibration
    def _influence(self, secret: str, nodes: tuple[str, ...]) -> Influence:
        """e_Θ(X_nodes | X_secret), memoised per mechanism."""
        key = (secret, frozenset(nodes))
        cache = self.__dict__.setdefault("_influence_cache", {})
        if key not in cache:
            cache[key] = max_influence(
                self.networks, secret, nodes, secret_values=self.secret_values.get(secret)
            )
        return cache[key]

    def _candidate(self, quilt: MarkovQuilt, n: int) -> QuiltCandidate:
        A = set(self.query.attributes)
        sens = self.query.column_sensitivity(A & set(quilt.nearby), n)
        if quilt.trivial:
            return QuiltCandidate(
                quilt, "trivial", sens, Influence(0.0), sens / self.epsilon, "Δ_A F / ε"
            )
        infl = self._influence(quilt.secret, quilt.quilt)
        if infl.value >= self.epsilon:
            return QuiltCandidate(
                quilt, "infeasible", sens, infl, None, f"e = {_fmt(infl.value)} ≥ ε"
            )
        scale = 0.0 if sens == 0 else sens / (self.epsilon - infl.value)
        return QuiltCandidate(quilt, "feasible", sens, infl, scale, "Δ_{A∩N}F / (ε − e)")

    def _calibrate_secret(self, secret: str, n: int) -> SecretCalibration:
        net = self.networks[0]
        trivial = self._candidate(trivial_quilt(net, secret), n)
        if secret in self.quilts:
            quilt = quilt_for(net, secret, self.quilts[secret])
            cand = self._candidate(quilt, n)
            if cand.status != "feasible" and not quilt.trivial:
                raise DistPrivacyError(
                    f"the pinned quilt {quilt.label()} of {secret!r} has max-influence "
                    f"{_fmt(cand.max_influence.value)} ≥ ε = {self.epsilon:g}; "  # type: ignore[union-attr]
                    "raise ε above it or pin another quilt"
                )
            if quilt.trivial:
                cand = trivial
            return SecretCalibration(
                secret,
                cand,
                (cand,) if quilt.trivial else (cand, trivial),
                False,
                True,
                f"quilt pinned by the caller: {quilt.label()}",
            )
        candidates: list[QuiltCandidate] = [trivial]
        infeasible: list[set[str]] = []
        for quilt in markov_quilts(net, secret, queried=self.query.attributes)[1:]:
            q = set(quilt.quilt)
            blocker = next((b for b in infeasible if b <= q), None)
            if blocker is not None:
                sens = self.query.column_sensitivity(
                    set(self.query.attributes) & set(quilt.nearby), n
                )
                note = "contains infeasible {" + ", ".join(sorted(blocker)) + "}: e ≥ ε"
                candidates.append(QuiltCandidate(quilt, "pruned", sens, None, None, note))
                continue
            cand = self._candidate(quilt, n)
            if cand.status == "infeasible":
                infeasible.append(q)
            candidates.append(cand)
        feasible = [c for c in candidates if c.status == "feasible"]
        # G_i (the quilts with e < ε) is empty exactly when X_Q = ∅ separates nothing and every
        # single node v has e_Θ(X_v | X_i) ≥ ε: each non-empty X_Q holds some v, and the
        # max-influence only grows with X_Q (a ratio of sums is at most the largest ratio). The
        # candidates pruned as dominated are thus still accounted for.
        singles = {v: self._influence(secret, (v,)) for v in net.names if v != secret}
        free = any(not c.quilt.quilt and c.quilt.remote for c in candidates)
        if not free and all(e.value >= self.epsilon for e in singles.values()):
            if singles:
                low = min(singles, key=lambda v: singles[v].value)
                why = (
                    f"no Markov quilt of {secret!r} has max-influence below ε = {self.epsilon:g} "
                    f"(smallest {_fmt(singles[low].value)} for Q={{{low}}})"
                )
            else:
                why = f"{secret!r} has no Markov quilt other than the whole network"
            if not self.fallback:
                raise DistPrivacyError(
                    why + "; raise ε or allow the whole-network bound Δ_A F / ε (fallback)"
                )
            return SecretCalibration(
                secret,
                trivial,
                tuple(candidates),
                True,
                False,
                why + "; fell back to the whole-network bound Δ_A F / ε",
            )
        best = min(
            [trivial, *feasible],
            key=lambda c: (c.scale, c.max_influence.value, len(c.quilt.quilt)),  # type: ignore[union-attr]
        )
        if best.quilt.trivial:
            reason = (
                "the whole-network bound Δ_A F / ε is the smallest b_i "
                "(Markov quilts with e < ε exist but give no smaller scale)"
            )
        else:
            reason = f"smallest Δ_{{A∩N}}F / (ε − e) among {len(feasible)} feasible quilts"
        return SecretCalibration(secret, best, tuple(candidates), False, False, reason)

    def calibrate(self, n_records: int) -> QuiltCalibration:
        """Algorithm 2 without the noise: every b_i, the quilts behind them, the Laplace scale.

        Parameters
        ----------
        n_records : int
            n, the number of records of the dataset to be released (public; Δ depends on it).
        """
        if isinstance(n_records, bool) or not isinstance(n_records, int | np.integer):
            raise DistPrivacyError(f"n_records must be a positive integer, got {n_records!r}")
        n = int(n_records)
        if n < 1:
            raise DistPrivacyError(f"n_records must be a positive integer, got {n_records}")
        per = tuple(self._calibrate_secret(s, n) for s in self.secrets)
        binding = max(per, key=lambda s: s.scale)
        self.calibration_ = QuiltCalibration(
            epsilon=self.epsilon,
            n_records=n,
            query=self.query.name,
            attributes=self.query.attributes,
            secrets=per,
            scale=float(binding.scale),
            binding_secret=binding.secret,
            warnings=quilt_warnings(per),
        )
        return self.calibration_

    # -------------------------------------------------------------- release
    def release(
        self,
        data: pd.DataFrame,
        *,
        random_state: RandomState = None,
        allow_exact: bool = False,
        size: int | None = None,
    ) -> Release:
        """M(X) = F(X) + Z, Z ~ Lap(scale) from :meth:`calibrate` (calibrated for len(data)).

        Parameters
        ----------
        data : DataFrame
            The dataset X (columns named by the network's attributes).
        random_state : None, int, Generator or SecureGenerator
            None (default) draws from OpenDP's secure sampler; a seed or generator is
            reproducible (experiments only).
        allow_exact : bool
            Release even when the scale is 0 (F(X) as it is). Off by default.
        size : int, optional
            Draw this many independent releases of the same data (``values`` of shape
            (size,)), e.g. to test the noise distribution.

        Returns
        -------
        Release
            ``.value`` is the released number, ``.calibration`` the :class:`QuiltCalibration`.

        Raises
        ------
        ExactReleaseError
            When the scale is 0 and ``allow_exact`` is False.
        """
        if not isinstance(data, pd.DataFrame):
            raise DistPrivacyError("data must be a pandas DataFrame")
        n = len(data)
        if n == 0:
            raise DistPrivacyError("cannot release a query of an empty dataset")
        cal = getattr(self, "calibration_", None)
        if cal is None:
            cal = self.calibrate(n)
        elif cal.n_records != n:
            raise DistPrivacyError(
                f"calibrated for n = {cal.n_records} records but the data has {n}; "
                f"call calibrate(n_records={n}) first"
            )
        value = self.query.evaluate(data)
        return cal.release(value, random_state, allow_exact=allow_exact, size=size)
