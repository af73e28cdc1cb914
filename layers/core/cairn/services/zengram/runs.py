"""A brain's zengram consolidation runs: the last one, replaced only at the version read, so two
concurrent POST /consolidate start one job (services/zengram/consolidation.py); and each run's
own record, which keeps what it took on (a job is polled after later runs began).

| record                   | pk               | sk              |
|--------------------------|------------------|-----------------|
| last consolidation run   | `zengram#<brain>`| `consolidation` |
| one run, by its job      | `zengram#<brain>`| `run#<job id>`  |

A run takes on the memories waiting for consolidation: those created after `settled`, the moment
up to which the runs before it consolidated, until `cutoff`, the creation of the newest it took.
Once its job completes, `cutoff` becomes the brain's new settled moment; a run that failed leaves
them waiting for the next.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from cairn.ports.records import Item, Put, RecordStore

_SK = "consolidation"


@dataclass(frozen=True)
class Taken:
    """What a run took on: `waiting` memories of `groups` clients, created after `settled` up to
    `cutoff` (ISO 8601; None: from the first memory, or none at all)."""

    waiting: int = 0
    groups: int = 0
    settled: str | None = None
    cutoff: str | None = None


@dataclass(frozen=True)
class LastRun:
    job_id: str
    started_at: str | None
    version: int
    taken: Taken = Taken()


class ConsolidationRuns:
    def __init__(self, records: RecordStore) -> None:
        self.records = records

    def last(self, brain_id: str) -> LastRun | None:
        item = self.records.get(consolidation_pk(brain_id), _SK)
        if item is None:
            return None
        return LastRun(item.data["job_id"], item.data.get("started_at"), item.version, _taken(item.data))

    def of_job(self, brain_id: str, job_id: str) -> Taken | None:
        """What the run of `job_id` took on; None for a job no run of this brain recorded."""
        item = self.records.get(consolidation_pk(brain_id), f"run#{job_id}")
        return _taken(item.data) if item is not None else None

    def begin(
        self,
        brain_id: str,
        job_id: str,
        started_at: str | None,
        *,
        after: LastRun | None,
        taken: Taken | None = None,
    ) -> None:
        """Record a new run in place of `after` (None: the brain's first), with what it took on;
        Conflict when another run was recorded since it was read."""
        took = asdict(taken or Taken())
        record = {"job_id": job_id, "started_at": started_at, **took}
        expected = after.version if after is not None else 0
        pk = consolidation_pk(brain_id)
        self.records.transact(
            [
                Put(Item(pk, _SK, data=record), expected_version=expected),
                Put(Item(pk, f"run#{job_id}", data=took)),
            ]
        )


def _taken(data: dict[str, object]) -> Taken:
    """A record's Taken; a run recorded before runs kept it took nothing on."""

    def text(name: str) -> str | None:
        value = data.get(name)
        return value if isinstance(value, str) else None

    def number(name: str) -> int:
        value = data.get(name)
        return value if isinstance(value, int) else 0

    return Taken(number("waiting"), number("groups"), text("settled"), text("cutoff"))


def consolidation_pk(brain_id: str) -> str:
    """The partition of a brain's zengram consolidation records."""
    return f"zengram#{brain_id}"
