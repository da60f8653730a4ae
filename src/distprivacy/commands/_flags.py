"""The library's messages name its Python API (`allow_exact=True`, `engine='pandas'`, `n`);
on the command line the same advice is a flag. :func:`to_flags` translates the API terms the
library writes between backquotes into the flags of the command line, for the one place that
prints errors and warnings (:func:`distprivacy.cli.main`).

A backquoted term not in :data:`FLAGS` is left as it is."""

from __future__ import annotations

import re

#: API term (as written between backquotes in a library message) → command-line flag.
FLAGS: dict[str, str] = {
    "allow_exact=True": "--allow-exact",
    "engine='pandas'": "--engine pandas",
    "engine='duckdb'": "--engine duckdb",
    "engine='spark'": "--engine spark",
    "spark_master": "--spark-master",
    "n": "--subset-size",
    "pairs_within": "--pairs-within",
    "pairs": "--pairs",
    "method='auto'": "--modeling auto",
    "method='monte-carlo'": "--modeling monte-carlo",
    "calibration='exact'": "--calibration exact",
    "epsilon=1": "--epsilon 1",
    "delta=0.001": "--delta 0.001",
    "save": "--save",
    "ledger": "--ledger",
    "n_train": "--n-train",
    "n_models": "--n-models",
    "n_query": "--n-query",
    "ratios": "--ratios",
    "force=True": "--force",
    "data=DATA": "--data DATA",
    "features": "--features",
    "epsilon": "--epsilon",
    "mechanism": "--mechanism",
    "release": "--release",
    "release='parameters'": "--release parameters",
    "release='outputs'": "--release outputs",
    "estimator='logistic'": "--estimator logistic",
    "values=[a, b, …]": "--value a,b,…",
    "target=records": "--target DATA.csv",
    "random_state": "--seed",
    "load_adult(path)": "--data DIR",
    "budget_mu=MU": "--budget-mu MU",
    "budget_epsilon=E": "--budget-epsilon E",
    "budget_delta=D": "--budget-delta D",
    "budget=EpsDelta(E, D)": "--budget-epsilon E --budget-delta D",
    "budget=MaxAttackAccuracy(A)": "--budget-accuracy A",
    "values": "--values",
    "secret=NAME": "--secret NAME",
    "same_records_as=NAME": "--same-records-as NAME",
    "independent=True": "--independent",
    "confirm_overlap='reason'": "--confirm-overlap REASON",
    "ledger.release('PLAN', 'DATASET')": "--ledger LEDGER --dataset NAME --plan NAME",
}

_TERM = re.compile(r"`([^`\n]+)`")


def to_flags(message: str) -> str:
    """``message`` with each backquoted API term replaced by its flag (or unquoted)."""
    return _TERM.sub(lambda m: FLAGS.get(m.group(1), m.group(0)), message)
