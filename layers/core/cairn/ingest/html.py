"""HTML → markdown-ish text: headings become `#` lines, blocks become paragraphs, lists `- ` lines."""

from __future__ import annotations

import re
import warnings

from bs4 import BeautifulSoup, MarkupResemblesLocatorWarning, NavigableString, Tag
from bs4.element import Comment, Declaration, Doctype, PageElement, ProcessingInstruction

from cairn.ingest.markdown import clean_title

_DROP = frozenset(
    {"script", "style", "nav", "footer", "noscript", "template", "svg", "iframe", "head", "form", "button"}
)
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_BLOCKS = frozenset(
    {
        "p", "div", "section", "article", "main", "header", "aside", "blockquote", "figure",
        "figcaption", "table", "thead", "tbody", "tfoot", "ul", "ol", "dl", "dt", "dd", "address",
        "details", "summary", "hr", "body", "html",
    }
)  # fmt: skip
_CELLS = frozenset({"td", "th"})
_SKIP_STRINGS = (Comment, Declaration, Doctype, ProcessingInstruction)
_SPACE = re.compile(r"\s+")


class _Writer:
    """Collects blocks; inline text accumulates in `line` until a block boundary flushes it."""

    def __init__(self) -> None:
        self.blocks: list[tuple[str, bool]] = []
        self.line: list[str] = []
        self.prefix = ""
        self.tight = False
        """List items and table rows are written on consecutive lines, not as paragraphs."""

    def text(self, value: str) -> None:
        self.line.append(value)

    def flush(self) -> None:
        joined = _SPACE.sub(" ", "".join(self.line)).strip()
        self.line = []
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
    """Return (text, title). The title comes from <title>, else the first <h1>."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MarkupResemblesLocatorWarning)
        soup = BeautifulSoup(data, "html.parser")
    title = _title(soup)
    for tag in soup.find_all(_DROP):
        tag.decompose()
    out = _Writer()
    _walk(soup, out)
    out.flush()
    return out.render(), title


def _walk(root: Tag, out: _Writer) -> None:
    # Iterative so that deeply nested markup cannot exhaust the Python stack.
    stack: list[tuple[PageElement, bool]] = [(child, False) for child in reversed(root.contents)]
    list_depth = 0
    while stack:
        node, leaving = stack.pop()
        if isinstance(node, NavigableString):
            if not isinstance(node, _SKIP_STRINGS):
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
        if name in _CELLS and "".join(out.line).strip():
            out.text(" | ")
        if name in _HEADINGS:
            out.prefix = "#" * _HEADINGS[name] + " "
        elif name == "li":
            out.prefix = "  " * max(list_depth - 1, 0) + "- "
            out.tight = True
        elif name == "tr":
            out.tight = True
        elif name in ("ul", "ol"):
            list_depth += 1
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(node.contents))
