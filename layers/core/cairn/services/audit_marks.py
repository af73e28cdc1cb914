"""The names an erasure redacted from the audit, kept as records: an entry that waited while the
erasure ran (one a busy store refused, kept in another process's memory or in the spill) is checked
against them by whichever process writes it, before and after it writes it (services/audit.py).

The erasure marks its names before it scans the store; a writer reads the marks after its write.
So either the write came first and the erasure's scan finds the entry, or the mark came first and
the writer sees it.

| record                            | pk                      | sk                            | data        |
|-----------------------------------|-------------------------|-------------------------------|-------------|
| a name erased in a tenant         | `audit-erased#<digest>` | `<field>#t#<tenant>`          | `until`     |
| a name erased in a brain          | `audit-erased#<digest>` | `<field>#b#<brain id>`        | `until`     |
| a mark's expiry                   | `audit-erased-expiry`   | `<until>#<digest>#<mark sk>`  | mark pk, sk |
| the latest erasure of marks gone  | `meta`                  | `audit-marks-forgotten`       | `erased_at` |
| unkeyed marks adopted so far      | `meta`                  | `audit-marks-adopted`         | cursor, done |

`<field>` is the entry's field the name is redacted from (`subject`, `target`). The digest is an
HMAC-SHA256 of the name under a key derived from the store's secret (ports/store_secret.py), so a
mark reveals nothing, not even to a dictionary of likely names, without that secret. Marks written
by earlier releases hold the plain SHA-256 of the name: they are still read, never written.

A mark lives LIFETIME from its erasure's last pass, then the index sweep removes it (`expire`;
the unkeyed marks get a lifetime once, from the sweep that adopts them: `adopt_unkeyed`). An entry
waits for its write at most as long as the store refuses it: a process retries what it keeps at
its next entry and at every index sweep (every 30 s; 5 minutes on AWS), and what a stopped process
left in the spill is written by the next sweep on that data directory. An entry that waited longer
than its erasure's marks lived cannot be checked against them: before a sweep removes a mark it
records the latest erasure it may stand for (`erased_at`), and an entry timed before that (SKEW
allowing for the processes' clocks) is written with its subject and target redacted.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from typing import Protocol

from cairn.domain.errors import Conflict, InvalidInput, Unavailable
from cairn.ports.clock import Clock
from cairn.ports.records import MAX_GET_MANY, Delete, Item, Put, RecordStore
from cairn.ports.store_secret import StoreSecret

log = logging.getLogger(__name__)

LIFETIME = timedelta(days=30)
"""How long a mark is kept after its erasure's last pass."""
REFRESH = timedelta(days=1)
"""A mark an erasure finds with more than LIFETIME - REFRESH to live is not written again."""
SKEW = timedelta(minutes=5)
ADOPT_BUDGET_S = 20.0

_PREFIX = "audit-erased#"
_EXPIRY_PK = "audit-erased-expiry"
_FORGOTTEN = ("meta", "audit-marks-forgotten")
_ADOPTED = ("meta", "audit-marks-adopted")
_MARKS_PER_WRITE = 50  # two items each: a transaction's 100 (DynamoDB's bound)
_DUE_PER_STEP = 50


class Named(Protocol):
    """What of an audit entry a mark can match."""

    @property
    def at(self) -> datetime: ...
    @property
    def tenant(self) -> str: ...
    @property
    def brain_id(self) -> str | None: ...
    @property
    def subject(self) -> str | None: ...
    @property
    def target(self) -> str | None: ...


