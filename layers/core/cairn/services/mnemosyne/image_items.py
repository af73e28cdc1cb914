"""Image items and the documents that show them (docs/IMAGES.md).

An ingested PNG, JPEG or WebP file is an image item: its bytes are stored as they are and its text
is what the file says about itself plus what documents say about it. A Markdown or HTML document's
ingest records the images it shows (alt text, title, caption), replacing what it showed before,
and re-indexes the image items among them with their new captions; an image's ingest reads the
references recorded for its path, whichever was ingested first. The captions live in the image's
metadata (`image_captions`), so re-indexing from its blob gives the same text.

The references are recorded both ways by image_refs.py. External images (http(s), data:, …) are
not recorded. A document deleted, written over by anything but an ingest, or renamed, changes what
it shows (`follow`, on the brain's change events): its references go, or move with it, and the
images among them are re-indexed, so no caption outlives the text that gave it.

An ingest records after its commit, outside the path lock, so a delete, an erasure, a write over it
or another ingest of the path can come between, or record meanwhile. Every writer of a document's
references (`_settle`) reads them with their mark (whose they are: a document id and version), then
the document, and decides: an ingest whose document stands as it wrote it records what it shows,
for that version; references the standing document's ingest recorded are left alone; anything else
is removed. The write is conditional on the mark as read (image_refs.py), so a writer that lost a
race reads again and decides again; an ingest reads its document back after writing, and decides
again unless it still stands as written (a writer that found nothing to remove wrote nothing to
race on). So the last writer decides on what the store holds after every earlier one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Final

from cairn.auth import access
from cairn.domain.errors import Conflict, InvalidInput
from cairn.domain.models import Brain, Document
from cairn.domain.paths import validate_path
from cairn.ingest.image_metadata import clean_text
from cairn.ingest.image_references import ImageReference, find_image_references
from cairn.services.documents.document_text import CAPTIONS_KEY, document_text
from cairn.services.documents.inputs import DocumentInput, keep_info
from cairn.services.documents.service import DocumentService
from cairn.services.events import ChangeEvent
from cairn.services.mnemosyne.image_refs import ImageRefs, Owner, Shown

log = logging.getLogger(__name__)
IMAGE_COUNT_KEY: Final = "image_count"
MAX_CAPTIONS: Final = 50
MAX_CAPTION_CHARS: Final = 500
_TEXT_KINDS: Final = ("markdown", "html")
_HTML_SUFFIXES: Final = (".html", ".htm", ".xhtml")
_FIELDS: Final = ("alt", "caption", "title")
REFRESH_REASON: Final = "image references"
_OWN_WRITES: Final = ("ingest", REFRESH_REASON)
"""An ingest records the references of what it wrote; a refresh writes an image, which makes none."""
_TRIES: Final = 5
"""Reads and decisions on one document's references, each after another writer changed them."""


@dataclass(frozen=True)
class Prepared:
    """What to write for an ingested file, and the images it shows (None: not a text document)."""

    info: DocumentInput
    shown: dict[str, dict[str, str | None]] | None = None


