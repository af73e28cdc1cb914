"""A JSON-mode chat-completions client for the background model calls (fact extraction, reflection).

Synchronous, because it runs in job worker threads. It asks for `response_format: json_object` at
temperature 0 and returns the reply parsed as a JSON object, tolerating the wrappers models put
around it anyway (```json fences, a <think> block, a sentence before or after). A server that
rejects `response_format` (HTTP 400 naming it) is asked once more without it.

Retries follow openai_compat.py: rate limits, server errors, refused connections and connect
timeouts are retried with exponential backoff and jitter, honouring Retry-After up to
`max_wait_s`; a read timeout is not (the model was working: asking again doubles the load).
Nothing streams, so `timeout_s` bounds connecting and the wait for the whole reply. No error
message carries the API key, and no error chains back to httpx (whose request holds it).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

import httpx

from cairn.adapters.endpoints import endpoint
from cairn.adapters.local.openai_compat import _server_message, auth_headers, redacted_error, refusal
from cairn.adapters.retrying import RetryPolicy, Transient, retrying
from cairn.ports.generator import GenerationCode, GenerationError

_ERROR_BODY_CHARS = 4096
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)


class OpenAIChat:
    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        transport: httpx.BaseTransport | None = None,
        backoff_s: float = 0.5,
        *,
        max_wait_s: float = 30.0,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        at = endpoint(base_url, "/chat/completions", timeout_s)
        self.url, self.server, self.timeout = at.url, at.server, at.timeout
        self.model = model
        self.provider = "openai"
        self._api_key = api_key
        self._url_secrets = at.secrets
        self.transport = transport
        self._retry = RetryPolicy(max_retries, backoff_s, max_wait_s, sleep or time.sleep)
        self._json_mode = True  # switched off for good once the server says it has no such option

    def complete_json(self, system: str, user: str) -> dict[str, Any]:
        """The model's reply to one system + user turn, as a JSON object. Raises GenerationError."""
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        return retrying(lambda: self._attempt(messages), self._retry)

    def _attempt(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        response = self._post(messages)
        if response.status_code == 400 and self._json_mode and "response_format" in response.text:
            self._json_mode = False
            response = self._post(messages)
        if response.status_code != 200:
            raise self._refusal(response)
        return self._reply(response)

    def _post(self, messages: list[dict[str, str]]) -> httpx.Response:
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": 0, "stream": False}
        if self._json_mode:
            body["response_format"] = {"type": "json_object"}
        failure: Exception | None = None
        try:
            with httpx.Client(transport=self.transport, timeout=self.timeout) as client:
                return client.post(self.url, json=body, headers=self._headers())
        except httpx.HTTPError as exc:
            failure = self._transport_failure(exc)
        raise failure  # out here, so the error carries no context chain back to httpx and its headers

    def _transport_failure(self, exc: httpx.HTTPError) -> Exception:
        where, name = f"the model server at {self.server}", type(exc).__name__
        if isinstance(exc, httpx.TimeoutException):
            error = self._error("generation_timeout", f"{where} timed out ({name})", True)
            return Transient(error) if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout) else error
        if isinstance(exc, httpx.NetworkError | httpx.RemoteProtocolError):
            what = f"no reply from {where} ({name})"
            return Transient(self._error("generation_failed", what, True))
        return self._error("generation_failed", f"request to {where} failed ({name})", False)

    def _refusal(self, response: httpx.Response) -> Exception:
        detail = _server_message(response.content[:_ERROR_BODY_CHARS], [self._api_key, *self._url_secrets])
        return refusal(response, detail, f"the model server at {self.server}", self._error)

    def _reply(self, response: httpx.Response) -> dict[str, Any]:
        completion = _json_or_none(response.content)
        if completion is None:
            raise self._error("bad_response", "the model server sent malformed JSON", False)
        if isinstance(completion, dict) and "error" in completion:
            detail = _server_message(json.dumps(completion).encode(), [self._api_key, *self._url_secrets])
            raise self._error("generation_failed", f"the model server reported an error: {detail}", True)
        choices = completion.get("choices") if isinstance(completion, dict) else None
        choice = choices[0] if isinstance(choices, list) and choices else None
        message = choice.get("message") if isinstance(choice, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            raise self._error("bad_response", "the completion has no message content", False)
        parsed = parse_json_object(content)
        if parsed is None:
            cut = isinstance(choice, dict) and choice.get("finish_reason") == "length"
            why = " (cut off at the token limit)" if cut else ""
            raise self._error("bad_response", f"the model's reply is not a JSON object{why}", False)
        return parsed

    def _error(self, code: GenerationCode, message: str, retryable: bool) -> GenerationError:
        return redacted_error(code, message, retryable, self._api_key)

    def _headers(self) -> dict[str, str]:
        return auth_headers("application/json", self._api_key)


def parse_json_object(content: str) -> dict[str, Any] | None:
    """The JSON object in a model's reply: bare, fenced, or with prose around it; else None."""
    text = _THINK.sub("", content).strip()
    candidates = [text, *(m.group(1) for m in _FENCE.finditer(text))]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        value = _json_or_none(candidate)
        if isinstance(value, dict):
            return value
    return None


def _json_or_none(data: str | bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return None