class ErasedNames:
    def __init__(self, records: RecordStore, clock: Clock, secret: StoreSecret) -> None:
        self.records = records
        self.clock = clock
        self.secret = secret
        self._adopted = False
        self._adopting = threading.Lock()

    def mark(
        self,
        *,
        tenants: Iterable[str],
        brain_ids: Iterable[str],
        subjects: Iterable[str],
        targets: Iterable[str],
    ) -> None:
        """From now on, for LIFETIME, an entry of these tenants or brains whose subject is one of
        `subjects` or whose target is one of `targets` is redacted when it is written. A mark made
        in the last REFRESH is not written again (an erasure marks what it found so far at each of
        its passes)."""
        scopes = [f"t#{t}" for t in tenants] + [f"b#{b}" for b in brain_ids]
        names = [
            (field, name) for field, given in (("subject", subjects), ("target", targets)) for name in given
        ]
        if not names or not scopes:
            return
        key = self._key()
        until = _stamp(self.clock.now() + LIFETIME)
        fresh_enough = _stamp(self.clock.now() + LIFETIME - REFRESH)
        keys = sorted(
            {(_PREFIX + _keyed(key, name), f"{field}#{scope}") for field, name in names for scope in scopes}
        )
        fresh: list[tuple[str, str]] = []
        for start in range(0, len(keys), MAX_GET_MANY):
            batch = keys[start : start + MAX_GET_MANY]
            found = self.records.get_many(batch)
            fresh += [
                k for k in batch if k not in found or str(found[k].data.get("until", "")) < fresh_enough
            ]
        for start in range(0, len(fresh), _MARKS_PER_WRITE):
            ops: list[Put | Delete] = []
            for pk, sk in fresh[start : start + _MARKS_PER_WRITE]:
                ops.append(Put(Item(pk, sk, {"until": until})))
                ops.append(Put(Item(_EXPIRY_PK, f"{until}#{pk[len(_PREFIX) :]}#{sk}", {"pk": pk, "sk": sk})))
            self.records.transact(ops)

    def fields(self, entries: Sequence[Named]) -> list[set[str]]:
        """For each entry, the fields a mark says to redact (empty: none); both, for an entry timed
        before an erasure whose marks are gone."""
        if not entries:
            return []
        key = self._key()
        forgotten = self.records.get(*_FORGOTTEN)
        erased_at = _moment(forgotten.data.get("erased_at")) if forgotten is not None else None
        wanted = [_keys(key, entry) for entry in entries]
        found: set[tuple[str, str]] = set()
        flat = [k for keys in wanted for k, _ in keys]
        for start in range(0, len(flat), MAX_GET_MANY):
            found.update(self.records.get_many(flat[start : start + MAX_GET_MANY]))
        return [
            {
                field
                for k, field in keys
                if k in found or (erased_at is not None and entry.at < erased_at + SKEW)
            }
            for entry, keys in zip(entries, wanted, strict=True)
        ]

    def sweep(self, stop: Callable[[], bool] = lambda: False) -> int:
        """The index sweep's chore: `expire`, then `adopt_unkeyed`; how many marks went or were
        given a lifetime. A store that refuses meanwhile (busy) is said, and the next sweep goes on."""
        try:
            return self.expire(stop) + (0 if stop() else self.adopt_unkeyed(stop))
        except Unavailable as busy:
            log.warning("the audit's erasure marks wait for the next sweep: %s", busy)
            return 0

    def expire(self, stop: Callable[[], bool] = lambda: False) -> int:
        """Remove the marks past their lifetime (the index sweep's chore); how many went. What the
        latest of them may stand for is recorded first (`fields`)."""
        now = _stamp(self.clock.now())
        removed = 0
        while not stop():
            page = self.records.query(_EXPIRY_PK, limit=_DUE_PER_STEP)
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
                self._forget(max(str(mark.data["until"]) for mark in gone))
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

    def adopt_unkeyed(
        self, stop: Callable[[], bool] = lambda: False, budget_s: float = ADOPT_BUDGET_S
    ) -> int:
        """Give the marks an earlier release wrote (no lifetime) LIFETIME from now, once per store,
        carrying on from where a previous sweep stopped; how many were given one."""
        if self._adopted or not self._adopting.acquire(blocking=False):
            return 0
        try:
            return self._adopt(stop, time.monotonic() + budget_s)
        finally:
            self._adopting.release()

    def _adopt(self, stop: Callable[[], bool], ends: float) -> int:
        marker = self.records.get(*_ADOPTED)
        if marker is not None and marker.data.get("done") is True:
            self._adopted = True
            return 0
        cursor = marker.data.get("cursor") if marker is not None else None
        version = marker.version if marker is not None else 0
        until = _stamp(self.clock.now() + LIFETIME)
        adopted = 0
        while True:
            try:
                page = self.records.scan([_PREFIX], cursor=cursor if isinstance(cursor, str) else None)
            except InvalidInput:  # a cursor another release's store wrote: from the start again
                if cursor is None:
                    raise
                cursor = None
                continue
            unkeyed = [item for item in page.items if "until" not in item.data]
            for start in range(0, len(unkeyed), _MARKS_PER_WRITE):
                ops: list[Put | Delete] = []
                for item in unkeyed[start : start + _MARKS_PER_WRITE]:
                    ops.append(Put(Item(item.pk, item.sk, {"until": until}), item.version))
                    ops.append(
                        Put(
                            Item(
                                _EXPIRY_PK,
                                f"{until}#{item.pk[len(_PREFIX) :]}#{item.sk}",
                                {"pk": item.pk, "sk": item.sk},
                            )
                        )
                    )
                try:
                    self.records.transact(ops)
                except Conflict:  # written meanwhile: the next sweep reads this page again
                    return adopted
                adopted += len(ops) // 2
            cursor = page.cursor
            try:
                version = self.records.put(
                    Item(*_ADOPTED, {"cursor": cursor, "done": cursor is None}), version
                ).version
            except Conflict:  # another process adopts them too
                return adopted
            if cursor is None:
                self._adopted = True
                return adopted
            if stop() or time.monotonic() >= ends:
                return adopted

    def _forget(self, until: str) -> None:
        """Record that the erasures a mark expiring at `until` stands for may no longer be checked."""
        moment = _moment(until)
        if moment is None:
            return
        erased_at = _stamp(moment - LIFETIME + REFRESH)
        for _ in range(8):
            held = self.records.get(*_FORGOTTEN)
            if held is not None and str(held.data.get("erased_at", "")) >= erased_at:
                return
            with suppress(Conflict):
                self.records.put(Item(*_FORGOTTEN, {"erased_at": erased_at}), held.version if held else 0)
                return
        raise Conflict("the audit's forgotten erasures kept changing; the next sweep tries again")

    def _key(self) -> bytes:
        return hmac.new(self.secret.read(), b"cairn audit erasure marks", hashlib.sha256).digest()


def _keys(key: bytes, entry: Named) -> list[tuple[tuple[str, str], str]]:
    """Each mark that would redact a field of `entry`, keyed and unkeyed (an earlier release's)."""
    scopes = [f"t#{entry.tenant}"] + ([f"b#{entry.brain_id}"] if entry.brain_id is not None else [])
    return [
        ((_PREFIX + digest, f"{field}#{scope}"), field)
        for field, name in (("subject", entry.subject), ("target", entry.target))
        if name is not None
        for digest in (_keyed(key, name), hashlib.sha256(name.encode()).hexdigest())
        for scope in scopes
    ]


def _keyed(key: bytes, name: str) -> str:
    return hmac.new(key, name.encode(), hashlib.sha256).hexdigest()


def _stamp(moment: datetime) -> str:
    """Fixed width, UTC, so that stamps order by time (the sort keys of the expiries)."""
    moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def _moment(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.removesuffix("Z")).replace(tzinfo=UTC)
    except ValueError:
        return None
