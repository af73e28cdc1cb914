"""The `[n]` citation tracker (extractive_markers.MarkerCitations) streamed in pieces: the same
citations however the answer is split, at a cost of about one pass over it."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cairn.adapters.local import extractive_markers
from cairn.adapters.local.extractive_markers import MarkerCitations
from cairn.ports.generator import Citation, Passage

PASSAGES = [Passage(f"c{n}", f"d{n}", f"Passage {n} about the kettle. It descales.") for n in range(1, 5)]

PIECES = [
    *("a", "b", "x", " ", "\t", "\n", "\u00a0", ".", "!", "?", "…", '"', "'", ")", "[", "]"),
    *("1", "2", "5", "٣", ",", ";", "passage", "pas", "Source", "doc", "[1]", "[2, 3]", "[passage 4]"),
    *(" [", "[1, 2", " ;3", " 4 ,", "3.5", "word "),
]

Cited = tuple[str, int, int, str]


def cited(found: list[Citation]) -> list[Cited]:
    return [(c.chunk_id, c.answer_start, c.answer_end, c.quote) for c in found]


def streamed(pieces: list[str]) -> tuple[list[Cited], str]:
    tracker = MarkerCitations(PASSAGES)
    out: list[Cited] = []
    length = 0
    for piece in pieces:
        length += len(piece)
        found = cited(tracker.feed(piece))
        assert all(end <= length for _, _, end, _ in found), "a citation points past the text so far"
        out += found
    return out + cited(tracker.finish()), tracker.answer


@st.composite
def split_texts(draw: st.DrawFn) -> list[str]:
    text = "".join(draw(st.lists(st.sampled_from(PIECES), max_size=40)))
    cuts = sorted(draw(st.sets(st.integers(0, len(text)), max_size=15)))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in pairwise(bounds)]


@settings(max_examples=1_500, deadline=None)
@given(split_texts())
def test_any_split_cites_as_the_whole_text_does(pieces: list[str]) -> None:
    text = "".join(pieces)
    whole, answer = streamed([text])
    assert streamed(pieces) == (whole, answer)
    assert answer == text
    for _, start, end, _ in whole:
        assert answer[start:end] == answer[start:end].strip() != ""


class ScanningMarkerCitations:
    """The tracker MarkerCitations replaced, kept as the oracle of its citations: each piece
    scanned again from the start of the first sentence not yet released (quadratic, exact)."""

    _TRAILING = re.compile(
        rf"(?:[ \t]*\[(?:(?:passage|source|doc)\s*)?{extractive_markers._NUMBERS}\])*", re.I
    )
    _END = re.compile(r"[.!?…]+[\"')]*(?=\s|\[|\Z)|\n")

    def __init__(self, passages: list[Passage]) -> None:
        self.cite = MarkerCitations(passages)  # its _cite, over the same answer
        self.answer, self.cursor = "", 0

    def feed(self, text: str, *, final: bool = False) -> list[Citation]:
        self.answer += text
        self.cite.feed(text)
        out: list[Citation] = []
        while (found := self._next_sentence(final)) is not None:
            start, end, self.cursor = found
            out += self.cite._cite(start, end)
        return out

    def _next_sentence(self, final: bool) -> tuple[int, int, int] | None:
        text, i = self.answer, self.cursor
        if not text[i:].strip():
            return None
        for m in self._END.finditer(text, i):
            if m.group() == "\n":
                if text[i : m.start()].strip():
                    return i, m.start(), m.end()
                continue
            trailing = self._TRAILING.match(text, m.end())
            end = trailing.end() if trailing else m.end()
            rest = text[end:].lstrip(" \t")
            if not rest or extractive_markers._PARTIAL.match(rest):
                return (i, len(text), len(text)) if final else None
            return i, end, end
        return (i, len(text), len(text)) if final else None


@settings(max_examples=1_500, deadline=None)
@given(split_texts())
def test_each_piece_cites_what_the_scanning_tracker_cited(pieces: list[str]) -> None:
    tracker, oracle = MarkerCitations(PASSAGES), ScanningMarkerCitations(PASSAGES)
    for piece in pieces:
        assert cited(tracker.feed(piece)) == cited(oracle.feed(piece))
    assert cited(tracker.finish()) == cited(oracle.feed("", final=True))


def test_a_marker_split_across_pieces_cites_its_sentence() -> None:
    found, answer = streamed(["It cost 3.", "5 euros [pas", "sage 2", ", 3", "]. Then [1", "] more"])
    assert [(chunk, answer[start:end]) for chunk, start, end, _ in found] == [
        ("c2", "It cost 3.5 euros [passage 2, 3]."),
        ("c3", "It cost 3.5 euros [passage 2, 3]."),
        ("c1", "Then [1] more"),
    ]


class CountingPattern:
    """A compiled pattern that adds up the characters each call is given to read: the span of a
    match, the text up to what a search or an iteration found (to its end if it found nothing)."""

    def __init__(self, pattern: re.Pattern[str], counter: list[int]) -> None:
        self.pattern, self.counter = pattern, counter

    def _read(self, string: str, pos: int, endpos: int, upto: int | None = None) -> None:
        self.counter[0] += (min(endpos, len(string)) if upto is None else upto) - pos

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        self._read(string, pos, endpos)
        return self.pattern.match(string, pos, endpos)

    def fullmatch(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        self._read(string, pos, endpos)
        return self.pattern.fullmatch(string, pos, endpos)

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        found = self.pattern.search(string, pos, endpos)
        self._read(string, pos, endpos, found.end() if found else None)
        return found

    def finditer(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        at = pos
        for found in self.pattern.finditer(string, pos, endpos):
            self._read(string, at, endpos, found.end())
            at = found.end()
            yield found
        self._read(string, at, endpos)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pattern, name)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("word " * 1_200, id="one sentence without an end"),
        pytest.param("It cost 3. [" + "1, " * 2_000, id="an unclosed ["),
        pytest.param("Done." + " " * 6_000, id="spaces after a full stop"),
        pytest.param("Done." + "[1]" * 2_000, id="markers after a full stop"),
        pytest.param("Done" + "." * 6_000, id="a run of full stops"),
        pytest.param("She ran [1]. It rained.[2][3] Ask [passage 2, 3]!\n" * 120, id="prose"),
    ],
)
def test_streaming_reads_the_answer_about_once(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    """Each piece read the answer again from the start of the sentence not yet ended (or all of it
    after a full stop): 6,000 characters in pieces of three were 6 million characters read."""
    counter = [0]
    for name, value in vars(extractive_markers).items():
        if isinstance(value, re.Pattern):
            monkeypatch.setattr(extractive_markers, name, CountingPattern(value, counter))
    tracker = MarkerCitations(PASSAGES)
    for i in range(0, len(text), 3):
        tracker.feed(text[i : i + 3])
    tracker.finish()
    assert tracker.answer == text
    assert counter[0] <= 4 * len(text)
