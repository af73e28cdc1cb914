"""What goes into and comes out of a document write: inputs, outcomes, and the small rules
every write path shares (content types, file info, locks by path, expected versions)."""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from cairn.domain.errors import (
    VersionConflict,
)
from cairn.domain.models import Brain, Document, DocumentSource, MemoryFacet, MetadataValue
from cairn.domain.text import excerpt
from cairn.ports.records import Delete, Put
from cairn.services.documents.indexing import PlannedChunks, PreparedChunks


@dataclass(frozen=True)
class FileInfo:
    path: str
    size: int
    mtime: str
    is_dir: bool


@dataclass(frozen=True)
class DocumentInput:
    """What a writer may say about a document besides its bytes."""

    title: str | None = None
    tags: Sequence[str] = ()
    metadata: Mapping[str, MetadataValue] = field(default_factory=dict)
    source: DocumentSource = DocumentSource.ingest
    content_type: str | None = None
    text: str | None = None  # the text to index when it differs from the bytes (PDF, HTML)
    memory: MemoryFacet | None = None
    doc_id: str | None = None  # the id a new document gets (queued ingest promised it); else fresh
    staged_chunks: Sequence[str] | None = None  # its chunks, already indexed inactive (staged ingest)


@dataclass(frozen=True)
class DeferredWrite:
    """An item of `write_many` whose bytes and input are made when it is staged, in the pipeline
    (an ingest extracts a file's text then); a CairnError `make` raises is the item's result."""

    path: str
    make: Callable[[], tuple[bytes, DocumentInput]]


@dataclass(frozen=True)
class BatchOp:
    type: str  # write | append | delete | rename
    path: str
    content: bytes = b""
    to: str | None = None


@dataclass(frozen=True)
class Staged:
    document: Document
    prepared: PreparedChunks
    ops: list[Put | Delete]  # none: the write would change nothing
    text: str
    created: bool
    planned: PlannedChunks | None = None  # staged with `defer`: the chunks whose vectors `prepared` lacks


@dataclass
class WriteOutcome:
    document: Document
    created: bool
    changed: bool


def checksum(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def keep_info(
    doc: Document | None,
    *,
    metadata: Mapping[str, MetadataValue] | None = None,
    memory: MemoryFacet | None = None,
) -> DocumentInput:
    """What a rewrite of `doc` says about it: everything it had, with `metadata` and `memory`
    replaced when given (tags are kept as tags, not as the metadata.tags they are stored in)."""
    if doc is None:
        return DocumentInput()
    meta = {k: v for k, v in (doc.metadata if metadata is None else metadata).items() if k != "tags"}
    return DocumentInput(
        title=doc.title,
        tags=doc.tags,
        metadata=meta,
        source=doc.source,
        content_type=doc.content_type,
        memory=doc.memory if memory is None else memory,
    )


def same_info(doc: Document, info: DocumentInput) -> bool:
    """An identical rewrite is a no-op only when nothing the caller said differs either."""
    return (
        (info.title is None or info.title == doc.title)
        and (not info.tags or list(info.tags) == doc.tags)
        and all(doc.metadata.get(k) == v for k, v in info.metadata.items())
        and (info.memory is None or info.memory == doc.memory)
    )


CONTENT_TYPES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".json": "application/json",
    ".html": "text/html",
    ".htm": "text/html",
    ".pdf": "application/pdf",
}


def content_type(path: str) -> str:
    return CONTENT_TYPES.get(posixpath.splitext(path)[1].lower(), "text/markdown")


def file_info(doc: Document) -> FileInfo:
    return FileInfo(path=doc.path, size=doc.byte_size, mtime=stamp(doc), is_dir=False)


def stamp(doc: Document) -> str:
    return doc.updated_at.isoformat().replace("+00:00", "Z")


def lock_key(brain: Brain, path: str) -> str:
    return f"{brain.id}\x00{path}"


def expect_version(path: str, found: Document | None, expected: int | None) -> None:
    """Raise VersionConflict unless the live document at `path` is at `expected` (None: absent)."""
    current = found.version if found is not None and found.deleted_at is None else None
    if current == expected:
        return
    if expected is None:
        message = f"a document already exists at {excerpt(path)} (version {current})"
    elif current is None:
        message = f"no document exists at {excerpt(path)} (expected version {expected})"
    else:
        message = f"{excerpt(path)} is at version {current}, not {expected}"
    raise VersionConflict(message, current_version=current, expected_version=expected)
