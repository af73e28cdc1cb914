"""The state every document operation shares and the steps of the write protocol: path locks,
staging (chunks and vectors), the conditional commit retried against other processes (`_again`),
index settling, and change events."""

from __future__ import annotations

import builtins
import hashlib
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TypeVar

from cairn import faults
from cairn.auth import access
from cairn.domain.errors import (
    CairnError,
    Conflict,
    DamagedContent,
    InvalidInput,
    NotFound,
    RecordConflict,
)
from cairn.domain.ids import new_id
from cairn.domain.models import Brain, Document, MemoryFacet
from cairn.domain.paths import in_folder_of, in_owned_folder, others_folder_refusal, owned_folder_refusal
from cairn.domain.text import excerpt
from cairn.ports.blobs import BlobStore
from cairn.ports.clock import Clock
from cairn.ports.records import Delete, Put
from cairn.services.documents.blob_keys import blob_key, own_folder
from cairn.services.documents.damaged_marks import DamagedMarks
from cairn.services.documents.document_text import document_text, image_captions, title_for
from cairn.services.documents.index_sync import IndexSync, state_of
from cairn.services.documents.indexing import DocumentIndexer, PlannedChunks, PreparedChunks, RecentVectors
from cairn.services.documents.inputs import (
    DocumentInput,
    Staged,
    WriteOutcome,
    checksum,
    content_type,
    lock_key,
    same_info,
)
from cairn.services.documents.locks import KeyedLocks
from cairn.services.documents.siblings import Linked, SiblingContext, folder_of, keeps_to_itself
from cairn.services.documents.stored_first import indexing_after_commit
from cairn.services.events import ChangeEvent, ChangeKind, EventBus
from cairn.services.links.pending import PendingLinks
from cairn.services.repositories import Committed, DocumentRepository

log = logging.getLogger(__name__)


WRITE_TRIES = 16


T = TypeVar("T")


