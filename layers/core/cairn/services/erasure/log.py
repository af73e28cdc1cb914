"""Erasures and brain deletions as records: what was asked, by whom, how far it got, and the receipt.

| record                                    | pk                  | sk                          |
|-------------------------------------------|---------------------|-----------------------------|
| an erasure or a deletion                  | `erasures`          | `<erasure id>`              |
| what it removed so far in a brain it runs | `erasure-progress`  | `<erasure id>#<brain id>`   |

The record is written before anything is removed and updated as each brain is finished, so an
erasure stopped half-way (a crash, kill -9) is found and finished when a store is next opened
(services/erasure/service.py `resume`). While it runs the record holds what it must find (the
subject, the brain); once it is done only a digest of the subject stays, with the counts: the audit
of an erasure says that it happened and by whom, never whose data it was.

The counts of a brain not finished yet are kept beside it (`Progress`): written in each document's
erase commit (no write of their own) and once after each step that removes many at a time (memory
rows, audit entries, sessions, a pass's records), so a resume after a kill starts from them and the
receipt counts what every attempt removed. The brain's advance adds them to the receipt and drops
them in the same transaction. A kill loses only what the document it was erasing lost before its
commit (its links, raw rows).

Two processes may resume the same erasure at once (a retried Step Functions task and a `cairn`
resume, two Lambda retries): each write of the counts is conditional on the version of the record
last read or written, and adds what this attempt removed since its last write to what the record
holds, so one never overwrites the other's (a write that loses reads the record again; a document's
commit that loses is tried again). A brain one of them finished first has what the other removed
after that added to the receipt when the other finishes it: the receipt counts each removal once.

Finishing the erasure adds what progress records of it are left to the receipt in the write that
marks it finished, so it is finished with none left. One written after that (an attempt that
began before another finished it, still removing; or one killed between its last save and its
`advance`, which no resume would pick up) is added by whatever reads the receipt next (`fold`: GET
/v1/erasures/{id}, the list of receipts) or by the next resume (`left_over`). So the receipt of a
finished erasure may still grow while an attempt that began before it finished runs on, and the
answer of the attempt that finished it may be smaller than what a later GET reads: never larger
than what was removed, and GET reads every count written.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from cairn.domain.errors import Conflict, NotFound
from cairn.ports.clock import Clock
from cairn.ports.records import Delete, Item, Put, RecordStore
from cairn.services.repositories import all_items

log = logging.getLogger(__name__)

PK = "erasures"
PROGRESS_PK = "erasure-progress"
_TRIES = 16  # writes of a record lost to another process's
_FOLDED = 64  # progress records added to a receipt in one transaction (DynamoDB's 100 items)
REMOVED_KINDS = (
    "documents", "chunks", "blobs", "links", "entities", "memory_rows", "sessions", "messages",
    "records", "audit_entries", "jobs",
)  # fmt: skip
"""What a receipt counts: documents (and their records), their chunks, content blobs, links,
entities left with no mention, ThoughtMCP memory rows, sessions and messages, other records that
named what was removed (claims, timelines, read counts, raw rows, image references, pending
ingests), audit entries whose subject or target was redacted, and finished jobs that held what went
(their input, checkpoints and result)."""


class Receipt(BaseModel):
    """What an erasure or a brain deletion removed, counted by kind."""

    id: str
    kind: str = Field(description="the subject's kind (thoughtmcp_user, ...), or `brain` for a deletion")
    subject_digest: str = Field(description="a digest of the subject: never the subject itself")
    brains: list[str]
    removed: dict[str, int]
    status: Literal["running", "completed"]
    by: str | None = None
    started_at: datetime
    finished_at: datetime | None = None
    stalled: str | None = Field(
        default=None,
        description="why it stopped short of its end (a damaged file of the store: `cairn check` names "
        "it; or the stores' files could not be scrubbed for a reason trying again at once cannot fix); "
        "it stays running, and resumes when the server next starts or its receipt is asked for",
    )


class Pending(BaseModel):
    """An erasure's record while it runs."""

    receipt: Receipt
    subject: str | None = None
    done: list[str] = Field(default_factory=list)
    """Brains finished so far."""


