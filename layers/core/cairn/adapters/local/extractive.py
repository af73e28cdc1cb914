"""The offline generator: an answer made of the passages' own most relevant sentences.

Every sentence of the answer is quoted verbatim from a passage and cited with its exact span in
the answer, so nothing is invented; `model` is "extractive" so callers can say so. Only the
sentences that answer the question are quoted (extractive_select: by their cosine to the question
when an embedder is given, else by the question's content terms); when none does, the answer says
so and cites nothing. Sentences are streamed a few words per delta, each followed by its citation.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence

import anyio.lowlevel

from cairn import off_loop
from cairn.adapters.local.extractive_select import MIN_RELATIVE, MIN_SIMILARITY, Pick, Similarity, select
from cairn.ports.embedder import Embedder
from cairn.ports.generator import Answer, Citation, Delta, Done, GenerationEvent, Passage, collect

MODEL = "extractive"
NO_MEMORY = "No supporting memory was found for this question."
_WORD_GROUP = re.compile(r"\S+\s*")
_SENTENCE_END = (".", "!", "?", '"', "'", ")", "…")


def word_groups(text: str, size: int) -> list[str]:
    """`text` cut after every `size` words (whitespace kept), so the pieces concatenate back to it."""
    words = _WORD_GROUP.findall(text)
    lead = text[: len(text) - len(text.lstrip())]
    groups = ["".join(words[i : i + size]) for i in range(0, len(words), size)] or [""]
    groups[0] = lead + groups[0]
    return groups


class ExtractiveGenerator:
    def __init__(
        self,
        max_sentences: int = 3,
        *,
        words_per_delta: int = 5,
        min_relative: float = MIN_RELATIVE,
        embedder: Embedder | None = None,
        min_similarity: float = MIN_SIMILARITY,
    ) -> None:
        """`embedder` scores sentences by their cosine to the question; `min_similarity` is the
        cosine (plus the small term share) a sentence needs to answer at all: the embedding model's
        calibrated midpoint. Without an embedder, the question's content terms decide."""
        if max_sentences < 1 or words_per_delta < 1:
            raise ValueError("max_sentences and words_per_delta must be positive")
        self.max_sentences = max_sentences
        self.words_per_delta = words_per_delta
        self.min_relative = min_relative
        self.embedder = embedder
        self.min_similarity = min_similarity

    def _similarity(self, question: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        assert self.embedder is not None
        vectors = self.embedder.embed([question, *texts])
        return [float(v) for v in vectors[1:] @ vectors[0]]

    def _select(self, question: str, passages: Sequence[Passage]) -> list[Pick]:
        similarity: Similarity | None = self._similarity if self.embedder is not None else None
        return select(
            question,
            passages,
            self.max_sentences,
            self.min_relative,
            similarity=similarity,
            min_similarity=self.min_similarity,
        )

    @property
    def model_id(self) -> str:
        return MODEL

    async def stream(self, question: str, passages: Sequence[Passage]) -> AsyncIterator[GenerationEvent]:
        if self.embedder is None:
            picks = self._select(question, passages)
        else:  # the embedder blocks: off the event loop
            picks = await off_loop.run_sync(self._select, question, passages)
        if not picks:
            yield Delta(NO_MEMORY)
            yield Done(NO_MEMORY, MODEL)
            return
        answer = ""
        for pick in picks:
            separator = "" if not answer else " " if answer.endswith(_SENTENCE_END) else "\n"
            start = len(answer) + len(separator)
            for piece in word_groups(separator + pick.text, self.words_per_delta):
                answer += piece
                yield Delta(piece)
                await anyio.lowlevel.checkpoint()  # let the consumer's writes go out between pieces
            yield Citation(pick.passage.chunk_id, pick.passage.document_id, start, len(answer), pick.text)
        yield Done(answer, MODEL)

    async def complete(self, question: str, passages: Sequence[Passage]) -> Answer:
        return await collect(self.stream(question, passages))
