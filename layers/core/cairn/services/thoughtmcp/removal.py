"""What goes with a ThoughtMCP memory's document however it is removed: its row and its sector
vectors. The document service commits these in the same transaction as a delete, a batch delete or
an erasure of the document (bootstrap wires it in), so a memory deleted through REST, the web UI or
another surface is never recalled by ThoughtMCP afterwards, and no row outlives its document."""

from __future__ import annotations

from cairn.domain.models import Document
from cairn.ports.records import Delete
from cairn.services.thoughtmcp.models import memory_path
from cairn.services.thoughtmcp.rows import rows_pk
from cairn.services.thoughtmcp.sectors import sectors_pk


def memory_records(doc: Document) -> list[Delete]:
    """The row and sector vectors of `doc` when it is a ThoughtMCP memory's document, else none."""
    user_id = doc.memory.user_id if doc.memory is not None else None
    if user_id is None or doc.path != memory_path(user_id, doc.id):
        return []
    return [Delete(rows_pk(doc.brain_id, user_id), doc.id), Delete(sectors_pk(doc.brain_id, user_id), doc.id)]
