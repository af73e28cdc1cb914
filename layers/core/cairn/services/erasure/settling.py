"""Brain deletions still settling: the deletion's last looks at what work under way wrote after it.

| record                      | pk         | sk           | data                         |
|-----------------------------|------------|--------------|------------------------------|
| a brain deletion settling   | `settling` | `<brain id>` | `since`: when it was purged  |

A deletion marks its brain deleted, then purges what the brain holds. Work that read the brain
before the mark may still write after the purge has listed its keys: a memory's links and
entity counts after its commit, a session made or appended to, a sweep's build step of the
current memories' entries, a job's checkpoint or log record. A document commit takes itself back
(services/repositories.py); the rest is left for these looks. The record is written before the
purge, so a deletion stopped by a crash settles too once it is resumed. The sweep (services/
documents/index_sweeper.py: `cairn serve` every 30 s, the AWS schedule every 5 minutes) purges the
brain again while the record stands, and the first look that starts `SETTLE_S` after `since`, when
nothing that read the brain before the mark can still be writing, is the last: the record goes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime, timedelta

from cairn.domain.errors import Conflict, damaged_record
from cairn.ports.clock import Clock
from cairn.ports.records import Item, RecordStore
from cairn.services.repositories import all_items

PK = "settling"
SETTLE_S = 15 * 60.0
"""How long work that read a brain before its deletion marked it may still write: the longest a
job's step runs on AWS (a Lambda invocation's limit, 15 minutes), far past a request's writes
(their tries are bounded), a sweep's build step or a link settler's memory."""


@dataclass(frozen=True)
class Settling:
    brain_id: str
    since: datetime

    @property
    def until(self) -> datetime:
        return self.since + timedelta(seconds=SETTLE_S)


class DeletionsSettling:
    def __init__(self, records: RecordStore, clock: Clock) -> None:
        self.records = records
        self.clock = clock

    def start(self, brain_id: str) -> None:
        """The brain's deletion is about to purge it (again, when resumed: the first time stays)."""
        with suppress(Conflict):
            self.records.put(Item(PK, brain_id, {"since": self.clock.now().isoformat()}), expected_version=0)

    def standing(self) -> Iterator[Settling]:
        """The deletions settling; DamagedStore at a record whose `since` is not the time a
        deletion wrote (changed outside Cairn): said as damage, never a crash of the sweep."""
        for item in all_items(self.records, PK):
            since = item.data.get("since")
            try:
                when = datetime.fromisoformat(since) if isinstance(since, str) else None
            except ValueError:
                when = None
            if when is None or when.tzinfo is None:
                raise damaged_record(item.pk, item.sk, "its `since` is not an ISO 8601 time with a zone")
            yield Settling(item.sk, when)

    def settled(self, brain_id: str) -> None:
        self.records.delete(PK, brain_id)
