"""Document records written straight to the record store: large listings without the embedder."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from cairn.domain.models import Document
from cairn.services.repositories import DocumentRepository

WHEN = datetime(2026, 1, 1, tzinfo=UTC)
BATCH = 1000


def seed_documents(
    repo: DocumentRepository, brain_id: str, paths: Iterable[str], *, deleted: Iterable[str] = ()
) -> None:
    """A record per path (size = len(path)), soft-deleted for the paths in `deleted`."""
    gone = set(deleted)
    docs = [
        Document(
            id=f"doc_seed{n:08d}",
            brain_id=brain_id,
            path=path,
            title=path,
            checksum_sha256="0" * 64,
            byte_size=len(path),
            blob_key="seed",
            commit_sha="0" * 40,
            created_at=WHEN,
            updated_at=WHEN,
            deleted_at=WHEN if path in gone else None,
        )
        for n, path in enumerate(paths)
    ]
    for start in range(0, len(docs), BATCH):
        repo.commit([repo.put_op(doc, None) for doc in docs[start : start + BATCH]])
