"""Benchmark of batched training: 1,000 Census MLPs (32, 16, 8) for one distribution.

Run: ``python bench/bench_training.py [--data DIR] [--models 1000] [--n-train 1000]``.

Setting (the defaults of ``distprivacy reproduce model-inference``): the 42 Adult features, the
victim's stratified split, G = "women are 50%" with the label ratio preserved, datasets of
``--n-train`` rows, 40 epochs, minibatches of 200, Adam (lr 1e-3), L2 1e-4 — scikit-learn's
``MLPClassifier`` defaults, whose mathematics the batched trainer reproduces exactly (see
tests/inference/test_inference_training.py::test_one_epoch_matches_sklearn_mlpclassifier).

Prints: seconds (wall and CPU) and models/second of the batched trainer with 1 and 2 threads,
its peak memory (maximum resident set size of the process, which includes the data, pandas and
scikit-learn),
and the same models trained one at a time with scikit-learn's ``MLPClassifier`` (same epochs,
batch size, learning rate, L2; early stopping disabled so every model runs all epochs): a
handful are timed in this run and the time per model is extrapolated to ``--models``. Also the
test accuracy of both, to show the models are equally good.
"""

from __future__ import annotations

import argparse
import platform
import resource
import time
import warnings

import numpy as np

from distprivacy.datasets import load_adult
from distprivacy.inference.features import adult_encoder, binary_labels
from distprivacy.inference.game import sample_datasets, split_game
from distprivacy.inference.training import CENSUS_HIDDEN, train_population
from distprivacy.inference.transformers import RatioTransformer


def max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=None, help="directory holding adult.data and adult.test")
    ap.add_argument("--models", type=int, default=1000, help="models per distribution")
    ap.add_argument("--n-train", type=int, default=1000, help="training rows per model")
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--batch-size", type=int, default=200)
    ap.add_argument("--sklearn-models", type=int, default=10, help="sklearn models to time")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    t0 = time.perf_counter()
    data = load_adult(args.data)
    X = adult_encoder().fit_transform(data)
    y = binary_labels(data, "income", ">50K")
    splits = split_game(data, property=["sex", "race"], label="income", random_state=args.seed)
    g = RatioTransformer("sex==Female", 0.5, label="income==>50K")
    idx = sample_datasets(
        data, g, n=args.n_train, n_datasets=args.models, rows=splits.victim_train, random_state=1
    )
    setup = time.perf_counter() - t0
    X_test, y_test = X[splits.victim_test], y[splits.victim_test]
    settings = {"hidden": CENSUS_HIDDEN, "epochs": args.epochs, "batch_size": args.batch_size,
                "lr": 1e-3, "l2": 1e-4}  # fmt: skip

    print(f"# {platform.node() or 'machine'}: {platform.processor() or platform.machine()}, "
          f"Python {platform.python_version()}, NumPy {np.__version__}")  # fmt: skip
    print(f"setting: {args.models} MLPs {CENSUS_HIDDEN} on the 42 Adult features, "
          f"{args.n_train} rows each (sex==Female at 0.5, label ratio kept), "
          f"{args.epochs} epochs, batch {args.batch_size}, Adam lr 1e-3, L2 1e-4")  # fmt: skip
    print(f"setup (load, encode, split, sample {args.models} datasets): {setup:.2f} s")

    timings = {}
    pop = None
    for jobs in (1, 2):
        t, c = time.perf_counter(), time.process_time()
        pop = train_population(X, y, indices=idx, random_state=2, n_jobs=jobs, **settings)
        timings[jobs] = time.perf_counter() - t
        cpu = time.process_time() - c
        print(f"batched NumPy, n_jobs={jobs}: {timings[jobs]:7.2f} s wall "
              f"({cpu:6.2f} s CPU)  {args.models / timings[jobs]:8.1f} models/s")  # fmt: skip
    acc_batched = pop.accuracy(X_test, y_test)
    peak = max_rss_mib()

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    k = min(args.sklearn_models, args.models)
    sk_acc = []
    t, c = time.perf_counter(), time.process_time()
    for j in range(k):
        clf = MLPClassifier(
            hidden_layer_sizes=CENSUS_HIDDEN, solver="adam", alpha=1e-4,
            batch_size=args.batch_size, learning_rate_init=1e-3, max_iter=args.epochs,
            tol=0.0, n_iter_no_change=args.epochs + 1, shuffle=True, random_state=j,
        )  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf.fit(X[idx[j]], y[idx[j]])
        assert clf.n_iter_ == args.epochs
        sk_acc.append(clf.score(X_test, y_test))
    sk_per_model = (time.perf_counter() - t) / k
    sk_cpu = (time.process_time() - c) / k
    sk_total = sk_per_model * args.models
    best = min(timings.values())
    print(f"sklearn MLPClassifier one at a time ({k} timed in this run, extrapolated to "
          f"{args.models}; dtype {clf.coefs_[0].dtype}): {sk_per_model:.3f} s/model -> "
          f"{sk_total:7.1f} s wall ({sk_cpu * args.models:6.1f} s CPU)  "
          f"{1 / sk_per_model:8.1f} models/s")  # fmt: skip
    print(f"speed-up of batched training (best of n_jobs=1,2) over one-at-a-time sklearn: "
          f"{sk_total / best:.1f}x")  # fmt: skip

    def summary(a) -> str:
        q = np.percentile(a, [10, 50, 90])
        return f"median {q[1]:.4f} (10th-90th percentile {q[0]:.4f}-{q[2]:.4f})"

    print(f"test accuracy (victim's test split): batched {summary(acc_batched)} over "
          f"{args.models}; sklearn {summary(sk_acc)} over {k}")  # fmt: skip
    print(f"peak memory of the batched runs (max RSS of the process): {peak:.0f} MiB")
    target = best <= 120 and peak < 4096
    print(f"target (1,000 models within 120 s, peak < 4 GiB): {'met' if target else 'NOT met'}")


if __name__ == "__main__":
    main()
