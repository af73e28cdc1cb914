"""What every model-backed generator shares: an answer grounded in numbered passages, retried only
until its first words.

A subclass builds its request (`_request`) and makes one attempt (`_attempt`), streaming Delta and
Citation events as MarkerCitations turns the model's [n] markers into citations. An attempt that
fails before any text reached the caller raises `Transient` and is tried again after the policy's
pause; once text has been streamed a failure is raised as it is, never papered over by a second
answer. With no passages there is nothing to ground an answer in, so the model is not asked.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import aclosing
from typing import Any

from cairn.adapters.local.extractive import NO_MEMORY
from cairn.adapters.local.extractive_markers import MarkerCitations
from cairn.adapters.retrying import RetryPolicy, Transient
from cairn.ports.generator import Answer, Delta, Done, GenerationEvent, Passage, collect

SYSTEM_PROMPT = (
    "You answer questions from the user's memory, using only the numbered passages given. "
    "End every sentence with the numbers of the passages that support it in square brackets, "
    "like [1] or [2][3]. Use no other knowledge. If the passages do not answer the question, "
    "say that no supporting memory was found. Be concise."
)


def messages(question: str, passages: Sequence[Passage]) -> list[dict[str, str]]:
    """The system and user turns every generator sends: the passages numbered, then the question."""
    numbered = "\n\n".join(f"[{i}] {p.text.strip()}" for i, p in enumerate(passages, 1))
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": f"Passages:\n\n{numbered}\n\nQuestion: {question}"},
    ]


class GroundedGenerator(ABC):
    def __init__(self, retry: RetryPolicy, sleep: Callable[[float], Awaitable[None]]) -> None:
        self._retry = retry
        self._sleep = sleep

    @property
    @abstractmethod
    def model_id(self) -> str: ...

    @abstractmethod
    def _request(self, question: str, passages: Sequence[Passage]) -> Any:
        """What one attempt sends."""

    @abstractmethod
    def _attempt(self, request: Any, citations: MarkerCitations) -> AsyncGenerator[GenerationEvent, None]:
        """One try: its events, ending with Done; Transient for a failure worth trying again."""

    async def complete(self, question: str, passages: Sequence[Passage]) -> Answer:
        return await collect(self.stream(question, passages))

    async def stream(self, question: str, passages: Sequence[Passage]) -> AsyncIterator[GenerationEvent]:
        if not passages:
            yield Delta(NO_MEMORY)
            yield Done(NO_MEMORY, self.model_id)
            return
        request = self._request(question, passages)
        attempt = 0
        while True:
            citations = MarkerCitations(passages)
            try:
                async with aclosing(self._attempt(request, citations)) as events:
                    async for event in events:
                        yield event
                return
            except Transient as exc:
                failure = exc
            # raised out here, so the error carries no context chain back to the client library
            delay = None if citations.answer else self._retry.delay(attempt, failure.retry_after)
            if delay is None:
                raise failure.error
            await self._sleep(delay)
            attempt += 1
