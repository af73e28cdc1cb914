"""Citations from a model's `[n]` markers, found while its answer streams in.

A generator that asks a model to cite numbered passages gets text like "She ran 10k [1]. Then…"
or "…minutes.[1][3]". Each marker cites passage n for the sentence that holds it (or that it
trails), and that sentence's span is only known once the sentence has ended, so citations are
released sentence by sentence, never pointing past the text already streamed. The quote is the
passage sentence that best matches the cited answer sentence (extractive_text.best_sentence).

Where sentences end: at a newline after more than whitespace, or after a run of `.!?…` and then of
closing quotes `"')` that whitespace, a `[` or the end of the text follows. Markers and the
spaces or tabs between them trail the sentence before them; what comes after them decides the
end, so a sentence ending the text so far, or followed by what may still become a marker (`[`,
`[passage`, `[1, `), waits for more text. The text is read once as it arrives (a state kept
between pieces), so a long answer costs its length: only the spaces and half-marker after a full
stop are read a second time, as the next sentence's start, once that sentence's end is known.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence

from cairn.adapters.local.extractive_text import best_sentence
from cairn.ports.generator import Citation, Passage

_NUMBERS = r"\d{1,3}(?:\s*[,;]\s*\d{1,3})*"
MARKER = re.compile(rf"\[(?:(?:passage|source|doc)\s*)?({_NUMBERS})\]", re.I)
_INSIDE = re.compile(rf"(?:(?:passage|source|doc)\s*)?{_NUMBERS}", re.I)  # a marker between [ and ]
_PARTIAL = re.compile(
    r"\[(?:(?:p|pa|pas|pass|passa|passag|passage|s|so|sou|sour|sourc|source|d|do|doc)\s*)?[\d,;\s]*\Z", re.I
)
_WORD_PREFIX = 8  # past this many characters inside a half-marker, only [\d,;\s] keeps it one
_HALF_MARKER_TAIL = re.compile(r"[\d,;\s]*")
_SENTENCE_STOP = re.compile(r"[\n.!?…]")
_FULL_STOPS = re.compile(r"[.!?…]*")
_CLOSING_QUOTES = re.compile(r"[\"')]*")
_BLANKS = re.compile(r"[ \t]*")
_SPACE = re.compile(r"\s")
_NOT_SPACE = re.compile(r"\S")

# where the reading stands
_TEXT = 0  # inside a sentence
_STOPS = 1  # in a run of full stops
_QUOTES = 2  # in the closing quotes after them
_TAIL = 3  # after a sentence's end (or its last complete marker): spaces and tabs
_BRACKET = 4  # in a `[` after them that may still become a marker


def _run_end(pattern: re.Pattern[str], s: str, i: int) -> int:
    """Where the run of characters `pattern` takes from s[i] ends."""
    found = pattern.match(s, i)
    return found.end() if found else i


class MarkerCitations:
    """Feed the streamed text in; get the citations of every sentence completed so far."""

    def __init__(self, passages: Sequence[Passage]) -> None:
        self.passages = list(passages)
        self._parts: list[str] = []
        self._offsets: list[int] = []  # where each part begins in the answer
        self._length = 0
        self._joined = ""
        self._start = 0  # where the sentence being read begins
        self._state = _TEXT
        self._worded = False  # the sentence so far holds more than whitespace
        self._end = 0  # in its tail: where the sentence ends if nothing more trails it
        self._bracket = 0  # in a bracket: where its `[` is

    @property
    def answer(self) -> str:
        if len(self._joined) != self._length:
            self._joined = "".join(self._parts)
        return self._joined

    def feed(self, text: str) -> list[Citation]:
        if not text:
            return []
        self._parts.append(text)
        self._offsets.append(self._length)
        self._length += len(text)
        out: list[Citation] = []
        self._read(text, self._length - len(text), out)
        return out

    def finish(self) -> list[Citation]:
        """At the end of the stream: the last sentence is complete however it ends."""
        out = self._cite(self._start, self._length) if self._state != _TEXT or self._worded else []
        self._start, self._state, self._worded = self._length, _TEXT, False
        return out

    def _read(self, s: str, at: int, out: list[Citation]) -> None:
        """Read `s`, which begins at `at` in the answer, from where the last piece left off."""
        i, n = 0, len(s)
        while i < n:
            if self._state == _TEXT:
                stop = _SENTENCE_STOP.search(s, i)
                j = stop.start() if stop else n
                self._worded = self._worded or _NOT_SPACE.search(s, i, j) is not None
                if stop is None:
                    return
                if s[j] != "\n":
                    self._state, self._worded = _STOPS, True
                elif self._worded:
                    out += self._cite(self._start, at + j)
                    self._start, self._worded = at + j + 1, False
                i = j + 1
                continue
            if self._state == _STOPS:
                i = _run_end(_FULL_STOPS, s, i)
            elif self._state == _QUOTES:
                i = _run_end(_CLOSING_QUOTES, s, i)
            elif self._state == _TAIL:
                i = _run_end(_BLANKS, s, i)
            elif at + i - self._bracket > _WORD_PREFIX:  # nearer its `[`, _step reads one at a time
                i = _run_end(_HALF_MARKER_TAIL, s, i)
            if i < n:
                i = self._step(s, i, at, out)

    def _step(self, s: str, i: int, at: int, out: list[Citation]) -> int:
        """Take s[i], the character that ends the run its state skips; where to read on."""
        c, here = s[i], at + i
        if self._state == _STOPS:
            if c in "\"')":
                self._state = _QUOTES
            else:
                self._after_stops(c, here)
            return i
        if self._state == _QUOTES:
            if c in ".!?…":
                self._state = _STOPS  # no sentence end: the next run of full stops may be one
            else:
                self._after_stops(c, here)
            return i
        if self._state == _TAIL:
            if c != "[":
                self._ended(here, out)
                return i
            self._state, self._bracket = _BRACKET, here
            return i + 1
        if c == "]":
            if _INSIDE.fullmatch(self._slice(self._bracket + 1, here)):
                self._state, self._end = _TAIL, here + 1
                return i + 1
        elif here - self._bracket <= _WORD_PREFIX and _PARTIAL.match(self._slice(self._bracket, here + 1)):
            return i + 1
        self._ended(here, out)
        return i

    def _after_stops(self, c: str, here: int) -> None:
        """After full stops and quotes, `c` at `here` makes them a sentence end, or no end."""
        if c == "[" or _SPACE.match(c):
            self._state, self._end = _TAIL, here
        else:
            self._state = _TEXT

    def _ended(self, here: int, out: list[Citation]) -> None:
        """What came at `here` ends the sentence (at self._end): cite it, then read what came
        between its end and `here` again as the next sentence's start."""
        out += self._cite(self._start, self._end)
        self._start, self._state, self._worded = self._end, _TEXT, False
        if self._end < here:
            self._read(self._slice(self._end, here), self._end, out)

    def _slice(self, start: int, end: int) -> str:
        """The answer's text from start to end, joined from the parts that hold it."""
        k = bisect_right(self._offsets, start) - 1
        pieces = []
        while start < end:
            part, base = self._parts[k], self._offsets[k]
            pieces.append(part[start - base : end - base])
            start, k = base + len(part), k + 1
        return "".join(pieces)

    def _cite(self, start: int, end: int) -> list[Citation]:
        text = self._slice(start, end)
        sentence = text.strip()
        if not sentence:
            return []
        start += len(text) - len(text.lstrip())
        end = start + len(sentence)
        numbers: list[int] = []
        for m in MARKER.finditer(sentence):
            for n in re.split(r"\s*[,;]\s*", m.group(1)):
                if 1 <= int(n) <= len(self.passages) and int(n) not in numbers:
                    numbers.append(int(n))
        plain = MARKER.sub("", sentence)
        return [
            Citation(
                chunk_id=(p := self.passages[n - 1]).chunk_id,
                document_id=p.document_id,
                answer_start=start,
                answer_end=end,
                quote=best_sentence(plain, p.text),
            )
            for n in numbers
        ]
