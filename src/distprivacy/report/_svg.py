"""Hand-written SVG line charts for the HTML reports: no plotting library, no script, every
text escaped. A chart is a ``<svg>`` scaled by its ``viewBox`` (it fits any width); its legend
is HTML beside it (:func:`legend_html`), so that it wraps on a phone instead of shrinking."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

import numpy as np

__all__ = [
    "Mark",
    "Series",
    "integer_ticks",
    "label_box",
    "legend_html",
    "line_chart",
    "series_points",
    "style_of",
]

#: Twelve colours any two of which differ by a CIEDE2000 ΔE of at least 20 in normal vision
#: and at least 12 as seen with deuteranopia or protanopia (Machado et al. 2009's simulation),
#: each at least 30 from the white page: chosen by a greedy max–min search over a grid of
#: saturated sRGB colours (normal-vision differences weighted 1/1.6), ordered so that each
#: next colour is the farthest from those before it, and checked by
#: ``tests/report/test_palette.py``. After twelve, the colours repeat with a dash pattern.
PALETTE = (
    "#0069F0", "#FFB400", "#4B3C00", "#009678", "#FF0069", "#B496FF", "#780F3C", "#694B87",
    "#E16900", "#2D96B4", "#0000F0", "#A54B3C",
)  # fmt: skip
#: Dash patterns, cycled after the colours.
DASHES = ("", "6 3", "2 3", "8 3 2 3")

WIDTH, HEIGHT = 600, 360
LEFT, RIGHT, TOP, BOTTOM = 84, 16, 14, 58


@dataclass
class Series:
    """One line: its points (non-finite ones, and non-positive ones on a log axis, are
    skipped), an optional error bar per point (``low``/``high``), a style index, and whether
    it is drawn as steps (a level held until the next point), and whether it is dashed (a
    curve that is not a guarantee: one drawn over it stays visible)."""

    label: str
    x: Sequence[float]
    y: Sequence[float]
    style: int = 0
    low: Sequence[float] | None = None
    high: Sequence[float] | None = None
    markers: bool = True
    line: bool = True
    step: bool = False
    dashed: bool = False


@dataclass
class Mark:
    """A point to ring and name (the chosen calibration)."""

    x: float
    y: float
    text: str


@dataclass
class _Axis:
    lo: float
    hi: float
    log: bool
    a: float  # pixel of lo
    b: float  # pixel of hi
    ticks: list[float] = field(default_factory=list)

    def __call__(self, v: float) -> float:
        if self.log:
            t = (math.log10(v) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        else:
            t = (v - self.lo) / (self.hi - self.lo)
        return self.a + t * (self.b - self.a)


def style_of(k: int) -> tuple[str, str]:
    """Colour and dash pattern of style ``k``."""
    return PALETTE[k % len(PALETTE)], DASHES[(k // len(PALETTE)) % len(DASHES)]


def _num(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def tick_label(v: float) -> str:
    """A tick's text: 0.001, 0.5, 10, 1e+04 → short and exact enough."""
    if v == 0:
        return "0"
    a = abs(v)
    if 1e-2 <= a < 1e4:  # at most four characters for decades: a phone's axis is narrow
        return f"{v:.6g}"
    from distprivacy.report._html import power_of_ten

    m, e = f"{v:.0e}".split("e")
    return power_of_ten(m, int(e))


def integer_ticks(last: float, first: float = 1.0, most: int = 8) -> list[float]:
    """Whole-number ticks from ``first`` to ``last`` (at most ``most``, evenly stepped): the
    axis of a count (release numbers) never shows 1.5."""
    lo, hi = math.ceil(first), math.floor(last)
    if hi < lo:
        return [float(lo)]
    step = max(1, math.ceil((hi - lo + 1) / most))
    return [float(t) for t in range(lo, hi + 1, step)]


#: Font sizes (px of the 600 × 360 view box) used to keep a label's box clear of the lines:
#: the largest the stylesheet sets (a phone's).
_FONT = {"mark": 21.0, "note": 20.0}
#: A character's average advance, as a share of the font size.
_ADVANCE = 0.58


