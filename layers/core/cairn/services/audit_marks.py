"""The names an erasure redacted from the audit, kept as records: an entry that waited while the
erasure ran (one a busy store refused, kept in another process's memory or in the spill) is checked
against them by whichever process writes it, before and after it writes it (services/audit.py).

The erasure marks its names before it scans the store; a writer reads the marks after its write.
So either the write came first and the erasure's scan finds the entry, or the mark came first and
the writer sees it.

| record                        | pk                      | sk                           | data             |
|-------------------------------|-------------------------|------------------------------|------------------|
| a name erased in a tenant     | `audit-erased#<digest>` | `<field>#t#<tenant>`         | `until`, `key`   |
| a name erased in a brain      | `audit-erased#<digest>` | `<field>#b#<brain id>`       | `until`, `key`   |
| a mark's expiry               | `audit-erased-expiry`   | `<until>#<digest>#<mark sk>` | mark pk, sk      |
| latest erasure of marks gone  | `meta`                  | `audit-marks-forgotten`      | `erased_at`      |
| unkeyed marks adopted so far  | `meta`                  | `audit-marks-adopted`        | cursor, done, at |
| which keys make the marks     | `meta`                  | `audit-marks-key`            | `check`, `held`  |

`<field>` is the entry's field the name is redacted from (`subject`, `target`). The digest is an
HMAC-SHA256 of the name under a key derived from the store's secret (ports/store_secret.py), so a
mark reveals nothing, not even to a dictionary of likely names, without that secret. Marks written
by earlier releases hold the plain SHA-256 of the name: they are still read, never written.
A mark is labelled with the id of the secret's key it was made under (`key`), looked for under
every key the secret's ring holds, and re-keyed to the current key when found under a previous one
(services/keyed_digests.py), so a rotated secret loses no erasure. A process lacking a key the marks
may be under cannot read them: the store's check of the keys (`KeyCheck`) makes it forget the
erasures until then (`erased_at`, as below), so entries waiting from before are written with their
subject and target redacted.

A mark lives LIFETIME from its erasure's last pass, then the index sweep removes it (`expire`;
the unkeyed marks get a lifetime from the sweep that adopts them, `adopt_unkeyed`: a resumable Scan
of `audit-erased#`, made again a day after each pass ended for the marks a process of the earlier
release still running wrote meanwhile; services/mark_lifetimes.py keeps both). An entry
waits for its write at most as long as the store refuses it: a process retries what it keeps at
its next entry and at every index sweep (every 30 s; 5 minutes on AWS), and what a stopped process
left in the spill is written by the next sweep on that data directory. An entry that waited longer
than its erasure's marks lived cannot be checked against them: before a sweep removes a mark it
records the latest erasure it may stand for (`erased_at`), and an entry timed before that (SKEW
allowing for the processes' clocks) is written with its subject and target redacted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from datetime import datetime, timedelta
from typing import Protocol

from cairn.domain.errors import Conflict, Unavailable
from cairn.domain.key_rings import KeyRing
from cairn.ports.clock import Clock
from cairn.ports.records import MAX_GET_MANY, Delete, Item, Put, RecordStore, ScanPage
from cairn.ports.store_secret import StoreSecret
from cairn.services.keyed_digests import FamilyKey, FamilyKeys, KeyCheck
from cairn.services.mark_lifetimes import (
    ADOPT_BUDGET_S,
    MARKS_PER_WRITE,
    Family,
    HeldUnder,
    MarkLifetimes,
    moment,
    stamp,
)

LIFETIME = timedelta(days=30)
"""How long a mark is kept after its erasure's last pass."""
REFRESH = timedelta(days=1)
"""A mark an erasure finds with more than LIFETIME - REFRESH to live is not written again."""
SKEW = timedelta(minutes=5)
_PREFIX = "audit-erased#"
_EXPIRY_PK = "audit-erased-expiry"
_FORGOTTEN = ("meta", "audit-marks-forgotten")
_ADOPTED = ("meta", "audit-marks-adopted")
_CHECK_SK = "audit-marks-key"
_PURPOSE = b"cairn audit erasure marks"


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
        self.check = KeyCheck(
            records, _CHECK_SK, "audit's erasure marks", self._forget_until_now, secret, _PURPOSE
        )
        self.lifetimes = MarkLifetimes(
            records,
            clock,
            Family(
                name="audit's erasure marks",
                expiry_pk=_EXPIRY_PK,
                adopted_sk=_ADOPTED[1],
                lifetime=LIFETIME,
                listing=_listing,
                tag=lambda pk, sk: f"{pk[len(_PREFIX) :]}#{sk}",
                before_removing=self._removing,
            ),
        )

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
        self.check.mark_under_current(
            lambda key: self._mark(key, names, scopes), "the audit's erasure marks'"
        )

    def _mark(self, key: FamilyKey, names: list[tuple[str, str]], scopes: list[str]) -> None:
        until = self.lifetimes.until()
        fresh_enough = stamp(self.clock.now() + LIFETIME - REFRESH)
        keys = sorted(
            {(_PREFIX + key.digest(name), f"{field}#{scope}") for field, name in names for scope in scopes}
        )
        fresh: list[tuple[str, str]] = []
        for start in range(0, len(keys), MAX_GET_MANY):
            batch = keys[start : start + MAX_GET_MANY]
            found = self.records.get_many(batch)
            fresh += [
                k for k in batch if k not in found or str(found[k].data.get("until", "")) < fresh_enough
            ]
        for start in range(0, len(fresh), MARKS_PER_WRITE):
            ops: list[Put | Delete] = []
            for pk, sk in fresh[start : start + MARKS_PER_WRITE]:
                ops += self.lifetimes.puts(Item(pk, sk, {"key": key.id}), until)
            self.records.transact(ops)

    def usable(self) -> None:
        """Raise Unavailable when no mark can be made now (the store's secret cannot be had): an
        erasure asks first, so that it refuses before anything of the subject goes."""
        self.check.keys()

    def fields(self, entries: Sequence[Named]) -> list[set[str]]:
        """For each entry, the fields a mark says to redact (empty: none); both, for an entry timed
        before an erasure whose marks are gone."""
        if not entries:
            return []
        keys = self.check.keys()
        for _ in range(3):
            wanted = [_keys(keys, entry) for entry in entries]
            flat = list(dict.fromkeys(k for ks in wanted for k, _, _ in ks))
            found: dict[tuple[str, str], Item] = {}
            for start in range(0, len(flat), MAX_GET_MANY):
                found.update(self.records.get_many(flat[start : start + MAX_GET_MANY]))
            # Read after the marks: the sweep, and a process keyed otherwise, record what they forget
            # before the marks go (or turn unreadable), so a mark not found above is forgotten by now;
            # a rotation elsewhere is seen here too (and the marks looked for again under its keys).
            confirmed, _ = self.check.confirm(keys)
            if confirmed is keys:
                break
            keys = confirmed
        else:
            raise Unavailable("the audit's erasure marks' key check kept changing; try again")
        self._rekey(found, wanted, keys)
        forgotten = self.records.get(*_FORGOTTEN)
        erased_at = moment(forgotten.data.get("erased_at")) if forgotten is not None else None
        return [
            {
                field
                for k, field, _ in keys_
                if k in found or (erased_at is not None and entry.at < erased_at + SKEW)
            }
            for entry, keys_ in zip(entries, wanted, strict=True)
        ]

    def held_under_previous_keys(self, ring: KeyRing) -> HeldUnder:
        """The marks still under a previous key of `ring` (services/secret_rotation.py)."""
        return self.lifetimes.held_under(ring.current.id, {k.id for k in ring.previous})

    def _rekey(
        self,
        found: dict[tuple[str, str], Item],
        wanted: list[list[tuple[tuple[str, str], str, FamilyKey | None]]],
        keys: FamilyKeys,
    ) -> None:
        """Move the marks found under a previous key to the current one; one the store refuses now
        is moved at its next lookup."""
        moved: set[tuple[str, str]] = set()
        for keys_ in wanted:
            for at, _, key in keys_:
                if key is None or key is keys.current or at not in found or at in moved:
                    continue
                moved.add(at)
                to = _current_of(keys_, at, keys.current)
                ops = self.lifetimes.rekeyed(found[at], *to, keys.current.id, found.get(to))
                if ops:
                    with suppress(Conflict, Unavailable):
                        self.records.transact(ops)

    def sweep(self, stop: Callable[[], bool] = lambda: False) -> int:
        """The index sweep's chore: `expire`, then `adopt_unkeyed` (services/mark_lifetimes.py)."""
        return self.lifetimes.sweep(stop)

    def expire(self, stop: Callable[[], bool] = lambda: False) -> int:
        """Remove the marks past their lifetime (the index sweep's chore); how many went. What the
        latest of them may stand for is recorded first (`fields`)."""
        return self.lifetimes.expire(stop)

    def adopt_unkeyed(
        self, stop: Callable[[], bool] = lambda: False, budget_s: float = ADOPT_BUDGET_S
    ) -> int:
        """Give the marks an earlier release wrote (no lifetime) LIFETIME from now, carrying on from
        where a previous sweep stopped, and again a day after a pass ended; how many were given one."""
        return self.lifetimes.adopt(stop, budget_s)

    def _removing(self, gone: list[Item]) -> None:
        self._forget(max(str(mark.data["until"]) for mark in gone))

    def _forget(self, until: str) -> None:
        """Record that the erasures a mark expiring at `until` stands for may no longer be checked."""
        at = moment(until)
        if at is not None:
            self._forget_since(stamp(at - LIFETIME + REFRESH))

    def _forget_until_now(self) -> None:
        self._forget_since(stamp(self.clock.now()))

    def _forget_since(self, erased_at: str) -> None:
        """Record that the erasures until `erased_at` may no longer be checked."""
        for _ in range(8):
            held = self.records.get(*_FORGOTTEN)
            before = moment(held.data.get("erased_at")) if held is not None else None
            if before is not None and stamp(before) >= erased_at:  # a damaged one is no time: written over
                return
            with suppress(Conflict):
                self.records.put(Item(*_FORGOTTEN, {"erased_at": erased_at}), held.version if held else 0)
                return
        raise Conflict("the audit's forgotten erasures kept changing; the next sweep tries again")


def _listing(records: RecordStore, cursor: str | None) -> ScanPage:
    return records.scan([_PREFIX], cursor=cursor)


def _keys(keys: FamilyKeys, entry: Named) -> list[tuple[tuple[str, str], str, FamilyKey | None]]:
    """Each mark that would redact a field of `entry`, with the key it is under: under each key of
    the ring, and unkeyed (an earlier release's: None)."""
    scopes = [f"t#{entry.tenant}"] + ([f"b#{entry.brain_id}"] if entry.brain_id is not None else [])
    return [
        ((_PREFIX + digest, f"{field}#{scope}"), field, key)
        for field, name in (("subject", entry.subject), ("target", entry.target))
        if name is not None
        for digest, key in [
            *((k.digest(name), k) for k in keys.all),
            (hashlib.sha256(name.encode()).hexdigest(), None),
        ]
        for scope in scopes
    ]


def _current_of(
    keys_: list[tuple[tuple[str, str], str, FamilyKey | None]], at: tuple[str, str], current: FamilyKey
) -> tuple[str, str]:
    """Where the mark at `at` (under a previous key) is under the current key: an entry names one
    value per field, so its field and scope (the sort key) tell the name."""
    return next(k for k, _, key in keys_ if k[1] == at[1] and key is current)
