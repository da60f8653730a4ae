"""``distprivacy reproduce model-inference``: Suri & Evans, *Formalizing Distribution Inference
Risks*, §3 on Census (UCI Adult), with the defence of :mod:`distprivacy.inference.output_defence`.

What is computed (every number in the report comes from here):

* **Figure 1 (Census, left two panels).** Properties sex (share of women) and race (share of
  whites); G0 at ratio 0.5, G1 at each α of ``Config.alphas``; the victim and the adversary
  each train ``n_victim`` / ``n_adversary`` MLPs (32, 16, 8) per distribution on disjoint,
  stratified halves of Adult (:func:`distprivacy.inference.game.split_game`), datasets of
  ``n_train`` rows with the label ratio preserved (Appendix A.1). Attacks (§3.2): loss test,
  threshold test (``repetitions`` choices of the 50 selection models), the permutation-invariant
  meta-classifier (``repetitions`` seeds — the box plots), and two meta-classifiers of ours
  beside them (sorted weights; black-box outputs on 64 query points).
* **Ganju et al.'s two cases** quoted in §3.3: 38 % vs 65 % women (case A), 0 % vs 87 % whites
  (case B), beside the paper's accuracies.
* **Ratio regression** (the regression meta-classifier of §3.3, Fig. 2 right, there on
  ogbn-arxiv): the permutation-invariant network predicts α from the parameters; trained on the
  adversary's models at every other α, scored on the victim's models at every α (the ones not
  trained on measure generalisation to unseen ratios).
* **Defence**: for sex at ``defence_alpha`` vs 0.5, a model's outputs (probabilities) on a fixed
  query set are released through ExpM-G / DauM-G / OptM-G calibrated on a Gaussian model fitted
  on half of the victim's models, and through the DP-style range-sensitivity Gaussian mechanism;
  attack accuracy (defence-aware likelihood-ratio test and black-box meta-classifier) against the
  task accuracy of the noisy outputs on the other half.

Model populations are saved as ``.npz`` under ``out_dir/populations`` (atomically) and reused on
the next run when their settings match and the file loads (``reuse=True``), so the attacks can be
rerun without retraining; a cached file that does not load is reported and retrained. The other
outputs are written atomically under :class:`distprivacy.outputs.RunFolder`: the folder is marked
``INCOMPLETE`` until its ``manifest.json`` is written.

The pieces: :mod:`.config` (:class:`Config`, the paper's numbers), :mod:`.runner` (:func:`run`),
:mod:`.figures`, :mod:`.report` (:func:`render`); the Census game itself (data, splits,
populations and their cache, test sets) is library code,
:mod:`distprivacy.inference.census`, re-exported here.
"""

from distprivacy.experiments.model_inference.config import (
    BLACKBOX,
    LABEL,
    PAPER,
    PIN,
    PROPERTIES,
    ROLES,
    SORTED,
    Config,
)
from distprivacy.experiments.model_inference.figures import (
    plot_all,
    plot_cases,
    plot_defence,
    plot_figure1,
    plot_regression,
)
from distprivacy.experiments.model_inference.report import FRAMES, build_report, render
from distprivacy.experiments.model_inference.runner import (
    attack_pair,
    cases_frame,
    defence_frame,
    figure1_frame,
    property_weights_frame,
    regression_frame,
    run,
)
from distprivacy.inference.census import (
    GameData,
    load_game_data,
    population_path,
    population_seed,
    population_settings,
    test_sets,
    train_or_load,
)

__all__ = [
    "BLACKBOX",
    "FRAMES",
    "LABEL",
    "PAPER",
    "PIN",
    "PROPERTIES",
    "ROLES",
    "SORTED",
    "Config",
    "GameData",
    "attack_pair",
    "build_report",
    "cases_frame",
    "defence_frame",
    "figure1_frame",
    "load_game_data",
    "plot_all",
    "plot_cases",
    "plot_defence",
    "plot_figure1",
    "plot_regression",
    "population_path",
    "population_seed",
    "population_settings",
    "property_weights_frame",
    "regression_frame",
    "render",
    "run",
    "test_sets",
    "train_or_load",
]
