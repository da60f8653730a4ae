"""How ``calibrate``, ``release`` and ``audit`` print: number formats, the noise in a few
words, the header naming what is protected, and the per-statistic table."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from rich.cells import cell_len
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from distprivacy.commands._settings import Settings
    from distprivacy.mechanisms import Calibration
    from distprivacy.models import FModel

#: Short forms of the long mechanism names, used (with a legend) where a table would not fit.
ABBREVIATIONS = {
    "Wasserstein": "Wass",
    "ApproxWasserstein": "AWass",
    "ApproxWasserstein-Bounded": "AWass-B",
    "GroupDP-L": "GrpDP-L",
    "GroupDP-G": "GrpDP-G",
}

#: The narrowest a folded text column (a statistic's name) may become before a table is
#: rearranged instead.
MIN_TEXT_WIDTH = 12


def short_name(name: str, abbreviate: bool) -> str:
    """A mechanism's name, abbreviated (:data:`ABBREVIATIONS`) when ``abbreviate``."""
    return ABBREVIATIONS.get(name, name) if abbreviate else name


def legend(names: Iterable[str]) -> str | None:
    """The line explaining the abbreviations used for ``names`` (None when none was)."""
    used = dict.fromkeys(n for n in names if n in ABBREVIATIONS)
    if not used:
        return None
    return "Abbreviations: " + "; ".join(f"{ABBREVIATIONS[n]} = {n}" for n in used)


def text_column(table: Table, header: str, **kw: Any) -> None:
    """A column of names or words: wrapped, and a name longer than the column folded onto
    the next line (never cut short with an ellipsis)."""
    table.add_column(header, overflow="fold", **kw)


def name_column(table: Table, header: str, **kw: Any) -> None:
    """A column of short names (mechanisms, attacks): never cut; a layout where one does not
    fit is rejected by :func:`print_fitted` for the next (abbreviated or stacked) one."""
    table.add_column(header, no_wrap=True, **kw)


_ROW_START = tuple("┏┃┡│├└╭╰┌")
_ROW_END = tuple("┓┃┩│┤┘╮╯┐")


def _plain(cell: Any) -> str:
    return Text.from_markup(cell).plain if isinstance(cell, str) else str(cell)


def min_table_width(table: Table) -> int:
    """The narrowest ``table`` can be with every cell whole: per column its longest word
    (its longest line if it never wraps; at most :data:`MIN_TEXT_WIDTH` where long words
    fold), plus padding and borders."""
    total = 0
    for col in table.columns:
        texts = [_plain(col.header), *(_plain(c) for c in col._cells)]
        lines = [ln for t in texts for ln in t.splitlines()] or [""]
        if col.no_wrap:
            need = max(cell_len(ln) for ln in lines)
        else:
            need = max((cell_len(w) for ln in lines for w in ln.split()), default=0)
            if col.overflow == "fold":
                need = min(need, MIN_TEXT_WIDTH)
        total += max(need, col.min_width or 0) + 2
    return total + len(table.columns) + 1


def renders_whole(renderable: RenderableType, width: int) -> bool:
    """Whether ``renderable`` printed ``width`` columns wide keeps every cell whole: wide
    enough for every column (:func:`min_table_width`), and, as rendered, no word cut with an
    ellipsis and no row cropped (it would lose its right border)."""
    if isinstance(renderable, Table) and min_table_width(renderable) > width:
        return False
    console = Console(
        width=width, file=io.StringIO(), color_system=None, force_terminal=False, highlight=False
    )
    console.print(renderable)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    if "…" in text:
        return False
    rows = [ln.rstrip() for ln in text.splitlines() if ln.lstrip().startswith(_ROW_START)]
    return all(r.endswith(_ROW_END) for r in rows)


Layout = Callable[[], Sequence[RenderableType]]


def print_fitted(console: Console, layouts: Sequence[Layout]) -> int:
    """Print the first of ``layouts`` (richest first) whose tables fit the console's width
    with every cell whole (the last one if none does); return its index."""
    index, chosen = 0, ()
    for k, layout in enumerate(layouts):
        index, chosen = k, layout()
        if all(renders_whole(r, console.width) for r in chosen if isinstance(r, Table)):
            break
    for r in chosen:
        console.print(r)
    return index


