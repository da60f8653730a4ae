"""Distribution inference on trained models (Suri & Evans, *Formalizing Distribution Inference
Risks*, 2021): the front door :func:`audit` and :func:`defend` on a user's table (typed
results, :mod:`~distprivacy.inference._front`), the game of §2 (distribution transformers,
disjoint victim/adversary data, the adversary's advantage), populations of small models
trained as one vectorised computation, and the attacks of §3.2 on them.

Modules: :mod:`~distprivacy.inference.population` (a stack of trained models),
:mod:`~distprivacy.inference.training` (batched training), :mod:`~distprivacy.inference.game`
(splits, dataset sampling, advantage), :mod:`~distprivacy.inference.transformers`
(distribution transformers G0, G1), :mod:`~distprivacy.inference.features` (Adult encoder),
:mod:`~distprivacy.inference.attacks` (the attacks: scores, loss and threshold tests,
meta-classifiers, the permutation-invariant network), :mod:`~distprivacy.inference.output_defence`
(outputs released with distribution privacy) and :mod:`~distprivacy.inference.census` (the
Census game of §3: data, splits, populations and their cache, test sets).

Randomness: every random function takes ``random_state`` (a seed, a generator, or None: fresh
OS entropy — all of this is simulation, ``check_random_state(..., secure=False)``). Where
independent seeds are derived (per model, sampler and trainer) an integer is drawn first and
recorded in the population's ``meta``, so every model can be retrained bit for bit.
"""

from distprivacy.inference._front import (
    DefenceSettings,
    GameSettings,
    ModelAuditResult,
    ModelDefendResult,
    audit,
    defend,
)
from distprivacy.inference.attacks import (
    AttackScore,
    BlackBoxMetaClassifier,
    LossTest,
    PermutationInvariantNetwork,
    RatioRegressor,
    SortedWeightsMetaClassifier,
    ThresholdTest,
)
from distprivacy.inference.features import TabularEncoder, adult_encoder
from distprivacy.inference.game import advantage, sample_datasets, split_game, train_models
from distprivacy.inference.output_defence import (
    OutputStatistic,
    calibrate_defences,
    evaluate_defences,
    fit_output_model,
    range_dp_calibration,
)
from distprivacy.inference.population import ModelPopulation
from distprivacy.inference.training import train_population
from distprivacy.inference.transformers import (
    FunctionTransformer,
    IdentityTransformer,
    RatioTransformer,
)

__all__ = [
    "AttackScore",
    "BlackBoxMetaClassifier",
    "DefenceSettings",
    "FunctionTransformer",
    "GameSettings",
    "IdentityTransformer",
    "LossTest",
    "ModelAuditResult",
    "ModelDefendResult",
    "ModelPopulation",
    "OutputStatistic",
    "PermutationInvariantNetwork",
    "RatioRegressor",
    "RatioTransformer",
    "SortedWeightsMetaClassifier",
    "TabularEncoder",
    "ThresholdTest",
    "adult_encoder",
    "advantage",
    "audit",
    "calibrate_defences",
    "defend",
    "evaluate_defences",
    "fit_output_model",
    "range_dp_calibration",
    "sample_datasets",
    "split_game",
    "train_models",
    "train_population",
]
