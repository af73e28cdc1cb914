"""What a memory's raw record shows without decoding it: whether it is deleted, holds a memory,
is current, of which type, how many chunks it has and when it was made. Counting memories (the
briefing's totals, zengram's stats) reads these alone, and decodes a record only when it needs
more of it. A field of another kind than the document's is not read here: the record is decoded
then, and decoding names the damaged record."""

from __future__ import annotations

from datetime import datetime

from pydantic import ValidationError

from cairn.domain.models import Document
from cairn.domain.stored_time import MOMENT
from cairn.ports.records import Item
from cairn.services.documents.raw_memory import read_raw
from cairn.services.repositories import document_of


class Glance:
    """One memory record as its raw data shows it (or as decoded, when the data could not say)."""

    __slots__ = ("_decoded", "chunk_count", "current", "deleted", "item", "memory", "type")

    def __init__(
        self,
        item: Item,
        *,
        deleted: bool,
        memory: bool,
        current: bool,
        type: str | None,
        chunk_count: int,
        decoded: Document | None = None,
    ) -> None:
        self.item = item
        self.deleted = deleted
        self.memory = memory
        """Whether the record holds a memory facet."""
        self.current = current
        """Neither superseded nor expired (MemoryFacet.current); False without a facet."""
        self.type = type
        """The facet's MemoryType value; None without a facet."""
        self.chunk_count = chunk_count
        self._decoded = decoded

    @classmethod
    def of(cls, item: Item) -> Glance:
        raw = read_raw(item.data)
        if raw is None:
            return cls.decoded(item)
        deleted, memory, current, kind, chunks = raw
        return cls(item, deleted=deleted, memory=memory, current=current, type=kind, chunk_count=chunks)

    @classmethod
    def decoded(cls, item: Item) -> Glance:
        doc = document_of(item)
        m = doc.memory
        return cls(
            item,
            deleted=doc.deleted_at is not None,
            memory=m is not None,
            current=m is not None and m.current,
            type=m.type.value if m is not None else None,
            chunk_count=doc.chunk_count,
            decoded=doc,
        )

    def document(self) -> Document:
        """The record decoded (once)."""
        if self._decoded is None:
            self._decoded = document_of(self.item)
        return self._decoded

    def created_at(self) -> datetime:
        if self._decoded is not None:
            return self._decoded.created_at
        try:
            return MOMENT.validate_python(self.item.data["created_at"])
        except (KeyError, ValidationError):
            return self.document().created_at