def column_chunks(make: Callable[[Sequence[int]], Table], count: int, width: int) -> list[Table]:
    """Tables holding the data columns ``0 … count−1`` in consecutive groups, each group as
    large as fits ``width`` (``make(indices)`` builds the table of one group); a column too
    wide even alone gets a table of its own."""
    tables: list[Table] = []
    group: list[int] = []
    for k in range(count):
        if group and not renders_whole(make([*group, k]), width):
            tables.append(make(group))
            group = []
        group.append(k)
    if group:
        tables.append(make(group))
    return tables


def fmt(x: float) -> str:
    """Four significant digits; scientific from 1e5 on."""
    return f"{x:.4g}" if abs(x) < 1e5 else f"{x:.3e}"


def short_theorem(text: str) -> str:
    """'Chen & Ohrimenko 2023, Theorem 4.5 (…)' → 'Thm 4.5'; other sources kept short."""
    head = text.split(" (")[0]
    head = head.replace("Chen & Ohrimenko 2023, ", "").replace("Theorem", "Thm")
    return head.replace("Algorithm", "Alg").replace("Corollary", "Cor")


def noise_summary(c: Calibration) -> str:
    """The noise in a few words: family, scale (or its range) and directions."""
    n = c.noise
    if n.family == "none" or n.scales.size == 0:
        return "none"
    what = "σ" if n.family == "gaussian" else "b"
    d = n.scales.size
    square = n.basis.shape == (n.dim, n.dim)
    dirs = "all coords" if square and np.allclose(n.basis, np.eye(n.dim)) else f"{d} dir."
    if np.allclose(n.scales, n.scales[0]):
        return f"{n.family} {what}={fmt(n.scales[0])} on {dirs}"
    return f"{n.family} {what}∈[{fmt(n.scales.min())}, {fmt(n.scales.max())}] on {dirs}"


def _relative_text(rel: float) -> str:
    return "—" if not np.isfinite(rel) else (f"{rel:.1%}" if rel < 10 else f"{rel:.3g}×")


def per_statistic_tables(
    cals: list[Calibration], width: int, abbreviate: bool = False
) -> list[Table]:
    """Noise SD per statistic and mechanism, with the relative error (SD / |typical value|):
    one table, or the mechanisms' columns spread over several stacked tables where one would
    not fit ``width``."""
    title = "Noise per statistic: SD (relative error = SD / |typical value|)"

    def make(group: Sequence[int]) -> Table:
        table = Table(title=title)
        text_column(table, "statistic")
        for j in group:
            table.add_column(short_name(cals[j].mechanism, abbreviate), justify="right")
        for k, name in enumerate(cals[0].statistic_names):
            cells = [
                f"{fmt(float(cals[j].noise_sd[k]))} "
                f"({_relative_text(float(cals[j].relative_error[k]))})"
                for j in group
            ]
            table.add_row(name, *cells)
        return table

    tables = column_chunks(make, len(cals), width)
    for k, t in enumerate(tables[1:], 2):
        t.title = f"{title}, part {k} of {len(tables)}"
    if len(tables) > 1:
        tables[0].title = f"{title}, part 1 of {len(tables)}"
    return tables


def print_header(console: Console, model: FModel, info: dict[str, Any], s: Settings) -> None:
    """What is protected (or the model file), the statistics and the privacy goal."""
    if "spec" in info:
        sp = info["spec"]
        console.print(
            f"[bold]Protecting[/] {sp['property']} at p ∈ {sp['values']} (counts {sp['counts']} "
            f"of n={sp['n']}); {len(sp['pairs'])} ordered pair(s) in Ψ; data: {info['data']}; "
            f"model: {info['modeling']}"
        )
    else:
        console.print(f"[bold]Model file[/] {info['model_file']}")
    console.print(f"Statistics: {', '.join(model.statistic_names_)}")
    if s.target_mu is not None:
        goal = f"target μ = {s.target_mu:g} (δ = {s.delta:g} for the reported ε)"
    elif s.max_attack_accuracy is not None:
        goal = (
            f"target: no attacker above {s.max_attack_accuracy:g} accuracy "
            f"(δ = {s.delta:g} for the reported ε)"
        )
    else:
        goal = f"ε = {s.epsilon:g}, δ = {s.delta:g}"
    cov = "" if s.rule == "classic" else f", covariances: {s.covariances}"
    console.print(f"{goal}, calibration rule: {s.rule}{cov}")


def print_not_applicable(console: Console, skipped: dict[str, str]) -> None:
    """The mechanisms left out, each with its reason."""
    if skipped:
        console.print("[bold]Not applicable[/]")
        for reason in skipped.values():
            console.print(f"  {reason}", markup=False)  # e.g. "pip install '…[optimal]'"


