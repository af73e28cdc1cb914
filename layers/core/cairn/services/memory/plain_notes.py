"""Notes other surfaces wrote (documents with no memory facet), changed by a typed-memory
surface's update and delete: zengram's `brain_search` lists them as memories of type `note`, so
the ids it shows must be ones its update and delete act on.

A note has no importance or knowledge category to change; its text is changed in place (tags,
the metadata not named, the front matter it began with and a title of its own kept; a title drawn
from its first heading or file name is drawn again) and only when it is text (a PDF's text is
extracted from its file). Access is the repositories' rule, as for any write."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from cairn.domain.errors import InvalidInput, NotFound
from cairn.domain.models import Brain, Document, MetadataValue
from cairn.domain.text import excerpt
from cairn.ingest.markdown import front_matter_block
from cairn.services.documents.document_text import TEXT_TYPES, title_for
from cairn.services.documents.inputs import DocumentInput, expect_version, keep_info
from cairn.services.documents.service import DocumentService
from cairn.services.memory.memory_model import Deleted, Updated, checked_text


def plain_note(documents: DocumentService, brain: Brain, note_id: str) -> Document | None:
    """The note with that id in the brain (deleted or not), None when there is none."""
    doc = documents.repo.get_by_id(note_id)
    if doc is None or doc.brain_id != brain.id or doc.memory is not None:
        return None
    return doc


def _with_front_matter(live: Document, data: bytes, text: str) -> str:
    """`text` as the note's new body, after the front matter block the note began with (a gbrain
    page's title, type and fields): its reader was shown the text without it, so new text that
    has none of its own keeps the note's."""
    if live.content_type != "text/markdown" or front_matter_block(text):
        return text
    return front_matter_block(data.decode("utf-8", "replace")) + text


def update_note(
    documents: DocumentService,
    brain: Brain,
    note: Document,
    *,
    content: str | None,
    importance: float | None,
    knowledge_category: str | None,
    metadata: Mapping[str, MetadataValue] | None,
    expected_version: int | None,
) -> Updated:
    if note.deleted_at is not None:
        raise NotFound(f"memory not found: {excerpt(note.id)}")
    if importance is not None or knowledge_category is not None:
        raise InvalidInput(
            "this is a note another surface wrote, not a typed memory: it has no importance or "
            "knowledge_category to change (its content and metadata can be updated)"
        )
    if content is not None and note.content_type not in TEXT_TYPES:
        raise InvalidInput(
            f"this note's text is extracted from its file ({note.content_type}): ingest the file again"
        )
    changed: list[str] = []

    def change(live: Document | None, data: bytes | None) -> tuple[bytes, DocumentInput] | None:
        if live is None or data is None or live.id != note.id or live.memory is not None:
            raise NotFound(f"memory not found: {excerpt(note.id)}")
        if expected_version is not None:
            expect_version(live.path, live, expected_version)
        changed.clear()  # a commit lost to another process's writer runs this again
        body, title = data, live.title  # an image's bytes stay as they are when only metadata changes
        if (
            content is not None
            and (new_text := _with_front_matter(live, data, checked_text(content))).encode() != data
        ):
            body = new_text.encode()
            changed.append("content")
            if live.title == title_for(live.path, data.decode("utf-8", "replace")):
                title = title_for(live.path, new_text)  # a title drawn from the text follows it
        merged = None
        if metadata is not None and any(live.metadata.get(k) != v for k, v in metadata.items()):
            merged = {**live.metadata, **metadata}
            changed.append("metadata")
        if not changed:
            return None
        return body, replace(keep_info(live, metadata=merged), title=title)

    outcome = documents.modify(brain, note.path, change)
    return Updated(note if outcome is None else outcome.document, changed)


def delete_note(documents: DocumentService, brain: Brain, note: Document, reason: str | None) -> Deleted:
    if note.deleted_at is not None:
        return Deleted(note, already_inactive=True)
    gone = documents.retire(brain, note.path, reason=reason, why=reason or "deleted")
    return Deleted(gone, already_inactive=False)
