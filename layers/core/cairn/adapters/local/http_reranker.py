"""A reranker over the common `/rerank` HTTP API (Jina, Cohere v2, vLLM, Synesis, TEI-style replies).

POST `<base_url>/rerank` with `{model, query, documents, top_n, return_documents: false}` and, only
when the caller gives one, `instruction` (servers ignore fields they do not know). The reply is
`{results: [{index, relevance_score}], ...}` (`score` accepted for `relevance_score`) or TEI's bare
list `[{index, score}]`. Every document goes in one request: a server's own limit on documents
per request shows as its refusal (rerank_failed).

Rate limits (429), server errors (5xx) and connections that fail before a reply are retried with
exponential backoff and jitter, honouring a Retry-After (seconds or an HTTP date). A reply that does not come
within `timeout_s` is not retried (the model was working on it): rerank_timeout. Error messages
and logs carry the server's address and status, never the query, a document or the API key
(rerank_replies.safe_detail).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from cairn.adapters.endpoints import endpoint
from cairn.adapters.remote_reranker import RemoteReranker
from cairn.adapters.rerank_replies import ranked, safe_detail
from cairn.adapters.retrying import RetryPolicy, Transient
from cairn.ports.reranker import Ranked, RerankCode, RerankError
from cairn.retry_after import parse_retry_after

_ERROR_BODY_BYTES = 4096
_SCORE_KEYS = ("relevance_score", "score")


class HttpReranker(RemoteReranker):
    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 10.0,
        max_retries: int = 2,
        *,
        backoff_s: float = 0.25,
        max_wait_s: float = 10.0,
        sleep: Callable[[float], Any] = time.sleep,
    ) -> None:
        """`base_url` up to the API version (`https://api.jina.ai/v1`, `http://127.0.0.1:8000/v1`);
        `timeout_s` bounds connecting and each wait for the reply's bytes; `max_retries` counts
        attempts after the first; a Retry-After longer than `max_wait_s` fails at once."""
        if max_retries < 0:
            raise ValueError("max_retries must be at least 0")
        super().__init__(RetryPolicy(max_retries, backoff_s, max_wait_s, sleep))
        at = endpoint(base_url, "/rerank", timeout_s)
        self.url, self.server = at.url, at.server
        self.model = model
        self._api_key = api_key
        self._url_secrets = at.secrets
        self._where = f"the reranker at {self.server}"
        # One pooled client for every call; httpx.Client may be shared by threads.
        self._client = httpx.Client(timeout=at.timeout, headers=self._headers())

    @property
    def model_id(self) -> str:
        return self.model

    @property
    def max_retries(self) -> int:
        return self._retry.max_retries

    def close(self) -> None:
        self._client.close()

    def _rank(
        self, query: str, documents: Sequence[str], instruction: str | None, wanted: int
    ) -> list[Ranked]:
        body: dict[str, Any] = {
            "model": self.model,
            "query": query,
            "documents": list(documents),
            "top_n": wanted,
            "return_documents": False,
        }
        if instruction is not None:
            body["instruction"] = instruction
        inputs = [query, *documents, *([instruction] if instruction else [])]
        reply = self._retrying(lambda: self._attempt(body, inputs))
        return ranked(
            _results(reply, self._where), len(documents), where=self._where, score_keys=_SCORE_KEYS
        )[:wanted]

    def _attempt(self, body: dict[str, Any], inputs: Sequence[str]) -> Any:
        failure: Exception | None = None
        try:
            with self._client.stream("POST", self.url, json=body) as response:
                if response.status_code != 200:
                    raise self._refusal(response, inputs)
                data = response.read()
        except httpx.HTTPError as exc:
            failure = self._transport_failure(exc)
        if failure is not None:
            raise failure  # outside the except block: no context chain to the httpx request
        try:
            return json.loads(data)
        except ValueError:
            raise self._error("rerank_bad_response", f"{self._where} sent malformed JSON", False) from None

    def _transport_failure(self, exc: httpx.HTTPError) -> Exception:
        name = type(exc).__name__
        if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
            return Transient(
                self._error("rerank_timeout", f"connecting to {self._where} timed out ({name})", True)
            )
        if isinstance(exc, httpx.TimeoutException):
            return self._error("rerank_timeout", f"{self._where} did not answer in time ({name})", True)
        if isinstance(exc, httpx.ConnectError):
            return Transient(
                self._error("rerank_unavailable", f"could not connect to {self._where} ({name})", True)
            )
        if isinstance(exc, httpx.NetworkError | httpx.RemoteProtocolError):
            return Transient(
                self._error("rerank_failed", f"lost the connection to {self._where} ({name})", True)
            )
        return self._error("rerank_failed", f"the request to {self._where} failed ({name})", False)

    def _refusal(self, response: httpx.Response, inputs: Sequence[str]) -> Exception:
        status = response.status_code
        detail = safe_detail(
            _server_words(_read_some(response)), inputs, [self._api_key or "", *self._url_secrets]
        )
        suffix = f": {detail}" if detail else ""
        if status == 429:
            error = self._error(
                "rerank_failed", f"{self._where} is rate limiting requests (HTTP 429){suffix}", True
            )
            return Transient(error, parse_retry_after(response.headers.get("retry-after")))
        if status >= 500:
            error = self._error("rerank_failed", f"{self._where} failed (HTTP {status}){suffix}", True)
            return Transient(error, parse_retry_after(response.headers.get("retry-after")))
        code: RerankCode = "rerank_unavailable" if status in (401, 403, 404) else "rerank_failed"
        return self._error(code, f"{self._where} refused the request (HTTP {status}){suffix}", False)

    def _error(self, code: RerankCode, message: str, retryable: bool) -> RerankError:
        if self._api_key:
            message = message.replace(self._api_key, "[redacted]")
        return RerankError(code, message, retryable=retryable)

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers


def _results(reply: Any, where: str) -> Any:
    """The results list: `{results: [...]}` or TEI's bare list."""
    if isinstance(reply, list):
        return reply
    if isinstance(reply, dict) and "results" in reply:
        return reply["results"]
    raise RerankError("rerank_bad_response", f"{where} sent a reply without results", retryable=False)


def _read_some(response: httpx.Response) -> bytes:
    data = b""
    for part in response.iter_bytes():
        data += part
        if len(data) >= _ERROR_BODY_BYTES:
            break
    return data[:_ERROR_BODY_BYTES]


def _server_words(body: bytes) -> str:
    """What the server said about an error: `{"error": {"message"}}`, `{"detail"}`, `{"message"}`,
    else the text itself."""
    text = body.decode("utf-8", "replace").strip()
    try:
        obj = json.loads(text)
    except ValueError:
        return text
    if isinstance(obj, dict):
        for key in ("error", "detail", "message"):
            if key in obj:
                obj = obj[key]
                break
        if isinstance(obj, dict) and "message" in obj:
            obj = obj["message"]
    return obj if isinstance(obj, str) else json.dumps(obj)
