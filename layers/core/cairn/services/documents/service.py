"""Documents by path: the store protocol's operations, indexed on every committed write.

Every mutation holds the in-process lock of the paths it touches, prepares chunks and
vectors (embedding only the chunks whose text changed), commits the records in one conditional
transaction, then updates the chunk index and publishes change events. Bytes live in the blob
store under a content address, so a record update is the single atomic step that makes new
content visible.

The commit carries an index intent per document it changes (services/documents/index_intents.py); a
write answers only once its chunks are applied and the intent is finished, and a document whose
intent outlives its writer (a crash, a later commit landing in between) is reconciled from its
record (`reconcile`), by the writer itself, a later process (`settle_pending`) or its next write.
A commit that loses to a writer of the same path in another process is staged and committed again
(`_again`): in-process writers of a path wait on its lock; other processes only show up there.

Why one long module: every write path (single, versioned, append, modify, rename, delete, erase,
batch, bulk) shares the same path locks, staging, conditional commit, index settling and events;
kept together, the transaction protocol reads in one place. The index's side of it is in
index_sync.py, indexing.py and index_intents.py.
"""

from __future__ import annotations

import builtins
import hashlib
import logging
import posixpath
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TypeVar

from cairn import faults
from cairn.auth import access
from cairn.domain.errors import (
    CairnError,
    Conflict,
    InvalidInput,
    NotFound,
    PayloadTooLarge,
    RecordConflict,
    VersionConflict,
)
from cairn.domain.ids import new_id
from cairn.domain.models import Brain, Document, DocumentSource, MemoryFacet, MetadataValue
from cairn.domain.paths import validate_path
from cairn.domain.text import excerpt
from cairn.ports.blobs import BlobStore
from cairn.ports.clock import Clock
from cairn.ports.records import Delete, Put
from cairn.services.documents import listing
from cairn.services.documents.document_text import document_text, image_captions, title_for
from cairn.services.documents.index_sync import IndexSync, state_of
from cairn.services.documents.indexing import DocumentIndexer, PlannedChunks, PreparedChunks, RecentVectors
from cairn.services.documents.locks import KeyedLocks
from cairn.services.documents.siblings import SiblingContext, folder_of, keeps_to_itself
from cairn.services.events import ChangeEvent, ChangeKind, EventBus
from cairn.services.repositories import Committed, DocumentRepository, doc_id_key, doc_key

log = logging.getLogger(__name__)
_WRITE_TRIES = 16
T = TypeVar("T")


@dataclass(frozen=True)
class FileInfo:
    path: str
    size: int
    mtime: str
    is_dir: bool


@dataclass(frozen=True)
class DocumentInput:
    """What a writer may say about a document besides its bytes."""

    title: str | None = None
    tags: Sequence[str] = ()
    metadata: Mapping[str, MetadataValue] = field(default_factory=dict)
    source: DocumentSource = DocumentSource.ingest
    content_type: str | None = None
    text: str | None = None  # the text to index when it differs from the bytes (PDF, HTML)
    memory: MemoryFacet | None = None
    doc_id: str | None = None  # the id a new document gets (queued ingest promised it); else fresh
    staged_chunks: Sequence[str] | None = None  # its chunks, already indexed inactive (staged ingest)


STEP_CHUNKS = 64
"""Texts write_many embeds per step of its pipeline: small enough that the work before the first
step and after the last (staging, committing, the caller's `done`) overlaps nearly everything."""


@dataclass(frozen=True)
class DeferredWrite:
    """An item of `write_many` whose bytes and input are made when it is staged, in the pipeline
    (an ingest extracts a file's text then); a CairnError `make` raises is the item's result."""

    path: str
    make: Callable[[], tuple[bytes, DocumentInput]]


@dataclass(frozen=True)
class BatchOp:
    type: str  # write | append | delete | rename
    path: str
    content: bytes = b""
    to: str | None = None


@dataclass(frozen=True)
class Staged:
    document: Document
    prepared: PreparedChunks
    ops: list[Put | Delete]  # none: the write would change nothing
    text: str
    created: bool
    planned: PlannedChunks | None = None  # staged with `defer`: the chunks whose vectors `prepared` lacks


@dataclass
class WriteOutcome:
    document: Document
    created: bool
    changed: bool


