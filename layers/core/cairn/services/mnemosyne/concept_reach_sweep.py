"""The concept links earlier releases left without a reach: one pass over each brain, in steps.

Releases before concept_reach.py linked chunks with no reach record, so an erasure or a deletion
removed the links of the chunks its document had then, and a document that shrank kept the links of
the chunks it dropped (their concept names taken from its text) past its erasure; the links of a
document such a release erased stayed for good. This pass, a chore of the sweep (services/documents/
index_sweeper.py), reads every brain's chunk-link partitions (`links#<brain>#out#chk_…`) once:

- a document still stored (live or soft-deleted) gets its reach raised to the highest chunk
  ordinal linked, naming the stages of the queued ingests' chunk ids linked (chunk_ids.py), so its
  next rewrite trims the links past its chunks and an erasure or deletion removes them all. They
  are not removed here: a rewrite committing as the pass reads the document has its linker make
  links of those ordinals again, which the pass cannot tell from the old ones (a keyed link added
  again keeps the first), and would remove;
- a document no longer stored has every link the reach names removed, and the reach with it. The
  reach is raised before the document is read, as a linker does (concepts.py), so an erasure or
  deletion whose removal read the reach before it was raised has already removed the record, and
  the read finds the document gone;
- a document whose record no longer reads (damaged) is taken for stored: its links stay.

Chunk-link partitions cannot be listed without a scan, which on DynamoDB reads the whole table: a
step is one page of one scan over the prefixes of up to MAX_SCAN_PREFIXES brains at once (as the
settling looks do, services/erasure/keyspace.py), and the pass's progress is one record:

| record                 | pk                            | sk          | data                          |
|------------------------|-------------------------------|-------------|-------------------------------|
| the pass               | `concept-reach-pass`          | `pass-2`    | `started`, `brains`, `cursor` |
| a brain's pass is done | `links#<brain_id>#reach-done` | `concept-2` | `at`                          |

This is the second pass (`-2`): the first (`pass`, `concept`) knew only live chunk ids, and the
erasures and re-ingests of a release whose reach named no stages left the links of queued ingests'
chunks, which this one finds; the first's records stay, unread (a brain's goes with the brain).

`brains` and `cursor` are the scan under way; `finished` says no brain needs the pass any more.
A step that loses the progress record's version to another process's step is not kept (its work
is done again, which changes nothing). A brain made after the pass started (with a margin for an
earlier release's processes still running) was linked by this release only: it is not scanned, and
once the margin has passed with every brain done the pass is `finished` (a sweep reads one record).
A brain's mark sits under its links prefix, so deleting the brain takes it.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import suppress
from datetime import datetime, timedelta
from typing import Any, Final

from cairn.domain.errors import Conflict, DamagedStore, InvalidInput
from cairn.domain.models import Brain
from cairn.ports.clock import Clock
from cairn.ports.records import MAX_SCAN_PREFIXES, Item, Put, RecordStore
from cairn.services.documents.chunk_ids import parse_chunk_id
from cairn.services.documents.current_memories import stepped
from cairn.services.links.repository import links_prefix
from cairn.services.mnemosyne.concept_reach import ConceptReach, reach_data, reach_key, reach_of
from cairn.services.repositories import DocumentRepository, get_all

log = logging.getLogger(__name__)

PASS_KEY: Final = ("concept-reach-pass", "pass-2")
STEP_ITEMS: Final = 500
"""The link items one step's scan page holds at most."""
BUDGET_S: Final = 10.0
"""How long a sweep tick carries the pass on."""
_BATCH: Final = 100  # reach records made in one transaction (DynamoDB's 100 items)
LATE_S: Final = 3600.0
"""Brains made this long after the pass started are still scanned: an earlier release's process
may still be running then."""


def done_key(brain_id: str) -> tuple[str, str]:
    return f"{links_prefix(brain_id)}reach-done", "concept-2"


def _chunk_prefix(brain_id: str) -> str:
    return f"{links_prefix(brain_id)}out#chk_"


