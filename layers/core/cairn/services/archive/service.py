"""Whole-brain archives: a brain as a stream of JSON records, and a restore from one.

Format 2 (docs/ARCHITECTURE.md, "Archive"): a header, then `document` records (every live
document that is not a typed memory: gbrain pages, notes, binaries as base64), `memory` records
(typed memories, in the order they were stored), then per document its numbered `link` records
(ends named by document path) and its `raw` rows, then the `gap` records (hashes only), and an
`end` record counting the records before it. Format 1 is the same without the `end` record.

A restore writes through the services, so every rule holds as for any writer: documents through
DocumentService.modify (the same bytes at the same path are a no-op), memories through
MemoryService.store with their ids (a memory already in the brain is skipped; being stored
oldest first, supersede by key or subject rebuilds the same current memory), links with new ids
from the brain's link sequence (one identical in its ends, kind and validity is skipped), raw
rows overwritten, gaps by hash. So a restore that stopped part-way is resumed by running it
again. Meanwhile the brain's collection is `restoring` (services/gbrain/pages.py), so gbrain refuses
every page mutation.

The parts: records.py (the format), restore.py (a restore in progress); this module exports and
imports whole brains.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from pydantic import ValidationError

from cairn.domain.errors import CairnError, Conflict, InvalidInput, NotFound
from cairn.domain.models import (
    Brain,
    Document,
)
from cairn.ports.clock import Clock
from cairn.services.archive.records import (
    _RECORD,
    FORMAT,
    FORMATS_READ,
    KIND,
    BrainInfo,
    CollectionRecord,
    EndRecord,
    Header,
    ImportReport,
    RawRecord,
    Record,
    document_record,
    dumped,
    gap_record,
    is_typed_memory,
    link_record,
    memory_record,
    not_whole,
)
from cairn.services.archive.restore import PathCache, Restore, RestoreIncomplete, failure_reason
from cairn.services.brains import BrainService
from cairn.services.documents.service import DocumentService
from cairn.services.documents.unreadable import Unreadable, read_or_skip
from cairn.services.gbrain.gaps import GapService
from cairn.services.gbrain.pages import NEEDS_FULL_SYNC_KEY, STATE_KEY, PageService
from cairn.services.gbrain.raw_data import RawDataService
from cairn.services.links.graph import GraphService
from cairn.services.memory.memories import MemoryService
from cairn.services.mnemosyne.libraries import Library, LibraryService
from cairn.services.thoughtmcp.memories import ThoughtMemories

TRANSIENT = (STATE_KEY, NEEDS_FULL_SYNC_KEY)
"""Brain metadata an archive leaves out: the collection's state at export time."""


T = TypeVar("T")


LISTINGS = 4
"""How many times an export lists a brain's documents for those a listing passed over (_each_once)."""


