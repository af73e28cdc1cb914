"""What a memory document's raw record shows without decoding it: whether it is deleted, holds a
memory, is current, of which type and how many chunks it has. Counting memories reads these alone
(the kept counts, documents/memory_counts.py; the glances of memory/memory_glance.py). A field of
another kind than the document's is not read here: the record must be decoded then, and decoding
names the damaged record."""

from __future__ import annotations

from typing import Any, NamedTuple

from cairn.domain.models import MemoryType
from cairn.domain.stored_time import is_time

_TYPES = frozenset(t.value for t in MemoryType)
_NOTE = MemoryType.note.value  # read once: an enum member's value is a slow property


class RawMemory(NamedTuple):
    deleted: bool
    memory: bool
    """Whether the record holds a memory facet."""
    current: bool
    """Neither superseded nor expired (MemoryFacet.current); False without a facet."""
    type: str | None
    """The facet's MemoryType value; None without a facet."""
    chunk_count: int


def read_raw(data: dict[str, Any]) -> RawMemory | None:
    """The record's raw data read as above; None when a field it reads is of another kind."""
    deleted, chunks, memory = data.get("deleted_at"), data.get("chunk_count", 0), data.get("memory")
    sound = deleted is None or is_time(deleted)
    if not (sound and type(chunks) is int and isinstance(memory, dict | None)):
        return None
    if memory is None:
        return RawMemory(deleted is not None, False, False, None, chunks)
    kind = memory.get("type", _NOTE)
    superseded, expired = memory.get("superseded_by"), memory.get("expired_at")
    if (
        not isinstance(kind, str)
        or kind not in _TYPES
        or not isinstance(superseded, str | None)
        or not (expired is None or is_time(expired))
        or not isinstance(memory.get("user_id"), str | None)
    ):
        return None
    return RawMemory(deleted is not None, True, superseded is None and expired is None, kind, chunks)
