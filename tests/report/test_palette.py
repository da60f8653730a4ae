"""The charts' colours (issue 33, item 3): twelve colours, any two told apart in normal vision
and by a dichromat — the smallest CIEDE2000 difference between two of them, with each colour
as deuteranopia or protanopia shows it (Machado et al. 2009's simulation at severity 1), is at
least 12 (2.3 is a just-noticeable difference; 10 or more reads as a different colour) — and
every colour far from the white page. The colour science is checked against Sharma, Wu &
Dalal's (2005) published CIEDE2000 test pairs."""

from __future__ import annotations

import numpy as np
import pytest
from colour_vision import ciede2000, hex_to_rgb, lab, min_pairwise, simulate

from distprivacy.report._svg import PALETTE, style_of

#: Sharma, Wu & Dalal (2005), Table 1: pairs 1, 7, 13, 17, 25 and 34 with their ΔE00.
SHARMA = [
    ((50.0, 2.6772, -79.7751), (50.0, 0.0, -82.7485), 2.0425),
    ((50.0, 0.0, 0.0), (50.0, -1.0, 2.0), 2.3669),
    ((50.0, 2.4900, -0.0010), (50.0, -2.4900, 0.0011), 7.2195),
    ((50.0, 2.5, 0.0), (73.0, 25.0, -18.0), 27.1492),
    ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387), 1.2644),
    ((2.0776, 0.0795, -1.1350), (0.9033, -0.0636, -0.5514), 0.9082),
]


@pytest.mark.parametrize(("a", "b", "expected"), SHARMA)
def test_ciede2000_matches_the_published_pairs(a, b, expected):
    assert ciede2000(np.array(a), np.array(b)) == pytest.approx(expected, abs=1e-4)
    assert ciede2000(np.array(b), np.array(a)) == pytest.approx(expected, abs=1e-4)


def test_dichromat_simulation_keeps_greys_and_merges_red_with_green():
    greys = np.array([[0.0] * 3, [0.5] * 3, [1.0] * 3])
    for kind in ("deuteranopia", "protanopia"):
        assert np.allclose(simulate(greys, kind), simulate(greys, None), atol=2e-3)
        # Pure red and a green of the same lightness are far apart normally, close to a
        # dichromat (the confusion the palette must avoid).
        pair = hex_to_rgb(["#B00000", "#5A7000"])
        normal = ciede2000(*lab(simulate(pair, None)))
        seen = ciede2000(*lab(simulate(pair, kind)))
        assert seen < normal / 2, (kind, normal, seen)


def test_twelve_colours_told_apart_by_dichromats():
    assert len(PALETTE) >= 12 and len(set(PALETTE)) == len(PALETTE)
    assert min_pairwise(list(PALETTE), None)[0] >= 20
    for kind in ("deuteranopia", "protanopia"):
        d, pair = min_pairwise(list(PALETTE), kind)
        assert d >= 12, (kind, d, pair)
    white = np.ones((1, 3))
    for kind in (None, "deuteranopia", "protanopia"):
        page = lab(simulate(white, kind))
        d = ciede2000(lab(simulate(hex_to_rgb(list(PALETTE)), kind)), page)
        assert d.min() >= 30, (kind, d.min())


def test_series_beyond_the_palette_get_a_dash_pattern():
    """Series 13 and on reuse the colours, each with a dash pattern: no two of the first 48
    series look the same."""
    styles = [style_of(k) for k in range(48)]
    assert len(set(styles)) == 48
    assert style_of(0)[1] == "" and style_of(len(PALETTE))[1] != ""
