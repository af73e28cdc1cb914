"""Heading-aware chunking: sections → paragraphs → sentences → words, packed to a target size.

Every span is `text[start:end]` of the original text, starts and ends on a non-whitespace
character, and the spans together cover every non-whitespace character.

Chunking runs forward, so appending to a text changes only its last chunks. A section's spans
depend on nothing but its own text and heading path (and the two characters before it), so every
section but the last stays as it was. The last one keeps its heading path unless the text ended
with a body-less heading and the append starts with another; if it does, every chunk of it but
the last two stays as it was: the last unit may grow or be cut anew, which can change the chunk
ending just before it (appended text that starts with whitespace changes only the last chunk).
`chunk` uses this to extend a previous chunking instead of starting over; the result is always
exactly what chunking the whole text gives.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from cairn.ingest.markdown import atx_headings

__all__ = ["Chunked", "TextSpan", "chunk", "chunk_text"]

_PARAGRAPH_BREAK = re.compile(r"\n[ \t\r\f\v]*\n\s*")
# A unit ends at a whitespace run that follows sentence punctuation (plus a closing quote or
# bracket) or that holds a line break. Every alternative consumes the run's first character before
# it looks back, so the scanner only stops at whitespace: a third of the time of leading
# lookbehinds on 1 MB. Each match is a whole run, found at its first character.
_UNIT_BREAK = re.compile(
    r"\s(?:(?<=[.!?…]\s)|(?<=[.!?…][\"'”’)\]]\s)"  # after sentence punctuation
    r"|(?<=\S\s)(?=[^\S\n]*\n)|(?<=\S\n)"  # a run holding a line break
    r"|(?<=\A\s)(?=[^\S\n]*\n)|(?<=\A\n))\s*"  # ... at the very start of the text
)
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


Section = tuple[int, int, str | None]  # start, end, heading path


@dataclass(frozen=True, slots=True)
class Chunked:
    """A text's spans, grouped by the sections they were cut in, so an append can extend them."""

    text: str
    target: int
    overlap: int
    spans: tuple[TextSpan, ...]
    sections: tuple[Section, ...]  # empty when the spans cannot be extended (a one-span text)
    ends: tuple[int, ...]  # spans[ends[i - 1]:ends[i]] are the spans of sections[i]
    reused: int = 0
    """How many leading spans are the very spans of the chunking this one extended."""

    def section_spans(self, index: int) -> tuple[TextSpan, ...]:
        return self.spans[self.ends[index - 1] if index else 0 : self.ends[index]]


def chunk_text(text: str, target_chars: int = 700, overlap_chars: int = 120) -> list[TextSpan]:
    """Spans of at most `target_chars`; defaults keep p95 under MiniLM's 256 tokens (docs/CHUNKING.md)."""
    return list(chunk(text, target_chars, overlap_chars).spans)


def chunk(
    text: str, target_chars: int = 700, overlap_chars: int = 120, previous: Chunked | None = None
) -> Chunked:
    """`chunk_text`, keeping its sections; when `text` extends `previous.text`, the spans that the
    extension cannot change are taken from `previous` instead of being cut again."""
    if target_chars < 1 or not 0 <= overlap_chars < target_chars:
        raise ValueError("need target_chars >= 1 and 0 <= overlap_chars < target_chars")
    bounds = _trimmed(text, 0, len(text))
    if bounds is None:
        return Chunked(text, target_chars, overlap_chars, (), (), ())
    sections = _sections(text)
    if bounds[1] - bounds[0] <= target_chars:
        heading = sections[0][2]
        only = TextSpan(text[bounds[0] : bounds[1]], bounds[0], bounds[1], heading)
        return Chunked(text, target_chars, overlap_chars, (only,), (), ())
    extending = (
        previous is not None
        and previous.sections
        and (previous.target, previous.overlap) == (target_chars, overlap_chars)
        and text.startswith(previous.text)
    )
    spans: list[TextSpan] = []
    ends: list[int] = []
    reused = 0
    for index, section in enumerate(sections):
        if extending and previous is not None and index < len(previous.sections):
            old = previous.sections[index]
            if old == section:  # same bounds, same heading, same text
                spans += previous.section_spans(index)
                reused = len(spans)
                ends.append(reused)
                continue
            extending = False
            if old[0] == section[0] and old[2] == section[2] and old[1] < section[1]:  # it grew
                kept = previous.section_spans(index)
                spans += kept[:-2]
                reused = len(spans)
                spans += _resumed(text, section, kept, target_chars, overlap_chars)
                ends.append(len(spans))
                continue
        extending = False
        spans += _section_spans(text, section, target_chars, overlap_chars)
        ends.append(len(spans))
    return Chunked(text, target_chars, overlap_chars, tuple(spans), tuple(sections), tuple(ends), reused)


def _section_spans(text: str, section: Section, target: int, overlap: int) -> list[TextSpan]:
    start, end, heading = section
    units = _units(text, start, end, target)
    return [TextSpan(text[a:b], a, b, heading) for a, b in _pack(text, units, target, overlap)]


def _resumed(
    text: str, section: Section, old: Sequence[TextSpan], target: int, overlap: int
) -> list[TextSpan]:
    """The spans of a section that grew, from its second-to-last old span on (the old spans
    before that one are unchanged). Units are cut again only from the last line break before it."""
    if len(old) < 3:
        return _section_spans(text, section, target, overlap)
    start, end, heading = section
    resume, before = old[-2], old[-3]
    newline = text.rfind("\n", start, resume.start)
    run_start = newline
    while run_start > start and text[run_start - 1].isspace():
        run_start -= 1
    if newline < 0 or run_start <= start:
        return _section_spans(text, section, target, overlap)[len(old) - 2 :]
    # A whitespace run holding a line break is a unit break whatever comes before it, so the
    # units cut from its end on are the section's own units from there.
    units = _units(text, _lstrip(text, newline), end, target, previous_end=run_start)
    first = sum(1 for unit in units if unit.end <= before.end)
    packed = _pack(text, units, target, overlap, first=first, start=resume.start)
    return [TextSpan(text[a:b], a, b, heading) for a, b in packed]


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


def _units(text: str, start: int, end: int, target: int, previous_end: int | None = None) -> list[_Unit]:
    """Sentences and lines of a section; any longer than `target` are cut at whitespace.

    `previous_end`: where the unit before `start` ended, when cutting from the middle of a section.
    """
    units: list[_Unit] = []
    range_start = start
    for match in _UNIT_BREAK.finditer(text, start, end):
        _add_units(text, units, range_start, match.start(), target, previous_end)
        range_start = match.end()
    _add_units(text, units, range_start, end, target, previous_end)
    return units


def _add_units(
    text: str, units: list[_Unit], start: int, end: int, target: int, previous_end: int | None
) -> None:
    bounds = _trimmed(text, start, end)
    if bounds is None:
        return
    pos, stop = bounds
    gap_start = units[-1].end if units else previous_end
    new_paragraph = gap_start is None or _PARAGRAPH_BREAK.search(text, gap_start, pos) is not None
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


def _pack(
    text: str, units: list[_Unit], target: int, overlap: int, *, first: int = 0, start: int | None = None
) -> list[tuple[int, int]]:
    """(start, end) of each chunk; from units[first] on, the chunk holding it starting at `start`."""
    chunks: list[tuple[int, int]] = []
    i = first
    if start is None:
        start = units[first].start if first < len(units) else 0
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
