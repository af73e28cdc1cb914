"""A one-time pass of the sweep over every brain's partitions of one kind, in resumable steps: what
the concept-reach pass (services/mnemosyne/concept_reach_sweep.py) and the image-reference pass
(services/mnemosyne/image_refs_sweep.py) share.

Such partitions cannot be listed without a scan, which on DynamoDB reads the whole table: a step is
one page of one scan over the prefixes of up to MAX_SCAN_PREFIXES brains at once (as the settling
looks do, services/erasure/keyspace.py), its items handed to the pass's `settle`, and the pass's
progress is one record (`started`, `brains`, `cursor`; `finished`), with a mark for each brain done.
A brain with nothing to settle costs no read of its own: its prefix rides in its group's scan, and
its mark is one write.

`brains` and `cursor` are the scan under way; `finished` says no brain needs the pass any more.
A step that loses the progress record's version to another process's step is not kept (its work
is done again, which changes nothing). A brain made after the pass started (with a margin for an
earlier release's processes still running) was written by this release only: it is not scanned,
and once the margin has passed with every brain done the pass is `finished` (a sweep reads one
record). A damaged progress record starts the scan again (done brains stay done).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any, Final

from cairn.domain.errors import Conflict, InvalidInput
from cairn.domain.models import Brain
from cairn.ports.clock import Clock
from cairn.ports.records import MAX_SCAN_PREFIXES, Item, RecordStore
from cairn.services.documents.current_memories import stepped
from cairn.services.repositories import BrainRepository, get_all

BUDGET_S: Final = 10.0
"""How long a sweep tick carries a pass on."""
LATE_S: Final = 3600.0
"""Brains made this long after the pass started are still scanned: an earlier release's process
may still be running then."""

Key = tuple[str, str]


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


class BrainScanPass:
    """The pass's progress (module docstring): `prefix` names a brain's partitions to scan,
    `settle` is given each page's items, `done_key` is a brain's mark (under the brain's own
    keyspace, so deleting the brain takes it)."""

    def __init__(
        self,
        records: RecordStore,
        brains: BrainRepository,
        clock: Clock,
        *,
        pass_key: Key,
        done_key: Callable[[str], Key],
        prefix: Callable[[str], str],
        settle: Callable[[Sequence[Item]], None],
        step_items: int,
    ) -> None:
        self.records = records
        self.brains = brains
        self.clock = clock
        self.pass_key = pass_key
        self.done_key = done_key
        self.prefix = prefix
        self.settle = settle
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
        held = self.records.get(*self.pass_key)
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
        prefixes = [self.prefix(brain_id) for brain_id in group]
        try:
            page = self.records.scan(
                prefixes, cursor=cursor if isinstance(cursor, str) else None, limit=self.step_items
            )
        except InvalidInput:  # a cursor this store cannot read (another store's): the scan again
            page = self.records.scan(prefixes, limit=self.step_items)
        self.settle(page.items)
        if page.cursor is None:
            # a brain deleted meanwhile keeps no mark: its record read now, not a listing's
            live = {b.id for b in self.brains.get_many(group) if b.deleted_at is None}
            for brain_id in (b for b in group if b in live):
                self.records.put(Item(*self.done_key(brain_id), {"at": self._now()}))
            state = {"started": state["started"]}
        else:
            state["cursor"] = page.cursor
        self._save(state, held.version if held is not None else 0)
        return False

    def left(self, brains: Sequence[Brain]) -> list[str]:
        """Which of these live brains the pass has still to scan (the maintenance report's): none
        once it is `finished` (one read), else those `_next` would take, the scan under way's
        included (a batch read of their marks each 100 brains)."""
        held = self.records.get(*self.pass_key)
        state = _sound(held.data) if held is not None else None
        if state is not None and state.get("finished") is True:
            return []
        started = str(state["started"]) if state is not None else self._now()
        until = datetime.fromisoformat(started) + timedelta(seconds=LATE_S)
        ids = [b.id for b in brains if b.deleted_at is None and b.created_at <= until]
        done = get_all(self.records, [self.done_key(brain_id) for brain_id in ids])
        return [brain_id for brain_id in ids if self.done_key(brain_id) not in done]

    def _next(self, brains: Iterable[Brain], started: str) -> list[str]:
        """The next brains to scan: made before the pass started (and LATE_S), not done yet."""
        until = datetime.fromisoformat(started) + timedelta(seconds=LATE_S)
        ids = [b.id for b in brains if b.created_at <= until]
        done = get_all(self.records, [self.done_key(brain_id) for brain_id in ids])
        return [brain_id for brain_id in ids if self.done_key(brain_id) not in done][:MAX_SCAN_PREFIXES]

    def _save(self, state: dict[str, Any], version: int) -> bool:
        try:
            self.records.put(Item(*self.pass_key, state), version)
        except Conflict:
            return False
        return True

    def _now(self) -> str:
        return self.clock.now().isoformat()
