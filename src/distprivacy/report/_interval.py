"""The noise interval of each released statistic (:func:`distprivacy.intervals.
noise_halfwidths`, where the release itself finds its published intervals)."""

from __future__ import annotations

from distprivacy.intervals import noise_halfwidths

__all__ = ["noise_halfwidths"]
