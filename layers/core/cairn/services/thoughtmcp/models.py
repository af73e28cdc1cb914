"""ThoughtMCP's memories as Cairn holds them: limits, the error with ThoughtMCP's details, the
inputs of remember / recall / search, a memory's row (what changes on every read), and the record
keys, paths and bytes of a memory."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from cairn.domain.errors import CairnError, InvalidInput
from cairn.domain.moments import utc_moment
from cairn.domain.paths import OWNED_ROOT, user_folder
from cairn.services.documents.inputs import DocumentInput
from cairn.services.thoughtmcp import thought_scoring as ts

MIN_CONTENT: Final = 10


MAX_CONTENT: Final = 100_000
MAX_CONTEXT: Final = 10_000
MAX_CATEGORY: Final = 200
"""metadata.context and .category, which ThoughtMCP does not bound: kept in the memory's record and
row, so each shape holds the same (a DynamoDB item holds 400 KB)."""


MAX_LIMIT: Final = 100


DEFAULT_MIN_STRENGTH: Final = 0.01


DEFAULT_MIN_SIMILARITY: Final = 0.5
SIMILARITY_LINE_SHIFT: Final = 0.10
"""ThoughtMCP's `similarity` is the calibrated relevance with its line this much lower on the
cosine (0.30 on the embedded MiniLM model), so that `minSimilarity` 0.5 passes what it passes on
ThoughtMCP's nomic-embed-text: there loosely related sentences already score about 0.5 (MiniLM
0.2-0.5 for the same pairs), so the real server's default keeps every memory with a topical
relation, and the second answers of a multi-answer question with it (docs/THOUGHTMCP.md)."""


WAYPOINT_CANDIDATES: Final = 100


MAX_CONNECTIONS: Final = 1  # ThoughtMCP: 3 links per node, bidirectional, so one connection


ROW_CONTENT_CHARS: Final = 4000  # kept in the row too, so a recall reads no blob


POOL: Final = 500


SECTOR_POOL: Final = 100  # memories nearest by their text whose other sector embeddings are scored


ROWS_TTL_S: Final = 300.0  # a kept user's rows are read afresh at least this often (a backstop)


AUTO_KEYWORDS: Final = 8


FOLDER: Final = OWNED_ROOT


LINK_KINDS: Final = ("semantic", "temporal", "causal", "analogical")


SOURCE_AGENT: Final = "thoughtmcp"


class ThoughtError(CairnError):
    """A failure ThoughtMCP reports as `{success: false, error, suggestion}` (not an exception)."""

    code = "thought_error"

    def __init__(
        self,
        message: str,
        suggestion: str | None = None,
        *,
        code: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.suggestion = suggestion
        self.error_code = code
        self.details = details


NOT_FOUND_SUGGESTION: Final = "Check that memoryId is correct and belongs to the specified userId"


DEFAULT_CATEGORY: Final = "general"
DEFAULT_IMPORTANCE: Final = 0.5

INVALID_SECTOR: Final = "Invalid sector"
SECTOR_SUGGESTION: Final = "Use: " + ", ".join(ts.SECTORS)


@dataclass(frozen=True)
class Metadata:
    keywords: tuple[str, ...] | None = None
    tags: tuple[str, ...] | None = None
    category: str | None = None
    context: str | None = None
    importance: float | None = None


@dataclass(frozen=True)
class NewMemory:
    content: str
    user_id: str
    session_id: str
    sector: str
    metadata: Metadata = field(default_factory=Metadata)


@dataclass(frozen=True)
class Filters:
    sectors: tuple[str, ...] = ()
    primary_sector: str | None = None
    min_strength: float | None = None
    min_salience: float | None = None
    date_from: datetime | None = None
    date_to: datetime | None = None
    keywords: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    category: str | None = None


@dataclass
class Row:
    """A memory's row (see the module docstring)."""

    id: str
    user_id: str
    session_id: str
    sector: str
    created_at: datetime
    last_access: datetime
    reinforced_at: datetime | None
    access_count: int
    strength: float
    salience: float
    importance: float | None
    category: str | None
    context: str | None
    keywords: list[str]
    tags: list[str]
    link_sum: float
    link_count: int
    content: str | None
    path: str
    version: int = 0

    @property
    def link_weight(self) -> float:
        return self.link_sum / self.link_count if self.link_count else 0.0

    def data(self) -> dict[str, Any]:
        return {
            "user_id": self.user_id,
            "session_id": self.session_id,
            "sector": self.sector,
            "created_at": self.created_at.isoformat(),
            "last_access": self.last_access.isoformat(),
            "reinforced_at": self.reinforced_at.isoformat() if self.reinforced_at else None,
            "access_count": self.access_count,
            "strength": self.strength,
            "salience": self.salience,
            "importance": self.importance,
            "category": self.category,
            "context": self.context,
            "keywords": self.keywords,
            "tags": self.tags,
            "link_sum": self.link_sum,
            "link_count": self.link_count,
            "content": self.content,
            "path": self.path,
        }


