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
| an erased subject  | `erased` | `<brain id>#<subject digest>`|
"""

from __future__ import annotations

from collections.abc import Sequence
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

    def mark(self, subject: Subject, brain_ids: Sequence[str]) -> None:
        """Before anything of `subject` is removed from `brain_ids`: its session-actor identity and
        its agent scope are erased there from now (`any` erases both); other brains (another
        tenant's agent of the same name) are not its."""
        since = {"since": self.clock.now().isoformat()}
        kinds = [SubjectKind.session_actor] if subject.covers(SubjectKind.session_actor) else []
        kinds += [SubjectKind.agent_scope] if subject.scope is not None else []
        for brain_id in brain_ids:
            for kind in kinds:
                self.records.put(Item(PK, _key(brain_id, Subject(kind, subject.value)), since))

    def scope_since(self, brain_id: str, path: str) -> datetime | None:
        """When the agent scope holding `path` (`memory/agent/<agent>/…`) was last erased in the
        brain (None: never, or a path in no agent's scope)."""
        if not path.startswith(AGENT_PREFIX) or "/" not in path[len(AGENT_PREFIX) :]:
            return None
        agent = path[len(AGENT_PREFIX) :].split("/", 1)[0]
        return self._since(brain_id, Subject(SubjectKind.agent_scope, agent))

    def actor_since(self, brain_id: str, actor_id: str | None) -> datetime | None:
        """When the actor was last erased in the brain (None: never)."""
        if not actor_id:
            return None
        return self._since(brain_id, Subject(SubjectKind.session_actor, actor_id))

    def _since(self, brain_id: str, subject: Subject) -> datetime | None:
        item = self.records.get(PK, _key(brain_id, subject))
        return datetime.fromisoformat(str(item.data["since"])) if item is not None else None


def _key(brain_id: str, subject: Subject) -> str:
    return f"{brain_id}#{subject.digest}"
