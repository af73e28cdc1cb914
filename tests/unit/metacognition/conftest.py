from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime

import pytest

from cairn.ports.generator import Answer, Done, GenerationEvent, Passage, collect
from cairn.services.thoughtmcp.metacognition import MetacognitionService


class FixedClock:
    def now(self) -> datetime:
        return datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


class ReplyGenerator:
    """A generator answering each call with the next scripted reply (or raising the next exception)."""

    def __init__(self, *replies: str | BaseException, model_id: str = "test-model") -> None:
        self.replies = list(replies)
        self._model_id = model_id
        self.questions: list[str] = []
        self.passages: list[list[Passage]] = []

    @property
    def model_id(self) -> str:
        return self._model_id

    async def stream(self, question: str, passages: Sequence[Passage]) -> AsyncIterator[GenerationEvent]:
        self.questions.append(question)
        self.passages.append(list(passages))
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        yield Done(reply, self._model_id)

    async def complete(self, question: str, passages: Sequence[Passage]) -> Answer:
        return await collect(self.stream(question, passages))


@pytest.fixture
def offline_service() -> MetacognitionService:
    return MetacognitionService(ReplyGenerator(model_id="extractive"), clock=FixedClock())