@dataclass(frozen=True)
class Recalled:
    row: Row
    content: str
    strength: float
    score: ts.Score


def memory_path(user_id: str, memory_id: str) -> str:
    return f"{user_folder(user_id)}{memory_id}.md"


def stored_bytes(memory_id: str, content: str) -> bytes:
    """A memory's bytes: its id in a front-matter line (so its blob is its own), then its text."""
    return f"---\nmemory: {memory_id}\n---\n{content}".encode()


def bytes_content(data: bytes) -> str:
    text = data.decode("utf-8")
    if text.startswith("---\nmemory: "):
        return text.split("\n---\n", 1)[1]
    return text


def title_of(content: str) -> str:
    first = " ".join(content.split())
    return first[:80] + ("…" if len(first) > 80 else "")


def waypoint_side(row: Row) -> ts.WaypointSide:
    return ts.WaypointSide(row.session_id, row.created_at, row.salience, row.keywords, row.tags, row.category)


def wire_memory(found: Recalled, *, with_access: bool = True) -> dict[str, Any]:
    """A memory as recall answers it (score added by the caller)."""
    r = found.row
    out: dict[str, Any] = {
        "id": r.id,
        "content": found.content,
        "createdAt": iso(r.created_at),
    }
    if with_access:
        out["lastAccessed"] = iso(r.last_access)
    out.update(
        strength=round(found.strength, 6),
        salience=round(r.salience, 6),
        primarySector=r.sector,
        metadata={
            "keywords": r.keywords,
            "tags": r.tags,
            # what ThoughtMCP answers for metadata a memory was stored without
            "category": r.category if r.category is not None else DEFAULT_CATEGORY,
            "context": r.context if r.context is not None else "",
            "importance": r.importance if r.importance is not None else DEFAULT_IMPORTANCE,
            "isAtomic": True,  # a memory is stored whole: Cairn never splits one into child memories
        },
    )
    return out


def iso(moment: datetime) -> str:
    """To the millisecond, as ThoughtMCP's JavaScript dates are shown: a time shown here and given
    back (`dateRange`) names the same instant (`to_ms`)."""
    return to_ms(moment).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def reply_metadata(now: datetime, started: float, components: Sequence[str], **extra: Any) -> dict[str, Any]:
    """A reply's `metadata` (seed 004's MCPResponse): when (UTC, to the millisecond), how long it
    took in milliseconds since `started` (a time.perf_counter reading), the components used."""
    return {
        "timestamp": iso(now.astimezone(UTC)),
        "processingTime": round((time.perf_counter() - started) * 1000),
        "componentsUsed": list(components),
        **extra,
    }


def to_ms(moment: datetime) -> datetime:
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def parse_moment(value: str, name: str) -> datetime:
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(f"{name} must be an ISO 8601 date-time") from None
    return utc_moment(moment)


SOURCE = DocumentInput().source
