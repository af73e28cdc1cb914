"""A restore in progress: each record written through the services, links batched, ids of copied
memories kept apart, and what stopped it."""

from __future__ import annotations

import hashlib
import logging
import re
from collections import Counter, OrderedDict
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from cairn.domain.errors import CairnError, Conflict, FileTooLarge, InvalidInput, NotFound
from cairn.domain.models import (
    Brain,
    Document,
    MemoryType,
)
from cairn.domain.text import check_label, excerpt
from cairn.services.archive.records import (
    ArchiveDuplicates,
    CollectionRecord,
    DocumentRecord,
    GapRecord,
    ImportReport,
    LinkRecord,
    MemoryRecord,
    RawRecord,
    Record,
    duplicate_line,
    memory_input,
)
from cairn.services.documents.inputs import DocumentInput, checksum, keep_info, same_info
from cairn.services.documents.locks import KeyedLocks
from cairn.services.gbrain.raw_data import RawDataChanged
from cairn.services.ingest.inputs import checked_tags, checked_title
from cairn.services.links.graph import LinkDraft
from cairn.services.links.repository import NumberedLink, check_interval, check_kind, check_validity
from cairn.services.memory.memory_model import MEMORY_ID, PREFIX, memory_path
from cairn.services.mnemosyne.libraries import Library

if TYPE_CHECKING:
    from cairn.services.archive.service import BrainArchive


log = logging.getLogger(__name__)


LINKS_PER_WRITE = 100


RAW_TRIES = 16  # a raw row another writer keeps storing while the restore decides on it


PATHS_CACHED = 4096


class RestoreIncomplete(CairnError):
    """A restore stopped part-way; the brain stays `restoring` until a re-run completes it."""

    code = "restore_incomplete"


class _WriteFailed(Exception):
    """A failure that stops a restore even though it surfaced while handling one record."""


def failure_reason(exc: Exception) -> str:
    """What the caller is told; an unexpected exception's own text (paths, library internals)
    goes to the server log only."""
    if isinstance(exc, _WriteFailed):
        return str(exc)
    log.error("restore failed on an unexpected error", exc_info=exc)
    return "an unexpected error (the server log holds its details)"


