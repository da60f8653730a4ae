"""Distribution inference attacks on trained models (Suri & Evans, *Formalizing Distribution
Inference Risks*, §3.2 and Appendix A.2).

The adversary holds its own models trained on datasets from G0 and from G1 (two
:class:`~distprivacy.inference.population.ModelPopulation` objects, label 0 and 1) and must say,
for each of the victim's models, which distribution it was trained on. Every attack here has the
same shape, scikit-learn style:

``attack.fit(pop0, pop1)`` (the adversary's models) → ``attack.predict(pop)`` (0/1 per model) →
``attack.score(victim0, victim1)`` (an :class:`AttackScore`: accuracy with a Clopper–Pearson
interval and the advantage |Pr[b̂=1 | b=1] − Pr[b̂=1 | b=0]| of §2).

* :class:`LossTest` — §3.2: b̂ = 𝟙[l(M, D0) > l(M, D1)] on the adversary's test sets D0 ~ G0,
  D1 ~ G1. Trains nothing.
* :class:`ThresholdTest` — §3.2 and A.2: a few of the adversary's models (50 per distribution)
  pick the test set D_k with the larger performance gap; a linear search over the adversary's
  models then picks the threshold λ (and its side) maximising their accuracy.
* :class:`SortedWeightsMetaClassifier` — a simple meta-classifier on the parameters: each hidden
  layer's neurons are put into a canonical order (sorted by the norm of their incoming weights,
  the next layer's rows permuted to match, so the network computes the same function), flattened,
  standardised, and a scikit-learn classifier (default L2 logistic regression) is trained.
* :class:`PermutationInvariantNetwork` — the meta-classifier of Ganju et al. (CCS 2018) that §3.2
  uses: per layer, a network φ_l shared by all neurons of the layer maps each neuron to a vector,
  the vectors are averaged, and ρ maps the concatenated layer summaries to a logit (or, with
  ``task="regression"``, to a real number). Written in NumPy with hand-written gradients (Adam).
* :class:`BlackBoxMetaClassifier` — a meta-classifier on the models' outputs (logits) on a fixed
  query set: black-box access suffices.
* :class:`RatioRegressor` — predicts the ratio α itself from the parameters (the regression
  variant of §3.3 / Fig. 2, right), with the permutation-invariant network.

Every random choice takes a ``random_state``: a seed, a ``numpy.random.Generator`` or None
(fresh entropy; attacks are simulations, ``check_random_state(..., secure=False)``).

The package: :mod:`._base` (scores, checks), :mod:`._threshold` (loss and threshold tests),
:mod:`._meta` (feature meta-classifiers), :mod:`._pin` (the permutation-invariant network).
"""

from distprivacy.inference.attacks._base import (
    AttackScore,
    Population,
    accuracy_interval,
    score_predictions,
)
from distprivacy.inference.attacks._base import _check_arch as _check_arch
from distprivacy.inference.attacks._base import _check_data as _check_data
from distprivacy.inference.attacks._base import _check_fitted as _check_fitted
from distprivacy.inference.attacks._base import _check_pair as _check_pair
from distprivacy.inference.attacks._base import _check_population as _check_population
from distprivacy.inference.attacks._base import _ModelAttack as _ModelAttack
from distprivacy.inference.attacks._meta import (
    BlackBoxMetaClassifier,
    SortedWeightsMetaClassifier,
    canonical_parameters,
)
from distprivacy.inference.attacks._pin import PermutationInvariantNetwork, RatioRegressor
from distprivacy.inference.attacks._pin import _pin_backward as _pin_backward
from distprivacy.inference.attacks._pin import _pin_forward as _pin_forward
from distprivacy.inference.attacks._pin import _pin_init as _pin_init
from distprivacy.inference.attacks._threshold import LossTest, ThresholdTest, best_threshold

__all__ = [
    "AttackScore",
    "BlackBoxMetaClassifier",
    "LossTest",
    "PermutationInvariantNetwork",
    "Population",
    "RatioRegressor",
    "SortedWeightsMetaClassifier",
    "ThresholdTest",
    "accuracy_interval",
    "best_threshold",
    "canonical_parameters",
    "score_predictions",
]
