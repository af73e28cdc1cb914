"""HTML is read by lxml (linear in the page; Python 3.11.7's html.parser is quadratic on some
markup, CPython gh-135462) and Cairn gets from ordinary markup what html.parser gave: pages
generated from headings, paragraphs, lists, tables, links, scripts and styles, entities, comments,
CDATA, nested inline tags, `<br>`, `<pre>` and non-ASCII text, some with their optional end tags
left out, extract the same text and title through both parsers; Markdown and HTML documents
showing `<img>` tags (in figures, scripts, comments, links, beside Markdown images and captions)
give the same images, alt text, titles and captions."""

from __future__ import annotations

import re
import warnings
from html.parser import HTMLParser

import pytest
from bs4 import BeautifulSoup
from hypothesis import given, settings
from hypothesis import strategies as st

from cairn.ingest import html as html_module
from cairn.ingest import image_references
from cairn.ingest.image_metadata import clean_text

WORDS = ["kettle", "Fridays", "café", "naïve", "日本語", "Ünïcödé", "x", "42", "a-b", "end."]
# Without its `;` only a legacy name (`&copy`) is a reference: BeautifulSoup's html.parser builder
# read any (`&hellip x` gave `… x`), lxml reads `&hellip x` as written, as browsers do.
ENTITIES = ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;", "&nbsp;", "&eacute;", "&#x263A;", "&hellip;", "&copy"]
SPACES = [" ", " ", "\n", "\n  ", "\t"]


def _html_parser(data: bytes) -> BeautifulSoup:
    """What html.parse did before lxml (the generated pages hold no stray `<![` to mend)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return BeautifulSoup(data, "html.parser")


@st.composite
def text(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.sampled_from(WORDS + ENTITIES), min_size=1, max_size=5))
    return "".join(part + draw(st.sampled_from(SPACES)) for part in parts)


def inline(depth: int) -> st.SearchStrategy[str]:
    leaves = st.one_of(
        text(),
        st.sampled_from(SPACES),
        st.just("<br>"),
        st.just("<br/>"),
        text().map(lambda t: f"<!-- {t.replace('-', '')} -->"),
        text().map(lambda t: f"<![CDATA[{t}]]>"),
        text().map(lambda t: f'<img src="i.png" alt="{t}">'),
    )
    if depth == 0:
        return leaves
    wrapped = st.tuples(
        st.sampled_from(["em", "strong", "code", "b", "i", "span", 'a href="/x?a=1&amp;b=2"', "kbd"]),
        st.lists(inline(depth - 1), min_size=1, max_size=3).map("".join),
    ).map(lambda pair: f"<{pair[0]}>{pair[1]}</{pair[0].split()[0]}>")
    return st.one_of(leaves, wrapped)


@st.composite
def block(draw: st.DrawFn, depth: int) -> str:
    runs = st.lists(inline(2), min_size=1, max_size=4).map("".join)
    kinds = ["p", "h", "pre", "script", "ul", "table", "dl", "code"] + (["div"] * 3 if depth else [])
    kind = draw(st.sampled_from(kinds))
    close = draw(st.booleans())  # optional end tags (</p>, </li>, </td>, </tr>, </dt>, </dd>) left out or not

    def end(tag: str) -> str:
        return f"</{tag}>" if close else ""

    if kind == "p":
        return f"<p>{draw(runs)}{end('p')}"
    if kind == "h":
        level = draw(st.integers(1, 6))
        return f"<h{level}>{draw(runs)}</h{level}>"
    if kind == "pre":
        lines = draw(st.lists(runs, min_size=1, max_size=3))
        return "<pre>" + draw(st.sampled_from(["", "\n"])) + "\n".join(lines) + "</pre>"
    if kind == "script":
        body = draw(text()).replace("&", "")
        tag = draw(st.sampled_from(["script", "style", "noscript"]))
        return f"<{tag}>if (a < b && c > d) {{ x = '<p>{body}</p>'; }}</{tag}>"
    if kind == "ul":
        tag = draw(st.sampled_from(["ul", "ol"]))
        items = draw(st.lists(runs, min_size=1, max_size=4))
        if depth and draw(st.booleans()):  # a list inside the last item
            items[-1] += draw(block(0).filter(lambda b: b.startswith(("<ul>", "<ol>"))))
        return f"<{tag}>" + "".join(f"<li>{item}{end('li')}" for item in items) + f"</{tag}>"
    if kind == "table":
        rows = draw(st.lists(st.lists(runs, min_size=1, max_size=3), min_size=1, max_size=3))
        head = "<tr><th>Name</th><th>Value</th></tr>" if draw(st.booleans()) else ""
        body = "".join("<tr>" + "".join(f"<td>{c}{end('td')}" for c in row) + end("tr") for row in rows)
        return f"<table>{head}{body}</table>"
    if kind == "dl":
        pairs = draw(st.lists(st.tuples(runs, runs), min_size=1, max_size=3))
        return "<dl>" + "".join(f"<dt>{t}{end('dt')}<dd>{d}{end('dd')}" for t, d in pairs) + "</dl>"
    if kind == "code":
        return f"<blockquote>{draw(runs)}</blockquote>"
    tag = draw(st.sampled_from(["div", "section", "article", "blockquote", "figure"]))
    inner = draw(st.lists(block(depth - 1), min_size=1, max_size=3))
    caption = f"<figcaption>{draw(runs)}</figcaption>" if tag == "figure" else ""
    return f"<{tag}>{''.join(inner)}{caption}</{tag}>"


@st.composite
def page(draw: st.DrawFn) -> bytes:
    body = "\n".join(draw(st.lists(block(2), min_size=1, max_size=5)))
    title = draw(st.one_of(st.none(), text()))
    head = f'<head><meta charset="utf-8"><title>{title}</title></head>' if title is not None else ""
    shape = draw(st.sampled_from(["full", "body", "bare"]))
    if shape == "full":
        markup = f'<!DOCTYPE html>\n<html lang="en">{head}<body>{body}</body></html>'
    elif shape == "body":
        markup = f"{head}<body>\n{body}\n</body>"
    else:
        markup = body
    return markup.encode()


@settings(max_examples=300, deadline=None)
@given(page())
def test_ordinary_pages_extract_as_html_parser_extracted_them(data: bytes) -> None:
    read = html_module.html_to_text(data)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(html_module, "parse", _html_parser)
        before = html_module.html_to_text(data)
    assert read == before, data


class _OldImageParser(HTMLParser):
    """What image_references read `<img>` tags with before lxml (its offsets from getpos)."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.found: list[image_references._Found] = []
        self.figures: list[tuple[list[image_references._Found], list[str], list[int]]] = []
        self.raw_text = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self.raw_text += 1
        elif tag == "figure":
            self.figures.append(([], [], [0]))
        elif tag == "figcaption" and self.figures:
            self.figures[-1][2][0] += 1
        elif tag == "img":
            values = dict(attrs)
            srcset = (values.get("srcset") or "").strip()
            src = values.get("src") or values.get("data-src") or (srcset.split()[0] if srcset else "")
            if src:
                line, column = self.getpos()
                start = self.line_starts[line - 1] + column
                end = start + len(self.get_starttag_text() or "")
                item = image_references._Found(start, end, src, values.get("alt"), values.get("title"))
                self.found.append(item)
                if self.figures:
                    item.markdown_line = False
                    self.figures[-1][0].append(item)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self.raw_text = max(0, self.raw_text - 1)
        elif tag == "figcaption" and self.figures:
            self.figures[-1][2][0] = max(0, self.figures[-1][2][0] - 1)
        elif tag == "figure" and self.figures:
            self._close_figure()

    def handle_data(self, data: str) -> None:
        if self.figures and self.figures[-1][2][0] and not self.raw_text:
            self.figures[-1][1].append(data)

    def close(self) -> None:
        super().close()
        while self.figures:
            self._close_figure()

    def _close_figure(self) -> None:
        images, caption, _depth = self.figures.pop()
        for item in images:
            item.caption = clean_text("".join(caption))


