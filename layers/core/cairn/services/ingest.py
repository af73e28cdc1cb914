"""Ingest: files, URLs and remembered notes become indexed documents."""

from __future__ import annotations

import posixpath
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cairn.domain.errors import FileTooLarge, InvalidInput
from cairn.domain.ids import new_id
from cairn.domain.models import Brain, Document, DocumentSource
from cairn.domain.paths import GLOBAL_PREFIX, normalize_user_path
from cairn.ingest.extract import extract_text, infer_kind
from cairn.ingest.fetch import SafeFetcher
from cairn.ingest.files import read_local_file
from cairn.services.documents import DocumentInput, DocumentService, checksum

MAX_TAG = 64
MAX_TAGS = 64
MAX_TITLE = 512

_KIND_TYPE = {
    "markdown": "text/markdown",
    "text": "text/plain",
    "json": "application/json",
    "html": "text/markdown",
    "pdf": "text/markdown",
}


@dataclass(frozen=True)
class IngestResult:
    document: Document
    hash: str
    chunk_count: int
    embedded_count: int
    duration_ms: int
    reused: bool
    status: str = "completed"


@dataclass(frozen=True)
class LocalFilePolicy:
    """Where memory_ingest_file may read: below `root`, or anywhere the process can (stdio)."""

    root: Path | None
    max_bytes: int


class IngestService:
    def __init__(
        self,
        documents: DocumentService,
        fetcher: SafeFetcher,
        *,
        max_content_chars: int = 5_000_000,
        max_file_bytes: int = 25 * 1024 * 1024,
    ) -> None:
        self.documents = documents
        self.fetcher = fetcher
        self.max_content_chars = max_content_chars
        self.max_file_bytes = max_file_bytes

    def remember(
        self,
        brain: Brain,
        content: str,
        *,
        title: str | None = None,
        tags: Sequence[str] | None = None,
        path: str | None = None,
        source: DocumentSource = DocumentSource.ingest,
    ) -> Document:
        """Store a markdown note; the title defaults to the first heading."""
        if not content:
            raise InvalidInput("content must not be empty")
        if len(content) > self.max_content_chars:
            raise InvalidInput(f"content exceeds {self.max_content_chars} characters")
        if title is not None and not 1 <= len(title) <= MAX_TITLE:
            raise InvalidInput(f"title must be 1..{MAX_TITLE} characters")
        clean_tags = _tags(tags or [])
        target = normalize_user_path(path) if path else _note_path(title or content)
        info = DocumentInput(title=title, tags=clean_tags, source=source, content_type="text/markdown")
        return self.documents.write(brain, target, content.encode("utf-8"), info, reason="remember").document

    def ingest_bytes(
        self,
        brain: Brain,
        data: bytes,
        *,
        name: str,
        kind: str | None = None,
        content_type: str | None = None,
        path: str | None = None,
    ) -> IngestResult:
        """Store a file's text as a document at `path` (default `ingest/<file name>`)."""
        started = time.perf_counter()
        if len(data) > self.max_file_bytes:
            raise FileTooLarge(f"file exceeds {self.max_file_bytes // (1024 * 1024)} MiB")
        kind = kind or infer_kind(name, content_type, data)
        extracted = extract_text(data, kind)
        if len(extracted.text) > self.max_content_chars:
            raise InvalidInput(f"extracted text exceeds {self.max_content_chars} characters")
        path = normalize_user_path(path or f"ingest/{safe_name(name)}")
        stored = data if kind in ("markdown", "text", "json") else extracted.text.encode("utf-8")
        info = DocumentInput(
            title=extracted.title,
            source=DocumentSource.ingest,
            content_type=_KIND_TYPE[kind],
            text=extracted.text,
            metadata={
                "original_name": posixpath.basename(name)[:256],
                "original_type": extracted.content_type,
            },
        )
        outcome = self.documents.write(brain, path, stored, info, reason="ingest")
        doc = outcome.document
        return IngestResult(
            document=doc,
            hash=checksum(stored),
            chunk_count=doc.chunk_count,
            embedded_count=doc.chunk_count if outcome.changed else 0,
            duration_ms=int((time.perf_counter() - started) * 1000),
            reused=not outcome.changed,
        )

    def ingest_file(
        self,
        brain: Brain,
        path: str,
        policy: LocalFilePolicy,
        kind: str | None = None,
        target: str | None = None,
    ) -> IngestResult:
        local = read_local_file(path, root=policy.root, max_bytes=min(policy.max_bytes, self.max_file_bytes))
        return self.ingest_bytes(brain, local.data, name=local.name, kind=kind, path=target)

    def ingest_url(self, brain: Brain, url: str) -> IngestResult:
        fetched = self.fetcher.fetch(url)
        name = posixpath.basename(fetched.final_url.split("?", 1)[0].rstrip("/")) or "index.html"
        return self.ingest_bytes(brain, fetched.body, name=name, content_type=fetched.content_type)


def _tags(tags: Sequence[str]) -> list[str]:
    if len(tags) > MAX_TAGS:
        raise InvalidInput(f"at most {MAX_TAGS} tags")
    for tag in tags:
        if not 1 <= len(tag) <= MAX_TAG:
            raise InvalidInput(f"each tag must be 1..{MAX_TAG} characters")
        if "," in tag:
            raise InvalidInput("tags must not contain commas (they are stored comma-joined)")
    return list(dict.fromkeys(tags))


def safe_name(name: str) -> str:
    """A file name usable as one path segment: no separators, no leading dots."""
    base = posixpath.basename(name.replace("\\", "/")).strip()
    cleaned = re.sub(r"[^A-Za-z0-9._ -]+", "-", base).strip(" .-")
    return cleaned[:200] or "document"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "note"


def _note_path(seed: str) -> str:
    first_line = seed.strip().splitlines()[0].lstrip("# ") if seed.strip() else "note"
    return f"{GLOBAL_PREFIX}{_slug(first_line)}-{new_id('n')[-10:]}.md"
