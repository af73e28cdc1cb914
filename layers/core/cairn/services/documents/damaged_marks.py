"""Documents a read found damaged, noted for the answers that count records without reading their
bytes (zengram's stats), so that they leave out what the answers reading them leave out
(unreadable.py `read_or_skip`: zengram's query, briefing and export).

| item         | pk                  | sk                  | data                          |
|--------------|---------------------|---------------------|-------------------------------|
| damaged mark | `brain#<brain_id>`  | `damaged#<doc id>`  | `{"version": <record's>}`     |

DocumentCore.bytes_of writes one whenever it finds a document's bytes gone or damaged (any
surface's read, `cairn check --deep`); `DocumentCore.damaged_now` reads a brain's marks, reads each
marked document's bytes again, and drops the marks that no longer hold: the document gone or
deleted, written since (its record at another version), or its bytes sound again (written again
with the same bytes, or restored). A mark holds an id and a version, nothing of the text (not its
storage key, which holds its digest); it sits in the brain's partition, so deleting the brain takes
it, and a document's erase (an erasure's, ThoughtMCP's forget) removes it in the commit that
removes the record (writes.py): an erased document's id does not wait in it for the next stats.
Any reader writes it, a read-only key or another tenant's reader of a public brain too: unlike
what a search notes (gbrain's log of a query, access.own_tenant), a mark holds nothing of its
reader, only what the brain's own record and bytes show, once per damaged version.
Counting every record's bytes instead would read every blob of the brain (110,000 on the largest
measured brain): a document damaged that no read has met yet is still counted, until one does.
"""

from __future__ import annotations

import logging
from contextlib import suppress
from dataclasses import dataclass
from typing import Final

from cairn.domain.errors import Conflict, DamagedRecord
from cairn.domain.models import Document
from cairn.ports.records import Item, RecordStore
from cairn.services.repositories import all_items, documents_pk

MARK: Final = "damaged#"
MAX_DROPPED: Final = 100
"""Damaged marks one look drops before it gives up (and answers damaged_store)."""

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Mark:
    doc_id: str
    found_at: int  # the document's version found damaged
    version: int  # the mark's own


def mark_key(brain_id: str, doc_id: str) -> tuple[str, str]:
    return documents_pk(brain_id), f"{MARK}{doc_id}"


class DamagedMarks:
    def __init__(self, records: RecordStore) -> None:
        self.records = records

    def note(self, doc: Document) -> None:
        """Mark the document's bytes as found damaged (once: a mark of the same version stands)."""
        key = mark_key(doc.brain_id, doc.id)
        try:
            held = self.records.get(*key)
        except DamagedRecord:  # changed outside Cairn (`marked`): written over
            held = None
        if held is None or held.data.get("version") != doc.version:
            self.records.put(Item(*key, {"version": doc.version}))

    def marked(self, brain_id: str) -> list[Mark]:
        """The brain's marks. One changed outside Cairn (its data no longer JSON) is dropped, said
        in the log: it is only a note that the next read meeting the damage writes again, and kept,
        it refused the brain's stats for good (damaged_store)."""
        pk = documents_pk(brain_id)
        for dropped in range(MAX_DROPPED + 1):
            try:
                return [
                    Mark(item.sk.removeprefix(MARK), _version(item.data.get("version")), item.version)
                    for item in all_items(self.records, pk, MARK)
                ]
            except DamagedRecord as exc:
                if dropped == MAX_DROPPED or exc.key[0] != pk or not exc.key[1].startswith(MARK):
                    raise
                log.warning("brain %s: a damaged-content mark no longer reads as one; dropped", brain_id)
                self.records.delete(*exc.key)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def drop(self, brain_id: str, mark: Mark) -> None:
        """Remove a mark that no longer holds, unless a read marked it again meanwhile."""
        with suppress(Conflict):
            self.records.delete(*mark_key(brain_id, mark.doc_id), expected_version=mark.version)


def _version(value: object) -> int:
    """A mark's version, -1 (matching no document) when a damaged mark holds none: dropped."""
    return value if isinstance(value, int) and not isinstance(value, bool) else -1
