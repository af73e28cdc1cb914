"""HTML → markdown-ish text: headings become `#` lines, blocks become paragraphs, lists `- ` lines.

Only the page's main content is kept: the `<main>` element (or the single top-level `<article>`)
when there is one, else the body; hidden elements and page furniture (navigation, banners, sidebars,
menus, pop-ups, comments, share and cookie widgets) are dropped first. The rules and how they
measure against a boilerplate-removal library are in docs/CHUNKING.md ("HTML extraction").
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import NamedTuple

from bs4 import (
    BeautifulSoup,
    MarkupResemblesLocatorWarning,
    NavigableString,
    ParserRejectedMarkup,
    Tag,
    UnicodeDammit,
    XMLParsedAsHTMLWarning,
)
from bs4.element import Comment, Declaration, Doctype, PageElement, ProcessingInstruction

from cairn.domain.errors import UnsupportedContent
from cairn.ingest.markdown import clean_title
from cairn.ingest.marked_sections import cdata_as_text, readable

_DROP = frozenset(
    {"script", "style", "nav", "footer", "noscript", "template", "svg", "iframe", "head", "form", "button",
     "menu", "dialog", "select", "textarea", "input", "title", "noembed", "noframes"}
)  # fmt: skip
_FURNITURE_ROLES = frozenset(
    {"navigation", "banner", "contentinfo", "search", "menu", "menubar", "dialog", "alertdialog",
     "complementary", "toolbar", "tooltip"}
)  # fmt: skip
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_HIDDEN_CLASSES = frozenset(
    {"hidden", "is-hidden", "d-none", "hide", "invisible", "visually-hidden", "sr-only", "screen-reader-text"}
)
_PERMALINK_CLASSES = frozenset({"headerlink", "hash-link", "anchor-link", "anchorjs-link"})
# Words of a class or id (split at -, _ and camelCase) that mark furniture...
_FURNITURE_WORDS = frozenset(
    {"sidebar", "navbar", "nav", "navigation", "menu", "breadcrumb", "breadcrumbs", "toc", "popup",
     "modal", "cookie", "cookies", "consent", "share", "sharing", "sharedaddy", "social", "comments",
     "related", "promo", "newsletter", "ad", "ads", "advert", "advertisement", "masthead", "skip",
     "pagination", "pager", "ticker", "votes", "feedback", "subscribe", "search", "searchbar"}
)  # fmt: skip
# ...and runs of words that do, once separators are removed.
_FURNITURE_RUNS = ("tableofcontents", "backtotop", "skiptocontent")
# "header"/"footer" mark furniture alone or with these words ("site-header"), not in "article-header".
_PAGE_WORDS = frozenset({"site", "page", "global", "top", "bottom", "main", "mobile"})
_CALLOUT_WORDS = frozenset(
    {"note", "tip", "warning", "caution", "important", "callout", "admonition", "info", "danger"}
)
_SECTIONING = frozenset({"article", "aside", "main", "nav", "section"})
_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_BLOCKS = frozenset(
    {
        "p", "div", "section", "article", "main", "header", "aside", "blockquote", "figure",
        "figcaption", "table", "thead", "tbody", "tfoot", "ul", "ol", "dl", "dt", "dd", "address",
        "details", "summary", "hr", "body", "html",
    }
)  # fmt: skip
_CELLS = frozenset({"td", "th"})
_HEAD_ONLY = frozenset({"title", "meta", "link", "base", "script", "style", "noscript", "template"})
_MAX_LIST_INDENT = 16
"""Lists nested deeper are indented no further: each level would add to every item below it."""
_SKIP_STRINGS = (Comment, Declaration, Doctype, ProcessingInstruction)
_SPACE = re.compile(r"\s+")


class _Writer:
    """Collects blocks; inline text accumulates in `line` until a block boundary flushes it."""

    def __init__(self) -> None:
        self.blocks: list[tuple[str, bool]] = []
        self.line: list[str] = []
        self.line_has_text = False
        self.prefix = ""
        self.tight = False
        """List items and table rows are written on consecutive lines, not as paragraphs."""

    def text(self, value: str) -> None:
        self.line.append(value)
        self.line_has_text = self.line_has_text or (bool(value) and not value.isspace())

    def flush(self) -> None:
        joined = _SPACE.sub(" ", "".join(self.line)).strip()
        self.line = []
        self.line_has_text = False
        if joined:
            self.blocks.append((self.prefix + joined, self.tight))
        self.prefix = ""
        self.tight = False

    def raw_block(self, value: str) -> None:
        self.flush()
        if value.strip():
            self.blocks.append((value.strip("\n"), False))

    def render(self) -> str:
        parts: list[str] = []
        previous_tight = False
        for index, (block, tight) in enumerate(self.blocks):
            if index:
                parts.append("\n" if tight and previous_tight else "\n\n")
            parts.append(block)
            previous_tight = tight
        return "".join(parts)


def _title(soup: BeautifulSoup) -> str | None:
    if soup.title is not None and soup.title.get_text(strip=True):
        return clean_title(soup.title.get_text(" ", strip=True))
    h1 = soup.find("h1")
    return clean_title(h1.get_text(" ", strip=True)) if h1 is not None else None


def html_to_text(data: bytes) -> tuple[str, str | None]:
    """Return (text, title) of the main content. The title comes from <title>, else the first <h1>."""
    soup = parse(data)
    title = _title(soup)
    for tag in soup.find_all(_DROP):
        tag.decompose()
    _prune(soup, lambda tag, where: _is_hidden(tag))
    root = main_content(soup)
    _prune(root, _FurnitureRule(root))
    return render(root), title


def parse(data: bytes) -> BeautifulSoup:
    """The page decoded as BeautifulSoup decodes it (a BOM, else the declared charset, else a guess),
    then read by lxml: linear in the page, where Python 3.11.7's html.parser is quadratic on some
    markup (CPython gh-135462: 60 KB of `<a ` took 30 s)."""
    markup = UnicodeDammit(data, is_html=True).unicode_markup
    if markup is None:
        raise UnsupportedContent("HTML could not be decoded; the file may be damaged")
    markup = markup.replace("\x00", "")  # no text: lxml would make each a U+FFFD
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MarkupResemblesLocatorWarning)
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        try:
            soup = BeautifulSoup(cdata_as_text(readable(markup)), "lxml")
        except ParserRejectedMarkup as exc:
            raise UnsupportedContent("HTML could not be parsed; the file may be damaged") from exc
    _open_misplaced_head(soup)
    return soup


def _open_misplaced_head(soup: BeautifulSoup) -> None:
    """lxml's parser (libxml2's) knows no HTML5 element: on a page without a `<body>` tag, a
    `<section>` after a `<style>` stays in the head, with what follows up to an element it knows. A
    head holding such content loses its name, and so does the body (each becomes a tag rendered as
    nothing), so that the whole document is the content, as a browser shows it."""
    head = soup.head
    if head is None or not any(_misplaced(child) for child in head.contents):
        return
    for tag in (head, soup.body):
        if tag is not None:
            tag.name = "span"


def _misplaced(node: PageElement) -> bool:
    if isinstance(node, Tag):
        return node.name not in _HEAD_ONLY
    return _is_text(node) and not str(node).isspace()


def render(root: Tag) -> str:
    out = _Writer()
    _walk(root, out)
    out.flush()
    return out.render()


def main_content(soup: BeautifulSoup) -> Tag:
    """The first non-empty `<main>` (or role=main), else the only top-level `<article>`, else the body."""
    for tag in _outermost(soup, lambda t: t.name == "main" or _attr(t, "role") == "main"):
        if tag.get_text(strip=True):
            return tag
    articles = _outermost(soup, lambda t: t.name == "article")
    if len(articles) == 1 and articles[0].get_text(strip=True):
        return articles[0]
    return soup.body or soup


class _Where(NamedTuple):
    """What encloses a tag: a heading, and a sectioning element (article, aside, main, nav, section)."""

    heading: bool = False
    sectioned: bool = False

    def inside(self, tag: Tag) -> _Where:
        return _Where(self.heading or tag.name in _HEADINGS, self.sectioned or tag.name in _SECTIONING)


def _prune(root: Tag, doomed: Callable[[Tag, _Where], bool]) -> None:
    """Decompose every tag below `root` that `doomed` picks; one pass, top-down, never recursive."""
    stack = [(child, _Where()) for child in root.contents if isinstance(child, Tag)]
    while stack:
        tag, where = stack.pop()
        if doomed(tag, where):
            tag.decompose()
            continue
        inner = where.inside(tag)
        stack.extend((child, inner) for child in tag.contents if isinstance(child, Tag))


def _outermost(root: Tag, match: Callable[[Tag], bool]) -> list[Tag]:
    """Tags that `match` and have no matching ancestor, in document order."""
    found: list[Tag] = []
    stack = [child for child in reversed(root.contents) if isinstance(child, Tag)]
    while stack:
        tag = stack.pop()
        if match(tag):
            found.append(tag)
        else:
            stack.extend(child for child in reversed(tag.contents) if isinstance(child, Tag))
    return found


def _attr(tag: Tag, name: str) -> str:
    value = tag.get(name)
    if isinstance(value, list):
        value = " ".join(value)
    return value.strip().lower() if isinstance(value, str) else ""


def _is_hidden(tag: Tag) -> bool:
    if tag.has_attr("hidden") and _attr(tag, "hidden") != "until-found":  # until-found is searchable
        return True
    if _attr(tag, "aria-hidden") == "true":
        return True
    return bool(_HIDDEN_STYLE.search(_attr(tag, "style")))


class _FurnitureRule:
    """Tags and roles are trusted; class and id names are guesses, so they never drop a heading's
    contents, the main heading's ancestors, or (on a page without an h1) most of the text."""

    def __init__(self, root: Tag) -> None:
        self.root = root
        h1 = root.find("h1")
        self.protected = {id(p) for p in h1.parents} if h1 is not None else set()  # Tag == compares markup
        self.by_size = h1 is None
        self.sizes: dict[int, int] = {}

    def __call__(self, tag: Tag, where: _Where) -> bool:
        names = [*(tag.get("class") or []), str(tag.get("id") or "")]
        lowered = {name.lower() for name in names}
        if lowered & _PERMALINK_CLASSES:
            return True
        if tag.name == "aside":
            return not (_words(names) & _CALLOUT_WORDS)
        if _attr(tag, "role") in _FURNITURE_ROLES:
            return True
        if id(tag) in self.protected:
            return False
        if tag.name == "header":  # the page's own header, not an article's
            return not where.sectioned
        if where.heading or not _named_furniture(names, lowered):
            return False
        if not self.by_size:
            return True
        self.sizes = self.sizes or _text_sizes(self.root)
        return self.sizes.get(id(tag), 0) * 2 < self.sizes[id(self.root)]


