"""The school example of Zhang, Ohrimenko & Cummings (FAccT 2022, §5.1, Example 1): the
class Θ of two networks on the graph of Figure 1 and a sampler of records given φ.

Part of :mod:`distprivacy.attribute.markov_quilt` (every name is importable from there).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special

from distprivacy.attribute.bayesnet import DiscreteBayesNet, discretized_normal_cpt
from distprivacy.exceptions import DistPrivacyError
from distprivacy.randomness import RandomState, check_random_state

#: The school example's graph (Figure 1 as read from Example 1's quilt; see docs/markov_quilt.md).
SCHOOL_PARENTS = {
    "sat": ["income"],
    "gender": ["income"],
    "height": ["gender"],
    "weight": ["gender", "height"],
}
SCHOOL_DOMAINS = {
    "income": [0.2, 0.5, 0.8],  # share of students from high-income families
    "sat": [0.1, 0.25, 0.5],  # P(SAT > 1300)
    "gender": [0.0, 0.5, 1.0],  # share of female students (boys', mixed, girls' school)
    "height": [63.0, 66.0, 69.0],  # mean height, inches
    "weight": [120.0, 145.0, 170.0],  # mean weight, pounds
}


def school_networks() -> list[DiscreteBayesNet]:
    """Θ for Example 1 (§5.1): two networks on the school graph, income the secret.

    The paper gives the graph (Figure 1) but no numbers; these CPTs are our documented choice:
    SAT depends strongly on income (e(X_s | X_i) = ln 16 > 1), gender weakly
    (e_Θ(X_gndr | X_i) = ln 1.8 ≈ 0.588 under θ_strong), height on gender, weight on gender and
    height (a discretized normal: mean −110 + 3.9·height − 10·gender, sd 15).
    """
    d = SCHOOL_DOMAINS
    weight = discretized_normal_cpt(
        d["weight"], [d["gender"], d["height"]], intercept=-110.0, coefficients=[-10.0, 3.9], sd=15
    )
    shared = {
        "income": [0.3, 0.4, 0.3],
        "sat": [[0.80, 0.15, 0.05], [0.20, 0.60, 0.20], [0.05, 0.15, 0.80]],
        "height": [[0.10, 0.30, 0.60], [0.25, 0.50, 0.25], [0.60, 0.30, 0.10]],
        "weight": weight,
    }
    weak = [[0.10, 0.80, 0.10], [0.10, 0.80, 0.10], [0.15, 0.70, 0.15]]
    strong = [[0.10, 0.80, 0.10], [0.12, 0.76, 0.12], [0.18, 0.64, 0.18]]
    return [
        DiscreteBayesNet(d, SCHOOL_PARENTS, {**shared, "gender": weak}, name="θ_weak"),
        DiscreteBayesNet(d, SCHOOL_PARENTS, {**shared, "gender": strong}, name="θ_strong"),
    ]


def sample_school_records(
    n_records: int, random_state: RandomState, network: DiscreteBayesNet | None = None
) -> tuple[pd.DataFrame, dict[str, float]]:
    """Draw φ from a school network, then n records i.i.d. given φ (naive independence, §3).

    Given φ: income ~ Bernoulli(φ_income) ("high"/"low"), gender ~ Bernoulli(φ_gender)
    ("F"/"M"), height ~ N(φ_height, 3²), weight ~ N(φ_weight, 15²), SAT ~ N(1300 +
    100·Φ⁻¹(φ_sat), 100²) rounded and limited to [400, 1600] (which keeps P(SAT > 1300) = φ_sat).

    ``random_state`` (a seed or generator; simulation, so None means fresh entropy) drives
    every draw.

    Returns
    -------
    (DataFrame, dict)
        The records and the drawn parameters φ.
    """
    gen = check_random_state(random_state, secure=False)
    net = network or school_networks()[0]
    n = int(n_records)
    if n < 1:
        raise DistPrivacyError(f"n_records must be a positive integer, got {n_records}")
    idx = net.sample(1, gen)[0]
    phi = {v: float(net.domains[v][k]) for v, k in zip(net.names, idx, strict=True)}
    u = gen.random((n, 2))
    z = gen.standard_normal((n, 3))
    sat = 1300 + 100 * special.ndtri(phi["sat"]) + 100 * z[:, 2]
    data = pd.DataFrame(
        {
            "income": np.where(u[:, 0] < phi["income"], "high", "low"),
            "gender": np.where(u[:, 1] < phi["gender"], "F", "M"),
            "height": np.round(phi["height"] + 3 * z[:, 0], 1),
            "weight": np.round(phi["weight"] + 15 * z[:, 1], 1),
            "sat": np.clip(np.round(sat), 400, 1600).astype(int),
        }
    )
    return data, phi
