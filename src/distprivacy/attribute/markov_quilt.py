"""The Attribute-Private Markov Quilt Mechanism (Zhang, Ohrimenko & Cummings, FAccT 2022, §5).

Distributional attribute privacy (Definition 5) hides the parameter φ_i that governs a sensitive
attribute's distribution. The parameters form a Bayesian network
(:class:`~distprivacy.attribute.bayesnet.DiscreteBayesNet`); Θ is a finite class of such networks
sharing one graph. The pieces of Algorithm 2:

* **max-influence** (Definition 7), exact for discrete networks::

      e_Θ(X_A | X_i) = sup_{θ ∈ Θ} max_{a, b ∈ Φ_i} max_{φ_A}
                           log P(φ_A | φ_i = a, θ) / P(φ_A | φ_i = b, θ)

  (values a, b of φ_i with probability zero under θ are no secret under θ — Definition 1 only
  compares secrets with P(s | θ) ≠ 0 — and are skipped; a φ_A possible under a but not under b
  gives +∞);
* **Markov quilts** (Definition 6): X_Q whose removal splits the rest into X_N ∋ X_i and X_R with
  φ_R ⊥ φ_i | φ_Q, read off the graph by d-separation;
* **Δ_{A∩N}F**: the largest change of F when the columns of the queried attributes that lie in
  X_N change arbitrarily (A-column neighbours, §5.1);
* the **release** F(X) + Lap(max_{i ∈ C} b_i), b_i the smallest Δ_{A∩N}F / (ε − e_Θ(X_Q | X_i))
  over the quilts with e_Θ(X_Q | X_i) < ε, and at most Δ_A F / ε (the whole-network bound, the
  trivial quilt X_Q = ∅, X_N = everything, which Algorithm 2 starts from).

Theorem 3: the mechanism is (ε, 0)-distributional attribute private. Theorem 4 (accuracy): the

Modules (every name is importable from here)
--------------------------------------------
``_quilt_graph``
    Θ (:func:`as_network_class`), :func:`max_influence`, :class:`MarkovQuilt` and
    :func:`markov_quilts`.
``_quilt_queries``
    Column queries: :class:`CountQuery`, :class:`SumQuery`, :func:`parse_column_query`.
``_quilt_calibration``
    :class:`QuiltCalibration` (the :class:`~distprivacy.guarantee.Calibrated` protocol:
    ``guarantee``, ``release`` → :class:`~distprivacy.guarantee.Release`,
    ``to_dict``/``from_dict``), :class:`SecretCalibration`, :class:`QuiltCandidate`.
``_quilt_mechanism``
    :class:`AttributeQuiltMechanism`.
``_quilt_school``
    The school example (Example 1).
"""

from __future__ import annotations

from distprivacy.attribute._quilt_calibration import (
    BASIS,
    THEOREM,
    QuiltCalibration,
    QuiltCandidate,
    QuiltRelease,
    SecretCalibration,
    quilt_warnings,
)
from distprivacy.attribute._quilt_graph import (
    MAX_ENUMERATED_NODES,
    Influence,
    MarkovQuilt,
    as_network_class,
    check_secret,
    markov_quilts,
    max_influence,
    quilt_for,
    trivial_quilt,
)
from distprivacy.attribute._quilt_mechanism import (
    AttributeQuiltMechanism,
)
from distprivacy.attribute._quilt_queries import (
    ColumnQuery,
    CountQuery,
    SumQuery,
    parse_column_query,
)
from distprivacy.attribute._quilt_school import (
    SCHOOL_DOMAINS,
    SCHOOL_PARENTS,
    sample_school_records,
    school_networks,
)

__all__ = [
    "BASIS",
    "MAX_ENUMERATED_NODES",
    "SCHOOL_DOMAINS",
    "SCHOOL_PARENTS",
    "THEOREM",
    "AttributeQuiltMechanism",
    "ColumnQuery",
    "CountQuery",
    "Influence",
    "MarkovQuilt",
    "QuiltCalibration",
    "QuiltCandidate",
    "QuiltRelease",
    "SecretCalibration",
    "SumQuery",
    "as_network_class",
    "check_secret",
    "markov_quilts",
    "max_influence",
    "parse_column_query",
    "quilt_for",
    "quilt_warnings",
    "sample_school_records",
    "school_networks",
    "trivial_quilt",
]