class Restore:
    """One restore's running state: link drafts waiting to be written, resolved paths."""

    def __init__(
        self, archive: BrainArchive, brain: Brain, report: ImportReport, *, made_at: datetime
    ) -> None:
        self.a = archive
        self.brain = brain
        self.report = report
        self.made_at = made_at
        """When the archive was exported: what the brain changed after it is newer than the archive."""
        self.line = 0
        self.doc_ids = PathCache(self._doc_id)
        self.pending: list[LinkDraft] = []
        self.pending_at: list[tuple[int, str, str]] = []
        """Each pending link's line and its ends' paths (what a kept one is reported by)."""
        self.pending_source: str | None = None
        self.known: set[tuple[str, str, str | None, str | None]] = set()
        """(kind, target, valid_from, valid_until) of every link from the pending source this
        restore has met (flush_links leaves out those the brain holds)."""
        self.held = HeldLinks("")
        """The brain's links from the source last flushed, as read so far (flush_links)."""
        self.met = ArchiveDuplicates()

    def record(self, line: int, r: Record) -> None:
        if not isinstance(r, LinkRecord):
            self.flush_links()
        self.line = line
        if isinstance(r, (DocumentRecord, RawRecord)) and self._again(line, r):
            return
        try:
            done = self._apply(r)
        except CairnError as exc:
            self.report.errors.append(f"line {line}: {r.kind}: {exc.message}")
            if isinstance(r, (DocumentRecord, RawRecord)):
                self.met.forget(line, r.kind, r.path, r.source if isinstance(r, RawRecord) else None)
            return
        if done is not None:
            (self.report.written if done else self.report.unchanged)[r.kind] += 1

    def _again(self, line: int, r: DocumentRecord | RawRecord) -> bool:
        """Whether an earlier line of the archive holds the same document or raw row: reported as
        a duplicate, neither written nor counted (the first was restored; after a refused first, the
        next is restored as the first)."""
        source = r.source if isinstance(r, RawRecord) else None
        first = self.met.earlier(line, r.kind, r.path, source)
        if first is None:
            return False
        self.report.duplicates.append(duplicate_line(line, r.path, source, first))
        return True

    def _apply(self, r: Record) -> bool | None:
        """True: written; False: already there; None: counted later (a link waiting to be written)."""
        if isinstance(r, DocumentRecord):
            return self._document(r)
        if isinstance(r, MemoryRecord):
            return self._memory(r)
        if isinstance(r, LinkRecord):
            return self._link(r)
        if isinstance(r, RawRecord):
            return self._raw(r)
        if isinstance(r, CollectionRecord):
            return self._collection(r)
        return self._gap(r)

    def _collection(self, r: CollectionRecord) -> bool:
        libraries = self.a.libraries
        if libraries is None:
            return False
        library = Library(self.brain)
        if libraries.collection_named(library, r.name) is not None:
            return False
        libraries.create_collection(
            library, r.name, description=r.description, folder=r.folder, shared_folder=True
        )
        return True

    def _document(self, r: DocumentRecord) -> bool:
        if r.id is not None and not MEMORY_ID.fullmatch(r.id):  # it names the chunks, links and items
            raise InvalidInput(
                f"document id {excerpt(r.id)} is not an id: 1-128 letters, digits, '_', '.' or '-', "
                "starting alphanumeric"
            )
        repo = self.a.documents.repo
        keep_id = r.id is not None and repo.holder_of(r.id) is None  # a fresh store: ids as they were
        info = DocumentInput(
            title=checked_title(r.title),
            tags=checked_tags(r.tags, held=True),  # as the brain held them
            metadata={k: v for k, v in r.metadata.items() if k != "tags"},
            source=r.source,
            content_type=_media_type(r.content_type),
            memory=r.memory,
            doc_id=r.id if keep_id else None,
        )
        data = r.data()
        most = self.a.max_document_bytes
        if most is not None and len(data) > most:
            raise FileTooLarge(f"{excerpt(r.path)} is {len(data):,} bytes; a document holds at most {most:,}")

        def unless_newer(live: Document | None, _: bytes | None) -> tuple[bytes, DocumentInput] | None:
            # changed after the archive was made (its bytes, title, tags, metadata, facet): kept,
            # unless writing the record would change nothing (a re-run). Decided in the attempt
            # that commits, against the version it read: a write another process commits between
            # the two makes the commit fail and the choice made again on what it left.
            same = live is not None and live.checksum_sha256 == checksum(data) and same_info(live, info)
            if live is not None and not same and live.updated_at > self.made_at:
                return None
            return data, info

        outcome = self.a.documents.modify(
            self.brain, r.path, unless_newer, reason="restore", with_bytes=False
        )
        if outcome is None:
            return self._newer(r.path)
        doc = outcome.document
        if self.a.thoughts is not None and doc.memory is not None and doc.memory.user_id is not None:
            self.a.thoughts.adopt(self.brain, doc)
        return outcome.changed

    def _live(self, path: str) -> Document | None:
        try:
            return self.a.documents.get(self.brain, path)
        except (NotFound, InvalidInput):
            return None

    def _newer(self, path: str, what: str = "") -> bool:
        self.report.kept.append(f"line {self.line}: {excerpt(path)}{what}")
        return False

    def _memory(self, r: MemoryRecord) -> bool:
        memory_id = self._memory_id(r.id)
        if self._holds(r, memory_id):
            return False
        successor = None
        if r.superseded_by is not None:  # it stays superseded, its successor restored or deleted
            if not MEMORY_ID.fullmatch(r.superseded_by):
                raise InvalidInput(f"superseded_by {excerpt(r.superseded_by)!r} is not a memory id")
            successor = self._memory_id(r.superseded_by)
        try:
            stored = self.a.memories.store(self.brain, memory_input(r, memory_id, successor))
        except CairnError:
            if self._holds(r, memory_id):
                return False  # another restore of this archive stored it meanwhile
            raise
        if stored.deduplicated:
            return False
        kept = {"strength": r.strength, "salience": r.salience, "expired_at": r.expired_at}
        kept = {k: v for k, v in kept.items() if v is not None}
        if kept:  # what MemoryService.store does not take

            def keep(live: Document | None, data: bytes | None) -> tuple[bytes, DocumentInput] | None:
                if live is None or live.memory is None or data is None:
                    return None
                return data, keep_info(live, memory=live.memory.model_copy(update=kept))

            self.a.documents.modify(self.brain, stored.memory.path, keep, reason="restore")
        return True

    def _holds(self, r: MemoryRecord, memory_id: str) -> bool:
        """Whether the brain holds this memory already; InvalidInput when the id is another
        document's of the brain (a note, or a memory of another type)."""
        held = self.a.documents.repo.stored_by_id(memory_id)
        if held is None or held.brain_id != self.brain.id:
            return False
        if held.path != memory_path(r.type, memory_id):
            raise InvalidInput(f"memory id {excerpt(memory_id)} is already used by another document")
        return True

    def _memory_id(self, memory_id: str) -> str:
        """The id itself, unless another brain of this store holds it (a copy of a brain): then
        one derived from it and this brain, the same on every run."""
        held = self.a.documents.repo.holder_of(memory_id)  # whoever may see it
        if held is None or held[0] == self.brain.id:
            return memory_id
        return copied_id(self.brain, memory_id)

    def _doc_id(self, path: str) -> str | None:
        moved = _copied_memory_path(self.brain, path)
        found = self._live(path) or (self._live(moved) if moved is not None else None)
        return found.id if found is not None else None

    def _end(self, path: str, what: str) -> str:
        doc_id = self.doc_ids(path)
        if doc_id is None:
            raise NotFound(f"{what} not found in the brain: {path}")
        return doc_id

    def _link(self, r: LinkRecord) -> bool | None:
        check_kind(r.relationship)
        check_interval(check_validity(r.valid_from), check_validity(r.valid_until))
        source, target = self._end(r.source, "link source"), self._end(r.target, "link target")
        if source != self.pending_source or len(self.pending) >= LINKS_PER_WRITE:
            self.flush_links()
            if source != self.pending_source:
                self.pending_source = source
                self.known = set()  # the brain's own are read once, when they are written
        same = (r.relationship, target, r.valid_from, r.valid_until)
        if same in self.known:
            return False
        self.known.add(same)
        self.pending.append(
            LinkDraft(source, target, r.relationship, r.valid_from, r.valid_until, r.weight, r.created_at)
        )
        self.pending_at.append((self.line, r.source, r.target))
        return None

    def flush_links(self) -> None:
        """Write the links waiting (their records were checked: a failure here stops the restore).
        The source's links written since its last flush are read just before (HeldLinks), one
        restore of a brain at a time in this process, so two restores of one archive at once (a
        part sent again while the first send still runs) do not both write a link neither found.

        A link of the brain with the archived one's kind, target, start and creation time is that
        link, its end moved since the archive was made: closed since (the archive has it open, or
        ending otherwise), it is kept as it is and reported; still open where the archive has it
        closed, it is closed as archived (a link is never opened again)."""
        if not self.pending:
            return
        with _FLUSHING.hold([self.brain.id]):
            source_id = self.pending[0].from_doc_id
            if self.held.source != source_id:
                self.held = HeldLinks(source_id)
            held = self.held
            for since in self.a.graph.links.outgoing_numbered(self.brain.id, source_id, after_id=held.last):
                held.add(since)
            fresh: list[LinkDraft] = []
            closed = 0
            for d, (line, source, target) in zip(self.pending, self.pending_at, strict=True):
                if held.there[(d.relationship, d.to_doc_id, d.valid_from, d.valid_until)]:
                    continue
                link = held.same.get((d.relationship, d.to_doc_id, d.valid_from, d.created_at))
                if link is None:
                    fresh.append(d)
                elif link.valid_until is None and d.valid_until is not None:
                    closed += 1
                    try:
                        held.replace(link, self.a.graph.close(self.brain, link.id, d.valid_until))
                    except CairnError as exc:
                        raise _WriteFailed(f"closing a link: {exc.message}") from exc
                else:
                    what = f" ({excerpt(d.relationship)} link to {excerpt(target)})"
                    self.report.kept.append(f"line {line}: {excerpt(source)}{what}")
            try:
                self.a.graph.add_many(self.brain, fresh)
            except CairnError as exc:
                raise _WriteFailed(f"writing links: {exc.message}") from exc
        self.report.written["link"] += len(fresh) + closed
        self.report.unchanged["link"] += len(self.pending) - len(fresh) - closed
        self.pending = []
        self.pending_at = []

    def _raw(self, r: RawRecord) -> bool:
        """Decided on the row as read, and written only over that row: one another writer stores
        between the two fails the write, and the choice is made again on what it left."""
        doc_id = self._end(r.path, "raw data's document")
        for _ in range(RAW_TRIES):
            held = self.a.raw_data.get(self.brain, doc_id, r.source)
            if held is not None and held[1] == r.data:
                return False
            if held is not None and held[0].stored_at > self.made_at:
                return self._newer(r.path, f" ({excerpt(r.source)} raw data)")
            expected = held[0].version if held is not None else 0
            try:
                self.a.raw_data.put(
                    self.brain, doc_id, r.source, r.data, overwrite=True, expected_version=expected
                )
                return True
            except RawDataChanged:
                continue
        raise Conflict(f"the {excerpt(r.source)} raw data of {excerpt(r.path)} kept changing; import again")

    def _gap(self, r: GapRecord) -> bool:
        if not 1 <= len(r.sensitivity) <= MAX_LABEL:
            raise InvalidInput(f"a gap's sensitivity is 1..{MAX_LABEL} characters")
        check_label("a gap's sensitivity", r.sensitivity)
        page_id = self._end(r.page, "gap's page") if r.page is not None else None
        _, created = self.a.gaps.restore(
            self.brain,
            r.query_hash,
            detected_at=r.detected_at,
            page_id=page_id,
            confidence=r.confidence,
            sensitivity=r.sensitivity,
            resolved_at=r.resolved_at,
            resolved_by=r.resolved_by,
        )
        return created


