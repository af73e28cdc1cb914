"""Generator: grounded text generation (complete and stream). Adapters arrive with memory_ask."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Passage:
    chunk_id: str
    document_id: str
    text: str


class Generator(Protocol):
    @property
    def model_id(self) -> str: ...

    async def complete(self, question: str, passages: Sequence[Passage]) -> str: ...

    def stream(self, question: str, passages: Sequence[Passage]) -> AsyncIterator[str]: ...
