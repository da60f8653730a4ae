"""The page: one self-contained HTML file (inline CSS and SVG, no script, no network — its
Content-Security-Policy forbids loading anything), readable from a phone to a laptop; every
text that comes from the user (column names, predicates, paths) is escaped here."""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape

__all__ = ["Page", "esc", "figure", "prose", "table", "unsci"]

CSS = """
:root{color-scheme:light}
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",
 "DejaVu Sans",sans-serif;color:#1b1b1b;background:#f4f5f7}
main{max-width:1120px;margin:0 auto;padding:20px 24px 40px;background:#fff}
header p{margin:.2em 0;color:#555}
h1{font-size:1.6em;margin:.2em 0 .3em;line-height:1.2}
h2{font-size:1.25em;margin:1.6em 0 .5em;padding-bottom:.2em;border-bottom:2px solid #e4e6ea}
h3{font-size:1.05em;margin:1.1em 0 .3em}
.statement{font-size:1.12em;background:#eef5fb;border-left:6px solid #0072B2;
 padding:14px 18px;margin:14px 0;border-radius:4px}
.statement p{margin:.3em 0}
.verdict-ok{color:#006d4e;font-weight:600}
.verdict-bad{color:#b00020;font-weight:700}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch;margin:.5em 0 1em;
 border:1px solid #e4e6ea;border-radius:4px}
table{border-collapse:collapse;width:100%;font-size:.93em}
p.caption{margin:.8em 0 .2em;color:#444;font-size:.93em}
th,td{padding:6px 10px;border-bottom:1px solid #eceef1;vertical-align:top;text-align:left}
th{background:#f7f8fa;font-weight:600;white-space:nowrap}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tbody tr:nth-child(even){background:#fbfbfc}
code{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.92em;
 background:#f1f2f4;padding:0 3px;border-radius:3px;overflow-wrap:anywhere}
figure{margin:1em 0 1.6em}
figure svg.chart{width:100%;height:auto;max-width:760px;display:block}
svg .tick{font-size:13px;fill:#333}
svg .axis{font-size:15px;fill:#111}
svg .note{font-size:13px;fill:#333;paint-order:stroke;stroke:#fff;stroke-width:4px}
svg .mark{font-size:14px;font-weight:600;fill:#000;paint-order:stroke;stroke:#fff;
 stroke-width:4px;stroke-linejoin:round}
figcaption{color:#444;font-size:.93em;max-width:760px}
ul.legend{list-style:none;padding:0;margin:.4em 0;display:flex;flex-wrap:wrap;gap:4px 16px;
 font-size:.9em;max-width:760px}
ul.legend li{display:flex;align-items:center;gap:5px}
svg.swatch{flex:none}
ul.plain{padding-left:1.2em}
ul.plain li{margin:.25em 0}
.small{font-size:.88em;color:#555}
footer{margin-top:2em;font-size:.85em;color:#555;border-top:1px solid #e4e6ea;padding-top:.6em}
.notice{border:1px solid #c9d3de;background:#f7f9fb;padding:8px 12px;border-radius:4px;
 font-size:.93em}
p,li,figcaption{overflow-wrap:anywhere}
td{overflow-wrap:break-word}
td code{overflow-wrap:anywhere}
@media (max-width:600px){
 body{font-size:15px}
 main{padding:12px 12px 30px}
 h1{font-size:1.3em}
 .statement{font-size:1.02em;padding:10px 12px}
 th,td{padding:5px 7px}
 svg .tick{font-size:21px}
 svg .axis{font-size:22px}
 svg .note{font-size:20px}
 svg .mark{font-size:21px}
}
@media (max-width:480px){
 .scroll{overflow:visible;border:0}
 table.cards,table.cards tbody,table.cards tr,table.cards td{display:block;width:100%}
 table.cards thead{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
 table.cards tr{border:1px solid #dfe3e8;border-radius:6px;margin:0 0 10px;padding:4px 0;
  background:#fff}
 table.cards tbody tr:nth-child(even){background:#fff}
 table.cards td{display:flex;gap:10px;justify-content:space-between;border:0;
  padding:3px 10px;text-align:right;white-space:normal}
 table.cards td::before{content:attr(data-label);font-weight:600;color:#444;text-align:left;
  flex:0 1 45%}
 table.cards td:first-child{display:block;text-align:left;font-weight:600;
  border-bottom:1px solid #eceef1;padding:4px 10px 6px}
 table.cards td:first-child::before{content:none}
 table.cards td,table:not(.cards) td{overflow-wrap:anywhere}
 table:not(.cards){table-layout:fixed}
}
@page{margin:14mm 12mm}
@media print{
 body{background:#fff;font-size:10pt}
 main{max-width:none;padding:0}
 .statement{border:1px solid #9ab;border-left:6px solid #0072B2}
 .scroll{overflow:visible;border:0}
 table{font-size:8pt;width:100%;table-layout:auto}
 th,td,td.num,th.num{white-space:normal;padding:3px 4px}
 tr,figure,.statement,.notice{break-inside:avoid}
 h2,h3,p.caption{break-after:avoid}
 main>section{break-before:page}
 main>section.statement,main>section.statement+section{break-before:auto}
 figure svg.chart{max-width:160mm}
 a{color:inherit;text-decoration:none}
}
"""

