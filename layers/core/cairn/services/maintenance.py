"""What the sweep still has to do for brains, reported by `cairn check`, /healthz and the AWS sweep.

A brain's memory counts (services/documents/memory_counts.py) are kept, being built (a brain
written before them: counts read every record meanwhile), or `over` (grown past what one record
holds: counts read every record until the sweep's hourly recount fits); its creation-time entries
(memory_times.py) are built or being built (zengram's stats reads every record meanwhile); a
deleted brain may still be settling (services/erasure/settling.py: the sweep purges it again until
15 minutes after its purge); the concept-reach pass (services/mnemosyne/concept_reach_sweep.py) has
live brains still to scan and others done (one read once it has finished, else a batch read of its
marks a 100 brains), and so has the image-reference pass (services/mnemosyne/image_refs_sweep.py).
Reading it costs one batch read of the counts' records a 1,000 brains, one read of the first
memory of each brain without counts (none: nothing to build) and one read of the deletions
settling. The latest report is kept (`last`) for /healthz, which reads no store: the sweep makes
one at the end of each tick.

Where the sweep runs in another process (AWS: the job task function's scheduled sweep; the API
function runs none), `shared` keeps each report of every brain in one record too, counts and
the time it was made (`swept_at`), never brain ids (a record under 1 KB, whatever the store
holds), and a process that has made none reads that record instead: at most once a READ_EVERY_S,
which is one GetItem on the API function's /healthz (Lambda gives it one request at a time).

| record              | pk            | sk     | data                                      |
|---------------------|---------------|--------|-------------------------------------------|
| the latest report   | `maintenance` | `last` | `swept_at` (ISO time), `counts` (a count each state) |
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from cairn.domain.models import Brain
from cairn.ports.clock import Clock
from cairn.ports.records import MAX_GET_MANY, Item, RecordStore
from cairn.services.documents.memory_counts import COUNTS_SK, OVER, times_done
from cairn.services.erasure.settling import DeletionsSettling, Settling
from cairn.services.repositories import documents_pk

MEMORY_DOCS = "doc#memories/"
REPORT_KEY: Final = ("maintenance", "last")
READ_EVERY_S: Final = 30.0
"""How long a process that runs no sweep answers with the stored report it last read."""
GROUPS: Final = (
    "counts_over",
    "counts_building",
    "entries_building",
    "deletions_settling",
    "concept_reach_to_do",
    "image_refs_to_do",
)
"""The states a report counts brains in (summary's names); `concept_reach_done` and
`image_refs_done` besides."""
COUNTED: Final = (*GROUPS, "concept_reach_done", "image_refs_done")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Maintenance:
    counts_over: tuple[str, ...] = ()
    """Brains whose memory counts grew `over` (counted from every record; the sweep retries hourly)."""
    counts_building: tuple[str, ...] = ()
    """Brains whose memory counts are being built."""
    times_building: tuple[str, ...] = ()
    """Brains whose counts are kept and whose creation-time entries are being built."""
    settling: tuple[Settling, ...] = ()
    """Brain deletions the sweep still looks at."""
    reach_to_do: tuple[str, ...] = ()
    """Live brains the concept-reach pass (services/mnemosyne/concept_reach_sweep.py) has still to scan."""
    reach_done: int = 0
    """Live brains it need not scan any more (scanned, or made by this release only)."""
    at: float = 0.0
    """When it was read (time.monotonic)."""
    tenants: Mapping[str, str] = field(default_factory=dict, hash=False)
    """Brain id -> its owner tenant, for the brains listed (live and deleted)."""
    swept_at: str | None = None
    """When it was made (ISO time), where the report says it (a sweep's of every brain)."""
    counted: Mapping[str, int] | None = field(default=None, hash=False)
    """A report read back from its record: the counts alone (no brain ids)."""
    image_refs_to_do: tuple[str, ...] = ()
    """Live brains the image-reference pass (services/mnemosyne/image_refs_sweep.py) has still to scan."""
    image_refs_done: int = 0
    """Live brains it need not scan any more (scanned, or made by this release only)."""

    @property
    def quiet(self) -> bool:
        if self.counted is not None:
            return not any(self.counted.get(name) for name in GROUPS)
        work = (
            self.counts_over,
            self.counts_building,
            self.times_building,
            self.settling,
            self.reach_to_do,
            self.image_refs_to_do,
        )
        return not any(work)

    def summary(self, *, named: bool, tenant: str | None = None) -> dict[str, object]:
        """How many brains are in each state; with `named`, which (their ids): with `tenant`, only
        that tenant's (an open server's caller is its owner, not the other tenants' principals).
        One read back from its record counts alone; `swept_at` says when, where known."""
        when = {"swept_at": self.swept_at} if self.swept_at is not None else {}
        if self.counted is not None:
            return {**{name: self.counted.get(name, 0) for name in COUNTED}, **when}
        groups = {
            "counts_over": self.counts_over,
            "counts_building": self.counts_building,
            "entries_building": self.times_building,
            "deletions_settling": tuple(s.brain_id for s in self.settling),
            "concept_reach_to_do": self.reach_to_do,
            "image_refs_to_do": self.image_refs_to_do,
        }
        said: dict[str, object] = {name: len(ids) for name, ids in groups.items()}
        said["concept_reach_done"] = self.reach_done
        said["image_refs_done"] = self.image_refs_done
        if named:
            seen = {
                name: [i for i in ids if tenant is None or self.tenants.get(i) == tenant]
                for name, ids in groups.items()
            }
            said["brains"] = {name: ids for name, ids in seen.items() if ids}
        return {**said, **when}


class BrainMaintenance:
    def __init__(
        self,
        records: RecordStore,
        settling: DeletionsSettling,
        brains: Callable[[], Sequence[Brain]],
        reach_left: Callable[[Sequence[Brain]], Sequence[str]] = lambda _: (),
        image_refs_left: Callable[[Sequence[Brain]], Sequence[str]] = lambda _: (),
        *,
        clock: Clock,
        shared: bool = False,
    ) -> None:
        """`brains`: every brain's record, live and deleted (their tenants say whose they are);
        `reach_left`: which of the live brains given the concept-reach pass has still to scan;
        `image_refs_left`: the same of the image-reference pass;
        `shared`: each report of every brain kept in its record too, read where none was made."""
        self.records = records
        self.settling = settling
        self.brains = brains
        self.reach_left = reach_left
        self.image_refs_left = image_refs_left
        self.clock = clock
        self.shared = shared
        self._last: Maintenance | None = None
        self._read: tuple[float, Maintenance | None] | None = None  # the stored one, and when read
        self._lock = threading.Lock()

    def report(
        self,
        brain_ids: Iterable[str] | None = None,
        *,
        deletions: bool = True,
        listed: Sequence[Brain] | None = None,
        named: Sequence[Brain] = (),
    ) -> Maintenance:
        """The state of these brains (every live brain when None) and, with `deletions`, of every
        deletion settling; kept as `last` when it covers every brain. `listed`: every brain's
        record as the caller (the sweep's tick) already listed them, instead of listing them again.
        `named`: the records of the brains given, whose concept-reach and image-reference passes are
        said too."""
        every = brain_ids is None
        if brain_ids is not None:
            listed = ()
        elif listed is None:
            listed = self.brains()
        tenants = {b.id: b.owner_tenant for b in listed}
        live = [b for b in listed if b.deleted_at is None]
        ids = [b.id for b in live] if brain_ids is None else list(brain_ids)
        asked = live if every else [b for b in named if b.deleted_at is None]
        reach = tuple(self.reach_left(asked))
        image_refs = tuple(self.image_refs_left(asked))
        keys = [(documents_pk(i), COUNTS_SK) for i in ids]
        held = {}
        for start in range(0, len(keys), MAX_GET_MANY):
            held.update(self.records.get_many(keys[start : start + MAX_GET_MANY]))
        over, building, times = [], [], []
        for brain_id, key in zip(ids, keys, strict=True):
            item = held.get(key)
            data = item.data if item is not None else None
            if data is not None and data.get(OVER) is True:
                over.append(brain_id)
            elif data is None and not self._memories(brain_id):
                continue  # nothing to count: its first memory's commit writes its counts
            elif data is None or data.get("built") is not True:
                building.append(brain_id)
            elif not times_done(data):
                times.append(brain_id)
        found = Maintenance(
            tuple(over),
            tuple(building),
            tuple(times),
            tuple(self.settling.standing()) if deletions else (),
            reach,
            len(asked) - len(reach),
            time.monotonic(),
            tenants,
            self.clock.now().isoformat() if every and deletions else None,
            image_refs_to_do=image_refs,
            image_refs_done=len(asked) - len(image_refs),
        )
        if every and deletions:
            with self._lock:
                self._last = found
            if self.shared:  # for the processes that run no sweep (module docstring)
                counts = found.summary(named=False)
                self.records.put(Item(*REPORT_KEY, {"swept_at": counts.pop("swept_at"), "counts": counts}))
        return found

    def _memories(self, brain_id: str) -> bool:
        """Whether the brain holds a memory document (one is read)."""
        return bool(self.records.query(documents_pk(brain_id), MEMORY_DOCS, limit=1).items)

    def last(self) -> Maintenance | None:
        """The latest report of every brain (None before the first): this process's, else, where
        `shared`, the stored one (read at most once a READ_EVERY_S); no store is read otherwise."""
        with self._lock:
            if self._last is not None or not self.shared:
                return self._last
            if self._read is not None and time.monotonic() - self._read[0] < READ_EVERY_S:
                return self._read[1]
        stored = self._stored()
        with self._lock:
            self._read = (time.monotonic(), stored)
        return stored

    def _stored(self) -> Maintenance | None:
        """The report kept in its record; None when there is none, or it does not read (logged:
        /healthz answers without it rather than fail)."""
        try:
            held = self.records.get(*REPORT_KEY)
        except Exception as exc:  # a store unavailable: /healthz's own checks say so
            log.warning("the stored maintenance report could not be read: %s", type(exc).__name__)
            return None
        if held is None:
            return None
        when, counts = held.data.get("swept_at"), held.data.get("counts")
        if not (
            isinstance(when, str)
            and isinstance(counts, dict)
            and all(type(counts.get(name, 0)) is int and counts.get(name, 0) >= 0 for name in COUNTED)
        ):
            log.warning("the stored maintenance report is damaged: it is left out until the next sweep's")
            return None
        return Maintenance(swept_at=when, counted={name: int(counts.get(name, 0)) for name in COUNTED})
