"""Citations from a model's `[n]` markers, found while its answer streams in.

A generator that asks a model to cite numbered passages gets text like "She ran 10k [1]. Then…"
or "…minutes.[1][3]". Each marker cites passage n for the sentence that holds it (or that it
trails), and that sentence's span is only known once the sentence has ended, so citations are
released sentence by sentence, never pointing past the text already streamed. The quote is the
passage sentence that best matches the cited answer sentence (extractive_text.best_sentence).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cairn.adapters.local.extractive_text import best_sentence
from cairn.ports.generator import Citation, Passage

_NUMBERS = r"\d{1,3}(?:\s*[,;]\s*\d{1,3})*"
MARKER = re.compile(rf"\[(?:(?:passage|source|doc)\s*)?({_NUMBERS})\]", re.I)
_TRAILING = re.compile(rf"(?:[ \t]*\[(?:(?:passage|source|doc)\s*)?{_NUMBERS}\])*", re.I)
_PARTIAL = re.compile(
    r"\[(?:(?:p|pa|pas|pass|passa|passag|passage|s|so|sou|sour|sourc|source|d|do|doc)\s*)?[\d,;\s]*\Z", re.I
)
_END = re.compile(r"[.!?…]+[\"')]*(?=\s|\[|\Z)|\n")


class MarkerCitations:
    """Feed the streamed text in; get the citations of every sentence completed so far."""

    def __init__(self, passages: Sequence[Passage]) -> None:
        self.passages = list(passages)
        self.answer = ""
        self._cursor = 0  # start of the first sentence not yet examined

    def feed(self, text: str) -> list[Citation]:
        self.answer += text
        return self._scan(final=False)

    def finish(self) -> list[Citation]:
        """At the end of the stream: the last sentence is complete however it ends."""
        return self._scan(final=True)

    def _scan(self, *, final: bool) -> list[Citation]:
        out: list[Citation] = []
        while (found := self._next_sentence(final)) is not None:
            start, end, self._cursor = found
            out.extend(self._cite(start, end))
        return out

    def _next_sentence(self, final: bool) -> tuple[int, int, int] | None:
        """(start, end, next cursor) of the next complete sentence, or None to wait for more text."""
        text, i = self.answer, self._cursor
        if not text[i:].strip():
            return None
        for m in _END.finditer(text, i):
            if m.group() == "\n":
                end = m.start()
                if text[i:end].strip():
                    return i, end, m.end()
                continue
            trailing = _TRAILING.match(text, m.end())
            end = trailing.end() if trailing else m.end()
            rest = text[end:].lstrip(" \t")
            if not rest or _PARTIAL.match(rest):
                # the sentence may still gain a marker, or this was no sentence end ("3." of "3.5")
                return (i, len(text), len(text)) if final else None
            return i, end, end
        return (i, len(text), len(text)) if final else None

    def _cite(self, start: int, end: int) -> list[Citation]:
        while start < end and self.answer[start].isspace():
            start += 1
        while end > start and self.answer[end - 1].isspace():
            end -= 1
        sentence = self.answer[start:end]
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
