"""The run of the model-inference reproduction: populations (trained or loaded from the cache),
every attack on each pair of distributions, the ratio regression and the defence, written as
CSVs, PNGs and ``report.md`` under a :class:`~distprivacy.outputs.RunFolder`."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from distprivacy.exceptions import MissingExtraError, has_extra
from distprivacy.experiments.model_inference.config import PAPER, PROPERTIES, Config
from distprivacy.experiments.model_inference.figures import plot_all
from distprivacy.experiments.model_inference.report import build_report
from distprivacy.inference._seeds import integer_seed
from distprivacy.inference.census import (
    GameData,
    census_transformer,
    load_game_data,
    population_settings,
    test_sets,
    train_or_load,
)
from distprivacy.inference.population import ModelPopulation
from distprivacy.outputs import (
    RunFolder,
    check_output_dir,
    remove_stale_temporaries,
    write_csv,
    write_text,
)
from distprivacy.randomness import RandomState, check_random_state

__all__ = [
    "attack_pair",
    "cases_frame",
    "defence_frame",
    "figure1_frame",
    "property_weights_frame",
    "regression_frame",
    "run",
]


class _Memo:
    """A population whose logits on each test set are computed once (the loss test and every
    repetition of the threshold test read the same ones); everything else is delegated."""

    def __init__(self, pop: ModelPopulation) -> None:
        self._pop = pop
        self._cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pop, name)

    def logits(self, X: np.ndarray) -> np.ndarray:
        hit = self._cache.get(id(X))
        if hit is None or hit[0] is not X:
            hit = (X, self._pop.logits(X))
            self._cache[id(X)] = hit
        return hit[1]

    def loss(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        z = self.logits(X)
        return (np.logaddexp(0, z) - y * z).mean(axis=1, dtype=np.float64)

    def accuracy(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        return ((self.logits(X) > 0) == (np.asarray(y) == 1)).mean(axis=1)


def attack_pair(
    adversary: tuple[ModelPopulation, ModelPopulation],
    victim: tuple[ModelPopulation, ModelPopulation],
    d0: tuple[np.ndarray, np.ndarray],
    d1: tuple[np.ndarray, np.ndarray],
    cfg: Config,
    random_state: RandomState = None,
) -> list[dict[str, Any]]:
    """Every attack of §3.2 (and ours) on one pair: rows of ``attack, repetition, accuracy,
    ci_lo, ci_hi, advantage, n``.

    ``random_state``: an integer seed (repetition ``r`` of an attack is seeded ``seed + r``); a
    generator or None (fresh entropy) draws that integer.
    """
    from distprivacy.inference.attacks import (
        BlackBoxMetaClassifier,
        LossTest,
        PermutationInvariantNetwork,
        SortedWeightsMetaClassifier,
        ThresholdTest,
    )

    seed = integer_seed(random_state)
    rows: list[dict[str, Any]] = []
    adversary = (_Memo(adversary[0]), _Memo(adversary[1]))
    victim = (_Memo(victim[0]), _Memo(victim[1]))

    def add(attack: Any, rep: int) -> None:
        """Fit on the adversary's models, score on the victim's and on its own (the training
        accuracy shows when an attack separates the adversary's datasets, not the ratios)."""
        attack.fit(*adversary)
        score = attack.score(*victim)
        own = attack.score(*adversary)
        rows.append(
            {
                "attack": score.name,
                "repetition": rep,
                "accuracy": score.accuracy,
                "ci_lo": score.interval[0],
                "ci_hi": score.interval[1],
                "advantage": score.advantage,
                "n": score.n,
                "adversary_accuracy": own.accuracy,
            }
        )

    add(LossTest(d0, d1), 0)
    for r in range(cfg.repetitions):
        add(ThresholdTest(d0, d1, n_select=cfg.n_select, random_state=seed + r), r)
    for r in range(cfg.repetitions):
        add(PermutationInvariantNetwork(epochs=cfg.pin_epochs, random_state=seed + r), r)
    add(SortedWeightsMetaClassifier(random_state=seed), 0)
    gen = check_random_state(seed, secure=False)
    half = cfg.n_query_blackbox // 2
    query = np.concatenate(
        [
            d0[0][gen.permutation(len(d0[0]))[:half]],
            d1[0][gen.permutation(len(d1[0]))[: cfg.n_query_blackbox - half]],
        ]
    )
    add(BlackBoxMetaClassifier(query, random_state=seed), 0)
    return rows


# ------------------------------------------------------------------------------------------------
# The run
# ------------------------------------------------------------------------------------------------


class _Run:
    """The populations of one run (each trained or loaded once) and the attacks on them."""

    def __init__(
        self,
        game: GameData,
        cfg: Config,
        pop_dir: Path | None,
        reuse: bool,
        progress: Callable[[str], None],
    ) -> None:
        self.game, self.cfg, self.pop_dir, self.reuse, self.progress = (
            game,
            cfg,
            pop_dir,
            reuse,
            progress,
        )
        self.cache: dict[tuple, ModelPopulation] = {}
        self.trained = 0
        self.loaded = 0
        self.train_seconds = 0.0

    def pop(self, prop: str, role: str, ratio: float, b: int) -> ModelPopulation:
        key = (prop, role, round(float(ratio), 6), b)
        if key not in self.cache:
            settings = population_settings(self.cfg, prop, role, ratio, b, self.game)
            self.progress(f"population {prop} {role} α={ratio:g}")
            t0 = time.perf_counter()
            pop, loaded = train_or_load(self.game, settings, self.pop_dir, self.reuse)
            if loaded:
                self.loaded += 1
            else:
                self.trained += 1
                self.train_seconds += time.perf_counter() - t0
            self.cache[key] = pop
        return self.cache[key]

    def pair(
        self, prop: str, r0: float, r1: float
    ) -> tuple[tuple[ModelPopulation, ModelPopulation], tuple[ModelPopulation, ModelPopulation]]:
        adv = (self.pop(prop, "adversary", r0, 0), self.pop(prop, "adversary", r1, 1))
        vic = (self.pop(prop, "victim", r0, 0), self.pop(prop, "victim", r1, 1))
        return adv, vic

    def attacks(self, prop: str, r0: float, r1: float, seed: int) -> list[dict[str, Any]]:
        adv, vic = self.pair(prop, r0, r1)
        d0, d1, n_test = test_sets(self.game, prop, (r0, r1), self.cfg.n_test, seed)
        self.progress(f"attacking {prop} {r0:g} vs {r1:g}")
        rows = attack_pair(adv, vic, d0, d1, self.cfg, seed)
        shares = [self.pool_share(prop, r) for r in (r0, r1)]
        for r in rows:
            r.update(
                {
                    "property": prop,
                    "g0": r0,
                    "g1": r1,
                    "n_test": n_test,
                    "g0_pool_share": shares[0],
                    "g1_pool_share": shares[1],
                }
            )
        return rows

    def pool_share(self, prop: str, ratio: float) -> float:
        """The largest share of a (property, label) stratum of the adversary's training half
        that one dataset of G(ratio) takes: near 1, all its datasets hold nearly the same rows."""
        plan = census_transformer(prop, ratio).plan(
            self.game.data, n=self.cfg.n_train, rows=self.game.splits.adversary_train
        )
        avail = np.asarray(plan["available"], dtype=float).ravel()
        need = np.asarray(plan["counts"], dtype=float).ravel()
        return float(np.max(np.where(avail > 0, need / np.maximum(avail, 1), 0.0)))


def figure1_frame(run: _Run) -> pd.DataFrame:
    cfg = run.cfg
    rows = []
    for prop in cfg.properties:
        for a in cfg.alphas:
            rows += run.attacks(prop, cfg.g0_ratio, a, cfg.seed)
    df = pd.DataFrame(rows)
    df.insert(1, "alpha", df["g1"])
    return df


def cases_frame(run: _Run) -> pd.DataFrame:
    rows = []
    for case in run.cfg.cases:
        p = PAPER[case]
        r0, r1 = p["ratios"]
        for r in run.attacks(p["property"], r0, r1, run.cfg.seed):
            r["case"] = case
            rows.append(r)
    return pd.DataFrame(rows)


def property_weights_frame(run: _Run) -> pd.DataFrame:
    """How big the first-layer weights leaving the property's own indicator feature are, per α
    (victim's models): at α = 0 the feature is 0 in every training row, so those weights get
    no gradient from the data, only from the L2 penalty (which Adam's normalised steps make
    shrink them steadily); at α = 1 it is the constant 1 and behaves like a second bias. A
    white-box attack can read this directly."""
    rows = []
    for (prop, role, a, b), pop in sorted(run.cache.items()):
        feature = PROPERTIES[prop][0]
        names = pop.meta.get("feature_names", [])
        if role != "victim" or feature not in names:
            continue
        norms = np.linalg.norm(np.asarray(pop.weights[0], dtype=float), axis=2)  # (m, d_0)
        k = names.index(feature)
        rows.append(
            {
                "property": prop,
                "alpha": a,
                "b": b,
                "feature": feature,
                "mean_norm": float(norms[:, k].mean()),
                "sd_norm": float(norms[:, k].std()),
                "median_norm_other_features": float(np.median(np.delete(norms, k, axis=1))),
            }
        )
    return pd.DataFrame(rows)


def regression_frame(run: _Run) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train the ratio regressor on the adversary's G1 populations at every other α (and the
    G0 population at 0.5), predict α for every victim model."""
    from distprivacy.inference.attacks import RatioRegressor

    cfg = run.cfg
    alphas = sorted(set(cfg.alphas) | {cfg.g0_ratio})
    seen = alphas[::2] if len(alphas) > 2 else alphas
    preds, summary = [], []
    for prop in cfg.properties:
        train = [run.pop(prop, "adversary", a, 0 if a == cfg.g0_ratio else 1) for a in seen]
        run.progress(f"ratio regression {prop}")
        reg = RatioRegressor(epochs=cfg.pin_epochs, random_state=cfg.seed).fit(train)
        for a in alphas:
            vic = run.pop(prop, "victim", a, 0 if a == cfg.g0_ratio else 1)
            p = reg.predict(vic)
            preds.append(
                pd.DataFrame({"property": prop, "alpha": a, "seen": a in seen, "prediction": p})
            )
            summary.append(
                {
                    "property": prop,
                    "alpha": a,
                    "seen_in_training": a in seen,
                    "mse": float(np.mean((p - a) ** 2)),
                    "mean_prediction": float(np.mean(p)),
                    "sd_prediction": float(np.std(p)),
                }
            )
    return pd.DataFrame(summary), pd.concat(preds, ignore_index=True)


def defence_frame(run: _Run) -> tuple[pd.DataFrame, dict[str, str], dict[str, Any]]:
    from distprivacy.inference.output_defence import (
        OutputStatistic,
        calibrate_defences,
        evaluate_defences,
        fit_output_model,
    )

    cfg = run.cfg
    prop, a = cfg.defence_property, cfg.defence_alpha
    adv, vic = run.pair(prop, cfg.g0_ratio, a)
    half = [p.n_models // 2 for p in vic]
    model_pops = tuple(p.subset(np.arange(h)) for p, h in zip(vic, half, strict=True))
    released = tuple(p.subset(np.arange(h, p.n_models)) for p, h in zip(vic, half, strict=True))
    gen = check_random_state(np.random.SeedSequence([cfg.seed, 11]), secure=False)
    test = run.game.splits.victim_test
    q_rows = test[gen.permutation(test.size)[: cfg.query_size]]
    stat = OutputStatistic(run.game.X[q_rows])
    labels = run.game.y[q_rows].astype(int)
    run.progress("calibrating the defences")
    model = fit_output_model(*model_pops, stat)
    cals, skipped = calibrate_defences(model, list(cfg.epsilons), cfg.delta, cfg.mechanisms)
    defences: dict[str, Any] = {"none": None}
    defences.update({f"{c.mechanism} ε={c.epsilon:g}": c for c in cals})
    run.progress("attacking the defended outputs")
    df = evaluate_defences(adv, released, stat, labels, defences, random_state=cfg.seed)
    info = {"property": prop, "g0": cfg.g0_ratio, "g1": a, "query_size": cfg.query_size}
    return df, skipped, info


def run(
    out_dir: str | Path,
    *,
    quick: bool,
    seed: int,
    data_dir: str | None,
    progress: Callable[[str], None],
    reuse: bool = True,
    config: Config | None = None,
    command: str | None = None,
) -> dict[str, Any]:
    """Run the reproduction, writing CSVs, PNGs, the populations and ``report.md`` into
    ``out_dir``.

    Parameters
    ----------
    quick : bool
        :meth:`Config.quick` (seconds) instead of the defaults.
    seed : int
        Seeds the splits, every population, test set, attack and noise draw.
    data_dir : str or None
        Directory with ``adult.data`` / ``adult.test`` (None: fetched and cached).
    reuse : bool
        Load saved populations with matching settings instead of retraining.
    config : Config, optional
        Overrides ``quick`` / ``seed``.
    command : str, optional
        The command line shown in the report.

    Returns
    -------
    dict with ``report`` (path), ``timings`` (seconds per stage and ``total``) and ``frames``.
    """
    from distprivacy.datasets import load_adult

    for module in ("matplotlib", "sklearn"):  # its figures, its meta-classifiers: before any work
        if not has_extra(module):
            raise MissingExtraError("the model-inference reproduction", module)
    t_start = time.perf_counter()
    cfg = (config or (Config.quick(seed) if quick else Config(seed=seed))).validate()
    out = check_output_dir(out_dir)
    remove_stale_temporaries(out / "populations")
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    progress("loading Adult")
    game = load_game_data(load_adult(data_dir), cfg.seed)
    timings["data"] = time.perf_counter() - t0
    runner = _Run(game, cfg, out / "populations", reuse, progress)
    frames: dict[str, Any] = {}
    if cfg.figure1:
        t0 = time.perf_counter()
        frames["figure1"] = figure1_frame(runner)
        timings["figure1"] = time.perf_counter() - t0
    if cfg.cases:
        t0 = time.perf_counter()
        frames["cases"] = cases_frame(runner)
        timings["cases"] = time.perf_counter() - t0
    frames["property_weights"] = property_weights_frame(runner)
    if cfg.regression:
        t0 = time.perf_counter()
        frames["regression"], frames["regression_predictions"] = regression_frame(runner)
        timings["regression"] = time.perf_counter() - t0
    skipped: dict[str, str] = {}
    dinfo: dict[str, Any] = {}
    if cfg.defence:
        t0 = time.perf_counter()
        frames["defence"], skipped, dinfo = defence_frame(runner)
        timings["defence"] = time.perf_counter() - t0
    timings["training (inside the stages above)"] = runner.train_seconds
    command = command or (
        "distprivacy reproduce model-inference --out OUT"
        + (" --quick" if quick and config is None else "")
        + (f" --seed {seed}" if seed else "")
    )
    # Every file is written atomically; the folder is marked INCOMPLETE until manifest.json
    # (the populations are a cache beside the run, saved atomically, not listed).
    with RunFolder(out, command, cache_dirs=("populations",)):
        t0 = time.perf_counter()
        for name, f in frames.items():
            write_csv(f, out / f"{name}.csv", index=False)
        pngs = plot_all(frames, cfg, out)
        timings["plots"] = time.perf_counter() - t0
        timings["total"] = time.perf_counter() - t_start
        header = {
            "command": command,
            "config": dataclasses.asdict(cfg),
            "populations": {"trained": runner.trained, "loaded": runner.loaded},
            "splits": game.splits.sizes(),
            "timings": timings,
            "skipped": skipped,
            "defence": dinfo,
        }
        write_text(out / "run.json", json.dumps(header, indent=2, default=str))
        report = write_text(out / "report.md", build_report(frames, header, pngs))
        write_csv(pd.Series(timings, name="seconds"), out / "timings.csv")
    return {"report": report, "timings": timings, "frames": frames}
