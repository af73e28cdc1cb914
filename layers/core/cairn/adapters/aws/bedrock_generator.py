"""Generator over Bedrock ConverseStream: a grounded answer streamed with [n] citations.

The model gets the same prompt as the OpenAI-compatible generator (openai_compat.messages: the
passages numbered, "cite [n]"), and the markers become citations sentence by sentence
(MarkerCitations). Bedrock's native citations are not used: they need document or search-result
content blocks that only some Anthropic models accept, while markers work with every Converse
model (the default, Nova Lite, included); a `citation` delta, if a model sends one, is ignored.

boto3 is synchronous, so the call and each read of the event stream run in a worker thread.
Throttling, an unavailable service and refused connections are retried with exponential backoff
and jitter, but only until the first delta: once text has reached the caller a failure is raised,
never papered over by a second answer. A stream that ends without `messageStop`, or with an event
that cannot be read, is a bad_response. No error carries the request or chains back to botocore.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import aclosing
from functools import partial
from typing import Any

import anyio
import anyio.to_thread

from cairn.adapters.aws.bedrock_errors import TRANSPORT_ERRORS, BedrockRuntime, Failure, RetryPolicy, describe
from cairn.adapters.local.extractive import NO_MEMORY
from cairn.adapters.local.extractive_markers import MarkerCitations
from cairn.adapters.local.openai_compat import messages
from cairn.ports.generator import Answer, Delta, Done, GenerationError, GenerationEvent, Passage, collect

_UNREADABLE_STOPS = frozenset({"malformed_model_output"})


class _Transient(Exception):
    """A failure before any text was streamed: worth another attempt after a pause."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


class BedrockGenerator:
    def __init__(
        self,
        client: BedrockRuntime,
        model_id: str,
        *,
        max_tokens: int = 1024,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        self._client = client
        self._model = model_id
        self._max_tokens = max_tokens
        self._retry = retry or RetryPolicy()
        self._sleep = sleep or anyio.sleep

    @property
    def model_id(self) -> str:
        return self._model

    async def complete(self, question: str, passages: Sequence[Passage]) -> Answer:
        return await collect(self.stream(question, passages))

    async def stream(self, question: str, passages: Sequence[Passage]) -> AsyncIterator[GenerationEvent]:
        if not passages:  # nothing to ground an answer in: don't let the model improvise one
            yield Delta(NO_MEMORY)
            yield Done(NO_MEMORY, self._model)
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
            except _Transient as exc:
                failure = exc.failure
            # raised out here, so the error carries no context chain back to botocore
            if citations.answer or attempt >= self._retry.max_retries:
                raise failure.error()
            await self._sleep(self._retry.delay(attempt))
            attempt += 1

    def _request(self, question: str, passages: Sequence[Passage]) -> dict[str, Any]:
        system, user = messages(question, passages)
        return {
            "modelId": self._model,
            "system": [{"text": system["content"]}],
            "messages": [{"role": "user", "content": [{"text": user["content"]}]}],
            "inferenceConfig": {"temperature": 0, "maxTokens": self._max_tokens},
        }

    async def _attempt(
        self, request: dict[str, Any], citations: MarkerCitations
    ) -> AsyncGenerator[GenerationEvent, None]:
        failure: Failure | None = None
        stream: Any = None
        try:
            response = await anyio.to_thread.run_sync(partial(self._client.converse_stream, **request))
            stream = response["stream"]
            async with aclosing(self._events(iter(stream), citations)) as events:
                async for event in events:
                    yield event
        except TRANSPORT_ERRORS as exc:
            failure = describe(exc, self._model)
        finally:
            if stream is not None:
                stream.close()  # releases the connection, also when the caller stops early
        if failure is not None:
            raise _Transient(failure) if failure.transient and not citations.answer else failure.error()

    async def _events(
        self, stream: Iterator[dict[str, Any]], citations: MarkerCitations
    ) -> AsyncGenerator[GenerationEvent, None]:
        stop: str | None = None
        while (event := await anyio.to_thread.run_sync(next, stream, None)) is not None:
            if not isinstance(event, dict):
                raise self._bad("an event that is not an object")
            if "contentBlockDelta" in event:
                text = self._delta_text(event["contentBlockDelta"])
                if text:
                    yield Delta(text)
                    for citation in citations.feed(text):
                        yield citation
            elif "messageStop" in event:
                stop = _stop_reason(event["messageStop"])
                if stop is None:
                    raise self._bad("a messageStop event without a stop reason")
            # messageStart, contentBlockStart/Stop and the trailing metadata carry nothing we need
        if stop is None:
            raise GenerationError(
                "bad_response", "the answer stream ended before it was complete", retryable=True
            )
        if stop in _UNREADABLE_STOPS:
            raise self._bad(f"a reply it could not finish ({stop})")
        for citation in citations.finish():
            yield citation
        yield Done(citations.answer, self._model)

    def _delta_text(self, block: Any) -> str | None:
        """The text of a contentBlockDelta; None for other deltas (reasoning, native citations)."""
        delta = block.get("delta") if isinstance(block, dict) else None
        if not isinstance(delta, dict):
            raise self._bad("a content delta without a delta")
        text = delta.get("text")
        if text is not None and not isinstance(text, str):
            raise self._bad("a content delta with non-text content")
        return text

    def _bad(self, what: str) -> GenerationError:
        return GenerationError("bad_response", f"Bedrock model {self._model} sent {what}", retryable=False)


def _stop_reason(event: Any) -> str | None:
    reason = event.get("stopReason") if isinstance(event, dict) else None
    return reason if isinstance(reason, str) else None