class BrainArchive:
    def __init__(
        self,
        brains: BrainService,
        documents: DocumentService,
        memories: MemoryService,
        pages: PageService,
        graph: GraphService,
        gaps: GapService,
        raw_data: RawDataService,
        clock: Clock,
        thoughts: ThoughtMemories | None = None,
        libraries: LibraryService | None = None,
        max_document_bytes: int | None = None,
    ) -> None:
        """`thoughts`: a restored ThoughtMCP memory (a document with a user) gets its row back and
        its waypoint links made again (services/thoughtmcp/memories.py). `libraries`: the brain's
        Mnemosyne collections go with it (their items are its documents). `max_document_bytes`:
        the largest document any other way in stores (the file cap); a larger one is refused."""
        self.max_document_bytes = max_document_bytes
        self.thoughts = thoughts
        self.libraries = libraries
        self.brains = brains
        self.documents = documents
        self.memories = memories
        self.pages = pages
        self.graph = graph
        self.gaps = gaps
        self.raw_data = raw_data
        self.clock = clock

    # -- export -----------------------------------------------------------------------------------

    def export(self, brain: Brain, *, damaged: list[Unreadable] | None = None) -> Iterator[dict[str, Any]]:
        """The brain's records, streamed (documents are read a page at a time, twice, each once:
        _each_once), and the `end` record that counts them. A document whose stored bytes are
        damaged stops the export (DamagedContent), unless `damaged` is given: it is then left out
        and added there (`cairn export --skip-damaged`: the rest of a brain saved before
        it is repaired). One erased or forgotten between its listing and its read is left out, as
        an export begun a moment later would."""
        yield dumped(self._header(brain))
        count = 0
        for record in self._records(brain, damaged):
            count += 1
            yield record
        yield dumped(EndRecord(records=count))

    def _records(self, brain: Brain, damaged: list[Unreadable] | None) -> Iterator[dict[str, Any]]:
        def readable(doc: Document, read: Callable[[Document], T]) -> T | None:
            return read_or_skip(doc, read, damaged, or_raise=damaged is None)

        if self.libraries is not None:
            for col in self.libraries.collections([Library(brain)]):
                yield dumped(CollectionRecord(name=col.name, description=col.description, folder=col.folder))
        for doc in self._each_once(brain):
            if not is_typed_memory(doc) and (content := readable(doc, self.documents.content)) is not None:
                yield dumped(document_record(self._as_it_stands(brain, doc), content))
        for doc in self.memories.oldest_first(brain):
            live = doc.deleted_at is None and is_typed_memory(doc)
            if live and (text := readable(doc, self.memories.text)) is not None:
                yield dumped(memory_record(doc, text))
        path_of = PathCache(lambda doc_id: self._path_of(brain, doc_id))
        for doc in self._each_once(brain):
            for link in self.graph.links.outgoing_numbered(brain.id, doc.id):
                target = path_of(link.target_id)
                if target is not None:  # a link to a deleted document goes with it
                    yield dumped(link_record(link, doc.path, target))
            for source in self.raw_data.sources(brain, doc.id):
                row = self.raw_data.get(brain, doc.id, source)
                if row is not None:
                    yield dumped(
                        RawRecord(path=doc.path, source=source, data=row[1], stored_at=row[0].stored_at)
                    )
        for gap in self.gaps.every(brain):
            page = path_of(gap.page_id) if gap.page_id else None
            yield dumped(gap_record(gap, page))

    def _as_it_stands(self, brain: Brain, doc: Document) -> Document:
        """A ThoughtMCP memory's document with its facet brought up to its row, which every recall
        changes and its document does not (strength, salience, last access, access count)."""
        m = doc.memory
        if self.thoughts is None or m is None or m.user_id is None:
            return doc
        row = self.thoughts.rows.get(brain.id, m.user_id, [doc.id]).get(doc.id)
        if row is None:
            return doc
        now = {
            "strength": row.strength,
            "salience": row.salience,
            "last_access": row.last_access,
            "access_count": row.access_count,
        }
        return doc.model_copy(update={"memory": m.model_copy(update=now)})

    def _header(self, brain: Brain) -> Header:
        info = BrainInfo(
            slug=brain.slug,
            name=brain.name,
            visibility=brain.visibility,
            metadata={k: v for k, v in brain.metadata.items() if k not in TRANSIENT},
            embedding_model=brain.embedding_model,
            embedding_dim=brain.embedding_dim,
            created_at=brain.created_at,
        )
        return Header(kind=KIND, format=FORMAT, brain=info, exported_at=self.clock.now())

    def _live(self, brain: Brain) -> Iterator[Document]:
        return (doc for doc in self.documents.repo.list(brain.id) if doc.deleted_at is None)

    def _each_once(self, brain: Brain) -> Iterator[Document]:
        """Every live document of the brain, each once (by id). The listing is read a page at a
        time with no snapshot, so a document renamed meanwhile from a later page's paths to an
        earlier one's is passed over, and the other way met twice: the second time is left out,
        and the brain is listed again for those not met yet until a listing meets none (at most
        LISTINGS times: a document renamed on every listing may still be missed)."""
        met: set[str] = set()
        for _ in range(LISTINGS):
            fresh = False
            for doc in self._live(brain):
                if doc.id not in met:
                    met.add(doc.id)
                    fresh = True
                    yield doc
            if not fresh:
                return

    def _path_of(self, brain: Brain, doc_id: str) -> str | None:
        doc = self.documents.repo.get_by_id(doc_id)
        if doc is None or doc.brain_id != brain.id or doc.deleted_at is not None:
            return None
        return doc.path

    # -- import -----------------------------------------------------------------------------------

    def import_(
        self, into: str | None, records: Iterable[dict[str, Any]], *, part: bool = False
    ) -> ImportReport:
        """Restore an archive into the brain `into` (id or slug), else the archive's own slug;
        a brain that does not exist is created with the archive's name and metadata.

        Line N is the Nth record. A header of a format this Cairn does not read is refused before
        anything is written. A malformed record, a format-2 archive that ends without its `end`
        record or with another count in it (it was cut short), or any failure but a record the
        brain refuses, stops the restore with RestoreIncomplete and leaves the collection
        `restoring`; a refused record (an unknown link end, say) is reported in `errors` and the
        restore goes on. `part`: the records are a piece of an archive (each led by its header,
        POST /v1/archive/import), so the `end` record may be missing and counts more than them."""
        if part:  # a part is in hand: one malformed record refuses it whole, before any is written
            records = list(records)
            check(records, part=True)
        stream = iter(records)
        header = _leading_header(stream)
        brain, created = self._target(header, into)
        prior = self.pages.state(brain).state
        self.pages.set_state(brain, state="restoring")
        report = ImportReport(brain=brain, created_brain=created)
        restore = Restore(self, brain, report, made_at=header.exported_at)
        lines = _Lines(stream)
        end: EndRecord | None = None
        try:
            for raw in lines:
                if end is not None:
                    raise _Damaged("a record after the archive's end record")
                if isinstance(raw, dict) and raw.get("kind") == "end" and header.format > 1:
                    end = _end(raw)
                    if not part and (problem := not_whole(header.format, raw, lines.line)):
                        raise _Damaged(problem)
                    continue
                restore.record(lines.line, _parse(raw))
            restore.flush_links()
            if end is None and not part and (problem := not_whole(header.format, None, lines.line - 1)):
                raise _Damaged(problem)
        except Exception as exc:
            why = exc.message if isinstance(exc, CairnError) else failure_reason(exc)
            where = "at the end of the archive" if lines.ended else f"line {lines.line}"
            then = (
                "import a whole copy of the archive to finish it"
                if isinstance(exc, (_Damaged, InvalidInput))
                else "run the import again to resume it"
            )
            raise RestoreIncomplete(
                f"{where}: {why} — the restore of brain {brain.slug} stopped there and its "
                f"collection stays `restoring`; {then}"
            ) from exc
        self.pages.set_state(brain, state="active" if prior == "restoring" else prior)
        return report

    def _target(self, header: Header, into: str | None) -> tuple[Brain, bool]:
        ref = into or header.brain.slug
        try:
            return self.brains.get(ref), False
        except NotFound:
            if ref.startswith("brn_"):
                raise
        kept = {k: v for k, v in header.brain.metadata.items() if k not in TRANSIENT}
        try:
            brain = self.brains.create(
                header.brain.name, slug=ref, visibility=header.brain.visibility.value, metadata=kept
            )
        except Conflict:  # another import of it made it meanwhile: restore into that one
            try:
                return self.brains.get(ref), False
            except NotFound:
                raise Conflict(f"a brain with slug {ref!r} already exists") from None
        return brain, True


