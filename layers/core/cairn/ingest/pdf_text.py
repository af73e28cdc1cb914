"""A PDF's text (pypdf), read within bounds a small file cannot stretch: pages drawn by the same
content streams with the same resources are read once, a form XObject once however often it is
drawn, and the content parsed is capped (MAX_CONTENT_BYTES), as are the pages (MAX_PAGES)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from typing import Any

from cairn.domain.errors import InvalidInput, UnsupportedContent

MAX_PAGES = 10_000
MAX_CONTENT_BYTES = 16 * 1024 * 1024
"""Decoded content parsed for text, pages' and forms'. pypdf parses 0.6-2 MB of it a second, and
Flate packs a megabyte of operators into a kilobyte; a PDF of 4,000,000 characters of text has
about this much (3-4 bytes a character)."""
MAX_DECODED_BYTES = 256 * 1024 * 1024
"""Content decoded to look for text, figures' included (MAX_CONTENT_BYTES counts only what shows
text). pypdf keeps each stream it decoded while the file is read, and a 60 KB Flate stream decodes
to 60 MB of drawing: without this, pages of such figures held 60 MB each (a 25 MB file, 25 GB) and
took 0.7 s each to scan for text."""

_TEXT_OPERATOR = re.compile(rb"T[jJ]|Do|['\"]")
"""What pypdf looks for before it parses content for text: a figure alone is not parsed."""


def pdf_text(data: bytes, max_chars: int) -> tuple[str, str | None]:
    """(text, title); the pages' texts are separated by a blank line. Text over `max_chars` is
    refused as soon as the pages read make it."""
    from cairn.ingest.pdf_objects import IndexedReader  # imported lazily: only PDF ingest pays for pypdf

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = IndexedReader(data)
        if reader.is_encrypted:
            _decrypt_without_password(reader)
        text = _Reading(max_chars).text(reader.pages)
        meta_title = reader.metadata.title if reader.metadata is not None else None
    except InvalidInput:
        raise
    except Exception as exc:  # pypdf raises many types for malformed files
        raise UnsupportedContent(
            f"PDF could not be read ({type(exc).__name__}); the file may be damaged"
        ) from exc
    if not text:
        raise UnsupportedContent("PDF has no extractable text (it may be scanned images)")
    title = meta_title if isinstance(meta_title, str) and meta_title.strip() else None
    if title is None:
        title = next(line.strip() for line in text.splitlines() if line.strip())
    return text, title


def _decrypt_without_password(reader: Any) -> None:
    """Owner-password-only PDFs open with the empty user password; anything else is refused."""
    try:
        opened = reader.decrypt("")
    except Exception as exc:
        raise UnsupportedContent("PDF is encrypted; cannot extract text") from exc
    if not opened:
        raise UnsupportedContent("PDF is encrypted with a password; cannot extract text")


class _Reading:
    """One PDF's pages read for text. Objects are told apart by identity: the reader resolves each
    indirect reference to one object, which it keeps."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.budget = MAX_CONTENT_BYTES
        self.decoding = MAX_DECODED_BYTES
        self.decoded: set[int] = set()
        self.pages: dict[tuple[object, ...], str] = {}
        """A page's text by its content streams and the shape of its resources."""
        self.forms: dict[int, str] = {}
        self.shapes: dict[tuple[int, int], object] = {}

    def text(self, pages: Sequence[Any]) -> str:
        if len(pages) > MAX_PAGES:
            raise UnsupportedContent(f"PDF has more than {MAX_PAGES} pages; cannot extract text")
        texts: list[str] = []
        chars = -2  # no blank line before the first page
        for page in pages:
            text = self._page(page)
            if text:
                texts.append(text)
                chars += len(text) + 2
                if chars > self.max_chars:
                    raise InvalidInput(f"extracted text exceeds {self.max_chars} characters")
        return "\n\n".join(texts)

    def _page(self, page: Any) -> str:
        streams = _contents(page)
        key = (tuple(id(s) for s in streams), self._shape(page.get_inherited("/Resources"), 2))
        if key in self.pages:
            return self.pages[key]
        self.budget -= self._parsed_bytes(streams)
        self._check_budget()
        # pypdf parses a form XObject again at every Do that draws it (up to 5,000 a page): here,
        # once, its text then shared by every page that draws it.
        page.extract_xform_text = self._form_reader(page.extract_xform_text)
        text = (page.extract_text() or "").strip()
        self._check_budget()  # a form past the budget was skipped, not read
        self.pages[key] = text
        return text

    def _form_reader(self, read: Callable[..., str]) -> Callable[..., str]:
        def form_text(xform: Any, *args: Any, **kwargs: Any) -> str:
            known = self.forms.get(id(xform))
            if known is None:
                self.budget -= self._parsed_bytes([xform])
                known = read(xform, *args, **kwargs) if self.budget >= 0 else ""
                self.forms[id(xform)] = known
            return known

        return form_text

    def _parsed_bytes(self, streams: list[Any]) -> int:
        """The bytes pypdf parses to read these streams' text: none when no operator can show
        text. Every stream decoded for the first time counts against MAX_DECODED_BYTES."""
        decoded = []
        for stream in streams:
            data = stream.get_data()
            if id(stream) not in self.decoded:
                self.decoded.add(id(stream))
                self.decoding -= len(data)
                if self.decoding < 0:
                    raise UnsupportedContent(
                        f"PDF has more than {MAX_DECODED_BYTES} bytes of page content; cannot extract text"
                    )
            decoded.append(data)
        return sum(map(len, decoded)) if any(_TEXT_OPERATOR.search(data) for data in decoded) else 0

    def _check_budget(self) -> None:
        if self.budget < 0:
            raise UnsupportedContent(
                f"PDF has more than {MAX_CONTENT_BYTES} bytes of page content to read; cannot extract text"
            )

    def _shape(self, value: Any, depth: int) -> object:
        """`value` as the objects it holds, `depth` dictionaries down: equal shapes draw alike.
        Remembered by dictionary, so resources many pages share are walked once."""
        from pypdf.generic import DictionaryObject

        value = _resolved(value)
        if depth == 0 or not isinstance(value, DictionaryObject):
            return id(value)
        key = (id(value), depth)
        if key not in self.shapes:
            self.shapes[key] = tuple((name, self._shape(item, depth - 1)) for name, item in value.items())
        return self.shapes[key]


def _contents(page: Any) -> list[Any]:
    """The page's content streams (resolved), in order; a page's array may name one many times."""
    from pypdf.generic import ArrayObject, StreamObject

    contents = _resolved(page.get("/Contents"))
    items = list(contents) if isinstance(contents, ArrayObject) else [contents]
    return [stream for stream in map(_resolved, items) if isinstance(stream, StreamObject)]


def _resolved(value: Any) -> Any:
    return value.get_object() if value is not None else None
