"""Image items and the documents that show them (docs/IMAGES.md).

An ingested PNG, JPEG or WebP file is an image item: its bytes are stored as they are and its text
is what the file says about itself plus what documents say about it. A Markdown or HTML document's
ingest records the images it shows (alt text, title, caption), replacing what it showed before,
and re-indexes the image items among them with their new captions; an image's ingest reads the
references recorded for its path, whichever was ingested first. The captions live in the image's
metadata (`image_captions`), so re-indexing from its blob gives the same text.

| record                        | pk                                      | sk                |
|-------------------------------|-----------------------------------------|-------------------|
| image reference, by image     | `imgref#<brain_id>#to#<image path>`     | `<document path>` |
| image reference, by document  | `imgref#<brain_id>#from#<document path>` | `<image path>`   |

Both hold `{alt, title, caption}` (several places in one document showing the same image: their
distinct texts one per line). External images (http(s), data:, …) are not recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Final

from cairn.domain.errors import InvalidInput
from cairn.domain.models import Brain, Document
from cairn.domain.paths import validate_path
from cairn.ingest.image_metadata import clean_text
from cairn.ingest.image_references import ImageReference, find_image_references
from cairn.ports.records import Delete, Item, Put, RecordStore
from cairn.services.documents.document_text import CAPTIONS_KEY, document_text
from cairn.services.documents.inputs import DocumentInput, keep_info
from cairn.services.documents.service import DocumentService

IMAGE_COUNT_KEY: Final = "image_count"
MAX_CAPTIONS: Final = 50
MAX_CAPTION_CHARS: Final = 500
MAX_RECORDED: Final = 1000
"""Distinct images recorded per document, and references read per image."""
_TEXT_KINDS: Final = ("markdown", "html")
_HTML_SUFFIXES: Final = (".html", ".htm", ".xhtml")
_FIELDS: Final = ("alt", "caption", "title")
_OPS_PER_TRANSACTION: Final = 50


@dataclass(frozen=True)
class Prepared:
    """What to write for an ingested file, and the images it shows (None: not a text document)."""

    info: DocumentInput
    shown: dict[str, dict[str, str | None]] | None = None


class ImageItems:
    def __init__(self, records: RecordStore, documents: DocumentService) -> None:
        self.records = records
        self.documents = documents

    def prepare(self, brain: Brain, path: str, kind: str, data: bytes, info: DocumentInput) -> Prepared:
        """An image gets `image_count` 1 and the captions recorded for its path (its text
        re-made with them); a Markdown or HTML document gets the number of distinct images it
        shows as `image_count`. Anything else is left as it is."""
        if kind == "image":
            captions = self.captions(brain.id, path)
            metadata = {**info.metadata, IMAGE_COUNT_KEY: 1, CAPTIONS_KEY: json.dumps(captions)}
            text = document_text(path, info.content_type, data, captions)
            return Prepared(replace(info, metadata=metadata, text=text))
        if kind not in _TEXT_KINDS:
            return Prepared(info)
        shown = _shown(_references(path, kind, data))
        metadata = {**info.metadata, IMAGE_COUNT_KEY: len(shown)}
        return Prepared(replace(info, metadata=metadata), shown)

    def record(self, brain: Brain, path: str, prepared: Prepared) -> None:
        """After the document at `path` is written: its references replace the ones it made
        before, and every image item whose references changed is re-indexed with its captions."""
        if prepared.shown is None:
            return
        wanted = dict(list(prepared.shown.items())[:MAX_RECORDED])
        by_document = _by_document(brain.id, path)
        before = {item.sk: item.data for item in self._items(by_document)}
        ops: list[Put | Delete] = []
        for target, data in wanted.items():
            if before.get(target) != data:
                ops += [
                    Put(Item(_by_image(brain.id, target), path, data)),
                    Put(Item(by_document, target, data)),
                ]
        gone = [target for target in before if target not in wanted]
        for target in gone:
            ops += [Delete(_by_image(brain.id, target), path), Delete(by_document, target)]
        for start in range(0, len(ops), _OPS_PER_TRANSACTION):
            self.records.transact(ops[start : start + _OPS_PER_TRANSACTION])
        changed = {target for target, data in wanted.items() if before.get(target) != data} | set(gone)
        for target in sorted(changed):
            self.refresh(brain, target)

    def captions(self, brain_id: str, image_path: str) -> list[str]:
        """The distinct alt texts, captions and titles live documents give the image, in document
        path order: at most MAX_CAPTIONS, each cut at MAX_CAPTION_CHARS."""
        items = self.records.query(_by_image(brain_id, image_path), limit=MAX_RECORDED).items
        live = self.documents.repo.get_many((brain_id, item.sk) for item in items)
        captions: list[str] = []
        seen: set[str] = set()
        for item in items:
            doc = live.get((brain_id, item.sk))
            if doc is None or doc.deleted_at is not None:
                continue
            for field in _FIELDS:
                for line in str(item.data.get(field) or "").split("\n"):
                    text = (clean_text(line) or "")[:MAX_CAPTION_CHARS].rstrip()
                    if text and text.casefold() not in seen:
                        seen.add(text.casefold())
                        captions.append(text)
                        if len(captions) == MAX_CAPTIONS:
                            return captions
        return captions

    def refresh(self, brain: Brain, image_path: str) -> Document | None:
        """Re-index the image item at `image_path` (if there is one) with its current captions."""
        doc = self.documents.repo.get(brain.id, image_path)
        if doc is None or doc.deleted_at is not None or not _is_image(doc):
            return None

        def change(live: Document | None, data: bytes | None) -> tuple[bytes, DocumentInput] | None:
            if live is None or data is None or not _is_image(live):
                return None
            encoded = json.dumps(self.captions(brain.id, image_path))
            if live.metadata.get(CAPTIONS_KEY) == encoded:
                return None
            return data, keep_info(live, metadata={**live.metadata, CAPTIONS_KEY: encoded})

        outcome = self.documents.modify(brain, image_path, change, reason="image references")
        return outcome.document if outcome is not None else None

    def _items(self, pk: str) -> Iterator[Item]:
        after: str | None = None
        while True:
            page = self.records.query(pk, after=after, limit=500)
            yield from page.items
            if page.next_after is None:
                return
            after = page.next_after


def _by_image(brain_id: str, image_path: str) -> str:
    return f"{image_refs_prefix(brain_id)}to#{image_path}"


def _by_document(brain_id: str, document_path: str) -> str:
    return f"{image_refs_prefix(brain_id)}from#{document_path}"


def _is_image(doc: Document) -> bool:
    return doc.content_type.startswith("image/")


def _references(path: str, kind: str, data: bytes) -> list[ImageReference]:
    """The images a Markdown or HTML file shows, read from its original bytes (HTML's stored
    text has lost its tags). An HTML file stored under a path without an HTML suffix is still
    read as HTML."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("cp1252", "replace")
    read_as = path
    if kind == "html" and not path.lower().endswith(_HTML_SUFFIXES):
        read_as = path + ".html"  # same folder: relative sources resolve alike
    return find_image_references(text, read_as)


def _shown(references: Sequence[ImageReference]) -> dict[str, dict[str, str | None]]:
    """Each image shown (a storable brain path), with its distinct texts per field, one per line."""
    shown: dict[str, dict[str, list[str]]] = {}
    for ref in references:
        if ref.external or not _storable(ref.target):
            continue
        fields = shown.setdefault(ref.target, {field: [] for field in _FIELDS})
        for field, value in zip(_FIELDS, (ref.alt, ref.caption, ref.title), strict=True):
            if value and value.casefold() not in {v.casefold() for v in fields[field]}:
                fields[field].append(value)
    return {
        target: {field: "\n".join(values) or None for field, values in fields.items()}
        for target, fields in shown.items()
    }


def _storable(target: str) -> bool:
    try:
        validate_path(target)
    except InvalidInput:
        return False
    return True


def image_refs_prefix(brain_id: str) -> str:
    """What every partition of a brain's image references starts with (by image, by document)."""
    return f"imgref#{brain_id}#"
