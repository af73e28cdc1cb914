"""What every reranker over a remote service shares: how many results a call wants, no call for no
documents, and one retry loop (retrying) around each request.

A subclass ranks a non-empty list (`_rank`) and makes its requests through `_retrying`, raising
`Transient` for a failure worth another try after a pause.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TypeVar

from cairn.adapters.rerank_replies import results_wanted
from cairn.adapters.retrying import RetryPolicy, retrying
from cairn.ports.reranker import Ranked

log = logging.getLogger(__name__)
T = TypeVar("T")


class RemoteReranker(ABC):
    def __init__(self, retry: RetryPolicy) -> None:
        self._retry = retry

    @property
    @abstractmethod
    def model_id(self) -> str: ...

    def rerank(
        self,
        query: str,
        documents: Sequence[str],
        *,
        instruction: str | None = None,
        top_n: int | None = None,
    ) -> list[Ranked]:
        wanted = results_wanted(top_n, len(documents))
        if not documents:
            return []
        return self._rank(query, documents, instruction, wanted)

    @abstractmethod
    def _rank(
        self, query: str, documents: Sequence[str], instruction: str | None, wanted: int
    ) -> list[Ranked]:
        """The best `wanted` of a non-empty `documents`, best first."""

    def _retrying(self, attempt: Callable[[], T]) -> T:
        return retrying(attempt, self._retry, log)