def model_dict(model: FModel) -> dict[str, Any]:
    """The fitted model's θ, means, covariances and pairs, for --json output."""
    return {
        "method": model.method_,
        "thetas": [model.theta_label(t) for t in range(len(model.thetas_))],
        "means": model.means_.tolist(),
        "covariances": model.covariances_.tolist(),
        "pairs": [[model.theta_label(i), model.theta_label(j)] for i, j in model.pair_indices_],
    }


def spec_of(model: Any, plan_spec: dict[str, Any] | None = None) -> Any:
    """The protection spec a calibration was made for: the model's, or a plan's (rebuilt)."""
    spec = getattr(model, "spec_", None)
    if spec is None and plan_spec:
        from distprivacy.spec import ProtectionSpec

        spec = ProtectionSpec(
            plan_spec["property"],
            n=int(plan_spec["n"]),
            values=plan_spec["values"],
            pairs=[tuple(x) for x in plan_spec["pairs"]],
        )
    return spec


def print_statement(console: Console, text: str) -> None:
    """The words a steward signs, first, in bold."""
    console.print(f"[bold]{text}[/]")


def print_columns(
    console: Console,
    title: str,
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    groups: Sequence[Sequence[int]],
    left: Sequence[int] = (),
) -> None:
    """Rows whose first cell names them (``headers[0]``), on one table if it fits the
    console, else stacked: one table per group of column indices, each repeating the name
    column. Numbers are right-aligned (the columns ``left`` left-aligned); a name too long
    for its column folds onto the next line."""

    def make(cols: Sequence[int], part: str = "") -> Table:
        table = Table(title=title + part)
        text_column(table, headers[0])
        for c in cols:
            table.add_column(headers[c], justify="left" if c in left else "right")
        for row in rows:
            table.add_row(row[0], *(row[c] for c in cols))
        return table

    n = len(groups)
    print_fitted(
        console,
        [
            lambda: [make(range(1, len(headers)))],
            lambda: [make(g, f" ({k} of {n})") for k, g in enumerate(groups, 1)],
        ],
    )


# --------------------------------------------------------------------------------------------
# Noise against the statistic's spread; post-processing into the statistic's range
# --------------------------------------------------------------------------------------------


def swamped_summary(cal: Calibration) -> str | None:
    """The swamped statistics in short: "every statistic (1.4× to 2.3×)" when all are
    (:mod:`distprivacy.mechanisms._swamped` decides which are)."""
    from distprivacy.mechanisms._swamped import item_text, swamped_items

    items = swamped_items(cal)
    if not items:
        return None
    if len(items) < len(cal.statistic_names) or any(note for *_, note in items):
        return ", ".join(item_text(*item) for item in items)
    r = [x for _, x, _ in items]
    return f"every statistic ({min(r):.3g}× to {max(r):.3g}×)"


def range_text(r: tuple[float, float]) -> str:
    return f"[{r[0]:g}, {r[1]:g}]"


@dataclass(frozen=True)
class Clip:
    """Released values post-processed into their statistics' ranges.

    Attributes
    ----------
    values : ndarray
        What is published: clipped (a proportion into [0, 1], a count into [0, n]) when
        ``enabled``, else the raw noisy values.
    ranges : list of (low, high) or None
        Each statistic's range (:func:`distprivacy.mechanisms._swamped.statistic_ranges`).
    enabled : bool
        Whether clipping was asked for (``release`` clips unless ``--no-clip``).
    moved : list of int
        The statistics whose value was clipped.
    outside : list of int
        With clipping off, the statistics whose raw value lies outside its range.
    """

    values: np.ndarray
    ranges: list[tuple[float, float] | None]
    enabled: bool
    moved: list[int] = field(default_factory=list)
    outside: list[int] = field(default_factory=list)


def clip_release(values: np.ndarray, cal: Calibration, enabled: bool = True) -> Clip:
    """Post-process released ``values`` into their statistics' ranges (post-processing a
    release keeps its guarantee), or only note the values outside them (``enabled`` False)."""
    raw = np.asarray(values, dtype=float).reshape(-1)
    from distprivacy.mechanisms._swamped import statistic_ranges

    ranges = statistic_ranges(cal)
    if raw.size != len(ranges):
        return Clip(raw, [None] * raw.size, enabled)
    out = np.clip(raw, *np.array([r if r else (-np.inf, np.inf) for r in ranges]).T)
    changed = [k for k in range(raw.size) if out[k] != raw[k]]
    if enabled:
        return Clip(out, ranges, True, moved=changed)
    return Clip(raw, ranges, False, outside=changed)
