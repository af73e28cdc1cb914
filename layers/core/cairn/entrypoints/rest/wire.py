"""REST-only wire shapes; the Jeffs types shared with MCP live in cairn.entrypoints.wire."""

from __future__ import annotations

from cairn.entrypoints.rest.paging import next_cursor_field
from cairn.entrypoints.wire import BrainRecord, DocumentRecord, Wire


class DocumentList(Wire):
    items: list[DocumentRecord]
    next_cursor: str | None = next_cursor_field()


class BrainPage(Wire):
    items: list[BrainRecord]
    next_cursor: str | None = next_cursor_field()


class FileInfoRecord(Wire):
    path: str
    size: int
    mtime: str
    is_dir: bool


class FileList(Wire):
    items: list[FileInfoRecord]
    next_cursor: str | None = next_cursor_field()


class BatchResult(Wire):
    committed: int
