"""The indexable text and default title of stored bytes."""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping, Sequence

from cairn.domain.errors import InvalidInput
from cairn.ingest.extract import extract_image, extract_text, infer_kind, title_from_markdown

MAX_TITLE = 512
TEXT_TYPES = ("text/markdown", "text/plain")
"""Content types whose stored bytes are their text, so new text can be written in their place (a
PDF's or an image's text comes from its file)."""
CAPTIONS_KEY = "image_captions"
"""An image document's metadata: the alt texts, titles and captions documents give it, as a JSON
array of strings (metadata values are scalars), so re-indexing from the blob keeps them."""


def document_text(
    path: str, content_type: str | None, data: bytes, captions: Sequence[str] | None = None
) -> str:
    """Text to index; bytes that are not text (or not parseable) are stored but not indexed. An
    image's text includes `captions` (what documents say about it)."""
    try:
        name = posixpath.basename(path)
        kind = infer_kind(name, content_type, data)
        if kind == "image":
            return extract_image(data, name, captions or ()).text
        return extract_text(data, kind, name).text
    except InvalidInput:
        return ""


def image_captions(metadata: Mapping[str, object]) -> list[str]:
    """The captions stored in a document's metadata (CAPTIONS_KEY); none when absent or malformed."""
    raw = metadata.get(CAPTIONS_KEY)
    if not isinstance(raw, str):
        return []
    try:
        value = json.loads(raw)
    except ValueError:
        return []
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def title_for(path: str, text: str) -> str:
    """The first heading, else the file's base name without its extension."""
    heading = title_from_markdown(text)
    if heading:
        return heading[:MAX_TITLE]
    stem = posixpath.splitext(posixpath.basename(path))[0]
    return (stem or path)[:MAX_TITLE]