#: Nothing may load: no script, no network, styles and images only from the page itself.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def esc(text: object) -> str:
    """HTML-escape any value's text (quotes included)."""
    return escape(str(text), quote=True)


#: A number in e-notation inside a text (``9.82e-05``, ``2.28e+03``).
_SCI = re.compile(r"(?<![\w.])(-?\d+(?:\.\d+)?)e([+-]?\d+)(?![\w.])")
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def power_of_ten(mantissa: str, exponent: int) -> str:
    """``9.82``, −5 → ``9.82 × 10⁻⁵`` (``1 × 10³`` written ``10³``)."""
    power = "10" + str(exponent).translate(_SUPERSCRIPT)
    return power if mantissa in ("1", "1.0") else f"{mantissa} × {power}"


def unsci(text: str) -> str:
    """Every e-notation number in ``text`` written as a power of ten (``δ = 9.82e-05`` →
    ``δ = 9.82 × 10⁻⁵``)."""
    return _SCI.sub(lambda m: power_of_ten(m.group(1), int(m.group(2))), text)


def prose(text: object) -> str:
    """A sentence as HTML: escaped, its numbers out of e-notation, and each `backticked`
    span set as code (never a raw backtick)."""
    parts = str(text).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: dropped
        parts = [*parts[:-2], parts[-2] + parts[-1]]
    return "".join(
        f"<code>{esc(p)}</code>" if k % 2 else esc(unsci(p)) for k, p in enumerate(parts)
    )


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


NUM = ' class="num"'


def table(
    header: Sequence[str],
    rows: Sequence[Sequence[object]],
    *,
    caption: str,
    numeric: Sequence[int] = (),
    raw: Sequence[int] = (),
    table_id: str | None = None,
) -> str:
    """A table in a horizontally scrolling box, its caption above it (outside the box, so
    that it wraps on a phone); on a phone (≤ 480 px) each row of a table of three columns or
    more becomes a card, each cell labelled with its column's header. Cells are escaped
    (their numbers out of e-notation, :func:`unsci`) except the columns ``raw`` (already
    HTML, built by this package); ``numeric`` columns are right-aligned."""
    num = set(numeric)
    cards = len(header) > 2  # a two-column table fits a phone as it is
    head = "".join(
        f'<th scope="col"{NUM if i in num else ""}>{esc(h)}</th>' for i, h in enumerate(header)
    )
    body = []
    for r in rows:
        cells = []
        for i, v in enumerate(r):
            text = str(v) if i in raw else esc(unsci(str(v)))
            # Each card is titled by its first cell; the others are labelled with their header.
            label = f' data-label="{esc(header[i])}"' if cards and 0 < i < len(header) else ""
            cells.append(f"<td{NUM if i in num else ''}{label}>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    tid = f' id="{esc(table_id)}"' if table_id else ""
    kind = ' class="cards"' if cards else ""
    return (
        f'<p class="caption">{prose(caption)}</p><div class="scroll"><table{tid}{kind}>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def figure(svg: str, legend: str, caption: str, *, title: str) -> str:
    """A figure: its title (visible), the chart, the legend and a caption."""
    return (
        f"<figure><h3>{esc(title)}</h3>{svg}{legend}<figcaption>{prose(caption)}</figcaption>"
        "</figure>"
    )


class Page:
    """An HTML page built section by section."""

    def __init__(self, title: str, subtitle: Sequence[str] = ()) -> None:
        self.title = title
        self.subtitle = list(subtitle)
        self.parts: list[str] = []
        self._ids: set[str] = set()

    def statement(self, sentences: Sequence[str]) -> None:
        """The words a steward signs, first."""
        body = "".join(f"<p>{prose(s)}</p>" for s in sentences)
        self.parts.append(f'<section class="statement" id="statement">{body}</section>')

    def notice(self, text: str) -> None:
        """A boxed note right under the statement (who may read this page)."""
        self.parts.append(f'<p class="notice">{prose(text)}</p>')

    def section(self, heading: str, html: str) -> None:
        """A titled section (``html`` built by this package: escaped already)."""
        sid = _slug(heading)
        k = 2
        while sid in self._ids:
            sid, k = f"{_slug(heading)}-{k}", k + 1
        self._ids.add(sid)
        self.parts.append(f'<section id="{sid}"><h2>{esc(heading)}</h2>{html}</section>')

    def render(self, footer: Sequence[str]) -> str:
        """The whole document."""
        sub = "".join(f"<p>{prose(s)}</p>" for s in self.subtitle)
        foot = "".join(f"<p>{prose(s)}</p>" for s in footer)
        return (
            "<!DOCTYPE html>\n"
            '<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(self.title)}</title><style>{CSS}</style></head>"
            f"<body><main><header><h1>{esc(self.title)}</h1>{sub}</header>"
            f"{''.join(self.parts)}<footer>{foot}</footer></main></body></html>\n"
        )
