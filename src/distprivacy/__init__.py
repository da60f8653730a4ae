"""distprivacy: release dataset statistics while protecting global properties with
(ε, δ)-distribution privacy (Chen & Ohrimenko 2023; Kawamoto & Murakami 2019).

The front door: ``import distprivacy as dp`` gives the public API::

    import distprivacy as dp

    data = dp.load_adult()
    spec = dp.ProtectionSpec("income==>50K", n=100, values=[0.45, 0.55])
    query = dp.Query.parse("mean:age,count:sex==Female")
    model = dp.fit_model(data, spec, query, method="exact")
    cal = dp.DauM(dp.EpsDelta(0.5, 1e-3)).calibrate(model)
    print(cal.summary())

    # Or the typed request through the one hinge: a plan, released later without refitting.
    plan = dp.plan(data, spec, query, dp.MechanismSpec("DauM-G", dp.GDP(0.5)))
    out = dp.release(plan, target=data.sample(n=100, random_state=1))

Mechanisms also go by their command-line names, by one rule: ``-`` becomes ``_``
(``dp.DirM_G``, ``dp.ExpM_L``, ``dp.GroupDP_G``), and a Gaussian mechanism of Chen & Ohrimenko
may drop its ``-G`` (``dp.DirM``, ``dp.ExpM``, ``dp.EigM``, ``dp.DauM``, ``dp.OptM``).

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
    DemonstrationWarning,
    DistPrivacyError,
    DistPrivacyTypeError,
    DistPrivacyWarning,
    ExactReleaseError,
    ExactValueWarning,
    MissingExtraError,
    MoreNoiseWarning,
    NotApplicableError,
    ResourceLimitError,
    SeededNoiseWarning,
    ShortfallWarning,
    SwampedWarning,
    UnrecordedWarning,
    WeakGuaranteeWarning,
)
from distprivacy.registry import BUILTIN_MECHANISMS

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
    # the typed request (issue 32)
    "MechanismSpec": "distprivacy.request",
    "GaussianOptions": "distprivacy.request",
    "Modelling": "distprivacy.request",
    # the privacy ledger and plans
    "Ledger": "distprivacy.ledger",
    # the release service's client (`distprivacy serve`, docs/serve.md)
    "Client": "distprivacy.service.client",
    # one release, start to finish
    "release": "distprivacy.workflow",
    "ReleaseOutcome": "distprivacy.workflow",
    "plan": "distprivacy.workflow",
    "plan_all": "distprivacy.workflow",
    "Planned": "distprivacy.workflow",
    "Plan": "distprivacy.mechanisms.plans",
    # checking a release
    "audit_model": "distprivacy.mechanism_audit",
    "AuditResult": "distprivacy.mechanism_audit",
    "MetaClassifierAttack": "distprivacy.statistic_attacks",
    "LikelihoodRatioAttack": "distprivacy.statistic_attacks",
}

#: The command line's mechanism names in Python, by one rule: the shorthand with ``-`` made
#: ``_`` (``DirM-G`` → ``dp.DirM_G``, ``ApproxWasserstein-Bounded`` →
#: ``dp.ApproxWasserstein_Bounded``), and each Gaussian mechanism of Chen & Ohrimenko also
#: without its ``-G`` (``dp.ExpM``, ``dp.DirM``, ``dp.EigM``, ``dp.DauM``, ``dp.OptM``: Gaussian
#: noise is the default). Each is the class the registry holds under the command-line name
#: (``dp.DirM is dp.MECHANISMS["DirM-G"] is dp.DirectionalGaussian``). Python name → shorthand.
_CLI_NAMES: dict[str, str] = {
    **{n.replace("-", "_"): n for n in BUILTIN_MECHANISMS if n.replace("-", "_") not in _LAZY},
    **{n[:-2]: n for n in BUILTIN_MECHANISMS if n.endswith("M-G") and n[:-2] not in _LAZY},
}

#: Subpackages reachable as attributes (``dp.attribute``, ``dp.local``, ``dp.inference``).
_SUBPACKAGES = ("attribute", "local", "inference", "engines", "experiments")

__all__ = [
    "GDP",
    "MECHANISMS",
    "ApproxWasserstein",
    "ApproxWasserstein_Bounded",
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
    "DauM_G",
    "DemonstrationWarning",
    "DirM",
    "DirM_G",
    "DirM_L",
    "DirectionalGaussian",
    "DirectionalLaplace",
    "DistPrivacyError",
    "DistPrivacyTypeError",
    "DistPrivacyWarning",
    "EigM",
    "EigM_G",
    "EigenvectorGaussian",
    "EpsDelta",
    "ExactModel",
    "ExactReleaseError",
    "ExactValueWarning",
    "ExpM",
    "ExpM_G",
    "ExpM_L",
    "ExpectedValueGaussian",
    "ExpectedValueLaplace",
    "GaussianMechanism",
    "GaussianModel",
    "GaussianOptions",
    "GroupDPGaussian",
    "GroupDPLaplace",
    "GroupDP_G",
    "GroupDP_L",
    "Guarantee",
    "Ledger",
    "LikelihoodRatioAttack",
    "MaxAttackAccuracy",
    "Mean",
    "Mechanism",
    "MechanismSpec",
    "MetaClassifierAttack",
    "MissingExtraError",
    "Modelling",
    "MonteCarloModel",
    "MoreNoiseWarning",
    "NoNoise",
    "NoiseDistribution",
    "NotApplicableError",
    "OptM",
    "OptM_G",
    "OptimalGaussian",
    "Plan",
    "Planned",
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
    "SeededNoiseWarning",
    "ShortfallWarning",
    "Sum",
    "SwampedWarning",
    "UnrecordedWarning",
    "Wasserstein",
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
    "plan",
    "plan_all",
    "register_mechanism",
    "release",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in _CLI_NAMES:
        value = importlib.import_module("distprivacy.mechanisms").MECHANISMS[_CLI_NAMES[name]]
        globals()[name] = value
        return value
    if name in _SUBPACKAGES:
        return importlib.import_module(f"distprivacy.{name}")
    raise AttributeError(f"module 'distprivacy' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_SUBPACKAGES})
