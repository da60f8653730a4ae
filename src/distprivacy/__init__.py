"""distprivacy: release dataset statistics while protecting global properties with
(ε, δ)-distribution privacy (Chen & Ohrimenko 2023; Kawamoto & Murakami 2019).

The front door: ``import distprivacy as dp`` gives the public API::

    import distprivacy as dp

    data = dp.load_adult()
    spec = dp.ProtectionSpec("income==>50K", n=100, values=[0.45, 0.55])
    query = dp.Query.parse("mean:age,count:sex==Female")
    model = dp.fit_model(data, spec, query, method="exact")
    cal = dp.DauM(epsilon=0.5, delta=1e-3).calibrate(model)
    print(cal.summary())

Names are imported on first use (``dp.DauM`` loads :mod:`distprivacy.mechanisms`), so
``import distprivacy`` stays fast. The wings are subpackages: :mod:`distprivacy.attribute`
(attribute privacy), :mod:`distprivacy.local` (local distribution privacy) and
:mod:`distprivacy.inference` (property inference on models).
"""

from __future__ import annotations

import importlib
from typing import Any

from distprivacy._version import __version__
from distprivacy.exceptions import (
    AssumptionWarning,
    ClassicRuleWarning,
    ClassicShortfallWarning,
    DataUnavailableError,
    DistPrivacyError,
    DistPrivacyTypeError,
    DistPrivacyWarning,
    ExactReleaseError,
    MissingExtraError,
    MoreNoiseWarning,
    NotApplicableError,
    ResourceLimitError,
    ShortfallWarning,
    SwampedWarning,
    WeakGuaranteeWarning,
)

#: Public name → the module that defines it (imported on first use).
_LAZY: dict[str, str] = {
    # what to protect and what to release
    "ProtectionSpec": "distprivacy.spec",
    "Predicate": "distprivacy.spec",
    "Query": "distprivacy.query",
    "Mean": "distprivacy.query",
    "Sum": "distprivacy.query",
    "Count": "distprivacy.query",
    "Proportion": "distprivacy.query",
    "CallableStatistic": "distprivacy.query",
    # data
    "load_adult": "distprivacy.datasets",
    "load_table": "distprivacy.datasets",
    # models of f_θ
    "fit_model": "distprivacy.models",
    "ExactModel": "distprivacy.models",
    "MonteCarloModel": "distprivacy.models",
    "GaussianModel": "distprivacy.models",
    "load_model_file": "distprivacy.models",
    # mechanisms
    "MECHANISMS": "distprivacy.mechanisms",
    "register_mechanism": "distprivacy.mechanisms",
    "GaussianMechanism": "distprivacy.mechanisms",
    "Proposal": "distprivacy.mechanisms",
    "make_mechanism": "distprivacy.mechanisms",
    "calibrate_all": "distprivacy.mechanisms",
    "Mechanism": "distprivacy.mechanisms",
    "Calibration": "distprivacy.mechanisms",
    "DauM": "distprivacy.mechanisms",
    "DirectionalGaussian": "distprivacy.mechanisms",
    "DirectionalLaplace": "distprivacy.mechanisms",
    "EigenvectorGaussian": "distprivacy.mechanisms",
    "ExpectedValueGaussian": "distprivacy.mechanisms",
    "ExpectedValueLaplace": "distprivacy.mechanisms",
    "OptimalGaussian": "distprivacy.mechanisms",
    "GroupDPGaussian": "distprivacy.mechanisms",
    "GroupDPLaplace": "distprivacy.mechanisms",
    "WassersteinMechanism": "distprivacy.mechanisms",
    "ApproximateWassersteinMechanism": "distprivacy.mechanisms",
    "BoundedWassersteinMechanism": "distprivacy.mechanisms",
    "NoNoise": "distprivacy.mechanisms",
    # guarantees, releases, randomness
    "Guarantee": "distprivacy.guarantee",
    "Release": "distprivacy.guarantee",
    "Calibrated": "distprivacy.guarantee",
    "check_random_state": "distprivacy.randomness",
    "SecureGenerator": "distprivacy.randomness",
    "NoiseDistribution": "distprivacy.noise",
    # privacy targets
    "EpsDelta": "distprivacy.targets",
    "GDP": "distprivacy.targets",
    "MaxAttackAccuracy": "distprivacy.targets",
    "Rule": "distprivacy.targets",
    # the privacy ledger and plans
    "Ledger": "distprivacy.ledger",
    # the release service's client (`distprivacy serve`, docs/serve.md)
    "Client": "distprivacy.service.client",
    # one release, start to finish
    "release": "distprivacy.workflow",
    "ReleaseOutcome": "distprivacy.workflow",
    "Plan": "distprivacy.mechanisms.plans",
    # checking a release
    "audit_model": "distprivacy.audit",
    "AuditResult": "distprivacy.audit",
    "MetaClassifierAttack": "distprivacy.attacks",
    "LikelihoodRatioAttack": "distprivacy.attacks",
}

#: Subpackages reachable as attributes (``dp.attribute``, ``dp.local``, ``dp.inference``).
_SUBPACKAGES = ("attribute", "local", "inference", "engines", "experiments")

__all__ = [
    "GDP",
    "MECHANISMS",
    "ApproximateWassersteinMechanism",
    "AssumptionWarning",
    "AuditResult",
    "BoundedWassersteinMechanism",
    "Calibrated",
    "Calibration",
    "CallableStatistic",
    "ClassicRuleWarning",
    "ClassicShortfallWarning",
    "Client",
    "Count",
    "DataUnavailableError",
    "DauM",
    "DirectionalGaussian",
    "DirectionalLaplace",
    "DistPrivacyError",
    "DistPrivacyTypeError",
    "DistPrivacyWarning",
    "EigenvectorGaussian",
    "EpsDelta",
    "ExactModel",
    "ExactReleaseError",
    "ExpectedValueGaussian",
    "ExpectedValueLaplace",
    "GaussianMechanism",
    "GaussianModel",
    "GroupDPGaussian",
    "GroupDPLaplace",
    "Guarantee",
    "Ledger",
    "LikelihoodRatioAttack",
    "MaxAttackAccuracy",
    "Mean",
    "Mechanism",
    "MetaClassifierAttack",
    "MissingExtraError",
    "MonteCarloModel",
    "MoreNoiseWarning",
    "NoNoise",
    "NoiseDistribution",
    "NotApplicableError",
    "OptimalGaussian",
    "Plan",
    "Predicate",
    "Proportion",
    "Proposal",
    "ProtectionSpec",
    "Query",
    "Release",
    "ReleaseOutcome",
    "ResourceLimitError",
    "Rule",
    "SecureGenerator",
    "ShortfallWarning",
    "Sum",
    "SwampedWarning",
    "WassersteinMechanism",
    "WeakGuaranteeWarning",
    "__version__",
    "audit_model",
    "calibrate_all",
    "check_random_state",
    "fit_model",
    "load_adult",
    "load_model_file",
    "load_table",
    "make_mechanism",
    "register_mechanism",
    "release",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in _SUBPACKAGES:
        return importlib.import_module(f"distprivacy.{name}")
    raise AttributeError(f"module 'distprivacy' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_SUBPACKAGES})
