"""Memories the reasoning and metacognition tools read as background (`memoriesUsed`).

A `MemoryContext` answers "which of this user's memories bear on this text"; the composition root
passes the real one (over typed memories), tests a fake. When a tool is given a user id, up to
MEMORY_LIMIT relevant memories are fetched, their content joins the background the reasoning
reads, and `data.memoriesUsed` lists them ([] without a user id).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

MEMORY_LIMIT: Final = 5


@dataclass(frozen=True)
class RelevantMemory:
    id: str
    content: str
    primary_sector: str
    relevance: float  # 0..1


class MemoryContext(Protocol):
    def relevant(self, user_id: str, text: str, limit: int) -> list[RelevantMemory]: ...


def fetch_memories(
    memories: MemoryContext | None, user_id: str | None, text: str, limit: int = MEMORY_LIMIT
) -> list[RelevantMemory]:
    """Up to `limit` memories relevant to `text`; none without a user id or a MemoryContext."""
    if memories is None or not user_id:
        return []
    return list(memories.relevant(user_id, text, limit))[:limit]


def memories_used(found: Sequence[RelevantMemory]) -> list[dict[str, Any]]:
    """`data.memoriesUsed`: [{id, content, primarySector, relevanceScore}]."""
    return [
        {
            "id": m.id,
            "content": m.content,
            "primarySector": m.primary_sector,
            "relevanceScore": max(0.0, min(1.0, float(m.relevance))),
        }
        for m in found
    ]
