"""Who has been erased, and since when: the one thing work already under way must ask before it
writes something drawn from a person.

An extraction job queued before an actor's erasure may hold drafts of that actor's facts (its
checkpoint) and store them after the erasure has scanned the brain. An erasure therefore marks its
subject (a digest, never the name) before it removes anything; such work asks `since` after each
write and takes back what it wrote when the mark is newer than the work. Either the write came
before the mark, and the erasure's scans, which follow it, find it; or the mark came first, and
the work sees it.

| record             | pk       | sk                |
|--------------------|----------|-------------------|
| an erased subject  | `erased` | `<subject digest>`|
"""

from __future__ import annotations

from datetime import datetime

from cairn.ports.clock import Clock
from cairn.ports.records import Item, RecordStore
from cairn.services.erasure.subjects import Subject, SubjectKind

PK = "erased"


class ErasedSubjects:
    def __init__(self, records: RecordStore, clock: Clock) -> None:
        self.records = records
        self.clock = clock

    def mark(self, subject: Subject) -> None:
        """Before anything of `subject` is removed: its session-actor identity is erased from now
        (`any` erases an actor too)."""
        if not subject.covers(SubjectKind.session_actor):
            return
        digest = Subject(SubjectKind.session_actor, subject.value).digest
        self.records.put(Item(PK, digest, {"since": self.clock.now().isoformat()}))

    def actor_since(self, actor_id: str | None) -> datetime | None:
        """When the actor was last erased (None: never)."""
        if not actor_id:
            return None
        item = self.records.get(PK, Subject(SubjectKind.session_actor, actor_id).digest)
        return datetime.fromisoformat(str(item.data["since"])) if item is not None else None
