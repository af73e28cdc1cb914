"""ThoughtMCP's sector vectors (sectors.py) under `cairn check --deep`: the records that embedding
their memory now would store differently, found and embedded again (index_repair.py calls it,
as DerivedVectors).

A record is stale when it names another model or dimension (the embedder was changed), another
vector version than the embedder gives its memory's texts now (a release reads some texts better:
ports/embedder.py VersionedVectors, the embedded model's symbols its vocabulary lacks), or its
vectors no longer read. Finding them embeds nothing: the brain's memory documents are read a page
at a time, and for each batch of them the sector records, then the rows (what the texts are made
of), in one read each; the version is the embedder's answer for the texts. A memory with no
record (stored before sector vectors existed) is left as it is: recall searches it by its
semantic vector alone until it is written again.

Embedding again writes the record alone, and only at the version it was read at, so it never
overwrites what a write of the memory made meanwhile (new text or metadata: that write embedded
its sectors in its own transaction) nor brings back the record of a memory forgotten meanwhile.
The record is read before the row for the same reason: a record read with a row older than it
would be judged against the old text.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Final, TypeGuard, TypeVar

from cairn.domain.errors import CairnError, Conflict
from cairn.domain.models import Brain, Document
from cairn.domain.paths import OWNED_ROOT
from cairn.ports.records import Item
from cairn.services.documents.service import DocumentService
from cairn.services.repositories import document_of
from cairn.services.thoughtmcp.models import Row, bytes_content
from cairn.services.thoughtmcp.rows import ThoughtRows
from cairn.services.thoughtmcp.sectors import SectorVectors

T = TypeVar("T")

READ_BATCH: Final = 200
"""Memories whose records and rows are read together while checking."""
EMBED_BATCH: Final = 16
"""Memories embedded in one call of the embedder (four texts each) while repairing."""


class StaleSectors:
    def __init__(self, documents: DocumentService, rows: ThoughtRows, sectors: SectorVectors) -> None:
        self.documents = documents
        self.rows = rows
        self.sectors = sectors

    def stale(self, brain: Brain) -> list[str]:
        """The ids of the brain's memories whose sector records are stale (module docstring)."""
        found: list[str] = []
        for batch in _batched(self._memories(brain), READ_BATCH):
            found += [doc.id for doc, _, _ in self._judged(brain, batch)]
        return found

    def remake(self, brain: Brain, ids: Sequence[str]) -> int:
        """Embed these memories' sectors again where their records are still stale; how many were."""
        remade = 0
        for batch in _batched(ids, EMBED_BATCH):
            docs = [doc for doc in map(self.documents.repo.get_by_id, batch) if _live_memory(doc, brain)]
            judged = list(self._judged(brain, docs))
            made = self.sectors.embed_many([(text, row) for _, _, (row, text) in judged])
            for (doc, item, (row, _)), embedded in zip(judged, made, strict=True):
                op = self.sectors.put_op(
                    brain.id, row.user_id, doc.id, embedded, expected_version=item.version
                )
                try:
                    self.sectors.records.put(op.item, op.expected_version)
                except Conflict:  # written or forgotten meanwhile: that write decided
                    continue
                remade += 1
        return remade

    def _memories(self, brain: Brain) -> Iterator[Document]:
        """The brain's live memory documents, a page of records at a time."""
        for item in self.documents.repo.raw(brain.id, f"{OWNED_ROOT}/"):
            if item.data.get("deleted_at") is None:
                doc = document_of(item)
                if _live_memory(doc, brain):
                    yield doc

    def _judged(
        self, brain: Brain, docs: Sequence[Document]
    ) -> Iterator[tuple[Document, Item, tuple[Row, str]]]:
        """For each of `docs` whose record is stale: it, its record and (row, text)."""
        users = {doc.id: str(_memory_user(doc)) for doc in docs}
        items = self.sectors.items(brain.id, [(users[doc.id], doc.id) for doc in docs])
        rows: dict[str, Row] = {}
        for user in set(users.values()):
            rows.update(self.rows.get(brain.id, user, [i for i, u in users.items() if u == user]))
        for doc in docs:
            item, row = items.get((users[doc.id], doc.id)), rows.get(doc.id)
            if item is None or row is None or row.user_id != users[doc.id]:
                continue
            try:
                text = row.content if row.content is not None else bytes_content(self.documents.content(doc))
            except CairnError:  # its content is damaged or gone: the document check reports it
                continue
            if not self.sectors.current(item, self.sectors.version(text, row)):
                yield doc, item, (row, text)


def _memory_user(doc: Document) -> str | None:
    return doc.memory.user_id if doc.memory is not None else None


def _live_memory(doc: Document | None, brain: Brain) -> TypeGuard[Document]:
    return (
        doc is not None
        and doc.brain_id == brain.id
        and doc.deleted_at is None
        and _memory_user(doc) is not None
    )


def _batched(values: Iterable[T], size: int) -> Iterator[list[T]]:
    it = iter(values)
    while batch := list(islice(it, size)):
        yield batch