class ImageItems:
    def __init__(
        self,
        refs: ImageRefs,
        documents: DocumentService,
        brains: Callable[[str], Brain | None] = lambda _brain_id: None,
    ) -> None:
        """`brains`: a brain by id, for `follow` (the change events name only the brain's id)."""
        self.refs = refs
        self.documents = documents
        self.brains = brains

    def follow(self, brain_id: str, events: Sequence[ChangeEvent]) -> None:
        """The brain's documents changed (EventBus.listen, in the writer's thread, after its
        commit): references made by a document deleted or written over by anything but an ingest
        (which records its own) go; a renamed document's go with it to its new path."""
        moves: list[tuple[str, str | None]] = []
        for event in events:
            if event.kind == "renamed" and event.old_path is not None:
                moves.append((event.old_path, event.path))
            elif event.kind == "deleted" or (event.kind == "updated" and event.reason not in _OWN_WRITES):
                moves.append((event.path, None))
        if moves:  # the writer holds its document's lock, which a refresh's own may share
            self.documents.locks.after_release(lambda: self._moved(brain_id, moves))

    def _moved(self, brain_id: str, moves: list[tuple[str, str | None]]) -> None:
        try:
            with access.as_system():  # derived text, made again from what live documents say
                for source, target in moves:
                    self._move(brain_id, source, target)
        except Exception:  # the change itself has committed: a caption left is logged, not raised
            log.exception("could not update the image references of a changed document")

    def _move(self, brain_id: str, source: str, target: str | None) -> None:
        made = self.refs.made_by(brain_id, source)
        if not made:
            return
        brain = self.brains(brain_id)
        if brain is None:
            return
        changed = self._settle(brain_id, source, {})
        if target is not None:
            changed |= self._settle(brain_id, target, made, adopt=True)
        for image in sorted(changed):
            self.refresh(brain, image)

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

    def record(self, brain: Brain, path: str, prepared: Prepared, written: Document) -> None:
        """After the document at `path` is written (`written`, as its write committed it): its
        references replace the ones it made before, and every image item whose references changed
        is re-indexed with its captions. Nothing is recorded for a document no longer standing as
        written (deleted, erased, written over or ingested again since): what it made goes, unless
        the ingest of the document standing has recorded its own (module docstring)."""
        if prepared.shown is None:
            return
        for target in sorted(self._settle(brain.id, path, prepared.shown, written)):
            self.refresh(brain, target)

    def forget(self, brain: Brain, path: str) -> None:
        """Remove the references the document at `path` made, whatever stands there (an erasure's,
        before its commit: a record landing after is removed by its `follow`), and re-index the
        images among them."""
        changed: set[str] = set()
        for _ in range(_TRIES):
            try:
                self.refs.replace(brain.id, path, {}, None, changed=changed)
                break
            except Conflict:
                continue
        for target in sorted(changed):
            self.refresh(brain, target)

    def _settle(
        self, brain_id: str, path: str, shown: Shown, written: Document | None = None, *, adopt: bool = False
    ) -> set[str]:
        """Make the references of `path` what the document standing there shows: `shown` when it
        is `written` at its version (or, with `adopt`, whatever stands there unless its ingest has
        recorded: a rename's target), else left as they are when recorded for it, else none.
        Returns the images whose references changed."""
        changed: set[str] = set()
        for _ in range(_TRIES):
            held = self.refs.held(brain_id, path)
            if not (shown or held.shown or held.mark):
                return changed
            if written is not None and shown and not (held.shown or held.mark):
                standing: Owner | None = written.id, written.version  # none to keep: read back below
            else:
                standing = self._standing(brain_id, path)
            owner: Owner | None = None
            if standing is not None and (written is not None and standing == (written.id, written.version)):
                owner = standing
            elif standing is not None and held.owner == standing:
                return changed  # recorded by the standing document's own ingest
            elif standing is not None and adopt:
                owner = standing
            adopt = False  # only as first read: a change since has its own writer
            want = shown if owner is not None else {}
            try:
                self.refs.replace(brain_id, path, want, owner if want else None, held, changed)
            except Conflict:
                continue  # another writer changed them since they were read
            if not want or self._standing(brain_id, path) == owner:
                return changed
        log.warning("the image references of a document were changed under every try; left as they are")
        return changed

    def _standing(self, brain_id: str, path: str) -> Owner | None:
        """The live document at `path`, as (id, version); None when there is none."""
        doc = self.documents.repo.get(brain_id, path)
        if doc is None or doc.deleted_at is not None:
            return None
        return doc.id, doc.version

    def captions(self, brain_id: str, image_path: str) -> list[str]:
        """The distinct alt texts, captions and titles live documents give the image, in document
        path order: at most MAX_CAPTIONS, each cut at MAX_CAPTION_CHARS."""
        shown_in = self.refs.of_image(brain_id, image_path)
        live = self.documents.repo.get_many((brain_id, doc_path) for doc_path, _ in shown_in)
        captions: list[str] = []
        seen: set[str] = set()
        for doc_path, said in shown_in:
            doc = live.get((brain_id, doc_path))
            if doc is None or doc.deleted_at is not None:
                continue
            for field in _FIELDS:
                for line in str(said.get(field) or "").split("\n"):
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

        outcome = self.documents.modify(brain, image_path, change, reason=REFRESH_REASON)
        return outcome.document if outcome is not None else None


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