def _sound(data: dict[str, Any]) -> dict[str, Any] | None:
    """The pass's record as written, or None when it is not (a damaged record starts it again)."""
    started, group, cursor = data.get("started"), data.get("brains"), data.get("cursor")
    try:
        if not isinstance(started, str) or datetime.fromisoformat(started).tzinfo is None:
            return None
    except ValueError:
        return None
    if group is not None and not (
        isinstance(group, list)
        and len(group) <= MAX_SCAN_PREFIXES
        and all(isinstance(b, str) and b and "#" not in b for b in group)
    ):
        return None
    if cursor is not None and not isinstance(cursor, str):
        return None
    return dict(data)


class ReachSweep:
    """The pass (module docstring) over the brains the sweep names."""

    def __init__(
        self,
        records: RecordStore,
        reach: ConceptReach,
        documents: DocumentRepository,
        clock: Clock,
        *,
        step_items: int = STEP_ITEMS,
    ) -> None:
        self.records = records
        self.reach = reach
        self.documents = documents
        self.clock = clock
        self.step_items = step_items

    def carry_on(
        self, brains: Callable[[], Sequence[Brain]], *, budget_s: float = BUDGET_S, stop: Callable[[], bool]
    ) -> int:
        """Steps of the pass until it is done for every brain, `budget_s` has passed or `stop`
        says the process is stopping (current_memories.stepped); the steps taken. `brains` is
        asked only when a step starts on the next brains (the sweep's listing of its tick)."""
        return stepped(lambda _: self.step(brains), ["pass"], budget_s=budget_s, stop=stop)

    def step(self, brains: Callable[[], Sequence[Brain]]) -> bool:
        """One page of the scan under way, or the start of the next brains' scan; True once no brain
        is left to scan."""
        held = self.records.get(*PASS_KEY)
        state = _sound(held.data) if held is not None else None
        state = state or {"started": self._now()}  # none yet, or damaged: done brains stay done
        if state.get("finished") is True:
            return True
        group = state.get("brains")
        if not isinstance(group, list) or not group:
            group = self._next(brains(), str(state["started"]))
            if not group:
                late = self.clock.now() - datetime.fromisoformat(str(state["started"]))
                if held is None or late.total_seconds() >= LATE_S:
                    # past LATE_S no brain needs the pass again: later sweeps read this record alone
                    self._save(
                        {**state, "finished": late.total_seconds() >= LATE_S}, held.version if held else 0
                    )
                return True
            state.update(brains=group, cursor=None)
        cursor = state.get("cursor")
        prefixes = [_chunk_prefix(brain_id) for brain_id in group]
        try:
            page = self.records.scan(
                prefixes, cursor=cursor if isinstance(cursor, str) else None, limit=self.step_items
            )
        except InvalidInput:  # a cursor this store cannot read (another store's): the scan again
            page = self.records.scan(prefixes, limit=self.step_items)
        self._settle(page.items)
        if page.cursor is None:
            # a brain deleted meanwhile keeps no mark: its record read now, not a listing's
            live = {b.id for b in self.documents.brains.get_many(group) if b.deleted_at is None}
            for brain_id in (b for b in group if b in live):
                self.records.put(Item(*done_key(brain_id), {"at": self._now()}))
            state = {"started": state["started"]}
        else:
            state["cursor"] = page.cursor
        self._save(state, held.version if held is not None else 0)
        return False

    def left(self, brains: Sequence[Brain]) -> list[str]:
        """Which of these live brains the pass has still to scan (the maintenance report's): none
        once it is `finished` (one read), else those `_next` would take, the scan under way's
        included (a batch read of their marks each 100 brains)."""
        held = self.records.get(*PASS_KEY)
        state = _sound(held.data) if held is not None else None
        if state is not None and state.get("finished") is True:
            return []
        started = str(state["started"]) if state is not None else self._now()
        until = datetime.fromisoformat(started) + timedelta(seconds=LATE_S)
        ids = [b.id for b in brains if b.deleted_at is None and b.created_at <= until]
        done = get_all(self.records, [done_key(brain_id) for brain_id in ids])
        return [brain_id for brain_id in ids if done_key(brain_id) not in done]

    def _next(self, brains: Iterable[Brain], started: str) -> list[str]:
        """The next brains to scan: made before the pass started (and LATE_S), not done yet."""
        until = datetime.fromisoformat(started) + timedelta(seconds=LATE_S)
        ids = [b.id for b in brains if b.created_at <= until]
        done = get_all(self.records, [done_key(brain_id) for brain_id in ids])
        return [brain_id for brain_id in ids if done_key(brain_id) not in done][:MAX_SCAN_PREFIXES]

    def _settle(self, items: Sequence[Item]) -> None:
        """Raise the reach of each document these link items name to the highest ordinal linked,
        naming the stages of the chunk ids linked, then remove every link of those no longer stored
        (module docstring)."""
        upto: dict[tuple[str, str], int] = {}
        stages: dict[tuple[str, str], set[str]] = defaultdict(set)
        for item in items:
            brain_id, found, chunk = item.pk.removeprefix("links#").partition("#out#")
            ref = parse_chunk_id(chunk)
            if not found or ref is None or not item.sk.startswith(f"{self.reach.kind}#"):
                continue
            key = (brain_id, ref.document_id)
            upto[key] = max(upto.get(key, 0), ref.ordinal + 1)
            stages[key].add(ref.stage)
        if not upto:
            return
        self._raise(upto, stages)
        stored = self._stored(upto)
        for key in upto:
            if key not in stored:
                self.reach.forget(*key)

    def _stored(self, keys: Collection[tuple[str, str]]) -> set[tuple[str, str]]:
        """Which of these (brain, document) are still stored, in two batch reads. One whose record
        no longer reads is taken for stored (its links stay, bounded by the reach just raised),
        where it failed every step on this page and held the pass up for good."""
        ids = {doc_id for _, doc_id in keys}
        damaged: set[str] = set()
        try:
            found = self.documents.get_many_by_id(ids)
        except DamagedStore:
            found = {}
            for doc_id in ids:
                try:
                    doc = self.documents.stored_by_id(doc_id)
                except DamagedStore:
                    log.warning("concept reach pass: document %s is damaged; its links are kept", doc_id)
                    damaged.add(doc_id)
                    continue
                if doc is not None:
                    found[doc_id] = doc
        return {
            (brain_id, doc_id)
            for brain_id, doc_id in keys
            if doc_id in damaged or (doc_id in found and found[doc_id].brain_id == brain_id)
        }

    def _raise(self, upto: dict[tuple[str, str], int], stages: Mapping[tuple[str, str], set[str]]) -> None:
        """Each document's reach raised to at least `upto`'s: those with none made in transactions of
        _BATCH (each must not exist yet: one a linker made meanwhile sends its batch one at a time),
        the rest one at a time (ConceptReach.extend). A damaged one (its `upto` not a count) is
        replaced: the pass reads every link of the brain, so the reach it leaves covers them all,
        where a damaged one would hold the pass (and the document's linker and erasure) up."""
        known = get_all(self.records, [reach_key(*key) for key in upto])
        missing: list[tuple[str, str]] = []
        for key, top in upto.items():
            held = known.get(reach_key(*key))
            if held is None:
                missing.append(key)
                continue
            try:
                was = reach_of(held)
            except DamagedStore:  # what the pass reads replaces it
                with suppress(Conflict):  # a linker's write meanwhile: extend reads it
                    self.records.put(Item(*reach_key(*key), reach_data(top, stages[key])), held.version)
                    continue
            else:
                if was.upto >= top and stages[key] <= set(was.families):
                    continue
            self.reach.extend(*key, top, stages=stages[key])
        for start in range(0, len(missing), _BATCH):
            batch = missing[start : start + _BATCH]
            try:
                self.records.transact(
                    [Put(Item(*reach_key(*key), reach_data(upto[key], stages[key])), 0) for key in batch]
                )
            except Conflict:
                for key in batch:
                    self.reach.extend(*key, upto[key], stages=stages[key])

    def _save(self, state: dict[str, Any], version: int) -> bool:
        try:
            self.records.put(Item(*PASS_KEY, state), version)
        except Conflict:
            return False
        return True

    def _now(self) -> str:
        return self.clock.now().isoformat()
