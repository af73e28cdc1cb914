"""The ChunkIndex the services read through: the access rule (auth/access.py) applied to every read.

A search keeps to the brains the current principal may read and, in each, to the owned chunks it
may see (ChunkFilter.owners, which the index applies inside both legs before a pool is cut, like
every other part of the filter); a chunk read by id is absent when its brain or owner is hidden.
Writes pass through: writers are checked where a document is committed (services/documents/service.py).
The system (no principal: jobs, the CLI) reads everything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from cairn.auth import access
from cairn.domain.models import Brain, Chunk
from cairn.ports.chunks import ChunkHit, ChunkIndex, ChunkQuery
from cairn.ports.embedder import Vectors
from cairn.services.documents.rebuilding import RebuildingBrains
from cairn.services.repositories import BrainRepository


class VisibleChunks:
    def __init__(
        self, index: ChunkIndex, brains: BrainRepository, rebuilding: RebuildingBrains | None = None
    ) -> None:
        self.index = index
        self.brains = brains
        self.rebuilding = rebuilding or RebuildingBrains()

    def _brain(self, brain_id: str) -> Brain | None:
        return access.remembered_brain(brain_id, self.brains.get)

    def search(self, query: ChunkQuery) -> list[ChunkHit]:
        self.rebuilding.guard(query.filter.brain_ids)  # an index being rebuilt would answer wrong
        current = access.current()
        if current is None:
            return self.index.search(query)
        principal = current.principal
        brain_ids: list[str] = []
        owners: list[tuple[str, str | None]] = []
        for brain_id in dict.fromkeys(query.filter.brain_ids):
            brain = self._brain(brain_id)
            if brain is None or not access.may_see(principal, brain):
                continue  # never searched: a brain the principal may not read
            brain_ids.append(brain_id)
            view = access.owner_view(principal, brain)
            if view != access.ALL_OWNERS:
                owners.append((brain_id, view))
        if not brain_ids:
            return []
        narrowed = replace(query.filter, brain_ids=tuple(brain_ids), owners=tuple(owners))
        return self.index.search(replace(query, filter=narrowed))

    def _seen(self, chunk: Chunk) -> bool:
        current = access.current()
        if current is None:
            return True
        brain = self._brain(chunk.brain_id)
        return brain is not None and access.may_see(current.principal, brain, chunk.owner)

    def get_chunks(self, brain_id: str, document_id: str) -> list[Chunk]:
        return [c for c in self.index.get_chunks(brain_id, document_id) if self._seen(c)]

    def get_chunk(self, brain_id: str, chunk_id: str) -> Chunk | None:
        chunk = self.index.get_chunk(brain_id, chunk_id)
        return chunk if chunk is not None and self._seen(chunk) else None

    def get_many(self, brain_id: str, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        return {cid: c for cid, c in self.index.get_many(brain_id, chunk_ids).items() if self._seen(c)}

    # -- what writers and bookkeeping use, unchanged ----------------------------------------------

    def upsert(self, chunks: Sequence[Chunk], vectors: Vectors) -> None:
        self.index.upsert(chunks, vectors)

    def set_context(self, brain_id: str, document_id: str, context: str) -> None:
        self.index.set_context(brain_id, document_id, context)

    def delete_document(self, brain_id: str, document_id: str) -> int:
        return self.index.delete_document(brain_id, document_id)

    def activate(self, brain_id: str, document_id: str, chunk_ids: Sequence[str]) -> None:
        self.index.activate(brain_id, document_id, chunk_ids)

    def delete_chunks(self, brain_id: str, chunk_ids: Sequence[str]) -> int:
        return self.index.delete_chunks(brain_id, chunk_ids)

    def drop_brain(self, brain_id: str) -> int:
        return self.index.drop_brain(brain_id)

    def fingerprints(self, brain_id: str, document_id: str) -> dict[str, str]:
        return self.index.fingerprints(brain_id, document_id)

    def get_vectors(self, brain_id: str, chunk_ids: Sequence[str]) -> dict[str, Vectors]:
        return self.index.get_vectors(brain_id, chunk_ids)

    def count(self, brain_id: str) -> int:
        return self.index.count(brain_id)

    def held(self, brain_id: str) -> dict[str, int]:
        return self.index.held(brain_id)
