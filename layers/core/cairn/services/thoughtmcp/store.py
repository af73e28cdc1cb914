"""A user's memory rows and documents: reading rows (kept in process on the embedded store, read
again after this process writes them and after another process commits), writing a memory's
document and row, ownership."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime

from cairn.domain.errors import Conflict
from cairn.domain.models import Brain, Document, MemoryFacet, MemoryType
from cairn.ports.chunks import ChunkIndex
from cairn.ports.clock import Clock
from cairn.ports.embedder import Embedder
from cairn.ports.records import Delete, Put
from cairn.services.documents.inputs import DocumentInput
from cairn.services.documents.service import DocumentService
from cairn.services.events import ChangeEvent
from cairn.services.links.pending import PendingLinks
from cairn.services.links.repository import LinkRepository
from cairn.services.search.relevance import Calibration
from cairn.services.thoughtmcp.checks import check_user
from cairn.services.thoughtmcp.models import (
    FOLDER,
    NOT_FOUND_SUGGESTION,
    ROWS_TTL_S,
    SIMILARITY_LINE_SHIFT,
    SOURCE,
    SOURCE_AGENT,
    Row,
    ThoughtError,
    bytes_content,
    stored_bytes,
    title_of,
    user_folder,
)
from cairn.services.thoughtmcp.rows import ThoughtRows
from cairn.services.thoughtmcp.sectors import SectorVectors


class ThoughtStore:
    """The storage half of ThoughtMemories (memories.py)."""

    def __init__(
        self,
        documents: DocumentService,
        rows: ThoughtRows,
        sectors: SectorVectors,
        links: LinkRepository,
        chunks: ChunkIndex,
        embedder: Embedder,
        clock: Clock,
        *,
        calibration: Calibration,
        pending: PendingLinks,
        commit_mark: Callable[[], int] | None = None,
    ) -> None:
        """`pending`: the marks of waypoint links a memory's commit leaves to be made
        (services/links/pending.py). `commit_mark`: the record store's CommitWatch
        (ports/records.py), where it has one (the embedded store); each user's rows are then kept
        between calls (see `_all_rows`)."""
        self.documents = documents
        self.rows = rows
        self.sectors = sectors
        self.chunks = chunks
        self.embedder = embedder
        self.clock = clock
        self.links = links
        self.pending = pending
        self.calibration = calibration.lowered(SIMILARITY_LINE_SHIFT)
        self._commit_mark = commit_mark
        self._kept: dict[tuple[str, str], tuple[float, dict[str, Row], set[str], int]] | None = (
            {} if commit_mark is not None else None
        )
        self._kept_lock = threading.Lock()

    def _owned(self, brain: Brain, memory_id: str, user_id: str | None, *, combined: bool = False) -> Row:
        owner = self.owner_of(brain, memory_id)
        if owner is None:
            raise ThoughtError(
                "Memory not found or does not belong to user" if combined else "Memory not found",
                NOT_FOUND_SUGGESTION,
            )
        if user_id is None:
            check_user(owner, brain)
        elif owner != user_id:
            raise ThoughtError(
                "Memory not found or does not belong to user"
                if combined
                else "Memory does not belong to user",
                NOT_FOUND_SUGGESTION,
            )
        row = self._rows(brain.id, owner, [memory_id]).get(memory_id)
        if row is None:
            raise ThoughtError("Memory not found", NOT_FOUND_SUGGESTION)
        return row

    def _content(self, brain: Brain, row: Row) -> str:
        return row.content if row.content is not None else bytes_content(self.documents.read(brain, row.path))

    def _rows(self, brain_id: str, user_id: str, ids: Sequence[str]) -> dict[str, Row]:
        return self.rows.get(brain_id, user_id, ids)

    def _all_rows(self, brain_id: str, user_id: str) -> list[Row]:
        """Every row of the user. Kept per user where the store has a commit mark: a row this
        process writes is marked and read again (one batch) before the next use, and all are read
        again once another process (`cairn mcp`, the CLI) has committed since they were read (the
        mark, read before them, moved), so the kept rows are what the store holds; they are read
        afresh after ROWS_TTL_S anyway."""
        if self._kept is None or self._commit_mark is None:
            return self._read_rows(brain_id, user_id)
        pk = (brain_id, user_id)
        mark = self._commit_mark()
        with self._kept_lock:
            held = self._kept.get(pk)
        if held is None or held[3] != mark or time.monotonic() - held[0] > ROWS_TTL_S:
            started = time.monotonic()
            rows = {r.id: r for r in self._read_rows(brain_id, user_id)}
            with self._kept_lock:
                self._kept[pk] = (started, rows, set(), mark)
            return list(rows.values())
        with self._kept_lock:
            stale = set(held[2])
            held[2].clear()
        if stale:
            fresh = self._rows(brain_id, user_id, sorted(stale))
            with self._kept_lock:
                for memory_id in stale:
                    if memory_id in fresh:
                        held[1][memory_id] = fresh[memory_id]
                    else:
                        held[1].pop(memory_id, None)  # forgotten
        with self._kept_lock:
            return list(held[1].values())

    def _rows_of(self, brain_id: str, user_id: str, ids: Iterable[str]) -> list[Row]:
        """The rows of these memories of the user, for ranking (from the kept rows when there
        are any; a writer reads its rows from the store itself)."""
        if self._kept is not None and (brain_id, user_id) in self._kept:
            kept = {r.id: r for r in self._all_rows(brain_id, user_id)}
            return [kept[i] for i in ids if i in kept]
        return list(self._rows(brain_id, user_id, list(ids)).values())

    def _touched(self, brain_id: str, user_id: str, *memory_ids: str) -> None:
        """Rows this process just wrote: a kept copy of them is read again before its next use."""
        if self._kept is None:
            return
        with self._kept_lock:
            held = self._kept.get((brain_id, user_id))
            if held is not None:
                held[2].update(memory_ids)

    def forget_removed(self, brain_id: str, events: Sequence[ChangeEvent]) -> None:
        """Documents of the brain changed in this process (EventBus.listen): a kept row of a memory
        whose document was removed through another surface (its row went with it) is read again."""
        if self._kept is None:
            return
        gone = [e.path for e in events if e.kind == "deleted" and e.path.startswith(f"{FOLDER}/")]
        if not gone:
            return
        with self._kept_lock:
            for (kept_brain, user_id), held in self._kept.items():
                folder = user_folder(user_id)
                if kept_brain == brain_id:
                    held[2].update(p[len(folder) :].removesuffix(".md") for p in gone if p.startswith(folder))

    def _read_rows(self, brain_id: str, user_id: str) -> list[Row]:
        return self.rows.all(brain_id, user_id)

    def _newest(self, brain_id: str, user_id: str, count: int) -> list[Row]:
        return self.rows.newest(brain_id, user_id, count)

    def owner_of(self, brain: Brain, memory_id: str) -> str | None:
        doc = self.documents.repo.get_by_id(memory_id) if isinstance(memory_id, str) and memory_id else None
        if doc is None or doc.brain_id != brain.id or doc.memory is None or doc.deleted_at is not None:
            return None
        return doc.memory.user_id

    def _facet(self, row: Row, *, forgotten: datetime | None = None) -> MemoryFacet:
        return MemoryFacet(
            type=MemoryType.note,
            sector=row.sector,
            strength=row.strength,
            salience=row.salience,
            importance=row.importance,
            category=row.category,
            source_agent=SOURCE_AGENT,
            user_id=row.user_id,
            session_id=row.session_id,
            keywords=row.keywords,
            context=row.context,
            last_access=row.last_access,
            access_count=row.access_count,
            expired_at=forgotten,
        )

    def _write(
        self,
        brain: Brain,
        row: Row,
        content: str,
        *,
        held: Document | None,
        embed: bool = False,
        forgotten: datetime | None = None,
        also: Sequence[Put | Delete] = (),
    ) -> Document:
        """The memory's document and its row, in one transaction: a new document and row (`held`
        None), or both at the versions read (`held`, from `_live`: a document deleted or written
        meanwhile, through any surface, is a Conflict, so a stale writer never brings it back);
        `embed`: its sector embeddings too (new text or metadata they are made of); `forgotten`:
        when it was soft-forgotten (its chunks then hidden from current-only search). A memory at
        strength 0 stays hidden whatever else a write changes, as when it was forgotten; one given
        a strength again is found again, as ThoughtMCP's minStrength filter would find it. `also`
        commits with them (a mark of the links left to make: services/links/pending.py)."""
        if forgotten is None and row.strength <= 0.0 and held is not None:
            kept = held.memory.expired_at if held.memory is not None else None
            forgotten = kept or self.clock.now()
        ops: list[Put | Delete] = [self.rows.put_op(brain.id, row, 0 if held is None else row.version), *also]
        if embed:
            vectors = self.sectors.embed(content, row)
            ops.append(self.sectors.put_op(brain.id, row.user_id, row.id, vectors))
        info = DocumentInput(
            title=title_of(content),
            tags=[*(f"kw:{k}" for k in row.keywords), *(f"tag:{t}" for t in row.tags)],
            memory=self._facet(row, forgotten=forgotten),
            doc_id=row.id,
            source=SOURCE,
            content_type="text/markdown",
        )
        data = stored_bytes(row.id, content)
        version = held.version if held is not None else None
        doc = self.documents.write_at_version(brain, row.path, data, info, expected_version=version, also=ops)
        self._touched(brain.id, row.user_id, row.id)
        return doc.document

    def _live(self, brain: Brain, row: Row) -> Document:
        """The memory's live document, at the path its row names (Conflict when it is gone: the
        caller reads again and finds the memory gone)."""
        doc = self.documents.repo.stored(brain.id, row.path)
        if doc is None or doc.deleted_at is not None or doc.id != row.id:
            raise Conflict(f"memory {row.id} changed while it was being written")
        return doc
