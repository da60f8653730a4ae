"""A statistic kind owns its words and its range (issue 32 item 4): the words of a release
(:func:`distprivacy.wording.released_sentence`) and the ranges of the swamping test
(:mod:`distprivacy.mechanisms._swamped`) ask the statistic, never switch on its kind's name."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import ClassVar

from distprivacy import query as q
from distprivacy.query import Mean, Query, Statistic
from distprivacy.wording import released_sentence

SRC = Path(__file__).resolve().parents[1] / "src" / "distprivacy"


def test_every_kind_says_itself_and_is_found_by_its_name():
    stats = Query.parse("mean:age,sum:capital_gain,count:sex==Female,proportion:income==>50K")
    words = [s.describe() for s in stats.statistics]
    assert words == ["the mean of age", "the sum of capital_gain",
                     "the number of records with sex==Female",
                     "the share of records with income==>50K"]  # fmt: skip
    for s in stats.statistics:
        assert Statistic.from_name(s.name) == s
    assert released_sentence(stats.statistics) == released_sentence(
        [s.name for s in stats.statistics]
    )
    for name in ("F0", "median(x)", "mean(", "mean(a)b", "count(no predicate)"):
        assert Statistic.from_name(name) is None
    assert released_sentence(["F0", "mean(age)"]) == "F0 and the mean of age"


def test_a_new_kind_brings_its_words_and_range_without_editing_wording():
    @dataclasses.dataclass(frozen=True)
    class Share(Mean):
        """A mean of a 0/1 column (a test kind)."""

        kind: ClassVar[str | None] = "sharetest"

        @property
        def name(self) -> str:  # type: ignore[override]
            return f"sharetest({self.column})"

        def describe(self) -> str:
            return f"the share of records whose {self.column} is 1"

        def value_range(self, n: int) -> tuple[float, float] | None:
            return (0.0, 1.0)

    try:
        assert released_sentence(["sharetest(flag)"]) == "the share of records whose flag is 1"
        assert Statistic.from_name("sharetest(flag)") == Share("flag")
        assert Share("flag").value_range(50) == (0.0, 1.0)
    finally:
        q._KINDS.pop("sharetest", None)


def test_no_kind_name_is_switched_on_outside_the_statistics():
    for rel in ("wording.py", "mechanisms/_swamped.py"):
        text = (SRC / rel).read_text(encoding="utf-8")
        for kind in ('"mean"', '"sum"', '"count"', '"proportion"'):
            assert kind not in text, f"{rel} switches on {kind}"
