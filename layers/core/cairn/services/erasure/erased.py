"""Who has been erased, and since when: the one thing work already under way must ask before it
writes something drawn from a person.

An extraction job queued before an actor's erasure may hold drafts of that actor's facts (its
checkpoint) and store them after the erasure has scanned the brain; an ingest queued before an
agent scope's erasure may write into that scope after it. An erasure therefore marks its
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

from cairn.domain.paths import AGENT_PREFIX
from cairn.ports.clock import Clock
from cairn.ports.records import Item, RecordStore
from cairn.services.erasure.subjects import Subject, SubjectKind

PK = "erased"


class ErasedSubjects:
    def __init__(self, records: RecordStore, clock: Clock) -> None:
        self.records = records
        self.clock = clock

    def mark(self, subject: Subject) -> None:
        """Before anything of `subject` is removed: its session-actor identity and its agent scope
        are erased from now (`any` erases both)."""
        since = {"since": self.clock.now().isoformat()}
        if subject.covers(SubjectKind.session_actor):
            self.records.put(Item(PK, Subject(SubjectKind.session_actor, subject.value).digest, since))
        if subject.scope is not None:
            self.records.put(Item(PK, Subject(SubjectKind.agent_scope, subject.value).digest, since))

    def scope_since(self, path: str) -> datetime | None:
        """When the agent scope holding `path` (`memory/agent/<agent>/…`) was last erased (None:
        never, or a path in no agent's scope)."""
        if not path.startswith(AGENT_PREFIX) or "/" not in path[len(AGENT_PREFIX) :]:
            return None
        agent = path[len(AGENT_PREFIX) :].split("/", 1)[0]
        return self._since(Subject(SubjectKind.agent_scope, agent))

    def actor_since(self, actor_id: str | None) -> datetime | None:
        """When the actor was last erased (None: never)."""
        if not actor_id:
            return None
        return self._since(Subject(SubjectKind.session_actor, actor_id))

    def _since(self, subject: Subject) -> datetime | None:
        item = self.records.get(PK, subject.digest)
        return datetime.fromisoformat(str(item.data["since"])) if item is not None else None