def _text_sizes(root: Tag) -> dict[int, int]:
    """Characters of stripped text below each tag (by id), in one bottom-up pass."""
    sizes: dict[int, int] = {}
    for tag in reversed([root, *root.find_all(True)]):
        size = 0
        for child in tag.contents:
            if isinstance(child, Tag):
                size += sizes.get(id(child), 0)
            elif isinstance(child, NavigableString) and _is_text(child):
                size += len(child.strip())
        sizes[id(tag)] = size
    return sizes


def _is_text(node: PageElement) -> bool:
    return isinstance(node, NavigableString) and not isinstance(node, _SKIP_STRINGS)


def _named_furniture(names: list[str], lowered: set[str]) -> bool:
    if lowered & _HIDDEN_CLASSES:
        return True
    for name in names:
        words = _words([name])
        if words & _FURNITURE_WORDS:
            return True
        if words & {"header", "footer"} and not words - {"header", "footer"} - _PAGE_WORDS:
            return True
        if any(run in re.sub(r"[-_\s]", "", name.lower()) for run in _FURNITURE_RUNS):
            return True
    return False


def _words(names: list[str]) -> set[str]:
    """Words of class or id names, split at -, _ and camelCase humps: tocCollapsible → toc, collapsible."""
    return {w.lower() for name in names for w in _WORD.findall(name)}


