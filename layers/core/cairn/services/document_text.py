"""The indexable text and default title of stored bytes."""

from __future__ import annotations

import posixpath

from cairn.domain.errors import InvalidInput
from cairn.ingest.extract import extract_text, infer_kind, title_from_markdown

MAX_TITLE = 512


def document_text(path: str, content_type: str | None, data: bytes) -> str:
    """Text to index; bytes that are not text (or not parseable) are stored but not indexed."""
    try:
        kind = infer_kind(posixpath.basename(path), content_type, data)
        return extract_text(data, kind).text
    except InvalidInput:
        return ""


def title_for(path: str, text: str) -> str:
    """The first heading, else the file's base name without its extension."""
    heading = title_from_markdown(text)
    if heading:
        return heading[:MAX_TITLE]
    stem = posixpath.splitext(posixpath.basename(path))[0]
    return (stem or path)[:MAX_TITLE]
