"""Local distribution privacy (Kawamoto & Murakami, ESORICS 2019; paper ``004``).

Local obfuscation mechanisms (randomized response, 1-D/planar Laplace, Gaussian, exponential,
the tupling mechanism), the exact DistP of a mechanism for a pair of input distributions
(:mod:`~distprivacy.local.distp`), theorem-based guarantees and composition
(:mod:`~distprivacy.local.guarantees`, every one a :class:`distprivacy.guarantee.Guarantee`),
a mechanism with the pairs it protects as one inspectable, releasable
:class:`~distprivacy.local.calibration.LocalCalibration` (:func:`calibrate_local`) and utility
(:mod:`~distprivacy.local.utility`).
"""

from distprivacy.local.calibration import LocalCalibration, calibrate_local
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
    compose_independent,
    compose_same_input,
    domain_wasserstein_1,
    domain_wasserstein_inf,
    dp_implies_distp,
    laplace_distp,
    local_guarantee,
    post_process,
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
    "Domain",
    "EpsilonResult",
    "ExponentialMechanism",
    "FiniteMechanism",
    "LocalCalibration",
    "Profile",
    "RandomizedResponse",
    "SnappedGaussian",
    "SnappedLaplace",
    "TuplingMechanism",
    "TuplingMonteCarlo",
    "bayes_factor_reading",
    "calibrate_local",
    "check_distribution",
    "clustered_city",
    "compose_independent",
    "compose_same_input",
    "distp_epsilon",
    "distp_profile",
    "domain_wasserstein_1",
    "domain_wasserstein_inf",
    "dp_implies_distp",
    "epsilon_for_delta",
    "grid",
    "laplace_distp",
    "line",
    "local_guarantee",
    "post_process",
    "privacy_profile",
    "rr_pure_epsilon",
    "service_quality_loss",
]
