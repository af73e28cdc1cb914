"""The store protocol's batch-ops: every op staged, then committed in one transaction."""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from cairn import faults
from cairn.auth import access
from cairn.domain.errors import (
    InvalidInput,
    NotFound,
    PayloadTooLarge,
)
from cairn.domain.models import Brain, Document
from cairn.domain.paths import validate_path
from cairn.domain.text import excerpt
from cairn.ports.records import Delete, Put
from cairn.services.documents.core import check_replaceable, log_throughput
from cairn.services.documents.indexing import PreparedChunks, RecentVectors
from cairn.services.documents.inputs import (
    BatchOp,
    DocumentInput,
    Staged,
    keep_info,
    lock_key,
)
from cairn.services.documents.stored_first import indexing_after_commit
from cairn.services.documents.writes import DocumentWrites
from cairn.services.events import ChangeEvent, ChangeKind
from cairn.services.repositories import Committed


class BatchWrites(DocumentWrites):
    """The batch-ops of DocumentService."""

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

        def attempt(current: list[Document | None]) -> tuple[_Batch, Committed | None]:
            before = dict(zip(paths, current, strict=True))
            batch = self._stage_batch(brain, ops, before, reason, recent)
            if not batch.commit_ops:
                return batch, None
            return batch, self._commit_or_drop([d for d, _ in batch.staged], batch.commit_ops, batch.touched)

        with self.locks.hold(lock_key(brain, p) for p in paths):
            batch, committed = self._again(brain, paths, attempt)
            removed, staged, events = batch.removed, batch.staged, batch.events
            faults.reached("batch.committed")
            by_path = {d.path: d for d in committed.documents} if committed else {}
            applied: list[str] = []
            with indexing_after_commit(f"the batch of {len(ops)} writes"):
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
            self._forget_as_context(brain, [*removed, *batch.left])
            self._removed(brain, removed)
            self._retired(brain, removed)
            self._publish(brain, events)
        return len(ops)

    def _stage_batch(
        self,
        brain: Brain,
        ops: Sequence[BatchOp],
        before: Mapping[str, Document | None],
        reason: str | None,
        recent: RecentVectors,
    ) -> _Batch:
        """The batch replayed over what its paths hold (`before`, as the attempt read them; the
        commit is conditional on their versions): the record ops to commit, and the chunks of
        every written document, embedded together. A user's memory the caller may not see is
        taken for no document (a delete of it is not found, a write the folder rule refuses), as a
        single delete or append answers: the batch tells nobody which memories exist."""
        before = {p: None if _hidden(held, self.repo.seen) else held for p, held in before.items()}
        for path, held in before.items():
            if held is not None:
                access.check_change(brain, held.owner, f"the document at {excerpt(path)}")
        journal, events, carried, appended, cleared = self._replay(ops, before, reason)
        moved_away = {doc.id for doc in carried.values()}
        batch = _Batch(events=events, left=list(carried.values()))
        written: list[Staged] = []
        for path, state in journal.items():
            old = before[path]
            live = old if old and old.deleted_at is None else None
            left = live is not None and live.id in moved_away  # its record went with a rename
            if state is None:
                if left and live is not None:
                    batch.commit_ops.append(self.repo.remove_op(live))
                elif live is not None:
                    now = self.clock.now()
                    gone = live.model_copy(update={"deleted_at": now, "updated_at": now, "chunk_count": 0})
                    batch.commit_ops += self._with_companions(live, [self.repo.put_op(gone, live.version)])
                    batch.removed.append(live)
                continue
            deleted_first = live is not None and not left and path in cleared  # then replaced
            if path in carried:
                next_state = self._moved_here(
                    brain, path, state, carried[path], old, replaces=not (left or deleted_first)
                )
                if live is not None and not left:  # replaced: its record gives way, its chunks go
                    batch.removed.append(live)
                    batch.touched.append((brain.id, live.id))
            elif deleted_first and live is not None:  # a new document where an op deleted one
                next_state = self._stage(brain, path, state, DocumentInput(), None, defer=True)
                next_state.ops[0] = self.repo.put_op(next_state.document, live.version)
                batch.removed.append(live)
                batch.touched.append((brain.id, live.id))
            elif left and old is not None:  # a new document where one was renamed away from
                next_state = self._stage(brain, path, state, DocumentInput(), None, defer=True)
                next_state.ops[0] = self.repo.put_op(next_state.document, old.version)
            else:  # written over (as a single write, it says only what it says), or appended to
                info = keep_info(live) if path in appended else DocumentInput()
                next_state = self._stage(brain, path, state, info, old, defer=True)
            if deleted_first and live is not None and next_state.ops:  # what its deletion takes beside it
                next_state.ops.extend(self._with_companions(live, next_state.ops)[len(next_state.ops) :])
            if next_state.ops:
                batch.commit_ops += next_state.ops
                written.append(next_state)
        for path, doc in carried.items():  # the paths they left, for their erasure (siblings.py)
            if journal.get(path) is not None and (paths_left := self.siblings.left_op(doc)) is not None:
                batch.commit_ops.append(paths_left)
        started = time.perf_counter()
        for ready in self._embed_staged(written, recent):
            prepared = ready.prepared.with_context(None) if ready.created else ready.prepared
            batch.staged.append((ready.document, prepared))
        log_throughput(brain, len(ops), batch.staged, time.perf_counter() - started)
        return batch

    def _moved_here(
        self, brain: Brain, path: str, data: bytes, doc: Document, held: Document | None, *, replaces: bool
    ) -> Staged:
        """`doc` renamed to `path` (over `held`, what was there), with `data` as its bytes: the
        same document, as a single rename keeps it (its id, creation time, title, tags, metadata
        and memory record), committed in place of `held`'s record. `replaces`: `held` is still
        there when it lands (neither moved away nor deleted by an op before)."""
        if replaces and held is not None and held.deleted_at is None:
            check_replaceable(path, held, None)  # what it replaces keeps its record and owner
        if data != self.bytes_of(doc):
            check_replaceable(doc.path, doc, None)  # a memory's text changes through its surface only
        staged = self._stage(
            brain, path, data, keep_info(doc), doc.model_copy(update={"path": path}), force=True, defer=True
        )
        staged.ops[0] = self.repo.put_op(staged.document, held.version if held is not None else 0)
        return staged

    def _replay(
        self, ops: Sequence[BatchOp], before: Mapping[str, Document | None], reason: str | None
    ) -> tuple[dict[str, bytes | None], builtins.list[ChangeEvent], dict[str, Document], set[str], set[str]]:
        """Final state per touched path (bytes, or None = deleted), one event per op, the
        documents renamed to another path than their own, by the path they end at (their record
        moves there, as a single rename moves it), the paths that end holding their own
        document only appended to (it keeps its title, tags and metadata, as a single append), and
        the paths whose document a delete op removed, here or where a rename took it (what comes
        there after is a new one)."""
        journal: dict[str, bytes | None] = {}
        rewritten: set[str] = set()  # paths whose bytes a write replaced since their document came
        cleared: set[str] = set()
        carrier: dict[str, Document | None] = {}  # whose identity a path's state holds, once an op moved it

        def identity(path: str) -> Document | None:
            if path in carrier:
                return carrier[path]
            doc = before[path]
            return doc if doc is not None and doc.deleted_at is None else None

        def current(path: str) -> bytes | None:
            if path in journal:
                return journal[path]
            doc = before[path]
            return self.bytes_of(doc) if doc and doc.deleted_at is None else None

        events: builtins.list[ChangeEvent] = []

        def event(kind: ChangeKind, path: str, held: Document | None, old_path: str | None = None) -> None:
            owner = held.owner if held is not None else None  # whose item it is at this op
            events.append(
                ChangeEvent(
                    kind=kind, path=path, old_path=old_path, when=self.clock.now(), reason=reason, owner=owner
                )
            )

        for index, op in enumerate(ops):
            existed = current(op.path) is not None
            held = identity(op.path)
            if op.type == "write":
                journal[op.path] = op.content
                rewritten.add(op.path)
                event("updated" if existed else "created", op.path, held)
            elif op.type == "append":
                journal[op.path] = (current(op.path) or b"") + op.content
                event("updated" if existed else "created", op.path, held)
            elif op.type == "delete":
                if not existed:
                    raise NotFound(f"op {index}: not found: {excerpt(op.path)}")
                if held is not None and before.get(held.path) is held:
                    cleared.add(held.path)  # where its record is, though an op moved it away
                journal[op.path] = None
                carrier[op.path] = None
                rewritten.discard(op.path)
                event("deleted", op.path, held)
            elif op.type == "rename":
                assert op.to is not None
                content = current(op.path)
                if content is None:
                    raise NotFound(f"op {index}: not found: {excerpt(op.path)}")
                journal[op.to] = content
                if op.to != op.path:
                    carrier[op.to] = identity(op.path)
                    journal[op.path] = None
                    carrier[op.path] = None
                    if op.path in rewritten:
                        rewritten.add(op.to)
                    else:
                        rewritten.discard(op.to)
                    rewritten.discard(op.path)
                event("renamed", op.to, held, op.path)
            else:
                raise InvalidInput(f"op {index}: unknown type {excerpt(op.type)}")
        carried = {
            p: doc
            for p, doc in carrier.items()
            if doc is not None and doc.path != p and journal[p] is not None
        }
        appended = {
            p
            for p, state in journal.items()
            if state is not None
            and p not in rewritten
            and (own := identity(p)) is not None
            and (held := before[p]) is not None
            and own.id == held.id
        }
        return journal, events, carried, appended, cleared


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


@dataclass
class _Batch:
    """A batch staged: the record ops to commit, the documents it deletes or replaces, the written
    documents with their prepared chunks, and one event per op."""

    events: list[ChangeEvent]
    commit_ops: list[Put | Delete] = field(default_factory=list)
    removed: list[Document] = field(default_factory=list)
    touched: list[tuple[str, str]] = field(default_factory=list)
    """(brain id, document id) of documents replaced by a rename: no record of theirs is written."""
    staged: list[tuple[Document, PreparedChunks]] = field(default_factory=list)
    left: list[Document] = field(default_factory=list)
    """The documents renamed, at the paths they left (an erasure looks in their new folders)."""


def _hidden(held: Document | None, seen: Callable[[Document | None], Document | None]) -> bool:
    """An owned document (a ThoughtMCP user's memory) the current caller may not see."""
    return held is not None and held.owner is not None and seen(held) is None