def checksum(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class DocumentService:
    def __init__(
        self,
        repo: DocumentRepository,
        blobs: BlobStore,
        indexer: DocumentIndexer,
        events: EventBus,
        clock: Clock,
        *,
        max_batch_ops: int = 1024,
        max_batch_bytes: int = 8 * 1024 * 1024,
        max_list_items: int = 10_000,
        siblings: SiblingContext | None = None,
    ) -> None:
        self.repo = repo
        self.blobs = blobs
        self.indexer = indexer
        self.events = events
        self.clock = clock
        self.locks = KeyedLocks()
        self.folder_locks = KeyedLocks()  # taken after path locks, never before
        self.max_batch_ops = max_batch_ops
        self.max_batch_bytes = max_batch_bytes
        self.max_list_items = max_list_items
        self.siblings = siblings or SiblingContext(repo.records, window_s=0)
        self.sync = IndexSync(repo, indexer, self.siblings, self.text_of)

    # -- reads -----------------------------------------------------------------------------

    def get(self, brain: Brain, path: str) -> Document:
        doc = self.repo.get(brain.id, validate_path(path))
        if doc is None or doc.deleted_at is not None:
            raise NotFound(f"not found: {excerpt(path)}")
        return doc

    def get_by_id(self, brain: Brain, doc_id: str) -> Document:
        doc = self.repo.get_by_id(doc_id)
        if doc is None or doc.brain_id != brain.id or doc.deleted_at is not None:
            raise NotFound(f"document not found: {excerpt(doc_id)}")
        return doc

    def record_by_id(self, brain: Brain, doc_id: str) -> Document:
        """The document's record even when soft-deleted (to follow `replaced_by`); NotFound otherwise."""
        doc = self.repo.get_by_id(doc_id)
        if doc is None or doc.brain_id != brain.id:
            raise NotFound(f"document not found: {excerpt(doc_id)}")
        return doc

    def content(self, doc: Document) -> bytes:
        """The bytes of any record, live or soft-deleted (blobs outlive soft deletes)."""
        return self.blobs.get(doc.blob_key)

    def read(self, brain: Brain, path: str) -> bytes:
        return self.blobs.get(self.get(brain, path).blob_key)

    def exists(self, brain: Brain, path: str) -> bool:
        try:
            self.get(brain, path)
        except NotFound:
            return False
        return True

    def stat(self, brain: Brain, path: str) -> FileInfo:
        try:
            return _file_info(self.get(brain, path))
        except NotFound:
            child = next(self._live(brain, path + "/"), None)
            if child is None:
                raise
            return FileInfo(path=path, size=0, mtime=_stamp(child), is_dir=True)

    def list(
        self,
        brain: Brain,
        directory: str = "",
        *,
        recursive: bool = False,
        glob: str | None = None,
        include_generated: bool = False,
    ) -> list[FileInfo]:
        """Every entry of the listing, all pages of `list_page` read in turn."""
        items: list[FileInfo] = []
        cursor: str | None = None
        while True:
            page = self.list_page(
                brain,
                directory,
                recursive=recursive,
                glob=glob,
                include_generated=include_generated,
                cursor=cursor,
            )
            items += page.items
            if page.next_cursor is None:
                return items
            cursor = page.next_cursor

    def list_page(
        self,
        brain: Brain,
        directory: str = "",
        *,
        recursive: bool = False,
        glob: str | None = None,
        include_generated: bool = False,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> listing.Page[FileInfo]:
        """One page of the path listing (at most `max_list_items`, the default); `next_cursor`
        resumes it. Order and cursor: services/documents/listing.py."""
        page = listing.entries(
            self.repo,
            brain.id,
            directory,
            recursive=recursive,
            glob=glob,
            include_generated=include_generated,
            limit=self._page_limit(limit),
            cursor=cursor,
        )
        infos = [
            FileInfo(path=e.path, size=0, mtime=_stamp(e.document), is_dir=True)
            if e.is_dir
            else _file_info(e.document)
            for e in page.items
        ]
        return listing.Page(infos, page.next_cursor)

    def documents_page(
        self, brain: Brain, *, limit: int | None = None, cursor: str | None = None
    ) -> listing.Page[Document]:
        """One page of every live document in path order (the legacy listing)."""
        return listing.documents(self.repo, brain.id, limit=self._page_limit(limit), cursor=cursor)

    def _page_limit(self, limit: int | None) -> int:
        if limit is not None and not 1 <= limit <= self.max_list_items:
            raise InvalidInput(f"limit must be between 1 and {self.max_list_items}")
        return self.max_list_items if limit is None else limit

    def documents(self, brain: Brain, prefix: str = "") -> builtins.list[Document]:
        """Live documents whose path starts with `prefix`, in path order."""
        return list(self._live(brain, prefix))

    def _live(self, brain: Brain, prefix: str) -> Iterator[Document]:
        return (doc for doc in self.repo.list(brain.id, prefix) if doc.deleted_at is None)

    # -- single writes ---------------------------------------------------------------------

    def write(
        self,
        brain: Brain,
        path: str,
        data: bytes,
        info: DocumentInput | None = None,
        *,
        reason: str | None = None,
        also: Sequence[Put | Delete] = (),
    ) -> WriteOutcome:
        """Write the document; `also` commits in the same transaction (a caller's claims and
        companion records): a Conflict on any of them writes nothing, indexes nothing."""
        path = validate_path(path)
        with self.locks.hold([_lock_key(brain, path)]):
            outcome = self._again(
                brain,
                [path],
                lambda: self._write_locked(
                    brain, path, data, info or DocumentInput(), self.repo.stored(brain.id, path), also
                ),
            )
            self._publish_write(brain, path, outcome, reason)
        return outcome

    def write_at_version(
        self,
        brain: Brain,
        path: str,
        data: bytes,
        info: DocumentInput | Callable[[Document | None], DocumentInput] | None = None,
        *,
        expected_version: int | None,
        reason: str | None = None,
        also: Sequence[Put | Delete] = (),
    ) -> WriteOutcome:
        """Write only at the version the caller holds: `expected_version` None creates (no live
        document at the path), N replaces the live document whose version is N. Anything else is a
        VersionConflict carrying the version found. `info` may be a function of the live document
        (what to keep from it). Every write here commits a new version, identical bytes included:
        the caller counts on the version it gets back.

        The check that decides is the record store's conditional transaction (the version read
        is the one the commit expects), so it holds between processes; the path lock only keeps
        this process's writers in line. A commit that loses to another process is reported with
        the version that process left."""
        path = validate_path(path)
        with self.locks.hold([_lock_key(brain, path)]):
            existing = self.repo.stored(brain.id, path)
            _expect_version(path, existing, expected_version)
            live = existing if existing and existing.deleted_at is None else None
            chosen = info(live) if callable(info) else (info or DocumentInput())
            try:
                outcome = self._write_locked(brain, path, data, chosen, existing, also, force=True)
            except Conflict:
                _expect_version(path, self.repo.stored(brain.id, path), expected_version)
                raise  # the document is as expected: a companion record (`also`, siblings) moved
            self._publish_write(brain, path, outcome, reason)
        return outcome

    def append(self, brain: Brain, path: str, data: bytes, *, reason: str | None = None) -> WriteOutcome:
        path = validate_path(path)

        def attempt() -> WriteOutcome:
            existing = self.repo.stored(brain.id, path)
            live = existing if existing and existing.deleted_at is None else None
            base = self.blobs.get(live.blob_key) if live else b""
            return self._write_locked(brain, path, base + data, keep_info(live), existing)

        with self.locks.hold([_lock_key(brain, path)]):
            outcome = self._again(brain, [path], attempt)
            self._publish_write(brain, path, outcome, reason)
        return outcome

    def delete(self, brain: Brain, path: str, *, reason: str | None = None) -> None:
        self.retire(brain, path, reason=reason)

    def retire(
        self,
        brain: Brain,
        path: str,
        *,
        reason: str | None = None,
        why: str | None = None,
        replaced_by: str | None = None,
    ) -> Document:
        """Soft-delete, recording `why` (merged, pruned, ...) and the document that replaced it."""
        path = validate_path(path)

        def attempt() -> tuple[Document, Committed]:
            doc = self.get(brain, path)
            access.check_change(brain, doc.owner, f"the document at {excerpt(path)}")
            now = self.clock.now()
            gone = doc.model_copy(
                update={
                    "deleted_at": now,
                    "updated_at": now,
                    "chunk_count": 0,
                    "deleted_reason": why,
                    "replaced_by": replaced_by,
                }
            )
            return doc, self.repo.commit([self.repo.put_op(gone, doc.version)])

        with self.locks.hold([_lock_key(brain, path)]):
            doc, committed = self._again(brain, [path], attempt)
            faults.reached("documents.committed")
            self.indexer.remove(doc)
            faults.reached("documents.indexed")
            self.sync.settle(committed, [doc.id])
            gone = committed.documents[0]
            self._publish(
                brain,
                [
                    ChangeEvent(
                        kind="deleted", path=path, when=gone.updated_at, reason=reason, owner=doc.owner
                    )
                ],
            )
        return gone

    def erase(
        self,
        brain: Brain,
        path: str,
        *,
        also: Sequence[Put | Delete] = (),
        reason: str | None = None,
        keep_blob: bool = False,
    ) -> Document | None:
        """Remove a document entirely, not softly: its record, its id pointer, its chunks and its
        content blob, with `also` in the same transaction. The blob goes too unless `keep_blob`:
        blobs are content-addressed, so a caller that cannot tell that no other document holds the
        same bytes keeps it (ThoughtMCP memories store their own id in their bytes, so theirs are
        never shared). None when there is no such document."""
        path = validate_path(path)
        with self.locks.hold([_lock_key(brain, path)]):
            doc = self.repo.stored(brain.id, path)
            if doc is None:
                return None
            access.check_change(brain, doc.owner, f"the document at {excerpt(path)}")
            gone = [
                Delete(*doc_key(brain.id, path), expected_version=doc.version),
                Delete(*doc_id_key(doc.id)),
            ]
            committed = self.repo.commit([*gone, *also], touched=[(brain.id, doc.id)])
            faults.reached("documents.committed")
            self.indexer.remove(doc)
            faults.reached("documents.indexed")
            self.sync.settle(committed, [doc.id])
            if not keep_blob:
                self.blobs.delete(doc.blob_key)
            self._publish(
                brain,
                [
                    ChangeEvent(
                        kind="deleted", path=path, when=self.clock.now(), reason=reason, owner=doc.owner
                    )
                ],
            )
        return doc

    def rename(self, brain: Brain, src: str, dst: str, *, reason: str | None = None) -> Document:
        src, dst = validate_path(src), validate_path(dst)
        if src == dst:
            return self.get(brain, src)

        def attempt() -> tuple[Document | None, PreparedChunks, list[tuple[str, str]], Committed]:
            doc = self.get(brain, src)
            target = self.repo.stored(brain.id, dst)
            for held in (doc, target):
                if held is not None:
                    access.check_change(brain, held.owner, f"the document at {excerpt(held.path)}")
            moved = doc.model_copy(update={"path": dst, "updated_at": self.clock.now()})
            prepared = self.indexer.prepare(moved, self.text_of(moved))  # same text: no embedding
            ops: list[Put | Delete] = [
                self.repo.put_op(moved, target.version if target else 0),
                self.repo.pointer_op(moved),
                self.repo.remove_op(doc),
            ]
            overwritten = [(brain.id, target.id)] if target is not None else []
            return target, prepared, overwritten, self.repo.commit(ops, touched=overwritten)

        with self.locks.hold([_lock_key(brain, src), _lock_key(brain, dst)]):
            target, prepared, overwritten, committed = self._again(brain, [src, dst], attempt)
            faults.reached("documents.committed")
            moved = committed.documents[0]
            if target is not None and target.deleted_at is None:
                self.indexer.remove(target)
            applied = self.indexer.apply(moved, prepared)
            faults.reached("documents.indexed")
            self.sync.settle(committed, [*([moved.id] if applied else []), *(d for _, d in overwritten)])
            event = ChangeEvent(
                kind="renamed",
                path=dst,
                old_path=src,
                when=self.clock.now(),
                reason=reason,
                owner=moved.owner,
            )
            self._publish(brain, [event])
        return moved

    def modify(
        self,
        brain: Brain,
        path: str,
        change: Callable[[Document | None, bytes | None], tuple[bytes, DocumentInput] | None],
        *,
        reason: str | None = None,
    ) -> WriteOutcome | None:
        """Read-modify-write under the path's lock: `change` sees the live document and its bytes
        (or None, None) and returns what to write, or None to leave it alone."""
        path = validate_path(path)

        def attempt() -> WriteOutcome | None:
            existing = self.repo.stored(brain.id, path)
            live = existing if existing and existing.deleted_at is None else None
            wanted = change(live, self.blobs.get(live.blob_key) if live else None)
            if wanted is None:
                return None
            return self._write_locked(brain, path, wanted[0], wanted[1], existing)

        with self.locks.hold([_lock_key(brain, path)]):
            outcome = self._again(brain, [path], attempt)
            if outcome is not None:
                self._publish_write(brain, path, outcome, reason)
        return outcome

    def reindex(self, doc: Document) -> None:
        """Bring a document's chunks in line with its record (vectors are reused, only what
        changed is written)."""
        self.reconcile(doc.brain_id, doc.id)

    def reconcile(self, brain_id: str, doc_id: str, *, context: str | None = None) -> bool:
        """Make the document's chunks what its record says (services/documents/index_sync.py)."""
        return self.sync.reconcile(brain_id, doc_id, context=context)

    def settle_pending(self, older_than_s: float = 0.0) -> int:
        """Reconcile every document whose index intent a stopped writer left standing."""
        return self.sync.settle_pending(older_than_s)

    def text_of(self, doc: Document) -> str:
        """The text a document's chunks are cut from (its blob, extracted again)."""
        return document_text(
            doc.path, doc.content_type, self.blobs.get(doc.blob_key), image_captions(doc.metadata)
        )

    def _again(self, brain: Brain, paths: Sequence[str], attempt: Callable[[], T]) -> T:
        """`attempt` (which reads the documents at `paths` and commits), again when its commit
        lost to a writer of one of them in another process: this process's writers of a path wait
        on its lock, another process's only show in the conditional commit. A conflict that leaves
        the documents as they were (a caller's claims moved) is the caller's to handle."""
        for _ in range(_WRITE_TRIES):
            before = [state_of(self.repo.stored(brain.id, path)) for path in paths]
            try:
                return attempt()
            except RecordConflict:
                if [state_of(self.repo.stored(brain.id, path)) for path in paths] == before:
                    raise
        raise Conflict(f"{excerpt(paths[0])} kept changing under other writers; try again")

    def _write_locked(
        self,
        brain: Brain,
        path: str,
        data: bytes,
        info: DocumentInput,
        existing: Document | None,
        also: Sequence[Put | Delete] = (),
        *,
        force: bool = False,
    ) -> WriteOutcome:
        staged = self._stage(brain, path, data, info, existing, force=force)
        return self._commit_staged(brain, path, staged, also)

    def _commit_staged(
        self, brain: Brain, path: str, staged: Staged, also: Sequence[Put | Delete] = ()
    ) -> WriteOutcome:
        """Commit a staged write (its chunks prepared) and index it, as `write` does."""
        if not staged.ops:
            if also:
                self.sync.settle(self.repo.commit(list(also)), [])
            if staged.document.deleted_at is None:
                self.sync.ensure_indexed(staged.document)
            return WriteOutcome(staged.document, created=False, changed=False)
        # Images and users' memories neither take nor give a sibling's excerpt (keeps_to_itself).
        if not staged.created or keeps_to_itself(staged.document):
            committed = self.repo.commit([*staged.ops, *also])
            faults.reached("documents.committed")
            doc = committed.documents[0]
            applied = self.indexer.apply(doc, staged.prepared)
            faults.reached("documents.indexed")
            self.sync.settle(committed, [doc.id] if applied else [])
            return WriteOutcome(doc, created=staged.created, changed=True)
        with self.folder_locks.hold([_lock_key(brain, folder_of(path))]):
            linked = self.siblings.link(staged.document, staged.text, self.clock.now())
            committed = self.repo.commit(
                [*staged.ops, *([linked.op] if linked.op else []), *also],
                touched=[(brain.id, doc_id) for doc_id in linked.fixups],
            )
            faults.reached("documents.committed")
            doc = committed.documents[0]
            applied = self.indexer.apply(doc, staged.prepared.with_context(linked.context))
            for doc_id, context in linked.fixups.items():
                self.indexer.set_context(brain.id, doc_id, context)
            faults.reached("documents.indexed")
            rewritten = {d.id for d in committed.documents}  # their records changed: more than a context
            fixed = [doc_id for doc_id in linked.fixups if doc_id not in rewritten]
            self.sync.settle(committed, [*([doc.id] if applied else []), *fixed])
        return WriteOutcome(doc, created=True, changed=True)

    def _stage(
        self,
        brain: Brain,
        path: str,
        data: bytes,
        info: DocumentInput,
        existing: Document | None,
        *,
        force: bool = False,
        defer: bool = False,
    ) -> Staged:
        """Build the next document record, its chunks and the record ops that commit it; store
        the bytes (content-addressed). No ops means the write would change nothing (never when
        `force`: the caller wants a new version). With `defer`, the new vectors are left for
        `_embed_staged` to make (`planned`), so many writes embed together."""
        if existing is not None:
            access.check_change(brain, existing.owner, f"the document at {excerpt(path)}")
        if info.memory is not None and info.memory.user_id is not None:
            access.check_change(brain, info.memory.user_id, f"memories of {excerpt(info.memory.user_id)}")
        digest = checksum(data)
        live = existing if existing and existing.deleted_at is None else None
        if not force and live and live.checksum_sha256 == digest and _same_info(live, info):
            return Staged(live, self.indexer.nothing(), [], "", created=False)
        if info.text is not None:
            text = info.text
        else:
            text = document_text(path, info.content_type, data, image_captions(info.metadata))
        now = self.clock.now()
        blob_key = f"{brain.id}/{digest[:2]}/{digest}"
        if not self.blobs.exists(blob_key):
            self.blobs.put(blob_key, data)
        metadata = dict(info.metadata)
        if info.tags:
            metadata["tags"] = ",".join(info.tags)
        doc = Document(
            id=existing.id if existing else (info.doc_id or new_id("doc")),
            brain_id=brain.id,
            path=path,
            title=info.title or title_for(path, text),
            content_type=info.content_type or _content_type(path),
            source=info.source,
            checksum_sha256=digest,
            byte_size=len(data),
            blob_key=blob_key,
            version=existing.version if existing else 0,
            commit_sha=hashlib.sha1(f"{brain.id}:{path}:{digest}:{now.isoformat()}".encode()).hexdigest(),
            metadata=metadata,
            tags=list(info.tags),
            memory=info.memory,
            created_at=live.created_at if live else now,
            updated_at=now,
        )
        planned: PlannedChunks | None = None
        if info.staged_chunks is not None:
            prepared = self.indexer.staged(info.staged_chunks)
        elif defer:
            planned = self.indexer.plan(doc, text)
            prepared = replace(self.indexer.nothing(), count=planned.count)
        else:
            prepared = self.indexer.prepare(doc, text)
        doc = doc.model_copy(update={"chunk_count": prepared.count})
        ops: list[Put | Delete] = [
            self.repo.put_op(doc, existing.version if existing else 0),
            self.repo.pointer_op(doc),
        ]
        return Staged(doc, prepared, ops, text, created=live is None, planned=planned)

    def _embed_staged(
        self, staged: Sequence[Staged], recent: RecentVectors | None = None
    ) -> builtins.list[Staged]:
        """The staged writes with their chunks prepared: the new vectors of all of them made in
        one embedding call (the embedder's batches and parallel runs span documents); with
        `recent`, texts embedded by an earlier step are not embedded again."""
        plans = [s.planned for s in staged if s.planned is not None]
        prepared = iter(self.indexer.finish(plans, recent))
        return [s if s.planned is None else replace(s, prepared=next(prepared), planned=None) for s in staged]

    # -- bulk writes -----------------------------------------------------------------------

    def write_many(
        self,
        brain: Brain,
        items: Sequence[tuple[str, bytes, DocumentInput] | DeferredWrite],
        *,
        reason: str | None = None,
        done: Callable[[int, WriteOutcome | CairnError], None] | None = None,
        step_chunks: int | None = None,
    ) -> builtins.list[WriteOutcome | CairnError]:
        """`write` of each (path, bytes, info) in order, the new chunks of many documents embedded
        together. Each document still commits alone, atomically with its chunks, and ends as
        `write` would leave it; one that fails gets its CairnError in its place and the others
        are written. A path that repeats waits for the earlier write to commit, so it sees it.

        A pipeline: the writes are staged (chunked; a DeferredWrite made) in steps of about
        `step_chunks` (default STEP_CHUNKS) texts to embed; a step is embedded on a background
        thread while this thread commits the step before it and stages the one after (at most two
        steps staged and not committed). Both may be embedding at once, on two threads: the later
        one is tokenized and its runs queue behind the earlier one's, so the embedder's workers do
        not idle between steps (3 % of their time when one step was embedded at a time). A text
        that an earlier step embedded (a licence or footer many documents repeat) is not embedded
        again (RecentVectors keeps the last few thousand). Every
        read and write of the stores stays on this thread, in item order, so an interrupt leaves
        what stopping `write` one by one would.
        `done(n, result)` is called for every item in order, right after its commit, with no lock
        held (it may write). A write is staged without its path's lock and committed under it; a
        document written in between by another writer is staged again there, as `write` would."""
        step_chunks = STEP_CHUNKS if step_chunks is None else step_chunks
        if step_chunks < 1:
            raise ValueError("step_chunks must be positive")
        results: builtins.list[WriteOutcome | CairnError | None] = [None] * len(items)
        flight: deque[tuple[_Step, Future[builtins.list[Staged]]]] = deque()
        step = _Step()
        pool = ThreadPoolExecutor(2, thread_name_prefix="write-many-embed")
        recent = RecentVectors()

        def submit() -> None:
            nonlocal step
            if step.entries:
                flight.append((step, pool.submit(self._embed_staged, step.staged(), recent)))
                step = _Step()

        def commit_oldest() -> None:
            waiting, future = flight.popleft()
            self._commit_step(brain, waiting, future.result(), results, reason, done)

        try:
            for n, item in enumerate(items):
                try:
                    path = validate_path(item.path if isinstance(item, DeferredWrite) else item[0])
                except CairnError as exc:
                    step.entries.append(_Entry(n, exc))
                    continue
                if step.holds(path) or any(s.holds(path) for s, _ in flight):
                    submit()
                    while flight:
                        commit_oldest()
                try:
                    data, info = item.make() if isinstance(item, DeferredWrite) else (item[1], item[2])
                    existing = self.repo.stored(brain.id, path)
                    staged = self._stage(brain, path, data, info, existing, defer=True)
                except CairnError as exc:
                    step.entries.append(_Entry(n, exc))
                    continue
                step.add(_Entry(n, None, path, data, info, existing, staged))
                if step.chunks >= step_chunks:
                    submit()
                    if len(flight) > 1:
                        commit_oldest()
            submit()
            while flight:
                commit_oldest()
        finally:  # after an error or an interrupt, drop the steps not yet embedded
            pool.shutdown(wait=False, cancel_futures=True)
        return [r for r in results if r is not None]

    def _commit_step(
        self,
        brain: Brain,
        step: _Step,
        ready: builtins.list[Staged],
        results: builtins.list[WriteOutcome | CairnError | None],
        reason: str | None,
        done: Callable[[int, WriteOutcome | CairnError], None] | None,
    ) -> None:
        embedded = iter(ready)
        for entry in step.entries:
            result: WriteOutcome | CairnError
            if entry.error is not None:
                result = entry.error
            else:
                try:
                    result = self._commit_entry(brain, entry, next(embedded), reason)
                except CairnError as exc:
                    result = exc
            results[entry.n] = result
            if done is not None:
                done(entry.n, result)

    def _commit_entry(self, brain: Brain, entry: _Entry, staged: Staged, reason: str | None) -> WriteOutcome:
        assert entry.path is not None and entry.data is not None and entry.info is not None
        path, data, info = entry.path, entry.data, entry.info

        def attempt() -> WriteOutcome:
            current = self.repo.stored(brain.id, path)
            ready = staged
            if state_of(current) != state_of(entry.existing):  # written since it was staged
                ready = self._stage(brain, path, data, info, current)
            return self._commit_staged(brain, path, ready)

        with self.locks.hold([_lock_key(brain, path)]):
            outcome = self._again(brain, [path], attempt)
            self._publish_write(brain, path, outcome, reason)
        return outcome

    # -- batches ---------------------------------------------------------------------------

    def batch(self, brain: Brain, ops: Sequence[BatchOp], *, reason: str | None = None) -> int:
        """Apply every op or none. Ops replay over a journal, then commit in one transaction."""
        if not ops:
            return 0
        if len(ops) > self.max_batch_ops:
            raise PayloadTooLarge(f"batch has {len(ops)} ops; the limit is {self.max_batch_ops}")
        if sum(len(op.content) for op in ops) > self.max_batch_bytes:
            raise PayloadTooLarge(f"batch payload exceeds {self.max_batch_bytes} bytes after decoding")
        paths = _batch_paths(ops)
        recent = RecentVectors()  # a retry after a lost race embeds nothing twice

        def attempt() -> tuple[_Batch, Committed | None]:
            batch = self._stage_batch(brain, ops, paths, reason, recent)
            return batch, self.repo.commit(batch.commit_ops) if batch.commit_ops else None

        with self.locks.hold(_lock_key(brain, p) for p in paths):
            batch, committed = self._again(brain, paths, attempt)
            removed, staged, events = batch.removed, batch.staged, batch.events
            faults.reached("batch.committed")
            by_path = {d.path: d for d in committed.documents} if committed else {}
            applied: list[str] = []
            for doc in removed:
                self.indexer.remove(doc)
                applied.append(doc.id)
            for n, (doc, prepared) in enumerate(staged):
                if n == len(staged) // 2:
                    faults.reached("batch.indexed")
                if self.indexer.apply(by_path.get(doc.path, doc), prepared):
                    applied.append(doc.id)
            if committed is not None:
                self.sync.settle(committed, applied)
            self._publish(brain, events)
        return len(ops)

    def _stage_batch(
        self,
        brain: Brain,
        ops: Sequence[BatchOp],
        paths: Sequence[str],
        reason: str | None,
        recent: RecentVectors,
    ) -> _Batch:
        """The batch replayed over what the paths hold now: the record ops to commit, and the
        chunks of every written document, embedded together."""
        before = {p: self.repo.stored(brain.id, p) for p in paths}
        for path, held in before.items():
            if held is not None:
                access.check_change(brain, held.owner, f"the document at {excerpt(path)}")
        journal, events = self._replay(ops, before, reason)
        batch = _Batch(events=events)
        written: list[Staged] = []
        for path, state in journal.items():
            old = before[path]
            live = old if old and old.deleted_at is None else None
            if state is None:
                if live is not None:
                    now = self.clock.now()
                    gone = live.model_copy(update={"deleted_at": now, "updated_at": now, "chunk_count": 0})
                    batch.commit_ops.append(self.repo.put_op(gone, live.version))
                    batch.removed.append(live)
                continue
            next_state = self._stage(brain, path, state, DocumentInput(), old, defer=True)
            if next_state.ops:
                batch.commit_ops += next_state.ops
                written.append(next_state)
        started = time.perf_counter()
        for ready in self._embed_staged(written, recent):
            prepared = ready.prepared.with_context(None) if ready.created else ready.prepared
            batch.staged.append((ready.document, prepared))
        _log_throughput(brain, len(ops), batch.staged, time.perf_counter() - started)
        return batch

    def _replay(
        self, ops: Sequence[BatchOp], before: Mapping[str, Document | None], reason: str | None
    ) -> tuple[dict[str, bytes | None], builtins.list[ChangeEvent]]:
        """Final state per touched path (bytes, or None = deleted) and one event per op."""
        journal: dict[str, bytes | None] = {}

        def current(path: str) -> bytes | None:
            if path in journal:
                return journal[path]
            doc = before[path]
            return self.blobs.get(doc.blob_key) if doc and doc.deleted_at is None else None

        events: builtins.list[ChangeEvent] = []

        def event(kind: ChangeKind, path: str, old_path: str | None = None) -> None:
            held = before.get(old_path or path)
            owner = held.owner if held is not None else None
            events.append(
                ChangeEvent(
                    kind=kind, path=path, old_path=old_path, when=self.clock.now(), reason=reason, owner=owner
                )
            )

        for index, op in enumerate(ops):
            existed = current(op.path) is not None
            if op.type == "write":
                journal[op.path] = op.content
                event("updated" if existed else "created", op.path)
            elif op.type == "append":
                journal[op.path] = (current(op.path) or b"") + op.content
                event("updated" if existed else "created", op.path)
            elif op.type == "delete":
                if not existed:
                    raise NotFound(f"op {index}: not found: {excerpt(op.path)}")
                journal[op.path] = None
                event("deleted", op.path)
            elif op.type == "rename":
                assert op.to is not None
                content = current(op.path)
                if content is None:
                    raise NotFound(f"op {index}: not found: {excerpt(op.path)}")
                journal[op.to] = content
                if op.to != op.path:
                    journal[op.path] = None
                event("renamed", op.to, op.path)
            else:
                raise InvalidInput(f"op {index}: unknown type {excerpt(op.type)}")
        return journal, events

    def _publish_write(self, brain: Brain, path: str, outcome: WriteOutcome, reason: str | None) -> None:
        if outcome.changed:
            kind: ChangeKind = "created" if outcome.created else "updated"
            owner = outcome.document.owner
            self._publish(
                brain, [ChangeEvent(kind=kind, path=path, when=self.clock.now(), reason=reason, owner=owner)]
            )

    def _publish(self, brain: Brain, events: builtins.list[ChangeEvent]) -> None:
        """Called with the paths' locks held, so events leave in commit order."""
        self.events.publish(brain.id, events)


def _batch_paths(ops: Sequence[BatchOp]) -> list[str]:
    paths: list[str] = []
    for index, op in enumerate(ops):
        for p in (op.path, op.to) if op.type == "rename" else (op.path,):
            if p is None:
                raise InvalidInput(f"op {index}: rename needs 'to'")
            try:
                validate_path(p)
            except InvalidInput as exc:
                raise type(exc)(f"op {index}: {exc.message}") from None
            if p not in paths:
                paths.append(p)
    return paths


def _expect_version(path: str, found: Document | None, expected: int | None) -> None:
    """Raise VersionConflict unless the live document at `path` is at `expected` (None: absent)."""
    current = found.version if found is not None and found.deleted_at is None else None
    if current == expected:
        return
    if expected is None:
        message = f"a document already exists at {excerpt(path)} (version {current})"
    elif current is None:
        message = f"no document exists at {excerpt(path)} (expected version {expected})"
    else:
        message = f"{excerpt(path)} is at version {current}, not {expected}"
    raise VersionConflict(message, current_version=current, expected_version=expected)


@dataclass
class _Batch:
    """A batch staged: the record ops to commit, the documents it deletes, the written documents
    with their prepared chunks, and one event per op."""

    events: list[ChangeEvent]
    commit_ops: list[Put | Delete] = field(default_factory=list)
    removed: list[Document] = field(default_factory=list)
    staged: list[tuple[Document, PreparedChunks]] = field(default_factory=list)


@dataclass(frozen=True)
class _Entry:
    """An item of a write_many step: its error, or what it was staged from and the staged write."""

    n: int
    error: CairnError | None
    path: str | None = None
    data: bytes | None = None
    info: DocumentInput | None = None
    existing: Document | None = None
    staged: Staged | None = None


@dataclass
class _Step:
    """Items of write_many staged together, whose new chunks are embedded in one call."""

    entries: list[_Entry] = field(default_factory=list)
    chunks: int = 0  # texts to embed
    paths: set[str] = field(default_factory=set)

    def add(self, entry: _Entry) -> None:
        assert entry.staged is not None and entry.path is not None
        self.entries.append(entry)
        self.paths.add(entry.path)
        if entry.staged.planned is not None:
            self.chunks += len(entry.staged.planned.missing)

    def holds(self, path: str) -> bool:
        return path in self.paths

    def staged(self) -> list[Staged]:
        return [e.staged for e in self.entries if e.staged is not None]


def _lock_key(brain: Brain, path: str) -> str:
    return f"{brain.id}\x00{path}"


def _stamp(doc: Document) -> str:
    return doc.updated_at.isoformat().replace("+00:00", "Z")


def _file_info(doc: Document) -> FileInfo:
    return FileInfo(path=doc.path, size=doc.byte_size, mtime=_stamp(doc), is_dir=False)


def keep_info(
    doc: Document | None,
    *,
    metadata: Mapping[str, MetadataValue] | None = None,
    memory: MemoryFacet | None = None,
) -> DocumentInput:
    """What a rewrite of `doc` says about it: everything it had, with `metadata` and `memory`
    replaced when given (tags are kept as tags, not as the metadata.tags they are stored in)."""
    if doc is None:
        return DocumentInput()
    meta = {k: v for k, v in (doc.metadata if metadata is None else metadata).items() if k != "tags"}
    return DocumentInput(
        title=doc.title,
        tags=doc.tags,
        metadata=meta,
        source=doc.source,
        content_type=doc.content_type,
        memory=doc.memory if memory is None else memory,
    )


def _same_info(doc: Document, info: DocumentInput) -> bool:
    """An identical rewrite is a no-op only when nothing the caller said differs either."""
    return (
        (info.title is None or info.title == doc.title)
        and (not info.tags or list(info.tags) == doc.tags)
        and all(doc.metadata.get(k) == v for k, v in info.metadata.items())
        and (info.memory is None or info.memory == doc.memory)
    )


_CONTENT_TYPES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".json": "application/json",
    ".html": "text/html",
    ".htm": "text/html",
    ".pdf": "application/pdf",
}


def _content_type(path: str) -> str:
    return _CONTENT_TYPES.get(posixpath.splitext(path)[1].lower(), "text/markdown")


def _log_throughput(
    brain: Brain, ops: int, staged: Sequence[tuple[Document, PreparedChunks]], seconds: float
) -> None:
    """A batch's progress line: how many chunks its documents needed and how fast they came."""
    chunks = sum(len(prepared.chunks) for _, prepared in staged)
    if chunks:
        log.info(
            "batch-ops on %s: %d ops, %d documents, %d chunks prepared in %.2f s (%.1f chunks/s)",
            brain.slug,
            ops,
            len(staged),
            chunks,
            seconds,
            chunks / max(seconds, 1e-9),
        )
