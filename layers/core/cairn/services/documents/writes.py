"""Writing one document: write, versioned write, append, modify, rename, retire, delete, erase, and
reconciling a document whose index lags its record."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Final

from cairn import faults
from cairn.auth import access
from cairn.domain.errors import (
    AlsoMoved,
    Conflict,
    InvalidInput,
    RecordConflict,
)
from cairn.domain.models import Brain, Document
from cairn.domain.paths import (
    in_folder_of,
    in_owned_folder,
    others_folder_refusal,
    owned_folder_refusal,
    validate_path,
)
from cairn.domain.text import excerpt
from cairn.ports.records import Delete, Put
from cairn.services.documents.blob_keys import own_folder
from cairn.services.documents.core import WRITE_TRIES, check_replaceable
from cairn.services.documents.damaged_marks import mark_key
from cairn.services.documents.index_sync import state_of
from cairn.services.documents.indexing import PreparedChunks
from cairn.services.documents.inputs import (
    DocumentInput,
    WriteOutcome,
    expect_version,
    keep_info,
    lock_key,
)
from cairn.services.documents.old_bytes import GRACE_S
from cairn.services.documents.orphan_bytes import GRACE_S as ORPHAN_GRACE_S
from cairn.services.documents.orphan_bytes import collect_orphan_bytes
from cairn.services.documents.reads import DocumentReads, live_at
from cairn.services.documents.siblings import left_key
from cairn.services.documents.stored_first import indexing_after_commit
from cairn.services.documents.upload_expiry import EXPIRY_S as UPLOAD_EXPIRY_S
from cairn.services.documents.upload_expiry import expire_uploads
from cairn.services.events import ChangeEvent
from cairn.services.repositories import Committed, doc_id_key, doc_key

ERASES: Final = "erases"
"""The pending-links kind (services/links/pending.py) of an erase under way: written before the
document's folder goes, deleted by the commit that removes its record, so a process killed between
the two leaves it for the sweep, which finishes the erase (services/erasure/interrupted.py)."""


@dataclass(frozen=True)
class Erased:
    """A document erased: how many stored versions of its bytes went with it, and the ids of the
    chunks it had when its removal committed (those of the version erased, read before they went).
    `document` None: the erase removed its bytes, then found it erased meanwhile by another.
    `links`: those its removal hooks removed after the commit (a linker's that raced it)."""

    document: Document | None
    blobs: int
    chunks: tuple[str, ...] = ()
    links: int = 0


class DocumentWrites(DocumentReads):
    """The single-document writes of DocumentService."""

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
        with self.locks.hold([lock_key(brain, path)]):
            outcome = self._again(
                brain,
                [path],
                lambda current: self._write_locked(
                    brain, path, data, info or DocumentInput(), current[0], also
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
        with self.locks.hold([lock_key(brain, path)]):
            existing = self.repo.stored(brain.id, path)
            expect_version(path, existing, expected_version)
            live = existing if existing and existing.deleted_at is None else None
            chosen = info(live) if callable(info) else (info or DocumentInput())
            try:
                outcome = self._write_locked(brain, path, data, chosen, existing, also, force=True)
            except Conflict:
                expect_version(path, self.repo.stored(brain.id, path), expected_version)
                raise  # the document is as expected: an `also` record moved, or the siblings kept moving
            self._publish_write(brain, path, outcome, reason)
        return outcome

    def append(self, brain: Brain, path: str, data: bytes, *, reason: str | None = None) -> WriteOutcome:
        """The bytes added to the end of the document at `path` (made if there is none). Not to a
        typed memory (a zengram memory, a ThoughtMCP one), whose record holds its text's hash and
        vectors: its surface's update changes both."""
        path = validate_path(path)
        if in_owned_folder(path):  # before anything is read: the same answer, a memory there or not
            raise InvalidInput(owned_folder_refusal(path))

        def attempt(current: list[Document | None]) -> WriteOutcome:
            existing = current[0]
            live = existing if existing and existing.deleted_at is None else None
            if live is not None and typed(live):
                access.check_change(brain, live.owner, f"the document at {excerpt(path)}")
                raise InvalidInput(
                    f"the document at {excerpt(path)} is a typed memory: appending would change its text "
                    "but not its record; update it through its surface (zengram brain_update or "
                    "PATCH /memory/{id}, ThoughtMCP update_memory)"
                )
            base = self.bytes_of(live) if live else b""
            return self._write_locked(brain, path, base + data, keep_info(live), existing)

        with self.locks.hold([lock_key(brain, path)]):
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
        expected_version: int | None = None,
    ) -> Document:
        """Soft-delete, recording `why` (merged, pruned, ...) and the document that replaced it;
        with `expected_version`, only the version the caller read (VersionConflict otherwise: a
        job retiring what it folded elsewhere never retires a later write it did not see)."""
        path = validate_path(path)

        def attempt(current: list[Document | None]) -> tuple[Document, Committed]:
            doc = live_at(path, self.repo.seen(current[0]))
            if expected_version is not None:
                expect_version(path, doc, expected_version)
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
            return doc, self.repo.commit(self._with_companions(doc, [self.repo.put_op(gone, doc.version)]))

        with self.locks.hold([lock_key(brain, path)]):
            doc, committed = self._again(brain, [path], attempt)
            faults.reached("documents.committed")
            with indexing_after_commit(f"the deletion of {excerpt(path)}"):
                self.indexer.remove(doc)
                faults.reached("documents.indexed")
                self.sync.settle(committed, [doc.id])
            self._forget_as_context(brain, [doc])
            self._removed(brain, [doc])
            self._retired(brain, [doc])
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
        companions: bool = True,
        doc_id: str | None = None,
        tally: Callable[[int], Sequence[Put]] | None = None,
    ) -> Erased | None:
        """Remove a document entirely, not softly: its record, its id pointer, its chunks and its
        bytes, every version's (blob_keys.py), with `also` in the same transaction. A document
        stored at the brain's content address (written before each document had a folder) loses
        its current bytes unless `keep_blob`: a caller that cannot tell that no other document holds
        the same bytes keeps them (ThoughtMCP memories store their own id in their bytes, so theirs
        are never shared). None when there is no such document (an Erased without one when the
        erase removed its bytes, then found it erased by another). The document's folder goes
        before its record: killed between the two, the record is still there to erase again (the
        sweep does, from the ERASES mark written before), never a record gone with its text left
        on disk; a commit that loses to another writer of the document goes
        again at the version found (`_erase_locked`), so an erase never ends with the record left
        and its bytes gone. `companions=False`: the caller removes what other services
        keep beside the document itself, in `also` and after the commit, so neither the companions
        nor the removal hooks run (ThoughtMCP's forget, which knows whether its memory has links).
        `doc_id`: the document the caller read at `path`, erased wherever it is in the brain now; a
        document another writer moved to `path` meanwhile is another's, which stays whole.
        `tally`: writes for the commit, given the keys the erase removed before it (an erasure's
        record of what it removed so far, at the version it read: one moved is the caller's, as
        an `also` record's)."""
        path = validate_path(path)
        with self.locks.hold([lock_key(brain, path)]):
            doc = self.repo.stored(brain.id, path)
            if doc_id is not None and (doc is None or doc.id != doc_id):
                doc = self.repo.stored_by_id(doc_id)  # moved meanwhile
            if doc is None or doc.brain_id != brain.id:
                return None
            access.check_change(brain, doc.owner, f"the document at {excerpt(path)}")
            found, committed, blobs = self._erase_locked(brain, doc, also, companions, keep_blob, tally)
            if found is None or committed is None:
                # erased meanwhile, or another document took its path: what bytes it took first count
                return Erased(None, blobs) if blobs else None
            doc = found
            folder = own_folder(doc)
            faults.reached("documents.committed")
            # by its id: the path may name whom an erasure removes, and this is logged
            with indexing_after_commit(f"the erasure of document {doc.id}"):
                chunks = tuple(self.indexer.index.fingerprints(brain.id, doc.id))
                self.indexer.remove(doc)
                faults.reached("documents.indexed")
                self.sync.settle(committed, [doc.id])
            links = self._removed(brain, [doc]) if companions else 0
            if folder is not None:
                self.repo.old_bytes.forget([doc.id])  # what they named went with the folder
            self._publish(
                brain,
                [
                    ChangeEvent(
                        kind="deleted", path=doc.path, when=self.clock.now(), reason=reason, owner=doc.owner
                    )
                ],
            )
        return Erased(doc, blobs, chunks, links)

    def _erase_locked(
        self,
        brain: Brain,
        doc: Document,
        also: Sequence[Put | Delete],
        companions: bool,
        keep_blob: bool,
        tally: Callable[[int], Sequence[Put]] | None = None,
    ) -> tuple[Document | None, Committed | None, int]:
        """Remove `doc`'s folder (or its bytes at the brain's content address, unless `keep_blob`),
        then commit the removal of its record (with `also`, and its companions when asked): the
        document as committed, the commit, and how many keys went.
        Before the folder goes, a mark (ERASES) says the erase is under way; the commit deletes it.
        A commit that loses to another writer of the document (a metadata update, a recall's
        reinforcement, a write of new bytes into its folder, a rename, in another process) finds
        it again by its id and goes again at the version found, its folder first: its bytes are
        gone already, and the erase was asked of that document, so it finishes. None when the
        document is no longer there (erased meanwhile, or its path now holds another document: a
        new one, with a folder and bytes of its own, which the erase leaves alone; or its id, freed
        by an erasure meanwhile, now names another brain's document). A conflict that
        leaves the document as read (an `also` record moved) is the caller's."""
        blobs = 0
        shared_gone: set[str] = set()
        mark = self._erasing(brain, doc)
        marked = False
        for _ in range(WRITE_TRIES):
            folder = own_folder(doc)
            if folder is not None and mark is not None and not marked:
                self.repo.records.transact([mark])  # once: a try again finds it standing
                marked = True
                faults.reached("documents.erase_marked")
            if folder is not None:
                blobs += self.blobs.delete_prefix(folder)
            elif not keep_blob and doc.blob_key not in shared_gone:
                # before the record too: the index refusing after the commit (or a kill) stops the
                # erase there, and its resume no longer finds the document whose bytes these are
                self.blobs.delete(doc.blob_key)
                shared_gone.add(doc.blob_key)
                blobs += 1
            faults.reached("documents.bytes_erased")
            gone = [
                Delete(*doc_key(brain.id, doc.path), expected_version=doc.version),
                Delete(*doc_id_key(doc.id)),
                Delete(*left_key(brain.id, doc.id)),  # the paths it left, if it moved
                Delete(*mark_key(brain.id, doc.id)),  # a read found it damaged (damaged_marks.py)
                *(self._erasing_done(brain, doc) if marked else []),
                *also,
                *(tally(blobs) if tally is not None else []),
            ]
            ops = self._with_companions(doc, gone) if companions else gone
            try:
                return doc, self.repo.commit(ops, touched=[(brain.id, doc.id)]), blobs
            except RecordConflict as exc:
                now = self.repo.stored_by_id(doc.id)
                if now is not None and now.path == doc.path and state_of(now) == state_of(doc):
                    raise AlsoMoved(str(exc), blobs) from exc
                if now is None or now.brain_id != brain.id:
                    return None, None, blobs  # an id erased meanwhile may be given again, in any brain
                access.check_change(brain, now.owner, f"the document at {excerpt(now.path)}")
                doc = now
        raise Conflict(
            f"{excerpt(doc.path)} kept changing under other writers while it was erased; try again"
        )

    def _erasing(self, brain: Brain, doc: Document) -> Put | None:
        """The write of the mark that `doc`'s erase is under way (written over one an earlier,
        interrupted erase of it left), with the version the erase read (its finisher tells a
        document written again since from one whose bytes the erase had not removed yet); None
        without the pending-links store."""
        if self.erasing is None:
            return None
        item = self.erasing.put_op(self.erasing.removal_mark(brain.id, doc.id, ERASES)).item
        return Put(replace(item, data={**item.data, "version": doc.version}))

    def _erasing_done(self, brain: Brain, doc: Document) -> list[Delete]:
        """For the erase's commit: the mark goes with the record (no transaction of its own)."""
        if self.erasing is None:
            return []
        return [self.erasing.delete_op(self.erasing.removal_mark(brain.id, doc.id, ERASES))]

    def rename(self, brain: Brain, src: str, dst: str, *, reason: str | None = None) -> Document:
        src, dst = validate_path(src), validate_path(dst)
        if src == dst:
            return self.get(brain, src)

        def attempt(
            current: list[Document | None],
        ) -> tuple[Document, Document | None, PreparedChunks, list[tuple[str, str]], Committed]:
            doc, target = live_at(src, self.repo.seen(current[0])), current[1]
            if in_owned_folder(dst) and (doc.memory is None or doc.memory.user_id is None):
                raise InvalidInput(owned_folder_refusal(dst))  # as a plain write there is
            if in_owned_folder(dst) and not in_folder_of(dst, (doc.memory and doc.memory.user_id) or ""):
                raise InvalidInput(others_folder_refusal(dst))
            for held in (doc, target):
                if held is not None:
                    access.check_change(brain, held.owner, f"the document at {excerpt(held.path)}")
            # what it would replace keeps its record and owner: as a plain write, no rename drops them
            check_replaceable(dst, target if target and target.deleted_at is None else None, None)
            moved = doc.model_copy(update={"path": dst, "updated_at": self.clock.now()})
            # the same text, already indexed: no embedding, and no cap on what is stored
            prepared = self.indexer.prepare(moved, self.text_of(moved), capped=False)
            ops: list[Put | Delete] = [
                self.repo.put_op(moved, target.version if target else 0),
                self.repo.pointer_op(moved),
                self.repo.remove_op(doc),
                *filter(None, [self.siblings.left_op(doc)]),  # for its erasure (siblings.py)
            ]
            overwritten = [(brain.id, target.id)] if target is not None else []
            return doc, target, prepared, overwritten, self.repo.commit(ops, touched=overwritten)

        with self.locks.hold([lock_key(brain, src), lock_key(brain, dst)]):
            doc, target, prepared, overwritten, committed = self._again(brain, [src, dst], attempt)
            faults.reached("documents.committed")
            moved = committed.documents[0]
            with indexing_after_commit(f"the move of {excerpt(src)} to {excerpt(dst)}"):
                if target is not None and target.deleted_at is None:
                    self.indexer.remove(target)
                applied = self.indexer.apply(moved, prepared)
                faults.reached("documents.indexed")
                self.sync.settle(committed, [*([moved.id] if applied else []), *(d for _, d in overwritten)])
            replaced = [target] if target is not None and target.deleted_at is None else []
            # an erasure looks for the excerpts of a document in its folder: not in the one it left
            self._forget_as_context(brain, [doc, *replaced])
            self._removed(brain, replaced)  # gone, as a deleted one (a batch's rename says the same)
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
        with_bytes: bool = True,
        also: Callable[[], Sequence[Put | Delete]] | None = None,
    ) -> WriteOutcome | None:
        """Read-modify-write under the path's lock: `change` sees the live document and its bytes
        (or None, None) and returns what to write, or None to leave it alone. It decides in the
        attempt that commits: a commit that loses to another process's write calls it again with
        what that write left. `with_bytes` False: it is given None for the bytes (it decides by
        the record alone, so a document whose bytes are damaged can still be replaced). `also`,
        asked after `change` in each attempt that writes: ops committed in the same transaction."""
        path = validate_path(path)

        def attempt(current: list[Document | None]) -> WriteOutcome | None:
            existing = current[0]
            live = existing if existing and existing.deleted_at is None else None
            wanted = change(live, self.bytes_of(live) if live and with_bytes else None)
            if wanted is None:
                return None
            return self._write_locked(brain, path, wanted[0], wanted[1], existing, also() if also else ())

        with self.locks.hold([lock_key(brain, path)]):
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

    def collect_old_bytes(
        self, older_than_s: float = GRACE_S, stop: Callable[[], bool] = lambda: False
    ) -> int:
        """Remove the bytes of versions replaced at least `older_than_s` ago (old_bytes.py), until `stop`."""

        def current_keys(doc_ids: list[str]) -> dict[str, str]:
            return {i: d.blob_key for i, d in self.repo.get_many_by_id(doc_ids).items()}

        return self.repo.old_bytes.collect(self.blobs, current_keys, older_than_s, stop)

    def collect_orphan_bytes(self, older_than_s: float = ORPHAN_GRACE_S) -> int:
        """Remove the bytes of writes that stopped before committing their records, stored at
        least `older_than_s` ago (orphan_bytes.py); how many documents' folders went."""
        now = self.clock.now().timestamp()
        return collect_orphan_bytes(self.blobs, self.repo, self._live_brain_ids(), now, older_than_s)

    def expire_uploads(self, older_than_s: float = UPLOAD_EXPIRY_S) -> int:
        """Remove uploads stored at least `older_than_s` ago, as the upload bucket's lifecycle
        does on AWS (upload_expiry.py); how many keys went."""
        now = self.clock.now().timestamp()
        return expire_uploads(self.blobs, self._live_brain_ids(), now, older_than_s)

    def _live_brain_ids(self) -> list[str]:
        brain_ids: list[str] = []
        after: str | None = None
        while True:
            brains, after = self.repo.brains.page(after=after, limit=500)
            brain_ids += [b.id for b in brains if b.deleted_at is None]
            if after is None:
                return brain_ids

    def settle_pending(self, older_than_s: float = 0.0, stop: Callable[[], bool] | None = None) -> int:
        """Reconcile every document whose index intent a stopped writer left standing (those
        left when `stop` says so stand for the next settle)."""
        return self.sync.settle_pending(older_than_s, stop)


def typed(doc: Document) -> bool:
    """A memory with a record beside its text: one MemoryService stored (zengram's types, the
    canonical typed memories: the record keeps its text's hash), or a ThoughtMCP user's. A fact
    extraction found or an episode a reflection wrote has a facet and no such record."""
    m = doc.memory
    return m is not None and (m.user_id is not None or m.content_hash is not None)