def _walk(root: Tag, out: _Writer) -> None:
    # Iterative so that deeply nested markup cannot exhaust the Python stack.
    stack: list[tuple[PageElement, bool]] = [(child, False) for child in reversed(root.contents)]
    list_depth = 0
    while stack:
        node, leaving = stack.pop()
        if isinstance(node, NavigableString):
            if _is_text(node):
                out.text(str(node))
            continue
        if not isinstance(node, Tag):
            continue
        name = node.name
        if leaving:
            if name in ("ul", "ol"):
                list_depth -= 1
            if name in _HEADINGS or name in _BLOCKS or name in ("li", "tr"):
                out.flush()
            continue
        if name == "br":
            out.flush()
            continue
        if name == "pre":
            out.raw_block("```\n" + node.get_text().strip("\n") + "\n```")
            continue
        if name in _HEADINGS or name in _BLOCKS or name in ("li", "tr"):
            out.flush()
        if name in _CELLS and out.line_has_text:
            out.text(" | ")
        if name in _HEADINGS:
            out.prefix = "#" * _HEADINGS[name] + " "
        elif name == "li":
            out.prefix = "  " * min(max(list_depth - 1, 0), _MAX_LIST_INDENT) + "- "
            out.tight = True
        elif name == "tr":
            out.tight = True
        elif name in ("ul", "ol"):
            list_depth += 1
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(node.contents))
