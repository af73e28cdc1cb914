"""Fakes for the reasoning tests: a generator answering each call from a list (or a function of
the prompt), optionally slowly, and a MemoryContext holding fixed memories."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import anyio

from cairn.ports.generator import Answer, Done, GenerationEvent, Passage
from cairn.services.thoughtmcp.reasoning.context import RelevantMemory

Reply = str | dict[str, Any] | BaseException


class PerCallGenerator:
    """Replies in order (the last repeats), or `reply(prompt)` when given a function; each call
    first sleeps `delay(prompt)` seconds on its own event loop."""

    def __init__(
        self,
        replies: Sequence[Reply] | Callable[[str], Reply],
        *,
        model_id: str = "fake-llm",
        delay: Callable[[str], float] = lambda prompt: 0.0,
    ) -> None:
        self.replies = replies
        self._model_id = model_id
        self.delay = delay
        self.prompts: list[str] = []
        self.passages: list[list[Passage]] = []
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self._model_id

    async def complete(self, question: str, passages: Sequence[Passage]) -> Answer:
        with self._lock:
            index = len(self.prompts)
            self.prompts.append(question)
            self.passages.append(list(passages))
        await anyio.sleep(self.delay(question))
        if callable(self.replies):
            reply = self.replies(question)
        else:
            reply = self.replies[min(index, len(self.replies) - 1)]
        if isinstance(reply, BaseException):
            raise reply
        text = reply if isinstance(reply, str) else json.dumps(reply)
        return Answer(text=text, model=self._model_id)

    async def stream(self, question: str, passages: Sequence[Passage]) -> AsyncIterator[GenerationEvent]:
        answer = await self.complete(question, passages)
        yield Done(answer.text, answer.model)


class FakeMemories:
    def __init__(self, memories: Sequence[RelevantMemory]) -> None:
        self.memories = list(memories)
        self.calls: list[tuple[str, str, int]] = []

    def relevant(self, user_id: str, text: str, limit: int) -> list[RelevantMemory]:
        self.calls.append((user_id, text, limit))
        return self.memories[:limit]