def _old_html_images(text: str, *, markdown: bool) -> list[image_references._Found]:
    parser = _OldImageParser(text)
    parser.feed(text)
    parser.close()
    if not markdown:
        for item in parser.found:
            item.markdown_line = False
    return parser.found


IMG_ATTRS = [
    'src="a.png"', "src=b.png", "src='c d.png'", 'src="/root.png?x=1&amp;y=2#f"', 'data-src="lazy.png"',
    'srcset="s1.png 1x, s2.png 2x"', 'alt="a heron &amp; a weir"', "alt='it\"s'", 'title="T &gt; 2"',
    'alt="a > b"', "alt=plain", 'class="wide"', "loading=lazy", "ALT=Upper", 'src=""',
]  # fmt: skip


@st.composite
def img(draw: st.DrawFn) -> str:
    # One of each name: html.parser kept the last of a repeated attribute, lxml (as browsers) the first.
    names = st.lists(st.sampled_from(IMG_ATTRS), min_size=1, max_size=4, unique_by=lambda a: a.split("=")[0])
    attrs = draw(names.filter(lambda attrs: len({a.split("=")[0].lower() for a in attrs}) == len(attrs)))
    tag = draw(st.sampled_from(["img", "IMG", "Img"]))
    spaces = [draw(st.sampled_from([" ", "  ", "\n", "\t"])) for _ in attrs]
    close = draw(st.sampled_from([">", "/>", " />"]))
    return f"<{tag}" + "".join(s + a for s, a in zip(spaces, attrs, strict=True)) + close


@st.composite
def document(draw: st.DrawFn) -> str:
    pieces = st.one_of(
        img(),
        text(),
        st.sampled_from(["\n", "\n\n", "*Figure 1: a caption*", "_Caption_", "`<img src=code.png>`"]),
        st.tuples(img(), text()).map(lambda p: f"![{p[1].strip()}](md.png)\n\n{p[0]}"),
        st.tuples(st.lists(img(), min_size=1, max_size=2), st.lists(inline(1), max_size=3)).map(
            lambda p: f"<figure>{''.join(p[0])}<figcaption>{''.join(p[1])}</figcaption></figure>"
        ),
        img().map(lambda t: f"<script>var s = '{t}';</script>"),
        img().map(lambda t: f"<style>/* {t} */</style>"),
        img().map(lambda t: f"<!-- {t} -->"),
        img().map(lambda t: f'<p><a href="x.html">{t}</a></p>'),
    )
    return "".join(draw(st.lists(pieces, min_size=1, max_size=8)))


@settings(max_examples=300, deadline=None)
@given(document(), st.sampled_from(["notes/a.md", "notes/page.html"]))
def test_images_are_found_as_html_parser_found_them(text: str, path: str) -> None:
    found = image_references.find_image_references(text, path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(image_references, "_html_images", _old_html_images)
        before = image_references.find_image_references(text, path)
    assert found == before, text


def test_a_lone_surrogate_in_a_document_is_no_error() -> None:
    """lxml reads UTF-8, which has no lone surrogate: it is read as `?`."""
    shown = image_references.find_image_references('<img src=x.png alt="a\ud800b">', "notes/a.md")
    assert [(r.target, r.alt) for r in shown] == [("notes/x.png", "a?b")]
