"""Writing many documents at once (`write_many`, bulk ingest and import): staged in steps of
STEP_CHUNKS chunks, each step committed and indexed before the next."""

from __future__ import annotations

import builtins
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from cairn.domain.errors import (
    CairnError,
)
from cairn.domain.models import Brain, Document
from cairn.domain.paths import validate_path
from cairn.services.documents.blob_keys import own_folder
from cairn.services.documents.index_sync import state_of
from cairn.services.documents.indexing import RecentVectors
from cairn.services.documents.inputs import (
    DeferredWrite,
    DocumentInput,
    Staged,
    WriteOutcome,
    lock_key,
)
from cairn.services.documents.writes import DocumentWrites

STEP_CHUNKS = 64
"""Texts write_many embeds per step of its pipeline: small enough that the work before the first
step and after the last (staging, committing, the caller's `done`) overlaps nearly everything."""


class BulkWrites(DocumentWrites):
    """The bulk write of DocumentService."""

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

        def attempt(read: list[Document | None]) -> WriteOutcome:
            current = read[0]
            ready = staged
            if state_of(current) != state_of(entry.existing):  # written since it was staged
                ready = self._stage(brain, path, data, info, current)
                if staged.ops and own_folder(staged.document) is not None:  # its new bytes, never committed
                    self.blobs.delete(staged.document.blob_key)
            return self._commit_staged(brain, path, ready)

        with self.locks.hold([lock_key(brain, path)]):
            outcome = self._again(brain, [path], attempt)
            self._publish_write(brain, path, outcome, reason)
        return outcome


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
