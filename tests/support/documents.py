"""Document records written straight to the record store: large listings without the embedder."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from cairn.domain.models import Document
from cairn.services.repositories import DocumentRepository

WHEN = datetime(2026, 1, 1, tzinfo=UTC)
BATCH = 1000


def a_document(
    doc_id: str,
    path: str,
    *,
    brain_id: str = "b1",
    when: datetime = WHEN,
    byte_size: int = 1,
    deleted_at: datetime | None = None,
) -> Document:
    """A document record with placeholder content fields (no blob behind it)."""
    return Document(
        id=doc_id,
        brain_id=brain_id,
        path=path,
        title=path,
        checksum_sha256="0" * 64,
        byte_size=byte_size,
        blob_key="seed",
        commit_sha="0" * 40,
        created_at=when,
        updated_at=when,
        deleted_at=deleted_at,
    )


def seed_documents(
    repo: DocumentRepository, brain_id: str, paths: Iterable[str], *, deleted: Iterable[str] = ()
) -> None:
    """A record per path (size = len(path)), soft-deleted for the paths in `deleted`."""
    gone = set(deleted)
    docs = [
        a_document(
            f"doc_seed{n:08d}",
            path,
            brain_id=brain_id,
            byte_size=len(path),
            deleted_at=WHEN if path in gone else None,
        )
        for n, path in enumerate(paths)
    ]
    for start in range(0, len(docs), BATCH):
        repo.commit([repo.put_op(doc, None) for doc in docs[start : start + BATCH]])
