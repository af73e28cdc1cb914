"""Generator: a grounded answer to a question from retrieved passages, streamed with citations.

Adapters: extractive (offline, local), OpenAI-compatible chat completions (Ollama, vLLM,
llama.cpp, hosted APIs), Bedrock Converse (AWS).

A stream yields `Delta`s whose texts concatenate to the answer, a `Citation` for each span of
the answer that a passage supports (offsets into the answer accumulated so far, so a citation
never points past what the caller has already seen), and exactly one `Done` last. A failure
raises `GenerationError`; after one, no `Done` follows and the partial answer must be discarded.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, get_args

from cairn.domain.errors import CairnError


@dataclass(frozen=True)
class Passage:
    """A retrieved chunk offered to the generator, best first."""

    chunk_id: str
    document_id: str
    text: str
    score: float = 0.0


@dataclass(frozen=True)
class Delta:
    text: str


@dataclass(frozen=True)
class Citation:
    chunk_id: str
    document_id: str
    answer_start: int  # char offsets into the accumulated answer, end exclusive
    answer_end: int
    quote: str  # the supporting text lifted from the passage


@dataclass(frozen=True)
class Done:
    answer: str
    model: str


GenerationEvent = Delta | Citation | Done


@dataclass(frozen=True)
class Answer:
    text: str
    citations: list[Citation] = field(default_factory=list)
    model: str = ""


GenerationCode = Literal["generation_timeout", "generation_failed", "rate_limited", "bad_response"]
GENERATION_CODES: frozenset[str] = frozenset(get_args(GenerationCode))
_RETRYABLE_BY_DEFAULT = frozenset({"generation_timeout", "rate_limited"})


class GenerationError(CairnError):
    """`code` is one of GENERATION_CODES; `retryable` says whether asking again may succeed."""

    code = "generation_failed"

    def __init__(self, code: GenerationCode, message: str, *, retryable: bool | None = None) -> None:
        if code not in GENERATION_CODES:
            raise ValueError(f"unknown generation error code {code!r}")
        super().__init__(message)
        self.code = code
        self.retryable = code in _RETRYABLE_BY_DEFAULT if retryable is None else retryable

    def __repr__(self) -> str:
        return f"GenerationError({self.code!r}, {self.message!r}, retryable={self.retryable})"


class Generator(Protocol):
    @property
    def model_id(self) -> str: ...

    def stream(self, question: str, passages: Sequence[Passage]) -> AsyncIterator[GenerationEvent]:
        """Deltas and citations, then one Done. Raises GenerationError."""
        ...

    async def complete(self, question: str, passages: Sequence[Passage]) -> Answer:
        """The whole answer at once: adapters implement it as `return await collect(self.stream(...))`."""
        ...


async def collect(stream: AsyncIterator[GenerationEvent]) -> Answer:
    """Drain a stream into an Answer. A stream that ends without Done is a bad response."""
    citations: list[Citation] = []
    done: Done | None = None
    async for event in stream:  # drained to the end, so the adapter releases its connection
        if isinstance(event, Citation):
            citations.append(event)
        elif isinstance(event, Done):
            done = event
    if done is None:
        raise GenerationError("bad_response", "the answer stream ended without completing")
    return Answer(text=done.answer, citations=citations, model=done.model)
