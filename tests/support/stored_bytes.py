"""What a test asks of the stored bytes: blobs no record names."""

from __future__ import annotations

from cairn.bootstrap import Container
from cairn.domain.models import Brain


def unnamed_bytes(container: Container, brain: Brain, paths: list[str]) -> set[str]:
    """Blobs in the brain's document folders that neither the records at `paths` (deleted ones
    too) nor a record of old bytes names: what a lost commit would leave behind."""
    docs = container.documents
    named = {str(i.data["key"]) for i in docs.repo.old_bytes.due(older_than_s=-1.0)}
    named |= {d.blob_key for d in (docs.repo.stored(brain.id, p) for p in paths) if d is not None}
    held = {k for k in container.adapters.blobs.items if k.startswith(f"{brain.id}/doc/")}  # type: ignore[attr-defined]
    return held - named
