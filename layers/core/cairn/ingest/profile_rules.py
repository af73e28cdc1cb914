"""The rules library-type profiles (profiles.py) are made of: hard boundaries (dated entries,
chapters, scene breaks and headings, catalogue entries) and atomic blocks (fenced code, pipe
tables, stanzas, figure-bearing sentences)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime

from cairn.ingest.markdown import iter_lines

Range = tuple[int, int]


@dataclass(frozen=True, slots=True)
class BoundaryRule:
    """A line (outside code fences) matching `pattern` starts a new segment."""

    name: str
    pattern: re.Pattern[str]
    context: Callable[[str], str] | None = None
    """The context it sets from the (stripped) line, carried by every chunk until the next
    boundary that sets one; None: the boundary keeps the current context (a scene break)."""


_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]


_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)


_WEEKDAY = r"(?:(?:Mon|Tues?|Wed(?:nes)?|Thu(?:rs)?|Fri|Sat(?:ur)?|Sun)(?:day)?\.?,?\s+)"


_DATE_LINE = re.compile(
    rf"^\s*(?:#{{1,6}}\s+)?(?:\*\*)?{_WEEKDAY}?"
    rf"(?:(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<m1>{_MONTH}),?\s+(?P<y1>\d{{4}})"
    rf"|(?P<m2>{_MONTH})\s+(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y2>\d{{4}})"
    r"|(?P<y3>\d{4})-(?P<m3>\d{2})-(?P<d3>\d{2}))"
    r"(?:\*\*)?(?:\s*[-—–:,|].{0,60})?\s*$",
    re.IGNORECASE,
)


def _date_of(line: str) -> date | None:
    match = _DATE_LINE.match(line)
    if match is None:
        return None
    g = match.groupdict()
    try:
        if g["y3"]:
            return date(int(g["y3"]), int(g["m3"]), int(g["d3"]))
        month_name = (g["m1"] or g["m2"]).rstrip(".").lower()
        month = next(i for i, name in enumerate(_MONTHS, 1) if name.startswith(month_name[:3]))
        return date(int(g["y1"] or g["y2"]), month, int(g["d1"] or g["d2"]))
    except (ValueError, StopIteration):
        return None


def date_context(line: str) -> str:
    """The date spelled out in full ("Tuesday 14 March 2023"), so a query that names the month or
    the weekday finds every chunk of the entry whatever format the entry was dated in."""
    found = _date_of(line)
    if found is None:
        return line.strip("#* \t")
    moment = datetime(found.year, found.month, found.day)
    return f"{moment:%A} {found.day} {moment:%B %Y}"


def line_context(line: str) -> str:
    return " ".join(line.strip("#* \t").split())


DATE_ENTRY = BoundaryRule("date entry", _DATE_LINE, date_context)


CHAPTER = BoundaryRule(
    "chapter heading",
    re.compile(r"^\s*(?:#{1,6}\s+)?(?:chapter|part|book|prologue|epilogue)\b[^\n]{0,80}$", re.IGNORECASE),
    line_context,
)


SCENE_BREAK = BoundaryRule(
    "scene break",
    # *** or * * *, a lone # or §, or a short line centred with ten or more leading spaces.
    re.compile(r"^\s*(?:\*\s*\*\s*\*[\s*]*|#|§)\s*$|^[ \t]{10,}\S[^\n]{0,50}$"),
)


SCENE_HEADING = BoundaryRule(
    "scene heading",
    re.compile(r"^\s*(?:\d+[A-Z]?\.?\s+)?(?:INT\./EXT\.|EXT\./INT\.|I/E\.?|INT\.|EXT\.)\s+\S[^\n]*$"),
    line_context,
)


CATALOGUE_ENTRY = BoundaryRule(
    "catalogue entry",
    re.compile(r"^\s*(?:#{1,6}\s+)?(?:Plate|Cat\.|No\.|Fig\.|Catalogue)\s*\d+[.:]?\s+\S[^\n]{0,100}$"),
    line_context,
)


def fences(text: str) -> list[Range]:
    """Fenced code blocks, fence lines included (an unclosed fence runs to the end)."""
    ranges: list[Range] = []
    opened: int | None = None
    last_end = 0
    for offset, line, is_code in iter_lines(text):
        if is_code and opened is None:
            opened = offset
        elif not is_code and opened is not None:
            ranges.append((opened, last_end))
            opened = None
        last_end = offset + len(line)
    if opened is not None:
        ranges.append((opened, last_end))
    return ranges


def _line_blocks(text: str, keep: Callable[[str], bool], min_lines: int) -> list[Range]:
    """Runs of consecutive non-code lines for which `keep` holds, at least `min_lines` long."""
    ranges: list[Range] = []
    run: list[tuple[int, int]] = []
    for offset, line, is_code in iter_lines(text):
        if not is_code and keep(line):
            run.append((offset, offset + len(line.rstrip())))
            continue
        if len(run) >= min_lines:
            ranges.append((run[0][0], run[-1][1]))
        run = []
    if len(run) >= min_lines:
        ranges.append((run[0][0], run[-1][1]))
    return ranges


def tables(text: str) -> list[Range]:
    """Pipe tables: two or more consecutive lines that start with `|` or hold two or more pipes."""
    return _line_blocks(text, lambda line: line.lstrip().startswith("|") or line.count("|") >= 2, 2)


_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}(?:\s|$)")


def stanzas(text: str) -> list[Range]:
    """Blocks of two or more consecutive non-blank lines that are not headings (verses, stanzas)."""
    return _line_blocks(text, lambda line: bool(line.strip()) and not _HEADING_LINE.match(line), 2)


_ABBREVIATIONS = frozenset(
    [
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "no",
        "nos",
        "acct",
        "inc",
        "corp",
        "co",
        "ltd",
        "llc",
        "plc",
        "approx",
        "est",
        "mr",
        "mrs",
        "ms",
        "dr",
        "st",
        "vs",
        "etc",
        "e.g",
        "i.e",
        "u.s",
        "u.k",
        "fig",
        "ref",
        "art",
        "sec",
        "p",
        "pp",
        "vol",
        "ca",
    ]
)


_LAST_WORD = re.compile(r"\S+$")


_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*(?=\s)")


_FIGURE = re.compile(
    r"[$€£¥]\s?\d|\d\s?(?:%|percent\b|per cent\b|bps\b)|\b(?:USD|EUR|GBP|CHF|JPY)\s?\d|\d\s?(?:USD|EUR|GBP)\b"
    rf"|\b{_MONTH}\s+\d{{1,2}},?\s+\d{{4}}|\b\d{{1,2}}\s+{_MONTH}\s+\d{{4}}|\b\d{{4}}-\d{{2}}-\d{{2}}\b"
    r"|\b\d{1,2}/\d{1,2}/\d{2,4}\b|\b\d{2,}(?:[- ]\d{2,}){1,}\b|\b\d{1,3}(?:,\d{3})+(?:\.\d+)?\b"
    r"|\b(?:acct|account|iban|sort code)\b",
    re.IGNORECASE,
)


def _sentences(text: str) -> Iterable[Range]:
    """Sentences of prose paragraphs, not ended by the period of an abbreviation or an initial
    ("Jan. 5", "No. 4471", "U.S."); a line break ends one only at a blank line or a heading."""
    for start, end in _line_blocks(
        text, lambda line: bool(line.strip()) and not _HEADING_LINE.match(line), 1
    ):
        pos = start
        for match in _SENTENCE_END.finditer(text, start, end):
            word_match = _LAST_WORD.search(text, pos, match.start())
            word = word_match.group(0).lower().strip("(\"'“‘") if word_match else ""
            if word in _ABBREVIATIONS or len(word) == 1:
                continue
            yield (pos, match.end())
            pos = skip_space(text, match.end(), end)
        if pos < end:
            yield (pos, end)


def figure_sentences(text: str) -> list[Range]:
    """Sentences that state a figure: an amount, a percentage, a date, an account number."""
    return [(a, b) for a, b in _sentences(text) if _FIGURE.search(text, a, b)]


ATOMIC_RULES: dict[str, Callable[[str], list[Range]]] = {
    "fence": fences,
    "table": tables,
    "figures": figure_sentences,
    "stanza": stanzas,
}


def skip_space(text: str, pos: int, end: int) -> int:
    while pos < end and text[pos].isspace():
        pos += 1
    return pos
