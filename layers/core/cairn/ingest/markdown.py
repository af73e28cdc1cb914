"""Small markdown helpers shared by extraction and chunking: front matter, headings, titles."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from cairn.domain.text import BIDI_CONTROLS

MAX_TITLE_CHARS = 512

_FRONT_MATTER = re.compile(r"\A(?:\ufeff)?---[ \t]*\r?\n(.*?\r?\n)?(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S)
# Greedy to the line's end (the caller strips it): a lazy title then [ \t]*$ tried every end again.
_FM_TITLE = re.compile(r"^title[ \t]*:[ \t]*(.+)$", re.M)
_ATX_OPENING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+|$)")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_NOT_PARAGRAPH = re.compile(r"^(?: {4}|\t| {0,3}(?:[-*+>]|\d+[.)])(?:[ \t]|$))")


@dataclass(frozen=True, slots=True)
class Heading:
    level: int
    title: str
    start: int
    """Offset of the heading line's first character."""
    end: int
    """Offset just past the heading line (excluding its newline)."""


def clean_title(title: str | None) -> str | None:
    """Collapse whitespace, drop bidirectional controls (a title `report \u202eexe.fdp` would show
    as `report pdf.exe` in listings) and cap at MAX_TITLE_CHARS; empty titles become None."""
    if title is None:
        return None
    collapsed = " ".join("".join(ch for ch in title if ch not in BIDI_CONTROLS).split())
    return collapsed[:MAX_TITLE_CHARS].rstrip() or None


def split_front_matter(text: str) -> tuple[str | None, str]:
    """Return (front matter title or None, text without the front matter block)."""
    match = _FRONT_MATTER.match(text)
    if match is None:
        return None, text
    title_match = _FM_TITLE.search(match.group(1) or "")
    title = None
    if title_match is not None:
        raw = title_match.group(1).strip()
        if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
            raw = raw[1:-1]
        title = clean_title(raw)
    return title, text[match.end() :]


def front_matter_block(text: str) -> str:
    """The front matter block `text` begins with, its closing line included ("" when none)."""
    match = _FRONT_MATTER.match(text)
    return "" if match is None else text[: match.end()]


def iter_lines(text: str) -> Iterator[tuple[int, str, bool]]:
    """(offset, line without its newline, is code) for each line; fence lines count as code."""
    pos = 0
    fence: str | None = None
    for raw in text.split("\n"):
        line = raw.rstrip("\r")
        fence_match = _FENCE.match(line)
        if fence_match is not None:
            marker = fence_match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence) and not line.strip().strip(marker[0]):
                fence = None
            yield pos, line, True
        else:
            yield pos, line, fence is not None
        pos += len(raw) + 1


def atx_headings(text: str) -> list[Heading]:
    """ATX headings (`## Title`) outside fenced code blocks, in order; a title is cut at
    MAX_TITLE_CHARS, as a document's is. Every chunk of a section carries its heading path (its
    title, digest and embedded text): a page of one heading line of 900 KB (`## ## …`) made 1,300
    chunks each of the whole line, 23 s and 3.5 GB to write."""
    headings: list[Heading] = []
    for offset, line, is_code in iter_lines(text):
        atx = None if is_code else _atx(line)
        if atx is not None:
            title = atx[1].strip()[:MAX_TITLE_CHARS].rstrip()
            headings.append(Heading(atx[0], title, offset, offset + len(line)))
    return headings


def _atx(line: str) -> tuple[int, str] | None:
    """(level, title) of an ATX heading line, its closing #s dropped (`## Title ##`), else None.
    Not one regex: a lazy title before optional closing #s tried every end of the line again."""
    opening = _ATX_OPENING.match(line)
    if opening is None:
        return None
    title = line[opening.end() :].rstrip(" \t")
    unclosed = title.rstrip("#")
    if unclosed != title and unclosed[-1:] in (" ", "\t"):
        title = unclosed.rstrip(" \t")
    return len(opening.group(1)), title


def title_from_markdown(text: str) -> str | None:
    """The front matter `title:`, else the first ATX or setext heading, else None."""
    fm_title, body = split_front_matter(text)
    return fm_title or heading_title(body)


def heading_title(text: str) -> str | None:
    """The first ATX or setext heading of `text` (no front matter handling), else None.

    One pass that stops at the first heading: writers call it on every write of a document."""
    previous: str | None = None  # the line above, when it is a plain paragraph line
    for _offset, line, is_code in iter_lines(text):
        if is_code:
            previous = None
            continue
        if previous is not None and _SETEXT.match(line):
            return clean_title(previous.strip())
        atx = _atx(line)
        if atx is not None and atx[1].strip():
            return clean_title(atx[1].strip())
        # A setext underline needs a plain paragraph line directly above it.
        plain = (
            bool(line.strip()) and not _SETEXT.match(line) and atx is None and not _NOT_PARAGRAPH.match(line)
        )
        previous = line if plain else None
    return None