MAX_LABEL = 64


MEDIA_TYPE = re.compile(r"[A-Za-z0-9][\w.+-]*/[\w.+-]+(?:\s*;[ -~]*)?")


def _media_type(value: str | None) -> str | None:
    if value is not None and (len(value) > 255 or MEDIA_TYPE.fullmatch(value) is None):
        raise InvalidInput(f"content_type {excerpt(value)!r} is not a media type (type/subtype)")
    return value


class HeldLinks:
    """The brain's links from one source, as flush_links read them: each flush reads only those
    written since (a larger id; ids are taken and written under _FLUSHING), not all again, so a
    source with many links in the archive is read once in all, not once per LINKS_PER_WRITE."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.last = 0
        """The largest id read."""
        self.there: Counter[tuple[str, str, str | None, str | None]] = Counter()
        """(kind, target, valid_from, valid_until) of each link."""
        self.same: dict[tuple[str, str, str | None, datetime | None], NumberedLink] = {}
        """Each link by (kind, target, valid_from, created_at); the latest of those alike."""

    def add(self, link: NumberedLink) -> None:
        self.last = max(self.last, link.id)
        self.there[(link.kind, link.target_id, link.valid_from, link.valid_until)] += 1
        self.same[(link.kind, link.target_id, link.valid_from, link.created_at)] = link

    def replace(self, old: NumberedLink, new: NumberedLink) -> None:
        """`old` closed by this restore: `new`, as it is now."""
        self.there[(old.kind, old.target_id, old.valid_from, old.valid_until)] -= 1
        self.there[(new.kind, new.target_id, new.valid_from, new.valid_until)] += 1
        key = (new.kind, new.target_id, new.valid_from, new.created_at)
        if self.same[key].id == new.id:
            self.same[key] = new


_FLUSHING = KeyedLocks()
"""One restore of a brain writes its links at a time in this process (flush_links)."""


def copied_id(brain: Brain, memory_id: str) -> str:
    """The id a memory gets in `brain` when another brain of the store holds its own id."""
    digest = hashlib.sha256(f"{brain.id}\x00{memory_id}".encode()).hexdigest()[:32]
    return f"{memory_id[:95]}.{digest}"


def _copied_memory_path(brain: Brain, path: str) -> str | None:
    """Where the typed memory archived at `path` is in `brain` when it got a copied id."""
    if not path.startswith(PREFIX) or not path.endswith(".md"):
        return None
    kind, _, name = path[len(PREFIX) : -len(".md")].partition("/")
    if kind not in MemoryType.__members__ or not name or "/" in name:
        return None
    return memory_path(MemoryType(kind), copied_id(brain, name))


class PathCache:
    """A bounded memo of a lookup; misses (None) are not kept, they may be found later."""

    def __init__(self, look: Callable[[str], str | None], size: int = PATHS_CACHED) -> None:
        self.look = look
        self.size = size
        self.kept: OrderedDict[str, str] = OrderedDict()

    def __call__(self, key: str) -> str | None:
        if key in self.kept:
            self.kept.move_to_end(key)
            return self.kept[key]
        value = self.look(key)
        if value is not None:
            self.kept[key] = value
            if len(self.kept) > self.size:
                self.kept.popitem(last=False)
        return value
