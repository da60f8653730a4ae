"""Local distribution privacy (Kawamoto & Murakami, ESORICS 2019; paper ``004``).

Local obfuscation mechanisms (randomized response, 1-D/planar Laplace, Gaussian, exponential,
the tupling mechanism), the exact DistP of a mechanism for a pair of input distributions
(:mod:`~distprivacy.local.distp`), theorem-based guarantees and composition
(:mod:`~distprivacy.local.guarantees`) and utility (:mod:`~distprivacy.local.utility`).
"""

from distprivacy.local.distp import (
    EpsilonResult,
    Profile,
    TuplingMonteCarlo,
    distp_epsilon,
    distp_profile,
    epsilon_for_delta,
    privacy_profile,
    rr_pure_epsilon,
)
from distprivacy.local.domains import Domain, check_distribution, clustered_city, grid, line
from distprivacy.local.guarantees import (
    DistPGuarantee,
    compose_independent,
    compose_same_input,
    dp_implies_distp,
    laplace_distp,
    wasserstein_1,
    wasserstein_inf,
)
from distprivacy.local.mechanisms import (
    ExponentialMechanism,
    FiniteMechanism,
    RandomizedResponse,
    SnappedGaussian,
    SnappedLaplace,
    TuplingMechanism,
)
from distprivacy.local.utility import bayes_factor_reading, service_quality_loss

__all__ = [
    "DistPGuarantee",
    "Domain",
    "EpsilonResult",
    "ExponentialMechanism",
    "FiniteMechanism",
    "Profile",
    "RandomizedResponse",
    "SnappedGaussian",
    "SnappedLaplace",
    "TuplingMechanism",
    "TuplingMonteCarlo",
    "bayes_factor_reading",
    "check_distribution",
    "clustered_city",
    "compose_independent",
    "compose_same_input",
    "distp_epsilon",
    "distp_profile",
    "dp_implies_distp",
    "epsilon_for_delta",
    "grid",
    "laplace_distp",
    "line",
    "privacy_profile",
    "rr_pure_epsilon",
    "service_quality_loss",
    "wasserstein_1",
    "wasserstein_inf",
]
