"""The lifetimes of a family of erasure marks (services/audit_marks.py, services/erasure/erased.py):
each mark holds `until`, and an expiry item in the family's own partition, written in the same
transaction, orders the marks by it, so the index sweep finds the due ones with one Query.

| record                        | pk             | sk                    | data                    |
|-------------------------------|----------------|-----------------------|-------------------------|
| a mark's expiry               | `<expiry pk>`  | `<until>#<mark tag>`  | mark pk, sk             |
| earlier marks adopted so far  | `meta`         | `<adopted sk>`        | cursor, done, at        |

`expire` removes the marks past `until` (the family sees them first: `before_removing`); a mark
written again meanwhile (a later erasure) is kept.

`adopt` gives the marks an earlier release wrote (no `until`: kept forever) a lifetime, page by page
of the family's listing, its cursor recorded so that a sweep carries on where the last stopped.
A pass that reached the end is made again ADOPT_AGAIN after it ended: a process of the earlier
release still running during a rolling deploy may write such marks after a pass went by them.
A pass writes only what it adopts, so one that finds none costs the listing's reads alone.

A mark keyed with the store's secret is labelled with the id of the key it was made under (`key`;
`-` for an earlier release's unkeyed mark, adopted; none for a keyed mark an earlier release made).
`rekeyed` moves a mark found under a previous key to the current one (services/keyed_digests.py);
`held_under` counts the marks still under a previous key of the ring, so the operator knows when a
previous key may go (services/secret_rotation.py), apart from those under a key the ring no longer
holds (dropped by force, or a secret replaced): no lookup can read them, the erasures they stand for
were forgotten when their key went, and dropping another key cannot lose them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from cairn.domain.errors import Conflict, InvalidInput, Unavailable
from cairn.ports.clock import Clock
from cairn.ports.records import Delete, Item, Put, RecordStore, ScanPage

log = logging.getLogger(__name__)

ADOPT_AGAIN = timedelta(days=1)
"""How long after a pass of adoption ended the next one starts."""
ADOPT_BUDGET_S = 20.0
MARKS_PER_WRITE = 50  # two items each: a transaction's 100 (DynamoDB's bound)
_DUE_PER_STEP = 50
UNKEYED = "-"
"""The `key` label of an earlier release's unkeyed mark: it depends on no key of the secret."""


@dataclass(frozen=True)
class Family:
    """What the lifetimes of one family of marks need to know of it."""

    name: str  # for the log
    expiry_pk: str
    adopted_sk: str
    lifetime: timedelta
    listing: Callable[[RecordStore, str | None], ScanPage]
    """A page of the family's marks from a cursor (None: the first); InvalidInput for a cursor
    this store cannot resume from."""
    tag: Callable[[str, str], str]
    """What follows `<until>#` in the expiry sort key of the mark (pk, sk): unique in the family."""
    before_removing: Callable[[list[Item]], None] = lambda gone: None
    """Told the marks about to be removed, so that it may record what they stood for."""


@dataclass(frozen=True)
class HeldUnder:
    """The family's marks under another key than the current one (`held_under`)."""

    previous: int  # labelled with a previous key of the ring
    unlabelled: int  # made by an earlier release, under whichever key was current then
    last_until: str | None  # when the last of them expires (None: there are none)
    lost: int = 0  # labelled with a key the ring no longer holds: unreadable, not counted

    @property
    def count(self) -> int:
        return self.previous + self.unlabelled


