"""A brain's last zengram consolidation: one record, replaced only at the version read, so two
concurrent POST /consolidate start one job (services/zengram/consolidation.py).

| record                   | pk               | sk              |
|--------------------------|------------------|-----------------|
| last consolidation run   | `zengram#<brain>`| `consolidation` |
"""

from __future__ import annotations

from dataclasses import dataclass

from cairn.ports.records import Item, RecordStore

_SK = "consolidation"


@dataclass(frozen=True)
class LastRun:
    job_id: str
    started_at: str | None
    version: int


class ConsolidationRuns:
    def __init__(self, records: RecordStore) -> None:
        self.records = records

    def last(self, brain_id: str) -> LastRun | None:
        item = self.records.get(consolidation_pk(brain_id), _SK)
        if item is None:
            return None
        return LastRun(item.data["job_id"], item.data.get("started_at"), item.version)

    def begin(self, brain_id: str, job_id: str, started_at: str | None, *, after: LastRun | None) -> None:
        """Record a new run in place of `after` (None: the brain's first); Conflict when another
        run was recorded since it was read."""
        record = {"job_id": job_id, "started_at": started_at}
        expected = after.version if after is not None else 0
        self.records.put(Item(consolidation_pk(brain_id), _SK, data=record), expected_version=expected)


def consolidation_pk(brain_id: str) -> str:
    """The partition of a brain's zengram consolidation record."""
    return f"zengram#{brain_id}"
