"""Attribute privacy (Zhang, Ohrimenko & Cummings, *Attribute Privacy: Framework and Mechanisms*,
FAccT 2022).

Two Pufferfish instantiations that hide a global property of the *columns* of a dataset:

* **dataset attribute privacy** (Def. 4): hide the value of a function g_i(X_i) of a sensitive
  column of *this* dataset (e.g. the share of women among the patients);
* **distributional attribute privacy** (Def. 5): hide the parameter φ_i of the distribution the
  sensitive column was drawn from.

Modules
-------
``framework``
    Secrets (g_i(X_i) ∈ U_a or φ_i ∈ Φ_a), secret pairs Q, the class Θ, and the translation to
    and from :class:`distprivacy.spec.ProtectionSpec` where the frameworks coincide (§3).
``gaussian``
    The Attribute-Private Gaussian Mechanism (Alg. 1, Thm 1, Thm 2), general and vector-valued,
    and its multivariate-Gaussian instantiation (§4.2) with the paper's classic calibration and
    exact (μ-GDP) accounting.
``pufferfish``
    The Pufferfish Wasserstein Mechanism (Song, Wang & Chaudhuri, SIGMOD 2017), the general
    mechanism the paper refers to (§2, §3, App. C), on our exact W∞.
``bayesnet``, ``markov_quilt``
    The Attribute-Private Markov Quilt Mechanism (Alg. 2, Thm 3, Thm 4) on Bayesian networks.

Every calibration (:class:`APGMCalibration`, :class:`QuiltCalibration`, the Wasserstein
Mechanism's) follows :class:`distprivacy.guarantee.Calibrated`: a
:class:`~distprivacy.guarantee.Guarantee` (notion "attribute privacy" or "Pufferfish privacy"),
``release(value, random_state=None, *, allow_exact=False)`` returning a
:class:`~distprivacy.guarantee.Release` (a zero-noise release needs ``allow_exact=True``), typed
warnings (:class:`~distprivacy.exceptions.Notice`) and exact ``to_dict``/``from_dict``.
"""

from distprivacy.attribute.bayesnet import DiscreteBayesNet, load_networks
from distprivacy.attribute.framework import (
    DatasetAttributeFramework,
    DistributionalAttributeFramework,
    Secret,
    SecretPair,
)
from distprivacy.attribute.gaussian import (
    APGMCalibration,
    AttributeGaussianMechanism,
    GaussianProblem,
    GaussianTheta,
)
from distprivacy.attribute.markov_quilt import (
    AttributeQuiltMechanism,
    QuiltCalibration,
    markov_quilts,
    max_influence,
)
from distprivacy.attribute.pufferfish import PufferfishWassersteinMechanism

__all__ = [
    "APGMCalibration",
    "AttributeGaussianMechanism",
    "AttributeQuiltMechanism",
    "DatasetAttributeFramework",
    "DiscreteBayesNet",
    "DistributionalAttributeFramework",
    "GaussianProblem",
    "GaussianTheta",
    "PufferfishWassersteinMechanism",
    "QuiltCalibration",
    "Secret",
    "SecretPair",
    "load_networks",
    "markov_quilts",
    "max_influence",
]