class MarkLifetimes:
    def __init__(self, records: RecordStore, clock: Clock, family: Family) -> None:
        self.records = records
        self.clock = clock
        self.family = family
        self._next_pass: datetime | None = None  # this process does not look before then
        self._adopting = threading.Lock()

    def until(self) -> str:
        """The `until` of a mark written now."""
        return stamp(self.clock.now() + self.family.lifetime)

    def puts(self, item: Item, until: str, expected_version: int | None = None) -> list[Put | Delete]:
        """The mark, with `until`, and its expiry: one transaction's operations."""
        data = {**item.data, "until": until}
        return [
            Put(Item(item.pk, item.sk, data), expected_version),
            Put(
                Item(
                    self.family.expiry_pk,
                    f"{until}#{self.family.tag(item.pk, item.sk)}",
                    {"pk": item.pk, "sk": item.sk},
                )
            ),
        ]

    def rekeyed(self, old: Item, pk: str, sk: str, key: str, current: Item | None) -> list[Put | Delete]:
        """The operations that move `old`, a mark found under a previous key, to (pk, sk) under the
        current key `key`: kept whole (its times, its expiry) in one transaction that fails when
        either changed meanwhile. When `current`, the mark already under the current key, holds
        times at least as late, `old` only goes; when it holds earlier ones, nothing is done (both
        match until `old` expires)."""
        times = [f for f in ("until", "since") if f in old.data]
        until = str(old.data.get("until", ""))
        gone: list[Put | Delete] = [
            Delete(old.pk, old.sk, old.version),
            Delete(self.family.expiry_pk, f"{until}#{self.family.tag(old.pk, old.sk)}"),
        ]
        if current is not None:
            later = all(str(current.data.get(f, "")) >= str(old.data[f]) for f in times)
            return gone if later else []
        if not until:
            return []
        return [*self.puts(Item(pk, sk, {**old.data, "key": key}), until, 0), *gone]

    def held_under(self, current: str, previous_keys: Collection[str]) -> HeldUnder:
        """Count the marks under one of `previous_keys`, or made before marks were labelled, and
        apart those under a key neither `current` nor previous (one pass of the family's listing)."""
        previous = unlabelled = lost = 0
        last: str | None = None
        cursor: str | None = None
        while True:
            page = self.family.listing(self.records, cursor)
            for item in page.items:
                label = item.data.get("key")
                if label in (current, UNKEYED) or "until" not in item.data:
                    continue  # an unkeyed mark not yet adopted depends on no key either
                if not isinstance(label, str):  # none, or damaged: whichever key, counted
                    unlabelled += 1
                elif label in previous_keys:
                    previous += 1
                else:
                    lost += 1
                    continue
                until = str(item.data["until"])
                last = until if last is None or until > last else last
            if page.cursor is None:
                return HeldUnder(previous, unlabelled, last, lost)
            cursor = page.cursor

    def sweep(self, stop: Callable[[], bool] = lambda: False) -> int:
        """The index sweep's chore: `expire`, then `adopt`; how many marks went or were given a
        lifetime. A store that refuses meanwhile (busy) is said, and the next sweep goes on."""
        try:
            return self.expire(stop) + (0 if stop() else self.adopt(stop))
        except Unavailable as busy:
            log.warning("the %s wait for the next sweep: %s", self.family.name, busy)
            return 0

    def expire(self, stop: Callable[[], bool] = lambda: False) -> int:
        """Remove the marks past their lifetime; how many went."""
        now = stamp(self.clock.now())
        removed = 0
        while not stop():
            page = self.records.query(self.family.expiry_pk, limit=_DUE_PER_STEP)
            due = [item for item in page.items if item.sk < now]
            if not due:
                return removed
            refs = [(i.data.get("pk"), i.data.get("sk")) for i in due]
            marks = self.records.get_many(
                list(
                    dict.fromkeys((pk, sk) for pk, sk in refs if isinstance(pk, str) and isinstance(sk, str))
                )
            )
            gone = [mark for mark in marks.values() if str(mark.data.get("until", "")) <= now]
            if gone:
                self.family.before_removing(gone)
            ops: list[Put | Delete] = [Delete(item.pk, item.sk) for item in due]
            ops += [Delete(mark.pk, mark.sk, mark.version) for mark in gone]  # re-marked meanwhile: kept
            try:
                self.records.transact(ops)
            except Conflict:  # another sweep, or an erasure, meanwhile: the next sweep goes on
                return removed
            removed += len(gone)
            if len(due) < len(page.items) or page.next_after is None:
                return removed
        return removed

    def adopt(self, stop: Callable[[], bool] = lambda: False, budget_s: float = ADOPT_BUDGET_S) -> int:
        """Give the marks an earlier release wrote (no `until`) a lifetime from now, carrying on
        from where a previous sweep stopped, a pass again ADOPT_AGAIN after one ended; how many
        were given one."""
        if self._next_pass is not None and self.clock.now() < self._next_pass:
            return 0
        if not self._adopting.acquire(blocking=False):
            return 0
        try:
            return self._adopt(stop, time.monotonic() + budget_s)
        finally:
            self._adopting.release()

    def _adopt(self, stop: Callable[[], bool], ends: float) -> int:
        marker = self.records.get("meta", self.family.adopted_sk)
        cursor: Any = marker.data.get("cursor") if marker is not None else None
        version = marker.version if marker is not None else 0
        if marker is not None and marker.data.get("done") is True:
            ended = moment(marker.data.get("at"))  # none: the release that adopted once only
            if ended is not None and self.clock.now() < ended + ADOPT_AGAIN:
                self._next_pass = ended + ADOPT_AGAIN
                return 0
            cursor = None
        until = self.until()
        adopted = 0
        while True:
            try:
                page = self.family.listing(self.records, cursor if isinstance(cursor, str) else None)
            except InvalidInput:  # a cursor another release's store wrote: from the start again
                if cursor is None:
                    raise
                cursor = None
                continue
            unkeyed = [item for item in page.items if "until" not in item.data]
            for start in range(0, len(unkeyed), MARKS_PER_WRITE):
                ops: list[Put | Delete] = []
                for item in unkeyed[start : start + MARKS_PER_WRITE]:
                    labelled = Item(item.pk, item.sk, {**item.data, "key": UNKEYED}, item.version)
                    ops += self.puts(labelled, until, item.version)
                try:
                    self.records.transact(ops)
                except Conflict:  # written meanwhile: the next sweep reads this page again
                    return adopted
                adopted += len(ops) // 2
            cursor = page.cursor
            done = cursor is None
            data: dict[str, Any] = {"cursor": cursor, "done": done}
            if done:
                data["at"] = stamp(self.clock.now())
            try:
                version = self.records.put(Item("meta", self.family.adopted_sk, data), version).version
            except Conflict:  # another process adopts them too
                return adopted
            if done:
                self._next_pass = self.clock.now() + ADOPT_AGAIN
                return adopted
            if stop() or time.monotonic() >= ends:
                return adopted


def stamp(at: datetime) -> str:
    """Fixed width, UTC, so that stamps order by time (the sort keys of the expiries)."""
    at = at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
    return at.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def moment(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.removesuffix("Z")).replace(tzinfo=UTC)
    except ValueError:
        return None