class DocumentCore:
    """Shared by the read, write, bulk and batch parts of DocumentService (service.py)."""

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
        companions: Callable[[Document], Sequence[Put | Delete]] | None = None,
        erasing: PendingLinks | None = None,
    ) -> None:
        """`companions`: the records another service keeps beside a document, removed in the same
        transaction whenever the document is deleted or erased (ThoughtMCP's rows), or written
        over by a version that no longer has them. `erasing`: where an erase marks that it is
        under way (writes.py ERASES), for the sweep to finish one a process stopped half-way."""
        self.repo = repo
        self.erasing = erasing
        self.damaged = DamagedMarks(repo.records)  # what reads found damaged, for counts of records
        self.companions_of = companions or (lambda _doc: ())
        self._removal_hooks: list[Callable[[Brain, Sequence[Document]], object]] = []
        self._retire_hooks: list[Callable[[Brain, Sequence[Document]], None]] = []
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

    def _with_companions(self, doc: Document, ops: Sequence[Put | Delete]) -> list[Put | Delete]:
        """`ops` removing `doc`, and its companions' removal (those `ops` do not touch already: a
        transaction names each record once)."""
        named = {_record_of(op) for op in ops}
        return [*ops, *(op for op in self.companions_of(doc) if _record_of(op) not in named)]

    def when_removed(self, hook: Callable[[Brain, Sequence[Document]], object]) -> None:
        """Call `hook` with the documents a deletion or erasure removed (a batch's together) once
        it has committed, for what another service keeps beside them that one transaction cannot
        take (ThoughtMCP's waypoint links and the statistics of the memories at their other ends:
        records read and rewritten under their own versions). It runs as the system: the removal
        itself was checked."""
        self._removal_hooks.append(hook)

    def when_shortened(self, hook: Callable[[str, str, int], object]) -> None:
        """Call `hook(brain id, document id, chunks kept)` whenever a write, through any path,
        leaves a document fewer chunks than its index held (dropped_chunks.py): for records keyed
        by the dropped chunks' ids (Mnemosyne's concept links). It runs as the system, after the
        chunks went; a failing hook is logged and the write stands."""
        self.indexer.dropped.add(hook)

    def when_retired(self, hook: Callable[[Brain, Sequence[Document]], None]) -> None:
        """Call `hook` with the documents a soft deletion took (`retire`, whatever surface asked
        for it, and a batch's deletes), after it committed, as they were before it: what another
        service keeps in order across documents follows (a fact key's line is joined over a
        deleted value, MemoryService.join_over_deleted). An erasure does its own before it
        removes anything (services/erasure/documents.py). It runs as the system."""
        self._retire_hooks.append(hook)

    def _retired(self, brain: Brain, gone: Sequence[Document]) -> None:
        """The retire hooks of documents whose soft deletion committed. A failing hook is logged:
        the deletion stands, and the caller is told it happened."""
        if not gone:
            return
        with access.as_system():
            for hook in self._retire_hooks:
                try:
                    hook(brain, gone)
                except Exception:
                    log.exception("tidying after the deletion of %d documents failed", len(gone))

    def _removed(self, brain: Brain, gone: Sequence[Document]) -> int:
        """The removal hooks of documents whose removal committed; returns the links they removed
        (those a hook answers with a count of), for an erasure's receipt. A failing hook is logged:
        the removal stands, and the caller is told it happened."""
        if not gone:
            return 0
        removed = 0
        with access.as_system():
            for hook in self._removal_hooks:
                try:
                    done = hook(brain, gone)
                except Exception:
                    log.exception("tidying after the removal of %d documents failed", len(gone))
                    continue
                if isinstance(done, int) and not isinstance(done, bool):
                    removed += done
        return removed

    def _forget_as_context(self, brain: Brain, gone: Sequence[Document]) -> None:
        """Documents removed from search: the recent siblings indexed with an excerpt of one of them
        as their context lose it, so the removed text's words no longer find them (an erasure also
        clears older ones, services/erasure/documents.py)."""
        if gone:
            ids = {d.id for d in gone}
            self.clear_contexts(brain.id, self.siblings.forget(brain.id, {d.path for d in gone}) - ids)

    def clear_contexts(self, brain_id: str, doc_ids: Iterable[str]) -> int:
        """These documents' chunks lose the sibling excerpt they were indexed with; returns how many
        had one."""
        changed = 0
        for doc_id in doc_ids:
            chunks = self.indexer.index.get_chunks(brain_id, doc_id)
            if chunks and chunks[0].context:
                self.indexer.index.set_context(brain_id, doc_id, "")
                changed += 1
        return changed

    def text_of(self, doc: Document) -> str:
        """The text a document's chunks are cut from (its blob, extracted again)."""
        return document_text(doc.path, doc.content_type, self.bytes_of(doc), image_captions(doc.metadata))

    def _keep_blob(self, key: str, data: bytes, digest: str) -> None:
        """Store the bytes at their content address, unless a sound copy is there already (one that
        was damaged is replaced, so writing a document again mends it)."""
        try:
            if checksum(self.blobs.get(key)) == digest:
                return
        except NotFound:
            pass
        self.blobs.put(key, data)

    def bytes_of(self, doc: Document) -> bytes:
        """The document's stored bytes, checked against the checksum its record holds (blobs are
        content-addressed): bytes that no longer read back as written, or a blob gone while its
        record still names it, raise DamagedContent. A blob removed with its record by a delete
        that came meanwhile is NotFound, as the document is."""
        try:
            data = self.blobs.get(doc.blob_key)
        except NotFound:
            now = self.repo.get_by_id(doc.id)
            if now is None or now.version != doc.version or now.blob_key != doc.blob_key:
                raise
            self._noted(doc)
            raise DamagedContent(
                f"the stored content of {excerpt(doc.path)} is missing: restore it from a backup or "
                "write the document again (`cairn check --deep` lists every damaged document)"
            ) from None
        if doc.blob_key.endswith(doc.checksum_sha256) and checksum(data) != doc.checksum_sha256:
            self._noted(doc)
            raise DamagedContent(
                f"the stored content of {excerpt(doc.path)} is damaged (it no longer matches its "
                "checksum): restore it from a backup or write the document again (`cairn check "
                "--deep` lists every damaged document)"
            )
        return data

    def _noted(self, doc: Document) -> None:
        """Mark the document found damaged (damaged_marks.py); a store refusing the mark leaves the
        answer as it was: the document is still damaged, and the next read marks it."""
        try:
            self.damaged.note(doc)
        except CairnError as exc:
            log.warning("document %s found damaged, not marked: %s", doc.id, exc.message)

    def damaged_now(self, brain_id: str) -> list[Document]:
        """The brain's live documents a read found damaged that are damaged still: each marked
        one's bytes read again; the marks of those gone, written since or sound again are dropped."""
        marks = self.damaged.marked(brain_id)
        if not marks:
            return []
        docs = self.repo.get_many_by_id([m.doc_id for m in marks])
        found = []
        for mark in marks:
            doc = docs.get(mark.doc_id)
            if doc is None or doc.brain_id != brain_id or doc.version != mark.found_at or doc.deleted_at:
                self.damaged.drop(brain_id, mark)  # gone, deleted or written since
                continue
            try:
                self.bytes_of(doc)
            except DamagedContent:
                found.append(doc)
                continue
            except NotFound:  # removed meanwhile
                continue
            self.damaged.drop(brain_id, mark)
        return found

    def _again(self, brain: Brain, paths: Sequence[str], attempt: Callable[[list[Document | None]], T]) -> T:
        """`attempt` (given the stored documents at `paths`, read here, and committing against
        their versions), again when its commit lost to a writer of one of them in another process:
        this process's writers of a path wait on its lock, another process's only show in the
        conditional commit. A conflict that leaves the documents as they were (a caller's claims
        moved) is the caller's to handle."""
        for _ in range(WRITE_TRIES):
            current = [self.repo.stored(brain.id, path) for path in paths]
            before = [state_of(doc) for doc in current]
            try:
                return attempt(current)
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

    def _commit_or_drop(
        self, written: Sequence[Document], ops: list[Put | Delete], touched: Sequence[tuple[str, str]] = ()
    ) -> Committed:
        """`repo.commit` of the records of `written` (staged with new bytes); when its condition
        fails nothing was written, so their bytes go too: each key is its write's own
        (blob_keys.py), named by no record. (Any other failure may have committed: they stay.)"""
        try:
            return self.repo.commit(ops, touched=touched)
        except RecordConflict:
            self._drop_staged(written)
            raise

    def _drop_staged(self, written: Sequence[Document]) -> None:
        for doc in written:
            if own_folder(doc) is not None:
                self.blobs.delete(doc.blob_key)

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
            committed = self._commit_or_drop([staged.document], [*staged.ops, *also])
            faults.reached("documents.committed")
            doc = committed.documents[0]
            with indexing_after_commit(f"the document at {excerpt(path)}"):
                applied = self.indexer.apply(doc, staged.prepared)
                faults.reached("documents.indexed")
                self.sync.settle(committed, [doc.id] if applied else [])
            return WriteOutcome(doc, created=staged.created, changed=True)
        with self.folder_locks.hold([lock_key(brain, folder_of(path))]):
            committed, linked = self._commit_linked(brain, path, staged, also)
            faults.reached("documents.committed")
            doc = committed.documents[0]
            with indexing_after_commit(f"the document at {excerpt(path)}"):
                applied = self.indexer.apply(doc, staged.prepared.with_context(linked.context))
                for doc_id, context in linked.fixups.items():
                    self.indexer.set_context(brain.id, doc_id, context)
                faults.reached("documents.indexed")
                rewritten = {d.id for d in committed.documents}  # records changed: more than a context
                fixed = [doc_id for doc_id in linked.fixups if doc_id not in rewritten]
                ring = linked.op.item if linked.op is not None else None
                self.sync.settle(committed, [*([doc.id] if applied else []), *fixed], ring)
        return WriteOutcome(doc, created=True, changed=True)

    def _commit_linked(
        self, brain: Brain, path: str, staged: Staged, also: Sequence[Put | Delete]
    ) -> tuple[Committed, Linked]:
        """Commit a created document with its place among its folder's recent siblings. Another
        process may add a sibling to them between the read and the commit: the commit then fails on
        them alone, and only the linking is done again (the staged bytes and chunks stand)."""
        for _ in range(WRITE_TRIES):
            linked = self.siblings.link(staged.document, staged.text, self.clock.now())
            try:
                committed = self.repo.commit(
                    [*staged.ops, *([linked.op] if linked.op else []), *also],
                    touched=[(brain.id, doc_id) for doc_id in linked.fixups],
                )
                return committed, linked
            except RecordConflict:
                if not self.siblings.moved(linked):
                    self._drop_staged([staged.document])
                    raise
        self._drop_staged([staged.document])
        raise Conflict(f"the recent siblings of {excerpt(path)} kept changing under other writers; try again")

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
        if in_owned_folder(path) and (info.memory is None or info.memory.user_id is None):
            # before anything is read: the answer is the same whether a memory is there or not
            raise InvalidInput(owned_folder_refusal(path))
        if in_owned_folder(path) and info.memory and not in_folder_of(path, info.memory.user_id or ""):
            raise InvalidInput(others_folder_refusal(path))
        if existing is not None:
            access.check_change(brain, existing.owner, f"the document at {excerpt(path)}")
        if info.memory is not None and info.memory.user_id is not None:
            access.check_change(brain, info.memory.user_id, f"memories of {excerpt(info.memory.user_id)}")
        digest = checksum(data)
        live = existing if existing and existing.deleted_at is None else None
        check_replaceable(path, live, info.memory)
        if not force and live and live.checksum_sha256 == digest and same_info(live, info):
            self._keep_blob(live.blob_key, data, digest)  # writing it again mends damaged bytes
            return Staged(live, self.indexer.nothing(), [], "", created=False)
        if info.text is not None:
            text = info.text
        else:
            text = document_text(path, info.content_type, data, image_captions(info.metadata))
        now = self.clock.now()
        # A deleted document's id stays with it: what is keyed by that id (links, raw data)
        # must not attach to a new document written at its path.
        doc_id = live.id if live else (info.doc_id or new_id("doc"))
        key = blob_key(brain.id, doc_id, digest)
        self._keep_blob(key, data, digest)
        metadata = dict(info.metadata)
        if info.tags:
            metadata["tags"] = ",".join(info.tags)
        doc = Document(
            id=doc_id,
            brain_id=brain.id,
            path=path,
            title=info.title or title_for(path, text),
            content_type=info.content_type or content_type(path),
            source=info.source,
            checksum_sha256=digest,
            byte_size=len(data),
            blob_key=key,
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
            replaced = live.chunk_count if live else None if existing else 0  # deleted: not known
            prepared = self.indexer.staged(info.staged_chunks, replaced)
        elif defer:
            planned = self.indexer.plan(doc, text)
            prepared = replace(self.indexer.nothing(), count=planned.count)
        else:
            prepared = self.indexer.prepare(doc, text)
        doc = doc.model_copy(update={"chunk_count": prepared.count})
        ops: list[Put | Delete] = [
            self.repo.put_op(doc, existing.version if existing else 0),
            self.repo.pointer_op(doc, new=existing is None or existing.id != doc.id),
        ]
        if live is not None and live.blob_key != key and own_folder(live) is not None:
            ops.append(self.repo.old_bytes.put_op(brain.id, live.id, live.blob_key))  # collected later
        if live is not None:  # written over by what no longer has them (a PUT over a memory's document)
            kept = {_record_of(op) for op in self.companions_of(doc)}
            ops += [op for op in self.companions_of(live) if _record_of(op) not in kept]
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


def log_throughput(
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


def _record_of(op: Put | Delete) -> tuple[str, str]:
    return (op.item.pk, op.item.sk) if isinstance(op, Put) else (op.pk, op.sk)


def check_replaceable(path: str, live: Document | None, memory: MemoryFacet | None) -> None:
    """Refuse to put what is not the same kind of memory in place of a memory whose record or
    owner would be lost: a plain write (or a rename onto it) would keep the text and drop them."""
    if live is None:
        return
    if live.owner is not None and (memory is None or memory.user_id != live.owner):
        # it would lose its owner: readable by the whole brain
        raise InvalidInput(
            f"the document at {excerpt(path)} is a ThoughtMCP user's memory: change it through "
            "ThoughtMCP (update_memory), or delete it"
        )
    if _recorded(live) and not (memory and memory.content_hash):
        # it would lose its record: its type, key and line
        raise InvalidInput(
            f"the document at {excerpt(path)} is a typed memory: update it through its surface "
            "(zengram brain_update or PATCH /memory/{id}), or delete it first"
        )


def _recorded(doc: Document) -> bool:
    """A typed memory MemoryService stored: its record keeps its text's hash, its type and line."""
    return doc.memory is not None and doc.memory.content_hash is not None
