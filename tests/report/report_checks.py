"""Checks of a report's HTML with the standard library's parser: every tag closed in order,
ids unique, nothing loaded from outside; and what the page holds (headings, tables, SVG
figures with their titles, axis labels and legends)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

#: Elements without an end tag (HTML), and SVG elements written self-closed.
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}  # fmt: skip


@dataclass
class Svg:
    id: str | None
    children: int = 0
    title: str = ""
    texts: list[tuple[str, str]] = field(default_factory=list)  # (class, text)


@dataclass
class Parsed:
    errors: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    headings: list[str] = field(default_factory=list)
    svgs: list[Svg] = field(default_factory=list)
    tables: list[dict] = field(default_factory=list)
    legends: int = 0
    text: list[str] = field(default_factory=list)
    external: list[str] = field(default_factory=list)
    scripts: int = 0
    meta: list[dict] = field(default_factory=list)


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out = Parsed()
        self.stack: list[str] = []
        self.svg: Svg | None = None
        self.svg_depth = 0
        self.capture: str | None = None
        self.cls = ""
        self.buf: list[str] = []
        self.table: dict | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self._attrs(tag, a)
        if tag not in VOID:
            self.stack.append(tag)
        self._open(tag, a)

    def handle_startendtag(self, tag, attrs):
        a = dict(attrs)
        self._attrs(tag, a)
        self._open(tag, a)

    def _attrs(self, tag, a):
        if "id" in a:
            self.out.ids.append(a["id"])
        for key in ("src", "href", "xlink:href", "action", "data"):
            if key in a:
                self.out.external.append(f"{tag} {key}={a[key]}")
        if re.search(r"url\(|@import", a.get("style") or ""):
            self.out.external.append(f"{tag} style={a['style']}")
        if tag == "script":
            self.out.scripts += 1
        if tag == "meta":
            self.out.meta.append(a)
        if tag == "ul" and a.get("class") == "legend":
            self.out.legends += 1

    def _open(self, tag, a):
        if tag == "svg" and "chart" in (a.get("class") or ""):
            self.svg = Svg(a.get("id"))
            self.out.svgs.append(self.svg)
            self.svg_depth = len(self.stack)
        elif self.svg is not None:
            self.svg.children += 1
            if tag in ("title", "text"):
                self.capture, self.buf, self.cls = tag, [], a.get("class") or ""
        if tag in ("h1", "h2", "h3"):
            self.capture, self.buf = tag, []
        if tag == "table":
            self.table = {"id": a.get("id"), "header": [], "rows": []}
            self.out.tables.append(self.table)
        if tag == "tr" and self.table is not None:
            self.table["rows"].append([])

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.out.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
            if tag in self.stack:
                while self.stack and self.stack.pop() != tag:
                    pass
            return
        self.stack.pop()
        if self.capture == tag:
            text = "".join(self.buf).strip()
            if tag == "title" and self.svg is not None:
                self.svg.title = self.svg.title or text  # the chart's own, first
            elif tag == "text" and self.svg is not None:
                self.svg.texts.append((self.cls, text))
            else:
                self.out.headings.append(text)
            self.capture = None
        if tag == "svg" and self.svg is not None and len(self.stack) < self.svg_depth:
            self.svg = None
        if tag == "table":
            self.table = None

    def handle_data(self, data):
        self.out.text.append(data)
        if self.capture is not None:
            self.buf.append(data)
        if self.table is not None and self.stack and self.stack[-1] in ("th", "td"):
            rows = self.table["rows"]
            if self.stack[-1] == "th" and len(rows) <= 1:
                self.table["header"].append(data)
            elif rows:
                rows[-1].append(data)


def parse(html: str) -> Parsed:
    p = _Parser()
    p.feed(html)
    p.close()
    if p.stack:
        p.out.errors.append(f"unclosed: {p.stack}")
    return p.out


def validate(html: str) -> Parsed:
    """Parse and assert what every report must be: a doctype, one <title>, balanced tags,
    unique ids, no script and nothing loaded from outside, a viewport and a CSP."""
    assert html.lstrip().lower().startswith("<!doctype html>")
    out = parse(html)
    assert out.errors == [], out.errors[:5]
    dup = sorted({i for i in out.ids if out.ids.count(i) > 1})
    assert dup == [], dup
    assert out.scripts == 0
    assert out.external == [], out.external
    names = {m.get("name") or m.get("http-equiv") for m in out.meta}
    assert {"viewport", "Content-Security-Policy"} <= names
    return out
