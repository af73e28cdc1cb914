"""Links pending on a memory: what makes a memory's links as sure as the memory itself.

Some memories are linked in transactions after their own commit: ThoughtMCP's waypoint links
(services/thoughtmcp/waypoints.py) and a typed memory's entity links (services/memory/entities.py:
up to 50 entities with their aliases, ranks and counters would pass DynamoDB's 100 items in one
transaction). So the memory's commit also writes a mark, "links of kind K pending on memory X of
brain B", and the writer deletes it in the transaction of the last link it writes (in one of its
own only when it writes none). A record store that refuses them
(another process holding the embedded store's writer lock past the wait, DynamoDB throttled past
its retries: Unavailable) or a writer that stops between leaves the mark, and whoever finds it
finishes the links with the finisher of its kind, as index intents are settled
(services/documents/index_intents.py): the process opening the data, the running server's
sweeper (for marks older than its grace), the scheduled sweep on AWS. A finisher makes the links
the memory would get now and is idempotent, so two settlers, or a settler and the writer, may
finish the same memory; a memory or brain gone by then has its mark dropped.

Each write has a mark of its own (its sort key ends with a token of its own), so a writer deletes
only what its commit wrote: a later write's mark on the same memory stays until that write's links
are made. A removal's mark works the other way round (`removal_mark`): the removal's commit writes
it (ThoughtMCP's, kind UNLINKS: its waypoint links to remove), the unlinking after the commit
deletes it with its last link, and a finisher removes whatever links are left. An erase marks
itself so too (kind `erases`, services/documents/writes.py), written before the document's bytes
go and deleted by the commit removing its record; its finisher completes the erase
(services/erasure/interrupted.py). A mark names the brain, the memory and the kind, never any text:

| item         | pk                               | sk                            |
|--------------|----------------------------------|-------------------------------|
| pending mark | `links_pending#<shard, 00-15>`   | `<memory id>#<token or kind>` |
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum

from cairn.auth import access
from cairn.domain.errors import CairnError, Unavailable
from cairn.domain.ids import new_id
from cairn.domain.models import Brain
from cairn.ports.records import Delete, Item, Put, RecordStore
from cairn.services.record_shards import every_item, shard_pk

log = logging.getLogger(__name__)

_PK = "links_pending#"  # spread over shards (services/record_shards.py)
_DELETE_AT_ONCE = 100  # deletes per transaction (DynamoDB's one-call limit)
RELINKS = 8
"""Times a writer or settler links a memory again whose text changed while it linked (an update
committed meanwhile), before it leaves the memory's mark to the next sweep."""


class Finished(Enum):
    """What a finisher did with a memory's pending links."""

    LINKED = "linked"  # its links are made: the marks go
    UNLINKED = "unlinked"  # the links a removal left are removed: the marks go
    GONE = "gone"  # the memory is gone (deleted, erased): nothing to link, the marks go
    ERASED = "erased"  # an erase a process stopped half-way is finished: the marks go
    LATER = "later"  # not now (refused, not indexed yet): the marks stay for a later settle


Finisher = Callable[[Brain, str, bool], Finished]
"""(brain, memory id, relink) -> what became of the memory's links. `relink`: the links its
earlier text had go first (an update)."""


@dataclass(frozen=True)
class Settled:
    """Memories a settle finished: `linked`, `unlinked` (removed, their links left behind now
    removed too), `erased` (documents whose erase a stopped process left half-way, finished), and
    `dropped` (their marks only: nothing was left to do)."""

    linked: int = 0
    dropped: int = 0
    unlinked: int = 0
    erased: int = 0

    @property
    def total(self) -> int:
        return self.linked + self.dropped + self.unlinked + self.erased


@dataclass(frozen=True)
class Mark:
    brain_id: str
    memory_id: str
    kind: str
    relink: bool
    token: str
    at: float  # when it was written, seconds since the epoch

    @property
    def key(self) -> tuple[str, str]:
        return _pk(self.memory_id), f"{self.memory_id}#{self.token}"


