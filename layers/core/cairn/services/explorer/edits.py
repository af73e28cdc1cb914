"""Editing and deleting an item whichever surface wrote it: each kind through the service that
keeps its rules (a typed memory's hash and entities, a ThoughtMCP memory's row and sectors), so an
edit made in the UI reads back the same through every surface."""

from __future__ import annotations

from cairn.domain.errors import InvalidInput, VersionConflict
from cairn.domain.models import Brain, Document
from cairn.services.documents.document_text import TEXT_TYPES
from cairn.services.documents.inputs import DocumentInput
from cairn.services.documents.service import DocumentService
from cairn.services.explorer.kinds import kind_of
from cairn.services.memory.memories import MemoryService
from cairn.services.thoughtmcp.memories import ThoughtMemories

REASON = "edited in the web UI"


class ItemEdits:
    def __init__(
        self, documents: DocumentService, memories: MemoryService, thoughts: ThoughtMemories
    ) -> None:
        self.documents, self.memories, self.thoughts = documents, memories, thoughts

    def edit(self, brain: Brain, doc: Document, text: str, *, version: int) -> None:
        """Replace the item's text; a VersionConflict when it changed since `version` was read."""
        if not text.strip():
            raise InvalidInput("the text must not be empty: delete the item instead")
        kind = kind_of(doc)
        if doc.deleted_at is not None:
            raise InvalidInput("a deleted item cannot be edited")
        if doc.version != version:
            raise _changed(doc, version, doc.version)
        try:
            self._write(brain, doc, kind, text, version)
        except VersionConflict as exc:  # edited meanwhile through some surface: never overwritten
            raise _changed(doc, version, exc.current_version) from None

    def _write(self, brain: Brain, doc: Document, kind: str, text: str, version: int) -> None:
        """Each kind's writer checks `version` again when it commits."""
        if kind == "sector memory" and doc.memory is not None and doc.memory.user_id:
            self.thoughts.update(brain, doc.id, doc.memory.user_id, content=text, expected_version=version)
        elif kind in ("typed memory", "sector memory"):
            self.memories.update(brain, doc.id, content=text, expected_version=version)
        elif doc.content_type in TEXT_TYPES:

            def same(live: Document | None) -> DocumentInput:
                kept = live or doc
                return DocumentInput(
                    title=kept.title, tags=kept.tags, metadata=kept.metadata, content_type=kept.content_type
                )

            self.documents.write_at_version(
                brain, doc.path, text.encode(), same, expected_version=version, reason=REASON
            )
        else:
            raise InvalidInput(
                f"a {doc.content_type} item's text is extracted from its file: ingest the file again"
            )

    def delete(self, brain: Brain, doc: Document) -> None:
        kind = kind_of(doc)
        if kind == "sector memory" and doc.memory is not None and doc.memory.user_id:
            self.thoughts.forget(brain, doc.id, doc.memory.user_id)
        elif kind in ("typed memory", "sector memory"):
            self.memories.delete(brain, doc.id, reason="deleted in the web UI")
        else:
            self.documents.delete(brain, doc.path, reason="deleted in the web UI")


def _changed(doc: Document, version: int, now: int | None) -> VersionConflict:
    found = f"now {now}" if now is not None else "now gone"
    return VersionConflict(
        f"{doc.path} changed since you opened it (version {version}, {found}): reload it",
        current_version=now,
        expected_version=version,
    )