class ErasureLog:
    def __init__(self, records: RecordStore, clock: Clock) -> None:
        self.records = records
        self.clock = clock

    def start(self, receipt: Receipt, subject: str | None) -> Pending:
        pending = Pending(receipt=receipt, subject=subject)
        self.records.put(Item(PK, receipt.id, pending.model_dump(mode="json")), expected_version=0)
        return pending

    def get(self, erasure_id: str) -> Pending:
        item = self.records.get(PK, erasure_id)
        if item is None:
            raise NotFound(f"erasure not found: {erasure_id[:64]}")
        return Pending.model_validate(item.data)

    def advance(self, erasure_id: str, brain_id: str, progress: Progress) -> Pending:
        """The brain finished: what its progress record holds (this attempt's counts written to it
        first) is added to the receipt and the record dropped, in one write, and the brain is done.
        Done already (another process resuming the same erasure finished it first), what the record
        holds is still added: only what was written to it after that other process took it."""
        progress.save()
        key = progress_key(erasure_id, brain_id)
        for _ in range(_TRIES):
            held = self.records.get(*key)
            item = self.records.get(PK, erasure_id)
            if item is None:
                raise NotFound(f"erasure not found: {erasure_id[:64]}")
            pending = Pending.model_validate(item.data)
            if held is None and brain_id in pending.done:
                return pending
            _count(pending, _counts_held(held, erasure_id, brain_id))
            if brain_id not in pending.done:
                pending.done.append(brain_id)
            written = Put(Item(PK, erasure_id, pending.model_dump(mode="json")), item.version)
            try:
                self.records.transact([written, *([Delete(*key, held.version)] if held else [])])
            except Conflict:
                continue  # the record, or the brain's progress, written meanwhile: read both again
            progress.taken()
            return pending
        raise Conflict(f"erasure {erasure_id} kept changing while being recorded")

    def progress(self, erasure_id: str, brain_id: str) -> Progress:
        """What the attempts before this one removed in the brain (none: a fresh start), to go on from."""
        held = self.records.get(*progress_key(erasure_id, brain_id))
        counts = _counts_held(held, erasure_id, brain_id)
        version = held.version if held is not None else 0
        return Progress(
            self, erasure_id, brain_id, Counter(counts), Counter(counts), version, Counter(counts)
        )

    def progress_op(self, erasure_id: str, brain_id: str, removed: Counter[str], version: int) -> Put:
        """The write of a brain's counts so far, at the record's `version` (0: there is none)."""
        data = {"removed": {k: removed[k] for k in REMOVED_KINDS if removed[k] > 0}}
        return Put(Item(*progress_key(erasure_id, brain_id), data), version)

    def unname(self, erasure_id: str) -> Pending:
        """Every brain is done: the subject leaves the record before the stores' files are
        scrubbed (its name must not outlive them there), the record stays running until then."""

        def change(pending: Pending) -> Pending | None:
            if pending.subject is None:
                return None
            return Pending(receipt=pending.receipt, done=pending.done)

        return self._update(erasure_id, change)

    def stall(self, erasure_id: str, why: str) -> Pending:
        """It stopped short of its end for `why`, which the receipt shows until it is finished."""

        def change(pending: Pending) -> Pending | None:
            if pending.receipt.status == "completed" or pending.receipt.stalled == why:
                return None
            pending.receipt.stalled = why
            return pending

        return self._update(erasure_id, change)

    def finish(self, erasure_id: str) -> Receipt:
        """Done: what progress records of it are left (another attempt's, saved after it finished a
        brain) is added to the receipt and they go, in the same write as the status, so it is
        finished with no progress record left; the subject is dropped from the record, the receipt
        kept. Finished already: `fold`."""
        return self._fold(erasure_id, finishing=True).receipt

    def fold(self, erasure_id: str) -> Pending:
        """The erasure with what progress records of its brains done are left added to its
        receipt, and they dropped: an attempt that began before another finished the brain (or the
        erasure) and removed more since, or one killed between its last save and its `advance`
        (module docstring)."""
        return self._fold(erasure_id, finishing=False)

    def with_progress(self) -> set[str]:
        """The erasures some progress record of is kept (one read of them all: few, kept while
        their brain runs)."""
        return {held.sk.rpartition("#")[0] for held in all_items(self.records, PROGRESS_PK)}

    def left_over(self) -> Iterator[str]:
        """The finished erasures some progress record of is left (`fold` adds them)."""
        for erasure_id in sorted(self.with_progress()):
            item = self.records.get(PK, erasure_id)
            receipt = item.data.get("receipt") if item is not None else None
            if isinstance(receipt, dict) and receipt.get("status") == "completed":
                yield erasure_id

    def _fold(self, erasure_id: str, *, finishing: bool) -> Pending:
        """Add the progress records of its brains done to the receipt and drop them (_FOLDED at a
        time), with the last of them marking it finished when `finishing`; each write conditional
        on every version read."""
        lost = 0
        while lost < _TRIES:
            item = self.records.get(PK, erasure_id)
            if item is None:
                raise NotFound(f"erasure not found: {erasure_id[:64]}")
            pending = Pending.model_validate(item.data)
            completed = pending.receipt.status == "completed"
            left = [
                held
                for held in all_items(self.records, PROGRESS_PK, f"{erasure_id}#")
                if held.sk.removeprefix(f"{erasure_id}#") in pending.done
            ]
            if not left and (completed or not finishing):
                return pending
            folded = left[:_FOLDED]
            for held in folded:
                _count(pending, _counts_held(held, erasure_id, held.sk.removeprefix(f"{erasure_id}#")))
            last = len(left) <= _FOLDED
            if finishing and not completed and last:
                finished = {"status": "completed", "finished_at": self.clock.now(), "stalled": None}
                pending = Pending(receipt=pending.receipt.model_copy(update=finished), done=pending.done)
            written = Put(Item(PK, erasure_id, pending.model_dump(mode="json")), item.version)
            try:
                self.records.transact([written, *(Delete(held.pk, held.sk, held.version) for held in folded)])
            except Conflict:
                lost += 1
                continue  # the record, or a progress record, written meanwhile: read them again
            if last:
                return pending
        raise Conflict(f"erasure {erasure_id} kept changing while being recorded")

    def _update(
        self, erasure_id: str, change: Callable[[Pending], Pending | None], also: list[Delete] | None = None
    ) -> Pending:
        """Read, change and write the record conditionally (with `also`), again on a lost race."""
        for _ in range(_TRIES):
            item = self.records.get(PK, erasure_id)
            if item is None:
                raise NotFound(f"erasure not found: {erasure_id[:64]}")
            changed = change(Pending.model_validate(item.data))
            if changed is None:
                return Pending.model_validate(item.data)
            written = Item(PK, erasure_id, changed.model_dump(mode="json"))
            try:
                if also:
                    self.records.transact([Put(written, item.version), *also])
                else:
                    self.records.put(written, item.version)
                return changed
            except Conflict:
                continue
        raise Conflict(f"erasure {erasure_id} kept changing while being recorded")

    def newest(self, limit: int) -> list[Receipt]:
        """Up to `limit` receipts, newest first (erasure ids are time-ordered)."""
        page = self.records.query(PK, "", limit=limit, descending=True)
        return [Pending.model_validate(item.data).receipt for item in page.items]

    def running(self) -> Iterator[Pending]:
        """Erasures started and not finished (by this process or one that died)."""
        for item in all_items(self.records, PK):
            receipt = item.data.get("receipt")
            if isinstance(receipt, dict) and receipt.get("status") == "completed":
                continue  # the log keeps every receipt: a finished one is not parsed
            try:
                pending = Pending.model_validate(item.data)
            except ValidationError:
                log.warning("erasure record %s is damaged: it is left as it is, not resumed", item.sk[:64])
                continue
            if pending.receipt.status == "running":
                yield pending


