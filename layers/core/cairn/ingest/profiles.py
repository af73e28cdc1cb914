"""Library-type profiles (Mnemosyne `library_type`): how a library's text is cut and ranked.

A profile adds two kinds of rule in front of the heading-aware chunker (ingest/chunking.py):

- **hard boundaries**: lines that start a new segment (a fiction chapter or scene break, a journal
  entry's date, a film scene heading). Each segment is cut on its own, so no chunk spans two; a
  boundary may also set the *context* that every chunk after it carries (the chapter title, the
  entry's date) until the next boundary that sets one.
- **atomic blocks**: ranges never cut unless longer than `atomic_cap_chars` (fenced code, pipe
  tables, figure-bearing sentences, stanzas). A segment's text between atomic blocks is cut by
  `chunk()`; blocks and those spans are then packed together up to `target_chars`.

Every span is `text[start:end]` of the original text, starts and ends on a non-whitespace
character, and the spans cover every non-whitespace character. A profile with no rules gives
exactly `chunk()`'s spans. Which profile each type keeps was measured (bench/library_profiles.py,
docs/MNEMOSYNE_PROFILES.md); a type whose candidate did not help keeps the default.

The rules themselves are in profile_rules.py; this module holds the profiles and cuts text with them.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, replace

from cairn.ingest.chunking import chunk
from cairn.ingest.markdown import atx_headings, iter_lines
from cairn.ingest.profile_rules import (
    ATOMIC_RULES,
    CATALOGUE_ENTRY,
    CHAPTER,
    DATE_ENTRY,
    SCENE_BREAK,
    SCENE_HEADING,
    BoundaryRule,
    Range,
    skip_space,
)

__all__ = [
    "CANDIDATES",
    "DEFAULT_PROFILE",
    "LIBRARY_TYPES",
    "PROFILES",
    "BoundaryRule",
    "LibraryProfile",
    "ProfiledSpan",
    "chunk_for",
    "profile_for",
]


LIBRARY_TYPES = (
    "fiction",
    "nonfiction",
    "technical",
    "music",
    "film",
    "art",
    "journal",
    "business",
    "finance",
)


@dataclass(frozen=True, slots=True)
class LibraryProfile:
    name: str
    target_chars: int = 700
    overlap_chars: int = 120
    boundaries: tuple[BoundaryRule, ...] = ()
    atomic: tuple[str, ...] = ()
    """Names of atomic-block rules (ATOMIC_RULES): "fence", "table", "figures", "stanza"."""
    atomic_cap_chars: int = 2100
    """An atomic block longer than this is cut like any other text."""
    bm25_weight: float = 1.0
    vector_weight: float = 0.4
    """Weights of the two legs in the fused search (SearchTuning's defaults)."""
    rerank_instruction: str | None = None
    """What a re-ranker should prefer for this type; None: no instruction (none was measured)."""
    rationale: str = ""

    @property
    def cuts_like_default(self) -> bool:
        return (
            not self.boundaries
            and not self.atomic
            and (self.target_chars, self.overlap_chars)
            == (DEFAULT_PROFILE.target_chars, DEFAULT_PROFILE.overlap_chars)
        )


@dataclass(frozen=True, slots=True)
class ProfiledSpan:
    text: str
    start: int
    end: int
    heading: str | None
    """The heading path of the span's section, as `chunk()` gives it."""
    context: str | None = None
    """What situates the span beyond its headings: the entry's date, the chapter, the scene."""

    @property
    def label(self) -> str | None:
        """The heading path with the context in front, unless the path already names it: what
        the indexer puts in the chunk's title and in front of the text it embeds."""
        if not self.context:
            return self.heading
        if not self.heading:
            return self.context
        if self.context in self.heading:
            return self.heading
        return f"{self.context} > {self.heading}"


def chunk_for(profile: LibraryProfile, text: str) -> list[ProfiledSpan]:
    """`text` cut by `profile`; a profile with no rules cuts exactly as `chunk()`."""
    if profile.cuts_like_default or (not profile.boundaries and not profile.atomic):
        spans = chunk(text, profile.target_chars, profile.overlap_chars).spans
        return [ProfiledSpan(s.text, s.start, s.end, s.heading) for s in spans]
    headings = _HeadingPaths(text)
    out: list[ProfiledSpan] = []
    for start, end, context in _segments(text, profile.boundaries):
        for a, b in _segment_spans(text, start, end, profile, headings):
            out.append(ProfiledSpan(text[a:b], a, b, headings.at(b - 1), context))
    return out


def _segments(text: str, rules: tuple[BoundaryRule, ...]) -> list[tuple[int, int, str | None]]:
    """(start, end, context) of each segment; a boundary line starts the segment it belongs to."""
    cuts: list[tuple[int, str | None, bool]] = []  # offset, context, sets context
    if rules:
        for offset, line, is_code in iter_lines(text):
            if is_code or not line.strip():
                continue
            for rule in rules:
                if rule.pattern.match(line):
                    setting = rule.context is not None
                    cuts.append((offset, rule.context(line.strip()) if rule.context else None, setting))
                    break
    segments: list[tuple[int, int, str | None]] = []
    start, context = 0, None
    for offset, new_context, setting in cuts:
        if offset > start:
            segments.append((start, offset, context))
        start = offset
        if setting:
            context = new_context
    segments.append((start, len(text), context))
    return segments


def _segment_spans(
    text: str, start: int, end: int, profile: LibraryProfile, headings: _HeadingPaths
) -> list[Range]:
    target, overlap = profile.target_chars, profile.overlap_chars
    units: list[tuple[int, int, bool]] = []  # start, end, atomic

    def free(a: int, b: int) -> None:
        if a < b and text[a:b].strip():
            spans = chunk(text[a:b], target, overlap).spans
            units.extend((a + s.start, a + s.end, False) for s in spans)

    pos = start
    for a, b in _atomic_ranges(text, start, end, profile):
        free(pos, a)
        units.append((a, b, True))
        pos = b
    free(pos, end)
    packed: list[Range] = []
    for a, b, atomic in units:
        if packed:
            first, last = packed[-1]
            if b - first <= target and not headings.starts_within(last, b) and (atomic or a >= last):
                packed[-1] = (first, max(last, b))
                continue
        packed.append((a, b))
    return packed


def _atomic_ranges(text: str, start: int, end: int, profile: LibraryProfile) -> list[Range]:
    """Non-overlapping atomic blocks inside [start, end), trimmed, at most the cap long."""
    segment = text[start:end]
    found: list[Range] = []
    for name in profile.atomic:
        for a, b in ATOMIC_RULES[name](segment):
            a, b = skip_space(segment, a, b), _rstrip(segment, a, b)
            if a < b:
                found.append((start + a, start + b))
    found.sort()
    merged: list[Range] = []
    for a, b in found:
        if merged and a < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return [(a, b) for a, b in merged if b - a <= profile.atomic_cap_chars]


def _rstrip(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


class _HeadingPaths:
    """The heading path in effect at any offset, as the chunker names a section."""

    def __init__(self, text: str) -> None:
        self.starts: list[int] = []
        self.paths: list[str | None] = []
        stack: list[tuple[int, str]] = []
        for heading in atx_headings(text):
            while stack and stack[-1][0] >= heading.level:
                stack.pop()
            if heading.title:
                stack.append((heading.level, heading.title))
            self.starts.append(heading.start)
            self.paths.append(" > ".join(title for _, title in stack) or None)

    def at(self, offset: int) -> str | None:
        i = bisect.bisect_right(self.starts, offset)
        return self.paths[i - 1] if i else None

    def starts_within(self, start: int, end: int) -> bool:
        """Whether a heading starts in [start, end)."""
        i = bisect.bisect_left(self.starts, start)
        return i < len(self.starts) and self.starts[i] < end


DEFAULT_PROFILE = LibraryProfile("default", rationale="chunk() as for any document (docs/CHUNKING.md)")


CANDIDATES: dict[str, LibraryProfile] = {
    "fiction": LibraryProfile(
        "fiction",
        boundaries=(CHAPTER, SCENE_BREAK),
        rationale="chapter headings and scene breaks are hard boundaries; chunks carry the chapter",
    ),
    "nonfiction": LibraryProfile(
        "nonfiction",
        atomic=("stanza",),  # blank-line paragraphs of two or more lines kept whole
        atomic_cap_chars=1000,
        rationale="paragraphs kept whole (up to 1000 chars)",
    ),
    "technical": LibraryProfile(
        "technical",
        atomic=("fence", "table"),
        rationale="fenced code and pipe tables kept whole (up to 2100 chars)",
    ),
    "music": LibraryProfile(
        "music",
        atomic=("stanza",),
        atomic_cap_chars=1000,
        rationale="verses and stanzas kept whole",
    ),
    "film": LibraryProfile(
        "film",
        boundaries=(SCENE_HEADING,),
        rationale="INT./EXT. scene headings are hard boundaries; chunks carry the scene heading",
    ),
    "art": LibraryProfile(
        "art",
        boundaries=(CATALOGUE_ENTRY,),
        rationale="catalogue entries (Plate N, Cat. N) are hard boundaries; chunks carry the entry",
    ),
    "journal": LibraryProfile(
        "journal",
        boundaries=(DATE_ENTRY,),
        rationale="entry dates are hard boundaries; every chunk of an entry carries its date in full",
    ),
    "business": LibraryProfile(
        "business",
        boundaries=(DATE_ENTRY,),
        atomic=("table",),
        rationale="dated meetings are hard boundaries carrying the date; tables kept whole",
    ),
    "finance": LibraryProfile(
        "finance",
        atomic=("figures", "table"),
        atomic_cap_chars=1400,
        rationale="figure-bearing sentences and tables kept whole",
    ),
}


# What each type keeps, decided by bench/library_profiles.py on generated corpora (numbers in
# docs/MNEMOSYNE_PROFILES.md): a candidate's rule or a leg weighting is kept only where it raised
# pooled recall@10 or MRR@10 by 0.02 without lowering the other by more than 0.005. Nonfiction and
# music showed no such gain and keep the default; rules of a candidate that added nothing over the
# others (fiction's scene breaks, technical's and business's tables, finance's tables) were dropped.
_BM25_HEAVY = 0.2  # the vector leg's weight where full text should lead (bm25 stays 1.0)


_KEPT: dict[str, LibraryProfile] = {
    "fiction": replace(
        CANDIDATES["fiction"],
        boundaries=(CHAPTER,),
        rationale="chapter headings are hard boundaries; chunks carry the chapter",
    ),
    "technical": replace(
        CANDIDATES["technical"], atomic=("fence",), rationale="fenced code kept whole (up to 2100 chars)"
    ),
    "film": replace(CANDIDATES["film"], vector_weight=_BM25_HEAVY),
    "art": replace(CANDIDATES["art"], vector_weight=_BM25_HEAVY),
    "journal": replace(CANDIDATES["journal"], vector_weight=_BM25_HEAVY),
    "business": replace(
        CANDIDATES["business"],
        atomic=(),
        rationale="dated meetings are hard boundaries carrying the date",
        vector_weight=_BM25_HEAVY,
    ),
    "finance": replace(
        CANDIDATES["finance"],
        atomic=("figures",),
        rationale="figure-bearing sentences kept whole (up to 1400 chars)",
    ),
}


PROFILES: dict[str, LibraryProfile] = {
    kind: _KEPT.get(kind, replace(DEFAULT_PROFILE, name=kind)) for kind in LIBRARY_TYPES
}


def profile_for(library_type: str | None) -> LibraryProfile:
    """The profile of a library type; unknown or missing types get the default."""
    return PROFILES.get(library_type or "", DEFAULT_PROFILE)
