"""One item in full, as the web UI shows it: its text, metadata, chunks, links both ways, the
supersede chain with each version's validity, and how often searches returned it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from itertools import islice
from typing import Final, Protocol

from cairn.domain.errors import NotFound
from cairn.domain.models import Brain, Chunk, Document
from cairn.domain.text import excerpt
from cairn.ports.chunks import ChunkIndex
from cairn.services.links.repository import LinkRepository
from cairn.services.memory.entities import EntityRepository
from cairn.services.memory.memory_model import SUPERSEDES
from cairn.services.repositories import DocumentRepository
from cairn.services.search.access import AccessLog

TEXT_CAP: Final = 200_000
"""Characters of an item's text shown (and editable) at most; a longer one is shown cut."""
CHAIN_CAP: Final = 20
LINK_CAP: Final = 100


class ContentReader(Protocol):
    """The one read the detail needs of DocumentService."""

    def content(self, doc: Document) -> bytes: ...


@dataclass(frozen=True)
class Edge:
    """A link as the item page lists it: the other end's id and title (when it is a document)."""

    kind: str
    other_id: str
    other_title: str | None
    weight: float = 1.0
    valid_from: str | None = None
    valid_until: str | None = None
    document: bool = True
    """The other end is a document of the brain (else an entity, or something the caller may not see)."""


@dataclass(frozen=True)
class Version:
    doc: Document
    current: bool


@dataclass
class ItemDetail:
    doc: Document
    text: str
    text_cut: bool
    binary: bool
    chunks: list[Chunk]
    outgoing: list[Edge] = field(default_factory=list)
    incoming: list[Edge] = field(default_factory=list)
    chain: list[Version] = field(default_factory=list)
    """Oldest first: what this item superseded, itself, what superseded it."""
    reads: int = 0
    last_read: datetime | None = None


class ItemDetails:
    def __init__(
        self,
        repo: DocumentRepository,
        read: ContentReader,
        chunks: ChunkIndex,
        links: LinkRepository,
        access: AccessLog | None,
        entities: EntityRepository | None = None,
    ) -> None:
        self.repo, self.read, self.chunks, self.links, self.access = repo, read, chunks, links, access
        self.entities = entities

    def item(self, brain: Brain, doc_id: str) -> Document:
        doc = self.repo.get_by_id(doc_id)
        if doc is None or doc.brain_id != brain.id:
            raise NotFound(f"no item {excerpt(doc_id)} in this brain")
        return doc

    def detail(self, brain: Brain, doc_id: str) -> ItemDetail:
        doc = self.item(brain, doc_id)
        binary = not (doc.content_type.startswith("text/") or doc.content_type == "application/json")
        text, cut = "", False
        if doc.deleted_at is None and not binary:
            raw = self.read.content(doc).decode("utf-8", errors="replace")
            text, cut = raw[:TEXT_CAP], len(raw) > TEXT_CAP
        detail = ItemDetail(
            doc=doc,
            text=text,
            text_cut=cut,
            binary=binary,
            chunks=self.chunks.get_chunks(brain.id, doc.id) if doc.deleted_at is None else [],
        )
        self._links(brain, detail)
        detail.chain = self._chain(doc)
        if self.access is not None:
            seen = self.access.get(brain.id, doc.id)
            detail.reads, detail.last_read = seen.count, seen.last
        return detail

    def _links(self, brain: Brain, detail: ItemDetail) -> None:
        doc_id = detail.doc.id
        raw_out: list[tuple[str, str, float, str | None, str | None]] = [
            (ln.kind, ln.target_id, ln.weight, None, None)
            for ln in self.links.outgoing(brain.id, doc_id, limit=LINK_CAP)
        ]
        raw_in: list[tuple[str, str, float, str | None, str | None]] = [
            (ln.kind, ln.source_id, ln.weight, None, None)
            for ln in self.links.incoming(brain.id, doc_id, limit=LINK_CAP)
        ]
        for n in islice(self.links.outgoing_numbered(brain.id, doc_id), LINK_CAP):
            raw_out.append((n.kind, n.target_id, n.weight, n.valid_from, n.valid_until))
        for n in islice(self.links.incoming_numbered(brain.id, doc_id), LINK_CAP):
            raw_in.append((n.kind, n.source_id, n.weight, n.valid_from, n.valid_until))
        ends = {r[1] for r in raw_out + raw_in}
        found = self.repo.get_many_by_id(ends).values()
        titles = {d.id: d.title or d.path for d in found if d.brain_id == brain.id}
        docs = set(titles)
        for end in ends - docs:  # an entity a memory mentions, by its name
            if self.entities is not None and (stored := self.entities.by_id(brain.id, end)) is not None:
                titles[end] = f"{stored.entity.name} ({stored.entity.kind})"
        detail.outgoing = [Edge(k, o, titles.get(o), w, f, u, o in docs) for k, o, w, f, u in raw_out]
        detail.incoming = [Edge(k, o, titles.get(o), w, f, u, o in docs) for k, o, w, f, u in raw_in]

    def _chain(self, doc: Document) -> list[Version]:
        """Back through `supersedes` and forward through `superseded_by`, CHAIN_CAP each way. A
        deleted value is passed over, not listed (its text is gone from every answer)."""
        if doc.memory is None and SUPERSEDES not in doc.metadata:
            return []
        seen = {doc.id}
        before = self._walk(doc, lambda d: d.metadata.get(SUPERSEDES), seen)
        after = self._walk(doc, lambda d: d.memory.superseded_by if d.memory else None, seen)
        if not before and not after:
            return []
        chain = [*reversed(before), doc, *after]
        return [Version(d, d.id == doc.id) for d in chain]

    def _walk(self, doc: Document, step: Callable[[Document], object], seen: set[str]) -> list[Document]:
        """The values reached from `doc` by `step`, at most CHAIN_CAP, the deleted ones passed over;
        a value `seen` already (a loop) ends the walk."""
        found: list[Document] = []
        at = doc
        for _ in range(CHAIN_CAP):
            named = step(at)
            if not isinstance(named, str):
                break
            nxt = self.repo.get_by_id(named)
            if nxt is None or nxt.id in seen:
                break
            seen.add(nxt.id)
            if nxt.deleted_at is None:
                found.append(nxt)
            at = nxt
        return found
