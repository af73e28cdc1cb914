"""What goes with a ThoughtMCP memory's document however it is removed: its row and its sector
vectors. The document service commits these in the same transaction as a delete, a batch delete or
an erasure of the document (bootstrap wires it in), so a memory deleted through REST, the web UI or
another surface is never recalled by ThoughtMCP afterwards, and no row outlives its document."""

from __future__ import annotations

from cairn.domain.models import Document
from cairn.ports.records import Delete
from cairn.services.thoughtmcp.rows import rows_pk
from cairn.services.thoughtmcp.sectors import sectors_pk


def memory_records(doc: Document) -> list[Delete]:
    """The row and sector vectors of `doc` when it is a ThoughtMCP memory's document (its facet
    names the user), else none. Wherever it is: one renamed through the store protocol is still
    that memory, and its row is keyed by the document's id."""
    user_id = doc.memory.user_id if doc.memory is not None else None
    return records_of(doc.brain_id, user_id, doc.id) if user_id is not None else []


def records_of(brain_id: str, user_id: str, memory_id: str) -> list[Delete]:
    """The memory's row and sector vectors, removed whatever version they are at (a recall
    reinforces the row at any moment; what removes the memory decides, not the row's version)."""
    return [Delete(rows_pk(brain_id, user_id), memory_id), Delete(sectors_pk(brain_id, user_id), memory_id)]
