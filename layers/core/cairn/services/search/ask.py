"""Grounded answers: retrieve chunks, then stream a generated answer with citations.

The stream speaks the seed's AskEvent shapes: one `retrieve` event with the chunks, then
`answer_delta` and `citation` events as the generator produces them, then `done` — or an `error`
event, after which nothing else follows.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from cairn import off_loop
from cairn.domain.errors import CairnError, InvalidInput, Unavailable
from cairn.domain.models import Brain
from cairn.ports.chunks import ChunkFilter
from cairn.ports.generator import Citation, Delta, Done, GenerationError, Generator, Passage
from cairn.services.search.relevance import GOOD_MATCH
from cairn.services.search.service import SearchService
from cairn.services.still_allowed import BrainChanges, Revocations, StillAllowed

PREVIEW_CHARS = 512
MAX_QUERY = 8192


@dataclass(frozen=True)
class AskEvent:
    """One event of the ask stream: `type` and its snake_case wire payload."""

    type: str
    data: dict[str, Any] = field(default_factory=dict)


NO_LONGER_READABLE = (
    "this credential may no longer read the brain (revoked, or the brain moved): the answer stopped"
)
REVOKED = {"code": "forbidden", "message": NO_LONGER_READABLE, "retryable": False}


class AskService:
    def __init__(
        self,
        search: SearchService,
        generator: Generator,
        keys: Revocations | None = None,
        brains: BrainChanges | None = None,
    ) -> None:
        self.search = search
        self.generator = generator
        self.keys, self.brains = keys, brains
        """What tells a streaming answer its caller may no longer read the brain (StillAllowed)."""

    @staticmethod
    def check(query: str, top_k: int) -> None:
        """InvalidInput for a question that cannot be asked: a streaming caller checks before it
        answers anything, as the stream's status is sent with its first frame."""
        if not query.strip() or len(query) > MAX_QUERY:
            raise InvalidInput(f"query must be 1..{MAX_QUERY} characters, not only spaces")
        if not 1 <= top_k <= 50:
            raise InvalidInput("top_k must be 1..50")

    def ask(self, brain: Brain, query: str, *, top_k: int = 8) -> AsyncIterator[AskEvent]:
        """The answer's events; a failure once they have begun is an `error` event that ends them,
        as is the caller's losing the right to read the brain (a revoked key) while it streams:
        who the caller is is taken now, where the request's access is set."""
        self.check(query, top_k)
        allowed = StillAllowed(self.keys, self.brains, brain) if self.keys and self.brains else None
        return self._events(brain, query, top_k, allowed)

    async def _events(
        self, brain: Brain, query: str, top_k: int, allowed: StillAllowed | None
    ) -> AsyncIterator[AskEvent]:
        try:
            passages = await off_loop.run_sync(self._retrieve, brain, query, top_k)
        except CairnError as exc:  # the brain's index being rebuilt, say
            retryable = isinstance(exc, Unavailable)
            yield AskEvent("error", {"code": exc.code, "message": exc.message, "retryable": retryable})
            return
        yield AskEvent(
            "retrieve",
            {
                "chunks": [
                    {
                        "chunk_id": p.chunk_id,
                        "document_id": p.document_id,
                        "brain": brain.slug,
                        "score": p.score,
                        "preview": p.text[:PREVIEW_CHARS],
                    }
                    for p in passages
                ]
            },
        )
        stream = self.generator.stream(query, passages)
        try:
            async for event in stream:
                if not await _still(allowed):  # the caller's key revoked meanwhile: no more of it
                    yield AskEvent("error", REVOKED)
                    return
                if isinstance(event, Delta):
                    yield AskEvent("answer_delta", {"delta": event.text})
                elif isinstance(event, Citation):
                    yield AskEvent("citation", _citation(event, brain))
                elif isinstance(event, Done):
                    yield AskEvent("done", {"answer": event.answer, "model": event.model})
        except GenerationError as exc:
            yield AskEvent("error", {"code": exc.code, "message": exc.message, "retryable": exc.retryable})
        except CairnError as exc:
            yield AskEvent("error", {"code": exc.code, "message": exc.message, "retryable": False})
        finally:
            await _closed(stream)  # the model stops being asked (and paid) for the rest

    def _retrieve(self, brain: Brain, query: str, top_k: int) -> list[Passage]:
        """The passages memory_search would rank first, scored on its calibrated scale (0..1, the
        scale every surface reports: docs/RELEVANCE.md); never a memory no longer current."""
        found = self.search.passages(query, ChunkFilter(brain_ids=(brain.id,), current_only=True), top_k)
        self.search.note_access(brain.id, [h.chunk.document_id for h, score in found if score >= GOOD_MATCH])
        return [
            Passage(chunk_id=h.chunk.id, document_id=h.chunk.document_id, text=h.chunk.text, score=score)
            for h, score in found
        ]


def _citation(event: Citation, brain: Brain) -> dict[str, Any]:
    """A citation naming the brain its passage came from (`brain`: the slug; ask reads one brain)."""
    return {
        "type": "citation",
        "chunk_id": event.chunk_id,
        "document_id": event.document_id,
        "brain": brain.slug,
        "answer_start": event.answer_start,
        "answer_end": event.answer_end,
        "quote": event.quote,
    }


async def _closed(stream: AsyncIterator[Any]) -> None:
    close = getattr(stream, "aclose", None)
    if close is not None:
        await close()


async def _still(allowed: StillAllowed | None) -> bool:
    """Whether the caller may still read the brain (the last check, or a new one off the loop)."""
    return allowed is None or allowed.fresh() or await off_loop.run_sync(allowed.check)
