"""Generator over Bedrock ConverseStream: a grounded answer streamed with [n] citations.

The model gets the same prompt as the OpenAI-compatible generator (grounded.messages: the
passages numbered, "cite [n]"), and the markers become citations sentence by sentence
(MarkerCitations). Bedrock's native citations are not used: they need document or search-result
content blocks that only some Anthropic models accept, while markers work with every Converse
model (the default, Nova Lite, included); a `citation` delta, if a model sends one, is ignored.

boto3 is synchronous, so the call and each read of the event stream run in a worker thread.
Throttling, an unavailable service and refused connections are retried with exponential backoff
and jitter, but only until the first delta (grounded.GroundedGenerator). A stream that ends
without `messageStop`, or with an event that cannot be read, is a bad_response. No error
carries the request or chains back to botocore.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Sequence
from contextlib import aclosing
from functools import partial
from typing import Any

import anyio

from cairn import off_loop
from cairn.adapters.aws.bedrock_errors import TRANSPORT_ERRORS, BedrockRuntime, Failure, describe
from cairn.adapters.grounded import GroundedGenerator, messages
from cairn.adapters.local.extractive_markers import MarkerCitations
from cairn.adapters.retrying import RetryPolicy, Transient
from cairn.ports.generator import Delta, Done, GenerationError, GenerationEvent, Passage

_UNREADABLE_STOPS = frozenset({"malformed_model_output"})


class BedrockGenerator(GroundedGenerator):
    def __init__(
        self,
        client: BedrockRuntime,
        model_id: str,
        *,
        max_tokens: int = 1024,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        super().__init__(retry or RetryPolicy(), sleep or anyio.sleep)
        self._client = client
        self._model = model_id
        self._max_tokens = max_tokens

    @property
    def model_id(self) -> str:
        return self._model

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
            response = await off_loop.run_sync(partial(self._client.converse_stream, **request))
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
            raise Transient(failure.error()) if failure.transient else failure.error()

    async def _events(
        self, stream: Iterator[dict[str, Any]], citations: MarkerCitations
    ) -> AsyncGenerator[GenerationEvent, None]:
        stop: str | None = None
        while (event := await off_loop.run_sync(next, stream, None)) is not None:
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
