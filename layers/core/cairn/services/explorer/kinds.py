"""Which surface's kind of item a stored document is.

One brain holds what every surface writes, so an item is told by what its record carries:
- `sector memory`: a ThoughtMCP memory (a memory facet with a sector);
- `typed memory`: a zengram or canonical typed memory (any other memory facet);
- `page`: a gbrain page written by brain_put (a bare slug path, no extension);
- `library item`: a file ingested into a Mnemosyne library (not Markdown or plain text);
- `note`: everything else, the Markdown notes of the store protocol and memory_remember.
"""

from __future__ import annotations

from typing import Final, Literal

from cairn.domain.models import Document
from cairn.domain.pages import is_slug
from cairn.services.documents.document_text import TEXT_TYPES

ItemKind = Literal["note", "typed memory", "page", "library item", "sector memory"]
ITEM_KINDS: Final[tuple[ItemKind, ...]] = ("note", "typed memory", "page", "library item", "sector memory")


def kind_of(doc: Document) -> ItemKind:
    if doc.memory is not None:
        return "sector memory" if doc.memory.sector else "typed memory"
    if is_slug(doc.path):
        return "page"
    if doc.content_type not in TEXT_TYPES or "item_type" in doc.metadata or "original_type" in doc.metadata:
        return "library item"
    return "note"


def type_of(doc: Document) -> str | None:
    """The item's type inside its kind: a memory's type or sector, a library item's file type."""
    if doc.memory is not None:
        return doc.memory.sector or doc.memory.type.value
    kind = doc.metadata.get("item_type") or doc.metadata.get("original_type")
    return str(kind) if kind else None
