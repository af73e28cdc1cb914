"""Documents a read found damaged, noted for the answers that count records without reading their
bytes (zengram's stats), so that they leave out what the answers reading them leave out
(unreadable.py `read_or_skip`: zengram's query, briefing and export).

| item         | pk                  | sk                  | data                   |
|--------------|---------------------|---------------------|------------------------|
| damaged mark | `brain#<brain_id>`  | `damaged#<doc id>`  | `{"blob_key": <key>}`  |

DocumentCore.bytes_of writes one whenever it finds a document's bytes gone or damaged (any
surface's read, `cairn check --deep`); `DocumentCore.damaged_now` reads a brain's marks, reads each
marked document's bytes again, and drops the marks that no longer hold: the document gone, written
since (its new bytes have another key), or its bytes sound again (written again with the same
bytes). A mark holds ids and a storage key, no text; it sits in the brain's partition, so deleting
the brain takes it. Counting every record's bytes instead would read every blob of the brain
(110,000 of them on the largest measured brain): a document damaged that no read has met yet is
still counted, until one does.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass
from typing import Final

from cairn.domain.errors import Conflict
from cairn.domain.models import Document
from cairn.ports.records import Item, RecordStore
from cairn.services.repositories import all_items, documents_pk

MARK: Final = "damaged#"


@dataclass(frozen=True)
class Mark:
    doc_id: str
    blob_key: str
    version: int


class DamagedMarks:
    def __init__(self, records: RecordStore) -> None:
        self.records = records

    def note(self, doc: Document) -> None:
        """Mark the document's bytes as found damaged (once: a mark of the same key stands)."""
        key = (documents_pk(doc.brain_id), f"{MARK}{doc.id}")
        held = self.records.get(*key)
        if held is None or held.data.get("blob_key") != doc.blob_key:
            self.records.put(Item(*key, {"blob_key": doc.blob_key}))

    def marked(self, brain_id: str) -> list[Mark]:
        return [
            Mark(item.sk.removeprefix(MARK), str(item.data.get("blob_key", "")), item.version)
            for item in all_items(self.records, documents_pk(brain_id), MARK)
        ]

    def drop(self, brain_id: str, mark: Mark) -> None:
        """Remove a mark that no longer holds, unless a read marked it again meanwhile."""
        with suppress(Conflict):
            self.records.delete(documents_pk(brain_id), f"{MARK}{mark.doc_id}", expected_version=mark.version)
