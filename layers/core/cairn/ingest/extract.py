"""Bytes of a known kind → plain searchable text and a title."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

from cairn.domain.errors import InvalidInput, UnsupportedContent
from cairn.ingest.json_text import json_text
from cairn.ingest.markdown import clean_title, heading_title, split_front_matter, title_from_markdown
from cairn.ingest.pdf_text import pdf_text

__all__ = ["KINDS", "Extracted", "extract_image", "extract_text", "infer_kind", "title_from_markdown"]

KINDS = ("markdown", "text", "json", "html", "pdf", "image")

CONTENT_TYPES = {
    "markdown": "text/markdown",
    "text": "text/plain",
    "json": "application/json",
    "html": "text/html",
    "pdf": "application/pdf",
    "image": "image/png",  # the sniffed type decides: image/png, image/jpeg or image/webp
}

_EXTENSIONS = {
    **dict.fromkeys((".md", ".markdown", ".mdx"), "markdown"),
    **dict.fromkeys((".txt", ".text", ".log", ".csv"), "text"),
    **dict.fromkeys((".json", ".jsonl"), "json"),
    **dict.fromkeys((".html", ".htm"), "html"),
    ".pdf": "pdf",
    **dict.fromkeys((".png", ".jpg", ".jpeg", ".webp"), "image"),
}

_MEDIA_TYPES = {
    "text/markdown": "markdown",
    "text/x-markdown": "markdown",
    "text/plain": "text",
    "text/csv": "text",
    "application/json": "json",
    "application/ld+json": "json",
    "application/x-ndjson": "json",
    "application/jsonl": "json",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "application/pdf": "pdf",
    **dict.fromkeys(("image/png", "image/jpeg", "image/jpg", "image/pjpeg", "image/webp"), "image"),
}

_SNIFF_BYTES = 1024
MAX_TEXT_CHARS = 50_000_000
"""The default cap on extracted text; ingest passes its own (`max_content_chars`)."""


@dataclass(frozen=True, slots=True)
class Extracted:
    text: str
    title: str | None
    content_type: str


def infer_kind(filename: str | None, content_type: str | None, data: bytes | None = None) -> str:
    """Pick an extractor: a specific Content-Type wins, then the file extension, then sniffing `data`.

    `text/plain` and `application/octet-stream` are too generic to win (raw file hosts serve `.md`
    as `text/plain`): a known extension decides then.
    """
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media in _MEDIA_TYPES and media != "text/plain":
        return _MEDIA_TYPES[media]
    if media.endswith("+json"):
        return "json"
    suffix = os.path.splitext(filename)[1].lower() if filename else ""
    if suffix in _EXTENSIONS:
        return _EXTENSIONS[suffix]
    if media == "text/plain" or media.startswith("text/"):
        return "text"
    if data is None:
        raise UnsupportedContent("cannot tell the content type; name the file with a known extension")
    return _sniff(data)


def _sniff(data: bytes) -> str:
    head = data[:_SNIFF_BYTES]
    if head.startswith(b"%PDF-"):
        return "pdf"
    from cairn.ingest.images import sniff_image_type

    if sniff_image_type(head) is not None:
        return "image"
    lowered = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if lowered.startswith((b"<!doctype html", b"<html")) or b"<html" in lowered:
        return "html"
    _decode_text(data)  # raises UnsupportedContent for binary data
    return "text"


def extract_text(data: bytes, kind: str, filename: str = "", *, max_chars: int = MAX_TEXT_CHARS) -> Extracted:
    """`filename` (its base name) is part of an image's text; other kinds ignore it. Text over
    `max_chars` is refused, JSON's as soon as it is rendered that far."""
    if kind not in KINDS:
        raise InvalidInput(f"unknown content kind {kind!r}; expected one of {', '.join(KINDS)}")
    if kind == "image":
        return _within(extract_image(data, filename), max_chars)
    if kind == "pdf":
        text, title = pdf_text(data, max_chars)
    elif kind == "html":
        from cairn.ingest.html import html_to_text  # BeautifulSoup costs ~0.15 s of a cold start

        text, title = html_to_text(data)
    elif kind == "json":
        text, title = json_text(_decode_text(data), max_chars)
    elif kind == "markdown":
        fm_title, text = split_front_matter(_decode_text(data))
        title = fm_title or heading_title(text)
    else:
        text, title = _decode_text(data), None
    extracted = Extracted(text=text.strip(), title=clean_title(title), content_type=CONTENT_TYPES[kind])
    return _within(extracted, max_chars)


def _within(extracted: Extracted, max_chars: int) -> Extracted:
    if len(extracted.text) > max_chars:
        raise InvalidInput(f"extracted text exceeds {max_chars} characters")
    return extracted


def extract_image(data: bytes, filename: str, captions: Sequence[str] = ()) -> Extracted:
    """A PNG, JPEG or WebP file's searchable text (docs/IMAGES.md): what it says about itself, the
    `captions` documents give it (alt texts, titles, captions) and its file name's words. The title
    is the image's own, else the file name's words. Anything else is UnsupportedContent."""
    from cairn.ingest.images import ImageReference, describe_image, image_text

    facts = describe_image(data, posixpath.basename(filename))
    if facts is None:
        raise UnsupportedContent("content is not a readable PNG, JPEG or WebP image")
    references = [ImageReference("", caption, None, None) for caption in captions]
    title = facts.title.split("\n", 1)[0] if facts.title else facts.filename_words
    return Extracted(
        text=image_text(facts, references), title=clean_title(title), content_type=f"image/{facts.image_type}"
    )


def _decode_text(data: bytes) -> str:
    """UTF-8 (BOM optional), UTF-16 with a BOM, else Windows-1252; NUL bytes mean binary."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise UnsupportedContent("content has a UTF-16 byte order mark but is not valid UTF-16") from exc
    if b"\x00" in data:
        raise UnsupportedContent("content looks binary (contains NUL bytes); cannot extract text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError as exc:
        raise UnsupportedContent("content is neither UTF-8 nor Windows-1252 text") from exc
