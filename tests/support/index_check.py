"""What a test asks of the chunk index after a crash: that it holds exactly what the records say.

Every live document has its record's count of chunks, all active, each ordinal once, found by both
search legs; a soft-deleted or erased document has none; a brain holds no chunk beyond its live
documents' (no ghost, nothing twice); no index intent is left standing."""

from __future__ import annotations

from cairn.auth import access
from cairn.bootstrap import Container
from cairn.ports.chunks import ChunkFilter, ChunkQuery
from cairn.services.documents.indexing import embedding_text
from cairn.services.repositories import document_of


def index_problems(container: Container) -> list[str]:
    problems: list[str] = []
    chunks = container.adapters.chunks
    with access.as_system():
        for brain in container.brains.list():
            expected = 0
            for item in container.documents.repo.raw(brain.id):
                doc = document_of(item)
                held = chunks.get_chunks(brain.id, doc.id)
                where = f"{brain.slug}:{doc.path}"
                if doc.deleted_at is not None:
                    if held:
                        problems.append(f"{where}: deleted, yet {len(held)} chunks remain")
                    continue
                expected += doc.chunk_count
                active = [c for c in held if c.active]
                ordinals = [c.ordinal for c in active]
                if len(active) != doc.chunk_count or len(held) != len(active):
                    problems.append(
                        f"{where}: {len(active)} live chunks ({len(held)} in all), "
                        f"the record says {doc.chunk_count}"
                    )
                elif sorted(ordinals) != list(range(doc.chunk_count)):
                    problems.append(f"{where}: chunk ordinals {sorted(ordinals)}")
                elif active:
                    problems += _both_legs(
                        container, brain.id, doc.id, where, active[0].title, active[0].text
                    )
            count = chunks.count(brain.id)
            if count != expected:
                problems.append(f"{brain.slug}: the index holds {count} chunks, the records {expected}")
    left = list(container.documents.repo.intents.pending())
    if left:
        problems.append(f"{len(left)} index intents left standing")
    return problems


def _both_legs(
    container: Container, brain_id: str, doc_id: str, where: str, title: str, text: str
) -> list[str]:
    """Each leg on its own (a text-only and a vector-only query) finds the document's chunk."""
    vector = container.adapters.embedder.embed([embedding_text(title, None, text)])[0].tolist()
    scope = ChunkFilter(brain_ids=(brain_id,), document_ids=(doc_id,))
    found: list[str] = []
    for leg, query in (
        ("full-text", ChunkQuery(text=text[:200], vector=None, filter=scope)),
        ("vector", ChunkQuery(text="", vector=vector, filter=scope)),
    ):
        if not container.adapters.chunks.search(query):
            found.append(f"{where}: not found by the {leg} leg")
    return found
