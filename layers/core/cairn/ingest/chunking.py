"""Heading-aware chunking: sections → paragraphs → sentences → words, packed to a target size.

Every span is `text[start:end]` of the original text, starts and ends on a non-whitespace
character, and the spans together cover every non-whitespace character.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cairn.ingest.markdown import atx_headings

__all__ = ["TextSpan", "chunk_text"]

_PARAGRAPH_BREAK = re.compile(r"\n[ \t\r\f\v]*\n\s*")
# A unit ends after sentence punctuation (plus closing quotes/brackets) or at a line break.
# `(?<!\s)` lets a match start only where a whitespace run starts: linear, not quadratic, in long runs.
_UNIT_BREAK = re.compile(r"(?:(?<=[.!?…])|(?<=[.!?…][\"'”’)\]]))\s+|(?<!\s)\s*\n\s*")
_NON_SPACE = re.compile(r"\S")
_SPACE = re.compile(r"\s")
_WORD_START = re.compile(r"(?<=\s)\S")


@dataclass(frozen=True, slots=True)
class TextSpan:
    text: str
    start: int
    end: int
    heading: str | None
    """The heading path of the span's section, e.g. "Setup > Install"; None before any heading."""


@dataclass(frozen=True, slots=True)
class _Unit:
    start: int
    end: int
    paragraph_start: bool


def chunk_text(text: str, target_chars: int = 700, overlap_chars: int = 120) -> list[TextSpan]:
    """Spans of at most `target_chars`; defaults keep p95 under MiniLM's 256 tokens (docs/CHUNKING.md)."""
    if target_chars < 1 or not 0 <= overlap_chars < target_chars:
        raise ValueError("need target_chars >= 1 and 0 <= overlap_chars < target_chars")
    bounds = _trimmed(text, 0, len(text))
    if bounds is None:
        return []
    sections = _sections(text)
    if bounds[1] - bounds[0] <= target_chars:
        heading = sections[0][2]
        return [TextSpan(text[bounds[0] : bounds[1]], bounds[0], bounds[1], heading)]
    spans: list[TextSpan] = []
    for start, end, heading in sections:
        units = _units(text, start, end, target_chars)
        for chunk_start, chunk_end in _pack(text, units, target_chars, overlap_chars):
            spans.append(TextSpan(text[chunk_start:chunk_end], chunk_start, chunk_end, heading))
    return spans


def _trimmed(text: str, start: int, end: int) -> tuple[int, int] | None:
    match = _NON_SPACE.search(text, start, end)
    return None if match is None else (match.start(), _rstrip(text, end))


def _rstrip(text: str, end: int) -> int:
    """The end offset with trailing whitespace before `end` removed (callers ensure some text)."""
    while end > 0 and text[end - 1].isspace():
        end -= 1
    return end


def _lstrip(text: str, start: int) -> int:
    while start < len(text) and text[start].isspace():
        start += 1
    return start


def _sections(text: str) -> list[tuple[int, int, str | None]]:
    """(start, end, heading path) per section.

    A heading with no body before the next heading joins the next section, whose path names it.
    """
    sections: list[tuple[int, int, str | None]] = []
    stack: list[tuple[int, str]] = []
    start, body_start, path = 0, 0, None
    for heading in atx_headings(text):
        if _trimmed(text, body_start, heading.start) is not None:
            sections.append((start, heading.start, path))
            start = heading.start
        while stack and stack[-1][0] >= heading.level:
            stack.pop()
        if heading.title:
            stack.append((heading.level, heading.title))
        path = " > ".join(title for _, title in stack) or None
        body_start = heading.end
    if _trimmed(text, start, len(text)) is not None:
        sections.append((start, len(text), path))
    return sections


def _units(text: str, start: int, end: int, target: int) -> list[_Unit]:
    """Sentences and lines of a section; any longer than `target` are cut at whitespace."""
    units: list[_Unit] = []
    previous_end = start
    for match in _UNIT_BREAK.finditer(text, start, end):
        _add_units(text, units, previous_end, match.start(), target)
        previous_end = match.end()
    _add_units(text, units, previous_end, end, target)
    return units


def _add_units(text: str, units: list[_Unit], start: int, end: int, target: int) -> None:
    bounds = _trimmed(text, start, end)
    if bounds is None:
        return
    pos, stop = bounds
    gap_start = units[-1].end if units else pos
    new_paragraph = not units or _PARAGRAPH_BREAK.search(text, gap_start, pos) is not None
    while stop - pos > target:
        cut = _last_space(text, pos + 1, pos + target + 1)
        piece_end = pos + target if cut is None else _rstrip(text, cut)
        units.append(_Unit(pos, piece_end, new_paragraph))
        new_paragraph = False
        pos = _lstrip(text, piece_end)
    units.append(_Unit(pos, stop, new_paragraph))


def _last_space(text: str, start: int, end: int) -> int | None:
    last = None
    for match in _SPACE.finditer(text, start, end):
        last = match.start()
    return last


def _pack(text: str, units: list[_Unit], target: int, overlap: int) -> list[tuple[int, int]]:
    chunks: list[tuple[int, int]] = []
    i, start = 0, units[0].start if units else 0
    while i < len(units):
        j = i
        while j + 1 < len(units) and units[j + 1].end - start <= target:
            j += 1
        if j + 1 < len(units):
            j = _prefer_paragraph_end(units, i, j, start, target)
        chunks.append((start, units[j].end))
        previous_start, i = start, j + 1
        if i < len(units):
            start = _overlap_start(text, units, i, previous_start, target, overlap)
    return chunks


def _prefer_paragraph_end(units: list[_Unit], i: int, j: int, start: int, target: int) -> int:
    """End the chunk at the last paragraph break if that still fills at least half the target."""
    for k in range(j + 1, i, -1):
        if units[k].paragraph_start:
            return k - 1 if units[k - 1].end - start >= target // 2 else j
    return j


def _overlap_start(
    text: str, units: list[_Unit], i: int, previous_start: int, target: int, overlap: int
) -> int:
    """Where the chunk holding units[i] starts: whole trailing units of the previous chunk that fit
    in `overlap`, else the first word start in the last `overlap` chars, else units[i] itself."""
    previous_end = units[i - 1].end
    earliest = max(previous_end - overlap, units[i].end - target, previous_start + 1)
    for m in range(i - 1, -1, -1):
        if units[m].start < earliest:
            if m == i - 1:
                word = _WORD_START.search(text, earliest, previous_end)
                return word.start() if word is not None else units[i].start
            return units[m + 1].start
    return units[0].start
