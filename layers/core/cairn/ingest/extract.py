"""Bytes of a known kind → plain searchable text and a title."""

from __future__ import annotations

import io
import json
import logging
import os
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cairn.domain.errors import InvalidInput, UnsupportedContent
from cairn.ingest.markdown import clean_title, heading_title, split_front_matter, title_from_markdown

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


def extract_text(data: bytes, kind: str, filename: str = "") -> Extracted:
    """`filename` (its base name) is part of an image's text; other kinds ignore it."""
    if kind not in KINDS:
        raise InvalidInput(f"unknown content kind {kind!r}; expected one of {', '.join(KINDS)}")
    if kind == "image":
        return extract_image(data, filename)
    if kind == "pdf":
        text, title = _pdf(data)
    elif kind == "html":
        from cairn.ingest.html import html_to_text  # BeautifulSoup costs ~0.15 s of a cold start

        text, title = html_to_text(data)
    elif kind == "json":
        text, title = _json(_decode_text(data))
    elif kind == "markdown":
        fm_title, text = split_front_matter(_decode_text(data))
        title = fm_title or heading_title(text)
    else:
        text, title = _decode_text(data), None
    return Extracted(text=text.strip(), title=clean_title(title), content_type=CONTENT_TYPES[kind])


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


def _integer(literal: str) -> int | str:
    """An integer literal too long for int() (over sys.get_int_max_str_digits digits) stays its
    digits: still searchable, where json.loads would raise a plain ValueError."""
    try:
        return int(literal)
    except ValueError:
        return literal


def _loads(text: str) -> Any:
    return json.loads(text, parse_int=_integer)


def _json(text: str) -> tuple[str, str | None]:
    try:
        values: list[Any] = [_loads(text)]
    except json.JSONDecodeError as first_error:
        values = _json_lines(text, first_error)
    except RecursionError as exc:
        raise InvalidInput("JSON is nested too deeply") from exc
    try:
        rendered = "\n\n".join(_render_json(value) for value in values)
    except RecursionError as exc:
        raise InvalidInput("JSON is nested too deeply") from exc
    first = values[0] if values else None
    title = None
    if isinstance(first, dict):
        title = next((first[k] for k in ("title", "name") if isinstance(first.get(k), str)), None)
    return rendered, title


def _json_lines(text: str, first_error: json.JSONDecodeError) -> list[Any]:
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        raise InvalidInput(f"invalid JSON: {first_error.msg} at line {first_error.lineno}") from first_error
    values = []
    for number, line in enumerate(lines, start=1):
        try:
            values.append(_loads(line))
        except RecursionError as exc:
            raise InvalidInput(f"JSON is nested too deeply (record {number})") from exc
        except json.JSONDecodeError:
            raise InvalidInput(
                f"invalid JSON: {first_error.msg} at line {first_error.lineno} "
                f"(and not JSON Lines: record {number} does not parse)"
            ) from first_error
    return values


def _render_json(value: Any, indent: str = "") -> str:
    """YAML-like lines (`key: value`, `- item`) so that keys and values are both searchable."""
    if isinstance(value, dict):
        if not value:
            return indent + "{}"
        lines = []
        for key, item in value.items():
            if isinstance(item, dict | list) and item:
                lines.append(f"{indent}{key}:\n{_render_json(item, indent + '  ')}")
            else:
                lines.append(f"{indent}{key}: {_scalar(item)}")
        return "\n".join(lines)
    if isinstance(value, list):
        if not value:
            return indent + "[]"
        lines = []
        for item in value:
            if isinstance(item, dict | list) and item:
                nested = _render_json(item, indent + "  ")
                lines.append(f"{indent}- {nested.lstrip()}")
            else:
                lines.append(f"{indent}- {_scalar(item)}")
        return "\n".join(lines)
    return indent + _scalar(value)


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        return "{}" if isinstance(value, dict) else "[]"
    return json.dumps(value)


def _decrypt_without_password(reader: Any) -> None:
    """Owner-password-only PDFs open with the empty user password; anything else is refused."""
    try:
        opened = reader.decrypt("")
    except Exception as exc:
        raise UnsupportedContent("PDF is encrypted; cannot extract text") from exc
    if not opened:
        raise UnsupportedContent("PDF is encrypted with a password; cannot extract text")


def _pdf(data: bytes) -> tuple[str, str | None]:
    from pypdf import PdfReader  # imported lazily: only PDF ingest pays for it

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            _decrypt_without_password(reader)
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
        meta_title = reader.metadata.title if reader.metadata is not None else None
    except UnsupportedContent:
        raise
    except Exception as exc:  # pypdf raises many types for malformed files
        raise UnsupportedContent(
            f"PDF could not be read ({type(exc).__name__}); the file may be damaged"
        ) from exc
    text = "\n\n".join(page for page in pages if page)
    if not text:
        raise UnsupportedContent("PDF has no extractable text (it may be scanned images)")
    title = meta_title if isinstance(meta_title, str) and meta_title.strip() else None
    if title is None:
        title = next(line.strip() for line in text.splitlines() if line.strip())
    return text, title
