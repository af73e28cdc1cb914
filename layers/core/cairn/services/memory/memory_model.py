"""Typed memories' inputs and outputs (store, query, hits, updates), their content rules, and
where they live: a memory's path, its claim keys (key, subject, dedupe) and its time-ordered key."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from cairn.domain.errors import InvalidInput
from cairn.domain.models import Document, MemoryType, MetadataValue
from cairn.domain.scrub import scrub
from cairn.domain.text import is_blank
from cairn.services.documents.current_memories import MEMORIES
from cairn.services.memory.memory_ranking import (
    DEFAULT_IMPORTANCE,
)
from cairn.services.search.access import Access

PREFIX = MEMORIES


EVENT_TTL_DAYS = 30


EXPIRE_PER_RUN = 500


MAX_CONTENT_CHARS = 100_000


TITLE_CHARS = 80


SUPERSEDES = "supersedes"
"""Metadata of a memory that superseded another: that one's id."""


COUNT_MAX_AGE_S = 30.0


COUNTED_TYPES = (MemoryType.event, MemoryType.fact, MemoryType.decision, MemoryType.status)


MEMORY_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
"""A caller's own memory id (a restore): it becomes part of the memory's path."""


@dataclass(frozen=True)
class MemoryInput:
    type: MemoryType
    content: str
    source_agent: str | None = None
    client_id: str = "global"
    category: str | None = None
    importance: float = DEFAULT_IMPORTANCE
    knowledge_category: str | None = None
    key: str | None = None  # facts only
    subject: str | None = None  # statuses only
    status_value: str | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    sector: str | None = None
    metadata: Mapping[str, MetadataValue] = field(default_factory=dict)
    tags: Sequence[str] = ()
    memory_id: str | None = None  # keep this id (a restore); else a fresh one
    superseded_by: str | None = None
    """A restore of a value its line had already moved past: the id of the value that superseded
    it (perhaps deleted since). It is stored superseded, ending nothing (MemoryService.store)."""


@dataclass(frozen=True)
class Stored:
    memory: Document
    deduplicated: bool
    supersedes: str | None = None


@dataclass(frozen=True)
class MemoryQuery:
    """Filters of a memory search; empty tuples filter nothing."""

    types: tuple[str, ...] = ()
    client_ids: tuple[str, ...] = ()
    source_agents: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    knowledge_categories: tuple[str, ...] = ()
    include_superseded: bool = False
    at_time: datetime | None = None
    """What was true then: validity decides, superseded memories included."""
    known_at: datetime | None = None
    """What Cairn knew then: memories recorded by that time and not yet superseded at it (with
    `at_time`, what Cairn then held to be true at that other time)."""
    limit: int = 10
    count_access: bool = True


@dataclass(frozen=True)
class Containing:
    """A lookup of the memories whose key (facts) or subject (statuses) holds `text`, in any case
    (zengram's brain_query)."""

    field: Literal["key", "subject"]
    text: str

    def held_by(self, value: str | None) -> bool:
        return self.text.lower() in (value or "").lower()


@dataclass(frozen=True)
class MemoryHit:
    memory: Document
    text: str  # the best-matching chunk's text
    score: float | None  # calibrated relevance 0..1 (services/search/relevance.py)
    effective_score: float
    confidence: float
    access: Access
    bm25_rank: int | None
    vector_rank: int | None


@dataclass(frozen=True)
class Deleted:
    memory: Document
    already_inactive: bool


@dataclass(frozen=True)
class Updated:
    memory: Document
    fields: list[str]


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def memory_path(kind: MemoryType, memory_id: str) -> str:
    return f"{PREFIX}{kind.value}/{memory_id}.md"


def checked_input(m: MemoryInput) -> str:
    if not isinstance(m.type, MemoryType):
        raise InvalidInput(f"unknown memory type {m.type!r}")
    if m.valid_from is not None and m.valid_to is not None and m.valid_from > m.valid_to:
        # equal is an empty interval: a value replaced by one stated from the same instant, kept
        # so (memories.py) and restored so from an export
        raise InvalidInput("valid_from must be before valid_to")
    if not 0.0 <= m.importance <= 1.0:
        raise InvalidInput("importance must be between 0 and 1")
    return checked_text(m.content)


def checked_text(content: str) -> str:
    text = scrub(content.strip())
    if is_blank(text):
        raise InvalidInput("content must not be empty")
    if len(text) > MAX_CONTENT_CHARS:
        raise InvalidInput(f"content exceeds {MAX_CONTENT_CHARS} characters (got {len(text)})")
    return text


def title_of(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"
