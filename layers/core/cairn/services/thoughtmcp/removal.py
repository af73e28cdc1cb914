"""What goes with a ThoughtMCP memory's document however it is removed: its row and its sector
vectors, and a mark that its waypoint links are to go (kind UNLINKS, services/links/pending.py).
The document service commits these in the same transaction as a delete, a batch delete or an
erasure of the document (bootstrap wires it in), so a memory deleted through REST, the web UI or
another surface is never recalled by ThoughtMCP afterwards, and no row outlives its document. Its
links, and the other ends' statistics, are removed after that commit (ThoughtLinks.unlink_removed),
which deletes the mark with its last link; a store that refuses them, or a process that stops
between, leaves the mark for the sweep to finish (ThoughtLinks.finish_unlinks)."""

from __future__ import annotations

from cairn.domain.models import Document
from cairn.ports.records import Delete, Put
from cairn.services.links.pending import Mark, PendingLinks
from cairn.services.thoughtmcp.rows import rows_pk
from cairn.services.thoughtmcp.sectors import sectors_pk

UNLINKS = "unlinks"
"""The kind of a removed memory's mark: its waypoint links are still to go."""


class MemoryRecords:
    """The companions of a document (DocumentService's `companions`)."""

    def __init__(self, pending: PendingLinks) -> None:
        self.pending = pending

    def __call__(self, doc: Document) -> list[Put | Delete]:
        """The row, sector vectors and unlinks mark of `doc` when it is a ThoughtMCP memory's
        document (its facet names the user), else none. Wherever it is: one renamed through the
        store protocol is still that memory, and its row is keyed by the document's id."""
        user_id = doc.memory.user_id if doc.memory is not None else None
        return removal_of(self.pending, doc.brain_id, user_id, doc.id) if user_id is not None else []


def removal_of(
    pending: PendingLinks, brain_id: str, user_id: str, memory_id: str, *, unlinked_at: int | None = None
) -> list[Put | Delete]:
    """What a memory's removal commits: its records, and the mark that its links are to go.
    `unlinked_at`: the version of the memory's row, read with no link left (a hard forget reads
    both before its commit). No mark then, and the row goes only at that version: every link's
    transaction rewrites both ends' rows (ThoughtLinks._connect), so a link made since fails the
    commit (Conflict) rather than outliving the memory unmarked."""
    if unlinked_at is not None:
        return [
            Delete(rows_pk(brain_id, user_id), memory_id, expected_version=unlinked_at),
            Delete(sectors_pk(brain_id, user_id), memory_id),
        ]
    return [
        *records_of(brain_id, user_id, memory_id),
        pending.put_op(unlinks_mark(pending, brain_id, memory_id)),
    ]


def unlinks_mark(pending: PendingLinks, brain_id: str, memory_id: str) -> Mark:
    return pending.removal_mark(brain_id, memory_id, UNLINKS)


def records_of(brain_id: str, user_id: str, memory_id: str) -> list[Delete]:
    """The memory's row and sector vectors, removed whatever version they are at (a recall
    reinforces the row at any moment; what removes the memory decides, not the row's version)."""
    return [Delete(rows_pk(brain_id, user_id), memory_id), Delete(sectors_pk(brain_id, user_id), memory_id)]
