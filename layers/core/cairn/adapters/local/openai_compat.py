"""A generator over any OpenAI-compatible chat completions endpoint (Ollama, vLLM, llama.cpp, …).

The model sees the passages numbered and is told to answer only from them, citing [n]; markers
become citations as sentences complete (extractive_markers). Requests stream (SSE). Rate limits,
server errors and refused connections are retried with exponential backoff and jitter, honouring
Retry-After, but only until the first delta: once text has reached the caller a failure is
raised, never papered over by a second answer. `timeout_s` bounds connecting and each wait for
the next bytes of the stream, not the whole answer. No error message carries the API key.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import aclosing
from typing import Any

import anyio
import httpx

from cairn.adapters.endpoints import endpoint
from cairn.adapters.grounded import GroundedGenerator, messages
from cairn.adapters.local.extractive_markers import MarkerCitations
from cairn.adapters.retrying import RetryPolicy, Transient
from cairn.domain.text import holds_secret
from cairn.ports.generator import Delta, Done, GenerationCode, GenerationError, GenerationEvent, Passage
from cairn.retry_after import parse_retry_after

_ERROR_BODY_BYTES = 4096


class OpenAICompatGenerator(GroundedGenerator):
    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        transport: httpx.AsyncBaseTransport | None = None,
        backoff_s: float = 0.5,
        *,
        max_wait_s: float = 30.0,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        # a Retry-After longer than max_wait_s fails at once (rate_limited)
        super().__init__(RetryPolicy(max_retries, backoff_s, max_wait_s), sleep or anyio.sleep)
        at = endpoint(base_url, "/chat/completions", timeout_s)
        self.url, self.server, self.timeout = at.url, at.server, at.timeout
        self.model = model
        self._api_key = api_key
        self._url_secrets = at.secrets
        self.transport = transport

    @property
    def model_id(self) -> str:
        return self.model

    def _request(self, question: str, passages: Sequence[Passage]) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": messages(question, passages),
            "stream": True,
            "temperature": 0,
        }

    def _error(self, code: GenerationCode, message: str, retryable: bool) -> GenerationError:
        return redacted_error(code, message, retryable, self._api_key)

    def _headers(self) -> dict[str, str]:
        return auth_headers("text/event-stream", self._api_key)

    async def _attempt(
        self, body: dict[str, Any], citations: MarkerCitations
    ) -> AsyncGenerator[GenerationEvent, None]:
        where = f"the model server at {self.server}"
        failure: Exception | None = None
        try:
            async with (
                httpx.AsyncClient(transport=self.transport, timeout=self.timeout) as client,
                client.stream("POST", self.url, json=body, headers=self._headers()) as response,
            ):
                if response.status_code != 200:
                    raise await self._refusal(response, where)
                async with aclosing(self._events(response, citations)) as events:
                    async for event in events:
                        yield event
        except httpx.HTTPError as exc:
            failure = self._transport_failure(exc, where, streamed=bool(citations.answer))
        if failure is not None:
            raise failure  # outside the except block: no context chain to the httpx request

    def _transport_failure(self, exc: httpx.HTTPError, where: str, *, streamed: bool) -> Exception:
        name = type(exc).__name__
        if isinstance(exc, httpx.TimeoutException):
            error = self._error("generation_timeout", f"{where} timed out ({name})", True)
            connecting = isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout)
            return Transient(error) if connecting else error
        if isinstance(exc, httpx.NetworkError | httpx.RemoteProtocolError):
            if streamed:
                return self._error("generation_failed", f"{where} dropped the connection mid-answer", True)
            what = f"could not get an answer from {where} ({name})"
            return Transient(self._error("generation_failed", what, True))
        return self._error("generation_failed", f"request to {where} failed ({name})", False)

    async def _refusal(self, response: httpx.Response, where: str) -> Exception:
        detail = _server_message(await _read_some(response), [self._api_key, *self._url_secrets])
        return refusal(response, detail, where, self._error)

    async def _events(
        self, response: httpx.Response, citations: MarkerCitations
    ) -> AsyncGenerator[GenerationEvent, None]:
        finished = False
        if response.headers.get("content-type", "").startswith("application/json"):
            content, _ = self._chunk(await response.aread(), whole=True)  # a server that ignored stream=true
            for event in _text(content, citations):
                yield event
            finished = True
        else:
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue  # blank separators, comments, event:/id: fields
                data = line[5:].strip()
                if data == "[DONE]":
                    finished = True
                    break
                content, finish_reason = self._chunk(data, whole=False)
                finished = finished or finish_reason is not None
                for event in _text(content, citations):
                    yield event
        if not finished:
            raise self._error("bad_response", "the answer stream ended before it was complete", True)
        for citation in citations.finish():
            yield citation
        yield Done(citations.answer, self.model)

    def _chunk(self, data: str | bytes, *, whole: bool) -> tuple[str | None, str | None]:
        """(content, finish_reason) of one streamed chunk, or of a whole non-streamed completion."""
        try:
            obj = json.loads(data)
        except ValueError:
            raise self._error("bad_response", "the model server sent malformed JSON", False) from None
        if isinstance(obj, dict) and "error" in obj:
            detail = _server_message(json.dumps(obj).encode(), [self._api_key, *self._url_secrets])
            raise self._error("generation_failed", f"the model server reported an error: {detail}", True)
        choices = obj.get("choices") if isinstance(obj, dict) else None
        if not isinstance(choices, list):
            raise self._error("bad_response", "a response chunk has no choices", False)
        if not choices:
            return None, None  # e.g. a usage-only chunk
        choice = choices[0]
        part = choice.get("message" if whole else "delta") if isinstance(choice, dict) else None
        if not isinstance(part, dict):
            raise self._error("bad_response", "a response chunk has no delta", False)
        content = part.get("content")
        if content is not None and not isinstance(content, str):
            raise self._error("bad_response", "a response chunk has non-text content", False)
        finish = choice.get("finish_reason")
        return content, finish if isinstance(finish, str) else None


def redacted_error(
    code: GenerationCode, message: str, retryable: bool, api_key: str | None
) -> GenerationError:
    """A GenerationError whose message cannot carry the API key, whatever a server echoed."""
    if api_key:
        message = message.replace(api_key, "[redacted]")
    return GenerationError(code, message, retryable=retryable)


def refusal(
    response: httpx.Response,
    detail: str,
    where: str,
    error: Callable[[GenerationCode, str, bool], GenerationError],
) -> Exception:
    """What a non-200 reply of an OpenAI-compatible server means: a rate limit or a server error,
    worth another try after its Retry-After (Transient), or a refusal."""
    status = response.status_code
    suffix = f": {detail}" if detail else ""
    if status == 429:
        limited = error("rate_limited", f"{where} is rate limiting requests (HTTP 429){suffix}", True)
        return Transient(limited, parse_retry_after(response.headers.get("retry-after")))
    if status >= 500:
        failed = error("generation_failed", f"{where} failed (HTTP {status}){suffix}", True)
        return Transient(failed, parse_retry_after(response.headers.get("retry-after")))
    return error("generation_failed", f"{where} refused the request (HTTP {status}){suffix}", False)


def auth_headers(accept: str, api_key: str | None) -> dict[str, str]:
    headers = {"Accept": accept}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def _text(content: str | None, citations: MarkerCitations) -> list[GenerationEvent]:
    """The delta for a piece of streamed text and the citations of the sentences it completes."""
    if not content:
        return []
    return [Delta(content), *citations.feed(content)]


async def _read_some(response: httpx.Response) -> bytes:
    data = b""
    async for part in response.aiter_bytes():
        data += part
        if len(data) >= _ERROR_BODY_BYTES:
            break
    return data[:_ERROR_BODY_BYTES]


def _server_message(body: bytes, secrets: Sequence[str | None]) -> str:
    """The server's own words about an error: OpenAI's {"error": {"message"}}, else the text; none
    when they quote a part of a secret (a 401 echoing the key masked, or lower-cased)."""
    said = _said(body)
    return "" if holds_secret(said, secrets) else said


def _said(body: bytes) -> str:
    text = body.decode("utf-8", "replace").strip()
    try:
        obj = json.loads(text)
    except ValueError:
        return text[:300]
    error = obj.get("error", obj) if isinstance(obj, dict) else obj
    message = error.get("message") if isinstance(error, dict) else error
    return str(message if message is not None else error)[:300]