def check(records: Iterable[dict[str, Any]], *, part: bool = False) -> int:
    """Read an archive (or, `part`, a piece of one led by its header) through without writing:
    InvalidInput naming the first line a restore would stop at (a record that is not one, one
    after the end record, a format-2 archive cut short); else the number of lines. A record the
    brain would refuse (an unknown link end, a bad tag) is not looked for: the restore reports it
    and goes on."""
    stream = iter(records)
    header = _leading_header(stream)
    lines, last = 1, None
    end: dict[str, Any] | None = None
    while True:
        try:
            raw = next(stream)
        except StopIteration:
            break
        except InvalidInput as exc:
            raise InvalidInput(f"line {lines + 1}: {exc.message}") from None
        lines, last = lines + 1, raw
        try:
            if end is not None:
                raise InvalidInput("a record after the archive's end record")
            if raw.get("kind") == "end" and header.format > 1:
                end = raw
                _end(raw)
            else:
                _parse(raw)
        except InvalidInput as exc:
            raise InvalidInput(f"line {lines}: {exc.message}") from None
    if not part and (problem := not_whole(header.format, last, lines)):
        raise InvalidInput(problem)
    return lines


def _leading_header(stream: Iterator[dict[str, Any]]) -> Header:
    """The archive's first line, its header (a line that cannot be read is line 1's fault)."""
    try:
        first = next(stream, None)
    except InvalidInput as exc:
        raise InvalidInput(f"line 1: {exc.message}") from None
    return _header(first)


def _header(raw: object) -> Header:
    if raw is None:
        raise InvalidInput("line 1: the archive is empty: it has no header")
    if not isinstance(raw, dict) or raw.get("kind") != KIND:
        raise InvalidInput(f"line 1: not a Cairn archive: the first record must have kind {KIND!r}")
    if isinstance(raw.get("format"), bool) or raw.get("format") not in FORMATS_READ:  # True == 1
        raise InvalidInput(
            f"line 1: archive format {raw.get('format')!r} is not one this Cairn reads "
            f"(formats {', '.join(map(str, FORMATS_READ))})"
        )
    try:
        return Header.model_validate(raw)
    except ValidationError as exc:
        raise InvalidInput(f"line 1: bad header: {_first_error(exc)}") from None


class _Damaged(CairnError):
    """The archive itself is not whole: running the same import again cannot finish it."""

    code = "invalid_input"


def _end(raw: dict[str, Any]) -> EndRecord:
    try:
        return EndRecord.model_validate(raw)
    except ValidationError as exc:
        raise InvalidInput(f"bad record: {_first_error(exc)}") from None


def _parse(raw: object) -> Record:
    try:
        return _RECORD.validate_python(raw)
    except ValidationError as exc:
        raise InvalidInput(f"bad record: {_first_error(exc)}") from None


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {error['msg']}{more}" if where else f"{error['msg']}{more}"


class _Lines:
    """The records after the header, counting the line being read (the header is line 1)."""

    def __init__(self, stream: Iterator[dict[str, Any]]) -> None:
        self.stream = stream
        self.line = 1
        self.ended = False

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> dict[str, Any]:
        self.line += 1
        try:
            return next(self.stream)
        except StopIteration:
            self.ended = True
            raise