def label_box(x: float, y: float, text: str, anchor: str, kind: str) -> tuple[float, ...]:
    """The box (x0, y0, x1, y1) a label at (x, y) — its baseline — takes, estimated
    generously for the largest font the stylesheet gives it."""
    size = _FONT[kind]
    w = len(text) * size * _ADVANCE
    x0 = x if anchor == "start" else x - w if anchor == "end" else x - w / 2
    return (x0, y - size * 0.85, x0 + w, y + size * 0.25)


def _crosses(box: tuple[float, ...], a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether the segment a–b meets the box (Liang–Barsky clipping)."""
    x0, y0, x1, y1 = box
    t0, t1 = 0.0, 1.0
    dx, dy = b[0] - a[0], b[1] - a[1]
    for p, q in ((-dx, a[0] - x0), (dx, x1 - a[0]), (-dy, a[1] - y0), (dy, y1 - a[1])):
        if p == 0:
            if q < 0:
                return False
            continue
        t = q / p
        if p < 0:
            t0 = max(t0, t)
        else:
            t1 = min(t1, t)
        if t0 > t1:
            return False
    return True


def _overlaps(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


#: Where a point's label may go, (dx, dy) from the point to the label's baseline, nearest
#: first (then twice, three and four and a half times as far).
_AROUND = ((12, -12, "start"), (-12, -12, "end"), (12, 26, "start"), (-12, 26, "end"),
           (0, -18, "middle"), (0, 34, "middle"))  # fmt: skip


class _Placer:
    """Puts labels where they cross no line, no point and no other label, inside the plot."""

    def __init__(self, lines: list[list[tuple[float, float]]]) -> None:
        self.segments = [(p, q) for pts in lines for p, q in itertools.pairwise(pts)]
        self.points = [p for pts in lines for p in pts]
        self.boxes: list[tuple[float, ...]] = []
        self.last_cost: float = 0.0

    def cost(self, box: tuple[float, ...]) -> int:
        inside = LEFT <= box[0] and box[2] <= WIDTH - RIGHT and TOP <= box[1]
        inside = inside and box[3] <= HEIGHT - BOTTOM
        hits = sum(_crosses(box, a, b) for a, b in self.segments)
        pad = 4.0
        hits += sum(
            box[0] - pad <= x <= box[2] + pad and box[1] - pad <= y <= box[3] + pad
            for x, y in self.points
        )
        hits += sum(_overlaps(box, b) for b in self.boxes)
        return hits + (0 if inside else 1000)

    def place(
        self, text: str, kind: str, candidates: Sequence[tuple[float, float, str]]
    ) -> tuple[float, float, str]:
        """The first candidate (x, y, anchor) whose box is clear, else the least crowded."""
        best, best_cost = candidates[0], math.inf
        for x, y, anchor in candidates:
            c = self.cost(label_box(x, y, text, anchor, kind))
            if c < best_cost:
                best, best_cost = (x, y, anchor), c
            if c == 0:
                break
        self.last_cost = best_cost
        self.boxes.append(label_box(*best[:2], text, best[2], kind))
        return best


def _leader(px: float, py: float, box: tuple[float, ...]) -> str:
    """A thin line from a ring to its label when the label had to move away from it (its
    box more than 30 px from the point): from the ring's edge to the box's nearest point."""
    x0, y0, x1, y1 = box
    # The box as drawn at laptop size is about two thirds of the estimate: aim at its middle
    # height and at the side facing the point.
    qx = min(max(px, x0), x1)
    qy = min(max(py, y0 + (y1 - y0) * 0.3), y1 - (y1 - y0) * 0.3)
    dist = math.hypot(qx - px, qy - py)
    if dist <= 30:
        return ""
    sx, sy = px + (qx - px) * 10 / dist, py + (qy - py) * 10 / dist
    return (
        f'<line x1="{_num(sx)}" y1="{_num(sy)}" x2="{_num(qx)}" y2="{_num(qy)}" '
        'stroke="#000" stroke-width="1" class="leader"/>'
    )


def _error_bars(s: Series, X: Any, Y: Any) -> list[tuple[tuple[float, float], ...]]:
    """The vertical segments of a series' error bars, in pixels."""
    if s.low is None or s.high is None:
        return []
    out = []
    for a, b, lo, hi in zip(s.x, s.y, s.low, s.high, strict=True):
        if _ok(a, X.log) and _ok(b, Y.log) and _ok(lo, Y.log) and _ok(hi, Y.log):
            x, y0, y1 = X(a), Y(lo), Y(hi)
            out += [((x, y0), (x, y1)), ((x - 5, y0), (x + 5, y0)), ((x - 5, y1), (x + 5, y1))]
    return out


def series_points(s: Series, X: Any, Y: Any) -> list[tuple[float, float]]:
    """The pixels a series' line passes through (a step series: level, then jump)."""
    x = np.asarray(s.x, dtype=float)
    y = np.asarray(s.y, dtype=float)
    pts = [(X(a), Y(b)) for a, b in zip(x, y, strict=True) if _ok(a, X.log) and _ok(b, Y.log)]
    if s.step and len(pts) > 1:
        out = [pts[0]]
        for px, py in pts[1:]:
            out += [(px, out[-1][1]), (px, py)]
        return out
    return pts


def _nice_step(span: float, target: int = 5) -> float:
    raw = span / max(target, 1)
    mag = 10 ** math.floor(math.log10(raw))
    for k in (1, 2, 2.5, 5, 10):
        if k * mag >= raw:
            return k * mag
    return 10 * mag


def _range(values: np.ndarray, log: bool, extra: Sequence[float] = ()) -> tuple[float, float]:
    v = np.concatenate([values, np.asarray(extra, dtype=float)])
    v = v[np.isfinite(v) & ((v > 0) if log else True)]
    if v.size == 0:
        return (0.1, 10.0) if log else (0.0, 1.0)
    lo, hi = float(v.min()), float(v.max())
    if log:
        if hi / lo < 1.5:
            lo, hi = lo / 1.25, hi * 1.25
        pad = (math.log10(hi) - math.log10(lo)) * 0.06
        return 10 ** (math.log10(lo) - pad), 10 ** (math.log10(hi) + pad)
    if hi - lo < 1e-12 * max(1.0, abs(hi)):
        lo, hi = lo - max(abs(lo) * 0.1, 0.5), hi + max(abs(hi) * 0.1, 0.5)
    pad = (hi - lo) * 0.06
    return lo - pad, hi + pad


def _ticks(lo: float, hi: float, log: bool) -> list[float]:
    if log:
        a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
        decades = [10.0**k for k in range(a, b + 1)]
        inside = [t for t in decades if lo <= t <= hi]
        if len(inside) >= 2:
            step = max(1, math.ceil(len(inside) / 7))
            return inside[::step]
        fine = [m * d for d in decades for m in (1, 2, 5)]
        inside = [t for t in fine if lo <= t <= hi]
        if len(inside) >= 2:
            return inside
        return [lo, hi]
    step = _nice_step(hi - lo)
    start = math.ceil(lo / step) * step
    out = []
    t = start
    while t <= hi + 1e-12 * step:
        out.append(0.0 if abs(t) < 1e-12 * step else t)
        t += step
    return out


def line_chart(
    series: Sequence[Series],
    *,
    fig_id: str,
    title: str,
    xlabel: str,
    ylabel: str,
    xlog: bool = True,
    ylog: bool = False,
    marks: Sequence[Mark] = (),
    hlines: Sequence[tuple[float, str]] = (),
    ylim: tuple[float, float] | None = None,
    xlim: tuple[float, float] | None = None,
    xticks: Sequence[float] | None = None,
) -> str:
    """An ``<svg>`` line chart (title as its ``<title>``, axis labels, ticks, grid).

    Parameters
    ----------
    series : sequence of Series
    fig_id : str
        A unique id (the chart's ``<title>`` gets ``fig_id + "-title"``).
    title, xlabel, ylabel : str
        Plain text (escaped here).
    xlog, ylog : bool
        Logarithmic axes.
    marks : sequence of Mark
        Points ringed and named.
    hlines : sequence of (y, text)
        Dashed horizontal reference lines (a budget, a coin flip).
    ylim, xlim : (low, high), optional
        The y and x ranges (else from the data).
    xticks : sequence of float, optional
        The x ticks (else chosen for the range), e.g. whole numbers for numbered items.
    """
    xs = np.concatenate([np.asarray(s.x, dtype=float) for s in series] or [np.zeros(0)])
    ys = [np.asarray(s.y, dtype=float) for s in series]
    for s in series:
        if s.low is not None:
            ys.append(np.asarray(s.low, dtype=float))
        if s.high is not None:
            ys.append(np.asarray(s.high, dtype=float))
    yall = np.concatenate(ys or [np.zeros(0)])
    x0, x1 = xlim if xlim is not None else _range(xs, xlog, [m.x for m in marks])
    y0, y1 = (
        ylim
        if ylim is not None
        else _range(yall, ylog, [m.y for m in marks] + [h for h, _ in hlines])
    )
    X = _Axis(x0, x1, xlog, LEFT, WIDTH - RIGHT)
    Y = _Axis(y0, y1, ylog, HEIGHT - BOTTOM, TOP)
    X.ticks = list(xticks) if xticks is not None else _ticks(x0, x1, xlog)
    Y.ticks = _ticks(y0, y1, ylog)
    tid = f"{fig_id}-title"
    out = [
        f'<svg class="chart" id="{escape(fig_id)}" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-labelledby="{escape(tid)}" '
        'xmlns="http://www.w3.org/2000/svg">',
        f'<title id="{escape(tid)}">{escape(title)}</title>',
        f'<rect x="{LEFT}" y="{TOP}" width="{WIDTH - LEFT - RIGHT}" '
        f'height="{HEIGHT - TOP - BOTTOM}" fill="#fff" stroke="#888"/>',
    ]
    for t in X.ticks:
        px = _num(X(t))
        out.append(
            f'<line x1="{px}" y1="{TOP}" x2="{px}" y2="{HEIGHT - BOTTOM}" stroke="#e3e3e3"/>'
            f'<text x="{px}" y="{HEIGHT - BOTTOM + 20}" text-anchor="middle" '
            f'class="tick">{escape(tick_label(t))}</text>'
        )
    for t in Y.ticks:
        py = _num(Y(t))
        out.append(
            f'<line x1="{LEFT}" y1="{py}" x2="{WIDTH - RIGHT}" y2="{py}" stroke="#e3e3e3"/>'
            f'<text x="{LEFT - 7}" y="{py}" dy="0.35em" text-anchor="end" '
            f'class="tick">{escape(tick_label(t))}</text>'
        )
    lines = [series_points(s, X, Y) for s in series if s.line]
    for s in series:
        out.extend(_series_svg(s, X, Y))
    placer = _Placer(lines)
    for s in series:  # points and error bars are in the way too
        if not s.line:
            placer.points += series_points(s, X, Y)
        placer.segments += _error_bars(s, X, Y)
    shown = [(h, text) for h, text in hlines if y0 <= h <= y1 and (h > 0 or not ylog)]
    for h, _ in shown:  # the reference lines are obstacles for every label
        placer.segments.append(((LEFT, Y(h)), (WIDTH - RIGHT, Y(h))))
    for m in marks:  # the chosen point's label first: it matters most
        if not (_ok(m.x, xlog) and _ok(m.y, ylog)):
            continue
        px, py = X(m.x), Y(m.y)
        placer.points.append((px, py))
        cands = [(px + dx * r, py + dy * r, anchor) for r in (1.0, 2.0, 3.2, 4.5)
                 for dx, dy, anchor in _AROUND]  # fmt: skip
        tx, ty, anchor = placer.place(m.text, "mark", cands)
        out.append(
            f'<circle cx="{_num(px)}" cy="{_num(py)}" r="9" fill="none" stroke="#000" '
            f'stroke-width="2.2"/>{_leader(px, py, label_box(tx, ty, m.text, anchor, "mark"))}'
            f'<text x="{_num(tx)}" y="{_num(ty)}" '
            f'text-anchor="{anchor}" class="mark">{escape(m.text)}</text>'
        )
    for h, text in shown:
        py = Y(h)
        # The right end first, then the left end, then anywhere along the line.
        x_at = [(WIDTH - RIGHT - 6, "end"), (LEFT + 6, "start")]
        x_at += [(float(x), "start") for x in range(LEFT + 14, WIDTH - RIGHT - 40, 12)]
        cands = [(x, py + dy, a) for dy in (-6, 20) for x, a in x_at]
        tx, ty, anchor = placer.place(text, "note", cands)
        # No clear spot anywhere along it (a crowd of error bars): the legend names the line.
        label = (
            f'<text x="{_num(tx)}" y="{_num(ty)}" text-anchor="{anchor}" class="note">'
            f"{escape(text)}</text>"
            if placer.last_cost == 0
            else ""
        )
        out.append(
            f'<line x1="{LEFT}" y1="{_num(py)}" x2="{WIDTH - RIGHT}" y2="{_num(py)}" '
            f'stroke="#555" stroke-dasharray="5 4"/>{label}'
        )
    out.append(
        f'<text x="{(LEFT + WIDTH - RIGHT) / 2:.1f}" y="{HEIGHT - 12}" text-anchor="middle" '
        f'class="axis">{escape(xlabel)}</text>'
        f'<text transform="translate(18 {(TOP + HEIGHT - BOTTOM) / 2:.1f}) rotate(-90)" '
        f'text-anchor="middle" class="axis">{escape(ylabel)}</text>'
    )
    out.append("</svg>")
    return "".join(out)


def _ok(v: float, log: bool) -> bool:
    return math.isfinite(v) and (v > 0 or not log)


def _series_svg(s: Series, X: _Axis, Y: _Axis) -> list[str]:
    colour, dash = style_of(s.style)
    dash = dash or ("6 3" if s.dashed else "")
    x = np.asarray(s.x, dtype=float)
    y = np.asarray(s.y, dtype=float)
    keep = np.array([_ok(a, X.log) and _ok(b, Y.log) for a, b in zip(x, y, strict=True)], bool)
    pts = [(X(a), Y(b)) for a, b in zip(x[keep], y[keep], strict=True)]
    out: list[str] = []
    if not pts:
        return out
    dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
    if s.line and len(pts) > 1:
        d = " ".join(
            f"{'M' if i == 0 else 'L'}{_num(px)} {_num(py)}"
            for i, (px, py) in enumerate(series_points(s, X, Y))
        )
        out.append(
            f'<path d="{d}" fill="none" stroke="{colour}" stroke-width="2"{dash_attr}>'
            f"<title>{escape(s.label)}</title></path>"
        )
    if s.low is not None and s.high is not None:
        lo = np.asarray(s.low, dtype=float)[keep]
        hi = np.asarray(s.high, dtype=float)[keep]
        for (px, _), a, b in zip(pts, lo, hi, strict=True):
            if _ok(a, Y.log) and _ok(b, Y.log):
                ya, yb = _num(Y(a)), _num(Y(b))
                out.append(
                    f'<path d="M{_num(px)} {ya} L{_num(px)} {yb} M{_num(px - 5)} {ya} '
                    f'L{_num(px + 5)} {ya} M{_num(px - 5)} {yb} L{_num(px + 5)} {yb}" '
                    f'stroke="{colour}" stroke-width="1.6" fill="none"/>'
                )
    if s.markers:
        for px, py in pts:
            out.append(
                f'<circle cx="{_num(px)}" cy="{_num(py)}" r="3.4" fill="{colour}" '
                'stroke="#fff" stroke-width="0.8"/>'
            )
    return out


def legend_html(series: Sequence[Series], extra: Sequence[tuple[str, str]] = ()) -> str:
    """The legend as an HTML list (it wraps on narrow screens): a line sample per series,
    then ``extra`` (symbol, text) items such as the ring of the chosen point."""
    items = []
    for s in series:
        colour, dash = style_of(s.style)
        dash = dash or ("6 3" if s.dashed else "")
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        line = (
            f'<line x1="1" y1="6" x2="29" y2="6" stroke="{colour}" stroke-width="2.4"{dash_attr}/>'
            if s.line
            else ""
        )
        dot = f'<circle cx="15" cy="6" r="3.4" fill="{colour}"/>' if s.markers else ""
        items.append(
            f'<li><svg class="swatch" width="30" height="12" viewBox="0 0 30 12" '
            f'aria-hidden="true">{line}{dot}</svg>{escape(s.label)}</li>'
        )
    for symbol, text in extra:
        items.append(f"<li>{symbol}{escape(text)}</li>")
    return '<ul class="legend">' + "".join(items) + "</ul>"


RING = (
    '<svg class="swatch" width="30" height="20" viewBox="0 0 30 20" aria-hidden="true">'
    '<circle cx="15" cy="10" r="8" fill="none" stroke="#000" stroke-width="2.2"/></svg>'
)
DASHED = (
    '<svg class="swatch" width="30" height="12" viewBox="0 0 30 12" aria-hidden="true">'
    '<line x1="1" y1="6" x2="29" y2="6" stroke="#555" stroke-dasharray="5 4"/></svg>'
)