class PendingLinks:
    def __init__(
        self,
        records: RecordStore,
        brain_of: Callable[[str], Brain | None],
        now: Callable[[], float] = time.time,
    ) -> None:
        self.records = records
        self.brain_of = brain_of
        self.now = now
        self.finishers: dict[str, Finisher] = {}
        self.writers_s: dict[str, float] = {}

    def finish_with(self, kind: str, finisher: Finisher, *, writers_s: float = 0.0) -> None:
        """How marks of `kind` are finished (the composition root registers each service's).
        `writers_s`: a mark younger than that is its writer's still, whatever grace a settle gives
        (an erase's: a settler beside it would take its document from under it)."""
        self.finishers[kind] = finisher
        self.writers_s[kind] = writers_s

    def mark(self, brain_id: str, memory_id: str, kind: str, *, relink: bool = False) -> Mark:
        return Mark(brain_id, memory_id, kind, relink, new_id("lp"), self.now())

    def removal_mark(self, brain_id: str, memory_id: str, kind: str) -> Mark:
        """The mark of what a memory's removal leaves to do after its commit (ThoughtMCP's waypoint
        links to remove, and the other ends' statistics): keyed by its kind rather than a token,
        so whatever finishes the removal finds it without a read, and any removal of the memory
        (a forget of a row its document left behind, an erasure after a delete) writes over it
        to mean the same."""
        return Mark(brain_id, memory_id, kind, False, kind, self.now())

    @staticmethod
    def put_op(mark: Mark) -> Put:
        """For the memory's own commit: its links are pending until `done`."""
        data = {
            "brain_id": mark.brain_id,
            "memory_id": mark.memory_id,
            "kind": mark.kind,
            "relink": mark.relink,
            "at": mark.at,
        }
        return Put(Item(*mark.key, data), 0)

    @staticmethod
    def delete_op(mark: Mark) -> Delete:
        """For the transaction of the memory's last link: its links are made with it (no
        transaction of its own; a mark a settler dropped already is no conflict)."""
        return Delete(*mark.key)

    def done(self, mark: Mark) -> None:
        """The links the mark's commit left pending are made, and none of their transactions
        carried its `delete_op`: drop it. A store that refuses the delete leaves it for a settle,
        which finds the links made and changes nothing."""
        try:
            self.records.transact([self.delete_op(mark)])
        except Unavailable as exc:
            log.warning(
                "the pending-links mark of memory %s is left for the sweep: %s", mark.memory_id, exc.message
            )

    def done_all(self, marks: Sequence[Mark]) -> None:
        """`done` for several marks, _DELETE_AT_ONCE a transaction (a batch's removals)."""
        for start in range(0, len(marks), _DELETE_AT_ONCE):
            try:
                self.records.transact([self.delete_op(m) for m in marks[start : start + _DELETE_AT_ONCE]])
            except Unavailable as exc:
                log.warning("%d pending-links marks are left for the sweep: %s", len(marks), exc.message)
                return

    def standing(self, memory_id: str, kind: str | None = None) -> list[Mark]:
        """The marks still standing on one memory (one query)."""
        page = self.records.query(_pk(memory_id), f"{memory_id}#")
        return [m for m in map(_mark, page.items) if kind is None or m.kind == kind]

    def removal_data(self, memory_id: str, kind: str) -> dict[str, object] | None:
        """What the removal mark of `kind` standing on the memory holds (None: none stands); one read."""
        item = self.records.get(*self.removal_mark("", memory_id, kind).key)
        return dict(item.data) if item is not None else None

    def finish_now(self, brain: Brain, memory_id: str, kind: str) -> bool:
        """Finish the memory's links of `kind` if a mark of it still stands (a client sending a
        memory again whose writer stopped before linking it); True when one did and is finished."""
        marks = [m for m in self.standing(memory_id, kind) if m.brain_id == brain.id]
        return bool(marks) and self._finish(marks) is not Finished.LATER

    def pending(self, older_than_s: float = 0.0) -> Iterator[Mark]:
        """Every mark left standing, written at least `older_than_s` ago, shard by shard."""
        cutoff = self.now() - older_than_s
        return (m for m in map(_mark, every_item(self.records, _PK)) if m.at <= cutoff)

    def settle(self, older_than_s: float = 0.0, stop: Callable[[], bool] | None = None) -> int:
        """Finish the links of every memory a mark older than `older_than_s` names; returns how
        many memories were settled (linked, or their marks dropped). One that fails is logged and
        left for the next sweep, and so are those left when `stop` says so."""
        return self.settle_counted(older_than_s, stop).total

    def settle_counted(self, older_than_s: float = 0.0, stop: Callable[[], bool] | None = None) -> Settled:
        """`settle`, telling the memories linked from those whose marks were only dropped."""
        groups: dict[tuple[str, str, str], list[Mark]] = {}
        now = self.now()
        for mark in list(self.pending(older_than_s)):
            if mark.at > now - self.writers_s.get(mark.kind, 0.0):
                continue  # its writer's still
            groups.setdefault((mark.brain_id, mark.memory_id, mark.kind), []).append(mark)
        outcomes = []
        for marks in groups.values():
            if stop is not None and stop():
                break
            outcomes.append(self._finish(marks))
        settled = Settled(
            outcomes.count(Finished.LINKED),
            outcomes.count(Finished.GONE),
            outcomes.count(Finished.UNLINKED),
            outcomes.count(Finished.ERASED),
        )
        if settled.linked:
            log.warning(
                "finished the links of %d memories whose writer stopped before making them", settled.linked
            )
        if settled.unlinked:
            log.warning(
                "removed the links left of %d memories removed before they were unlinked", settled.unlinked
            )
        if settled.erased:
            log.warning(
                "finished the erasure of %d documents a stopped process left half-erased", settled.erased
            )
        if settled.dropped:
            log.warning("dropped the pending links of %d memories gone since", settled.dropped)
        return settled

    def _finish(self, marks: Sequence[Mark]) -> Finished:
        first = marks[0]
        try:
            with access.as_system():
                brain = self.brain_of(first.brain_id)
                if brain is None or brain.deleted_at is not None:
                    outcome = Finished.GONE
                else:
                    finisher = self.finishers.get(first.kind)
                    if finisher is None:  # a kind this process does not know (a newer release's)
                        return Finished.LATER
                    outcome = finisher(brain, first.memory_id, any(m.relink for m in marks))
                    if outcome is Finished.LATER:
                        return outcome
                # a mark is never rewritten: deleting it by its key deletes only what was read
                for start in range(0, len(marks), _DELETE_AT_ONCE):
                    self.records.transact([Delete(*m.key) for m in marks[start : start + _DELETE_AT_ONCE]])
        except CairnError as exc:
            log.warning(
                "could not finish the %s links of memory %s: %s", first.kind, first.memory_id, exc.message
            )
            return Finished.LATER
        return outcome


def _pk(memory_id: str) -> str:
    return shard_pk(_PK, memory_id)


def _mark(item: Item) -> Mark:
    memory_id, _, token = item.sk.rpartition("#")
    return Mark(
        brain_id=str(item.data.get("brain_id", "")),
        memory_id=str(item.data.get("memory_id", memory_id)),
        kind=str(item.data.get("kind", "")),
        relink=bool(item.data.get("relink", False)),
        token=token,
        at=_written_at(item),
    )


def _written_at(item: Item) -> float:
    """A mark's time; 0 (as old as any, so the next settle finishes it) for a damaged one, which
    must not stop every settle of every mark (the sweep, a process opening the data)."""
    value = item.data.get("at", 0.0)
    try:
        at = float(value)
    except (TypeError, ValueError):
        at = math.nan
    if math.isfinite(at) and not isinstance(value, bool):
        return at
    log.warning("the pending-links mark %s has no time it was written: it is settled as an old one", item.sk)
    return 0.0