@dataclass
class Progress:
    """An erasure's counts in one brain as it runs (`counts`: what its record held when this attempt
    read it, added to as things go), and the writes that keep them (module docstring). Each write
    is conditional on the record's version as last read or written here, and holds the record's
    counts plus what this attempt removed since it last wrote: another process resuming the same
    erasure at the same time adds to the record too, so neither's counts are lost or counted twice;
    a write that loses reads the record again and goes again (a document's commit: its next try)."""

    log: ErasureLog
    erasure_id: str
    brain_id: str
    counts: Counter[str]
    _stored: Counter[str] = field(default_factory=Counter, repr=False)
    """The record's counts at `_version` (0: no record)."""
    _version: int = 0
    _saved: Counter[str] = field(default_factory=Counter, repr=False)
    """The part of `counts` the record holds."""
    _pending: tuple[Counter[str], Counter[str]] | None = field(default=None, repr=False)
    """The counts an `op` writes, and `_saved` once it has landed."""

    def op(self, coming: Counter[str]) -> Put:
        """For a commit that removes `coming` besides: the record as it stands once it has (the
        commit fails if another process wrote it meanwhile: `refresh`, then try again). `landed`
        once the commit is done."""
        total = self._total(coming)
        self._pending = (total, self.counts + coming)
        return self.log.progress_op(self.erasure_id, self.brain_id, total, self._version)

    def landed(self) -> None:
        """The commit of the last `op` is done."""
        if self._pending is not None:
            self._stored, self._saved = self._pending
            self._version += 1
            self._pending = None

    def refresh(self) -> None:
        """Read the record again (a commit with the last `op` lost to another process's write)."""
        held = self.log.records.get(*progress_key(self.erasure_id, self.brain_id))
        self._stored = _counts_held(held, self.erasure_id, self.brain_id)
        self._version = held.version if held is not None else 0
        self._pending = None

    def save(self) -> None:
        """Write what this attempt removed since it last wrote, if anything, added to the record."""
        for _ in range(_TRIES):
            if not any(self._unsaved().values()):
                return
            put = self.op(Counter())
            try:
                self.log.records.put(put.item, put.expected_version)
            except Conflict:
                self.refresh()
                continue
            self.landed()
            return
        raise Conflict(f"erasure {self.erasure_id}: its progress kept changing while being recorded")

    def taken(self) -> None:
        """The record was added to the receipt and dropped (`ErasureLog.advance`)."""
        self._stored, self._version, self._saved, self._pending = Counter(), 0, Counter(self.counts), None

    def _unsaved(self) -> Counter[str]:
        unsaved = Counter(self.counts)
        unsaved.subtract(self._saved)  # may go below 0: an erase's commit counted chunks as read
        return unsaved

    def _total(self, coming: Counter[str]) -> Counter[str]:
        total = Counter(self._stored)
        total.update(self._unsaved())
        total.update(coming)
        return +total


def progress_key(erasure_id: str, brain_id: str) -> tuple[str, str]:
    return PROGRESS_PK, f"{erasure_id}#{brain_id}"


def _counts_held(item: Item | None, erasure_id: str, brain_id: str) -> Counter[str]:
    """The counts a progress record holds (none for no record, or a damaged one: said in the log)."""
    held = item.data.get("removed") if item is not None else None
    if item is not None and not isinstance(held, dict):
        log.warning("erasure %s: its progress in brain %s is damaged; counting afresh", erasure_id, brain_id)
    counts: Counter[str] = Counter()
    if isinstance(held, dict):
        counts.update({k: v for k, v in held.items() if k in REMOVED_KINDS and type(v) is int and v > 0})
    return counts


def empty_counts() -> dict[str, int]:
    return dict.fromkeys(REMOVED_KINDS, 0)


def _count(pending: Pending, removed: Counter[str]) -> None:
    totals = Counter(pending.receipt.removed)
    totals.update(removed)
    pending.receipt.removed = {k: totals.get(k, 0) for k in REMOVED_KINDS}
