"""Reranker: candidates re-ordered by a cross-encoder's relevance to the query.

Adapters: any server of the common `/v1/rerank` API (HTTP: Jina, Cohere, vLLM, TEI-style
replies, ...) and the Bedrock Agent Runtime `Rerank` API (AWS). Synchronous, like the services
that call it from worker threads.

`rerank` returns one `Ranked` per document, best first (ties in input order), or the best
`top_n`. A service that returns fewer leaves the other documents out; callers rank them below
every returned one. A failure raises `RerankError`, whose message never quotes the query, a
document or a credential: a search falls back to its own order and may log it as is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, get_args

from cairn.domain.errors import CairnError


@dataclass(frozen=True)
class Ranked:
    index: int
    """Position of the document in the `documents` passed to `rerank`."""
    score: float
    """The model's relevance score: comparable within one call only, its scale depends on the model."""


RerankCode = Literal["rerank_timeout", "rerank_failed", "rerank_bad_response", "rerank_unavailable"]
RERANK_CODES: frozenset[str] = frozenset(get_args(RerankCode))
_RETRYABLE_BY_DEFAULT = frozenset({"rerank_timeout"})


class RerankError(CairnError):
    """`code`: rerank_timeout (no reply in time), rerank_failed (the service refused or failed,
    retries exhausted), rerank_bad_response (a reply that is not a valid ranking), or
    rerank_unavailable (the service cannot be reached or used as configured: connection refused,
    bad credentials, unknown model). `retryable` says whether asking again later may succeed."""

    code = "rerank_failed"

    def __init__(self, code: RerankCode, message: str, *, retryable: bool | None = None) -> None:
        if code not in RERANK_CODES:
            raise ValueError(f"unknown rerank error code {code!r}")
        super().__init__(message)
        self.code = code
        self.retryable = code in _RETRYABLE_BY_DEFAULT if retryable is None else retryable

    def __repr__(self) -> str:
        return f"RerankError({self.code!r}, {self.message!r}, retryable={self.retryable})"


class Reranker(Protocol):
    @property
    def model_id(self) -> str: ...

    def rerank(
        self,
        query: str,
        documents: Sequence[str],
        *,
        instruction: str | None = None,
        top_n: int | None = None,
    ) -> list[Ranked]:
        """Documents ranked best first. `instruction`: a task description for models that take
        one (adapters whose service has none ignore it). `top_n`: at most this many (>= 1).
        No documents: [] without a call."""
