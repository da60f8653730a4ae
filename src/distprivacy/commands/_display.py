"""How ``calibrate``, ``release`` and ``audit`` print: number formats, the noise in a few
words, the header naming what is protected, and the per-statistic table."""

from __future__ import annotations

import io
import itertools
import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
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


#: Where a statistic's name may break across lines: after an opening bracket, an underscore,
#: a hyphen, a comma, a colon or a space, and before a comparison or a logical operator — never
#: inside a word (``mean(edu`` / ``cation)``).
_BREAK = re.compile(r"(?<=[(_\-,:; ])|(?=[=!<>]=|[<>&|](?!=))")


def name_pieces(name: str) -> list[str]:
    """A statistic's name cut where it may break (:data:`_BREAK`); joined, the pieces give
    the name back."""
    cuts = sorted({m.start() for m in _BREAK.finditer(name)} - {0, len(name)})
    bounds = [0, *cuts, len(name)]
    return [name[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def name_lines(name: str, width: int) -> list[str]:
    """``name`` packed into lines of at most ``width`` cells, broken only between its pieces
    (:func:`name_pieces`); a piece wider than ``width`` (a column squeezed below its
    measure) is cut before a symbol where it has one (``education`` / ``_num)``), else at
    ``width``."""
    lines: list[str] = []
    line = ""
    for piece in name_pieces(name):
        if line and cell_len(line + piece) > width:
            lines.append(line)
            line = ""
        while cell_len(piece) > width > 0:
            cut = max((i for i in range(1, width + 1) if not piece[i].isalnum()), default=width)
            lines.append(piece[:cut])
            piece = piece[cut:]
        line += piece
    return [*lines, line] if line or not lines else lines


class StatName:
    """A statistic's name in a table cell: as narrow as its longest piece, wrapped only
    where :func:`name_pieces` allows (rich would otherwise fold it mid-word)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return self.name

    def min_width(self) -> int:
        """The width of its longest piece: the narrowest column that keeps words whole."""
        return max((cell_len(p.rstrip()) for p in name_pieces(self.name)), default=0)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(self.min_width(), cell_len(self.name))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in name_lines(self.name, options.max_width):
            yield Text(line.rstrip(), no_wrap=True, overflow="fold")


def keep_names_whole(table: Table) -> Table:
    """Give each column holding :class:`StatName` cells a minimum width of its longest piece
    (rich squeezes a column below its cells' measure when a table is too wide); returns
    ``table``."""
    for col in table.columns:
        widths = [c.min_width() for c in col._cells if isinstance(c, StatName)]
        if widths:
            col.min_width = max(col.min_width or 0, *widths)
    return table


def name_column(table: Table, header: str, **kw: Any) -> None:
    """A column of short names (mechanisms, attacks): never cut; a layout where one does not
    fit is rejected by :func:`print_fitted` for the next (abbreviated or stacked) one."""
    table.add_column(header, no_wrap=True, **kw)


_ROW_START = tuple("┏┃┡│├└╭╰┌")
_ROW_END = tuple("┓┃┩│┤┘╮╯┐")


def _plain(cell: Any) -> str:
    return Text.from_markup(cell).plain if isinstance(cell, str) else str(cell)


def _need(col: Any) -> int:
    """The narrowest ``col`` can be with every cell whole."""
    texts = [_plain(col.header), *(_plain(c) for c in col._cells if not isinstance(c, StatName))]
    names = [c.min_width() for c in col._cells if isinstance(c, StatName)]
    lines = [ln for t in texts for ln in t.splitlines()] or [""]
    if col.no_wrap:
        need = max(cell_len(ln) for ln in lines)
    else:
        need = max((cell_len(w) for ln in lines for w in ln.split()), default=0)
        if col.overflow == "fold":
            need = min(need, MIN_TEXT_WIDTH)
    return max(need, *names, col.min_width or 0)


def min_table_width(table: Table) -> int:
    """The narrowest ``table`` can be with every cell whole: per column its longest word
    (its longest line if it never wraps; at most :data:`MIN_TEXT_WIDTH` where long words
    fold), plus padding and borders."""
    borders = len(table.columns) + 1 if table.box is not None else 0
    if table.box is not None and not table.show_edge:
        borders -= 2
    return sum(_need(col) + 2 for col in table.columns) + max(borders, 0)


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
    import numpy as np

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
    import numpy as np

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
            table.add_row(StatName(name), *cells)
        return keep_names_whole(table)

    tables = column_chunks(make, len(cals), width)
    for k, t in enumerate(tables[1:], 2):
        t.title = f"{title}, part {k} of {len(tables)}"
    if len(tables) > 1:
        tables[0].title = f"{title}, part 1 of {len(tables)}"
    return tables


def print_header(
    console: Console, model: FModel, info: dict[str, Any], s: Settings, statistics: bool = True
) -> None:
    """What is protected (or the model file), the statistics (unless ``statistics`` is
    False: a table lists them) and the privacy goal."""
    if "spec" in info:
        sp = info["spec"]
        console.print(
            f"[bold]Protecting[/] {sp['property']} at p ∈ {sp['values']} (counts {sp['counts']} "
            f"of n={sp['n']}); {len(sp['pairs'])} ordered pair(s) in Ψ; data: {info['data']}; "
            f"model: {info['modeling']}"
        )
    else:
        console.print(f"[bold]Model file[/] {info['model_file']}")
    if statistics:
        console.print(f"Statistics: {', '.join(model.statistic_names_)}")
    console.print(goal_text(s))


def print_setting(console: Console, info: dict[str, Any], s: Settings) -> None:
    """The short header (the statement above says what is protected): the data or the model
    file, the model and the privacy goal, in one sentence."""
    src = (
        f"Data: {info['data']}; model: {info['modeling']}"
        if "spec" in info
        else f"Model file: {info['model_file']}"
    )
    console.print(f"{src}; {goal_text(s)}", highlight=False, markup=False)


def goal_text(s: Settings) -> str:
    """The privacy goal and the calibration rule."""
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
    return f"{goal}, calibration rule: {s.rule}{cov}"


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


# --------------------------------------------------------------------------------------------
# calibrate, short: the recommended mechanism and a compact comparison (issue 33, item 4)
# --------------------------------------------------------------------------------------------


def available(name: str) -> bool:
    """Whether the mechanism ``name`` can run in this install (its optional dependencies,
    e.g. OptM-G's cvxpy, are installed)."""
    from distprivacy.exceptions import has_extra
    from distprivacy.mechanisms import MECHANISMS

    cls = MECHANISMS.get(name)
    return cls is not None and all(has_extra(m) for m in cls.extras)


def recommend(cals: Sequence[Calibration], utility: str) -> dict[str, Any] | None:
    """The recommended mechanism: the least noise cost under ``utility`` among the verified
    calibrations that add noise and are available in this install (all that add noise if
    none is verified); what ``release`` uses when no ``--mechanism`` is given.

    Returns
    -------
    dict or None
        ``mechanism``, ``utility``, ``objective``, ``cost`` and ``among`` (which
        calibrations it was chosen from); None when no calibration adds noise.
    """
    usable = [c for c in cals if c.adds_noise and available(c.mechanism)]
    if not usable:
        return None
    ok = [c for c in usable if c.verified]
    among = "verified" if ok else "all (none verified)"
    best = min(ok or usable, key=lambda c: c.utility_cost(utility))
    objective = "least E‖Z‖₂" if utility == "l2" else "least Σ_k Var(Z_k)/s_k², s_k the sampling SD"
    return {
        "mechanism": best.mechanism,
        "utility": utility,
        "objective": objective,
        "cost": best.utility_cost(utility),
        "among": among,
    }


def values_hint(spec: Any) -> str:
    """How to choose ``--values``, with this spec's own pairs (the reports say the same)."""
    from distprivacy.report._pages import values_hint as words

    return words(spec)


def _compact(title: str | None = None) -> Table:
    """A table without side borders: a rule under the header only."""
    return Table(title=title, box=box.SIMPLE_HEAD, show_edge=False, title_justify="left")


def recommended_table(cal: Calibration) -> Table:
    """The recommended mechanism's noise per statistic: SD, and SD / |typical value|."""
    table = _compact()
    table.add_column("statistic")
    table.add_column("noise SD", justify="right")
    table.add_column("SD / typical value", justify="right")
    for name, sd, rel in zip(cal.statistic_names, cal.noise_sd, cal.relative_error, strict=True):
        table.add_row(StatName(name), fmt(float(sd)), _relative_text(float(rel)))
    return keep_names_whole(table)


def comparison_table(
    cals: Sequence[Calibration], chosen: str | None, utility: str, abbreviate: bool = False
) -> Table:
    """Every applicable mechanism on one row, least noise cost first: E‖Z‖₂, the noise
    against the recommended one's, the attack bound and whether the guarantee is verified
    (names abbreviated when ``abbreviate``: :data:`ABBREVIATIONS`)."""
    order = sorted(cals, key=lambda c: c.utility_cost(utility))
    ref = next((c for c in cals if c.mechanism == chosen), None)
    table = _compact()
    name_column(table, "mechanism")
    for col in ("E‖Z‖₂", "×rec.", "max acc."):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("guarantee", no_wrap=True)
    for c in order:
        r = (
            math.nan
            if ref is None or ref.expected_l2_error <= 0
            else c.expected_l2_error / ref.expected_l2_error
        )
        ratio = "—" if not math.isfinite(r) else f"{r:,.0f}" if r >= 100 else f"{r:.3g}"
        table.add_row(
            short_name(c.mechanism, abbreviate) + (" *" if c.mechanism == chosen else ""),
            fmt(c.expected_l2_error),
            ratio,
            f"{c.max_attack_accuracy:.1%}",
            "verified" if c.verified else "assumed",
        )
    return table


def print_short(
    console: Console,
    cals: Sequence[Calibration],
    best: dict[str, Any] | None,
    skipped: dict[str, str],
    spec: Any,
) -> None:
    """``calibrate`` without ``--all``: the recommended mechanism with its noise per
    statistic, a compact comparison of every applicable one, how to choose ``--values``, and
    what ``--all`` adds."""
    cal = next((c for c in cals if best is not None and c.mechanism == best["mechanism"]), None)
    _print_recommended(console, cal, best)
    chosen = None if cal is None else cal.mechanism
    console.print(
        "Compared (* recommended; ×rec.: E‖Z‖₂ over the recommended one's):",
        highlight=False,
    )
    utility = best["utility"] if best else "l2"
    abbreviate = print_fitted(
        console,
        [
            lambda: [comparison_table(cals, chosen, utility)],
            lambda: [comparison_table(cals, chosen, utility, abbreviate=True)],
        ],
    )
    if abbreviate and (words := legend(c.mechanism for c in cals)):
        console.print(words, highlight=False)
    console.print(values_hint(spec), highlight=False)
    notes = sum(len(c.warnings) for c in cals)
    more = [f"{notes} warning{'s' * (notes != 1)}"] if notes else []
    more += [f"{len(skipped)} not applicable ({', '.join(skipped)})"] if skipped else []
    for reason in skipped.values():
        if "pip install" in reason:  # not in this install: say how to get it, even when short
            console.print(reason, markup=False, highlight=False)
    console.print("--all: the full tables" + "".join(f", {m}" for m in more) + ".", highlight=False)


def _print_recommended(
    console: Console, cal: Calibration | None, best: dict[str, Any] | None
) -> None:
    """The recommended mechanism and its noise per statistic (or that none adds noise)."""
    if cal is None or best is None:
        console.print("[bold]No mechanism adds noise here: none is recommended.[/]")
        return
    among = (
        "verified mechanisms" if best["among"] == "verified" else "mechanisms (none is verified)"
    )
    console.print(
        f"[bold]Recommended: {cal.mechanism}[/] (least noise among the {among} "
        "available in this install; release uses it by default). Its noise:",
        highlight=False,
    )
    console.print(recommended_table(cal))
    if (swamped := swamped_summary(cal)) is not None:
        console.print(f"Its noise exceeds the statistic's own spread: {swamped}.", highlight=False)
