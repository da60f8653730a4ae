"""Encoding a table into the numeric features small models train on.

:class:`TabularEncoder` standardises numeric columns, maps binary columns to 0/1 and one-hot
encodes categorical ones, with categories in sorted order (deterministic). It is fitted once on
the whole pool both parties may use (victim + adversary data: the public distribution D of
Suri & Evans §2), so that every model of a game sees the same encoding.

:func:`adult_encoder` gives the 42 features of Suri & Evans' Census models (Appendix A.1:
"after converting categorical data to one-hot features, the dataset reduces to 42-feature
vectors"): 5 standardised numeric columns (age, education_num, capital_gain, capital_loss,
hours_per_week), 3 binary ones (sex = Female, race = White, native_country = United-States)
and one-hot workclass (7), marital_status (7), occupation (14) and relationship (6) — 42 on the
cleaned Adult data. ``fnlwgt`` (a sampling weight) and ``education`` (the same information as
``education_num``) are left out. Which columns the authors kept is our reading: the paper gives
only the count 42, and this is the choice of columns that yields it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from distprivacy.exceptions import DistPrivacyError

__all__ = ["ADULT_LABEL", "TabularEncoder", "adult_encoder", "binary_labels"]

#: The Adult task: income above $50K is label 1.
ADULT_LABEL: tuple[str, str] = ("income", ">50K")


def binary_labels(data: pd.DataFrame, column: str, positive: object) -> np.ndarray:
    """0/1 labels: 1 where ``data[column] == positive`` (int8)."""
    if column not in data.columns:
        raise DistPrivacyError(
            f"label column {column!r} is not in the data; available: "
            f"{', '.join(map(str, data.columns))}"
        )
    col = data[column]
    if col.isna().any():
        raise DistPrivacyError(f"label column {column!r} has missing values; drop those rows first")
    if not (col == positive).any():
        raise DistPrivacyError(f"no row has {column} == {positive!r}; check the positive label")
    return (col == positive).to_numpy().astype(np.int8)


@dataclass
class TabularEncoder:
    """Numeric features from a data frame: standardise, binarise, one-hot (sklearn style).

    Parameters
    ----------
    numeric
        Columns standardised to mean 0 and standard deviation 1 (fitted on the data passed to
        :meth:`fit`; a constant column is only centred).
    binary
        ``{column: value}``: the feature is 1 where the column equals ``value``.
    onehot
        Columns one-hot encoded over the categories seen by :meth:`fit`, in sorted order.

    Attributes
    ----------
    feature_names_ : list of str
        Names of the output features, in order (``col``, ``col==value``).
    means_, scales_ : dict
        Standardisation of each numeric column.
    categories_ : dict
        Sorted categories of each one-hot column.
    """

    numeric: Sequence[str] = ()
    binary: Mapping[str, object] = field(default_factory=dict)
    onehot: Sequence[str] = ()

    def _check_columns(self, data: pd.DataFrame) -> None:
        if not isinstance(data, pd.DataFrame):
            raise DistPrivacyError(f"expected a pandas DataFrame, got {type(data).__name__}")
        needed = [*self.numeric, *self.binary, *self.onehot]
        missing = [c for c in needed if c not in data.columns]
        if missing:
            raise DistPrivacyError(
                f"column(s) {', '.join(missing)} missing from the data; the encoder needs "
                f"{', '.join(needed)}"
            )
        bad = [c for c in needed if data[c].isna().any()]
        if bad:
            raise DistPrivacyError(
                f"column(s) {', '.join(bad)} have missing values; drop or impute them first"
            )

    def fit(self, data: pd.DataFrame) -> TabularEncoder:
        """Learn the standardisation and the categories from ``data`` (the whole pool)."""
        if not (self.numeric or self.binary or self.onehot):
            raise DistPrivacyError(
                "the encoder has no columns; name numeric, binary or onehot ones"
            )
        self._check_columns(data)
        self.means_: dict[str, float] = {}
        self.scales_: dict[str, float] = {}
        for c in self.numeric:
            if not pd.api.types.is_numeric_dtype(data[c]):
                raise DistPrivacyError(
                    f"numeric column {c!r} holds non-numbers; one-hot it instead"
                )
            v = data[c].to_numpy(dtype=np.float64)
            sd = float(v.std())
            self.means_[c] = float(v.mean())
            self.scales_[c] = sd if sd > 0 else 1.0
        self.categories_: dict[str, list] = {
            c: sorted(data[c].unique().tolist(), key=str) for c in self.onehot
        }
        names = list(self.numeric)
        names += [f"{c}=={v}" for c, v in self.binary.items()]
        names += [f"{c}=={v}" for c in self.onehot for v in self.categories_[c]]
        self.feature_names_: list[str] = names
        return self

    def transform(self, data: pd.DataFrame) -> np.ndarray:
        """Encode ``data`` into a float32 array ``(rows, len(feature_names_))``."""
        if not hasattr(self, "feature_names_"):
            raise DistPrivacyError("the encoder is not fitted; call fit(pool) first")
        self._check_columns(data)
        cols = [
            (data[c].to_numpy(dtype=np.float64) - self.means_[c]) / self.scales_[c]
            for c in self.numeric
        ]
        cols += [(data[c] == v).to_numpy(dtype=np.float64) for c, v in self.binary.items()]
        for c in self.onehot:
            cats = self.categories_[c]
            unseen = set(data[c].unique().tolist()) - set(cats)
            if unseen:
                raise DistPrivacyError(
                    f"column {c!r} has categories {sorted(map(str, unseen))} not seen when "
                    "fitting; fit the encoder on the whole pool"
                )
            codes = pd.Categorical(data[c], categories=cats).codes
            cols += list(np.eye(len(cats))[codes].T)
        return np.ascontiguousarray(np.column_stack(cols), dtype=np.float32)

    def fit_transform(self, data: pd.DataFrame) -> np.ndarray:
        """:meth:`fit` then :meth:`transform`."""
        return self.fit(data).transform(data)


def adult_encoder() -> TabularEncoder:
    """The (unfitted) 42-feature Census encoding of Suri & Evans (see the module docstring)."""
    return TabularEncoder(
        numeric=("age", "education_num", "capital_gain", "capital_loss", "hours_per_week"),
        binary={"sex": "Female", "race": "White", "native_country": "United-States"},
        onehot=("workclass", "marital_status", "occupation", "relationship"),
    )
