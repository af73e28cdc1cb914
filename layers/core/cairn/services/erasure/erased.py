"""Who has been erased, and since when: the one thing work already under way must ask before it
writes something drawn from a person.

An extraction job queued before an actor's erasure may hold drafts of that actor's facts (its
checkpoint) and store them after the erasure has scanned the brain; an ingest queued before an
agent scope's erasure may write into that scope after it. An erasure therefore marks its
subject before it removes anything; such work asks `since` after each write and takes back what it
wrote when the mark is newer than the work. Either the write came before the mark, and the
erasure's scans, which follow it, find it; or the mark came first, and the work sees it.

| record                          | pk               | sk                             | data           |
|---------------------------------|------------------|--------------------------------|----------------|
| an erased subject               | `erased`         | `<brain id>#<digest>`          | since, until, key |
| a mark's expiry                 | `erased-expiry`  | `<until>#<brain id>#<digest>`  | mark pk, sk    |
| the latest erasure of marks gone| `meta`           | `erased-subjects-forgotten`    | `since`        |
| unkeyed marks adopted so far    | `meta`           | `erased-subjects-adopted`      | cursor, done, at |
| which keys make the marks       | `meta`           | `erased-subjects-key`          | `check`, `held` |

The digest is an HMAC-SHA256 of the subject's kind and value under a key derived from the store's
secret (services/keyed_digests.py), so a reader of the store without it cannot tell whose data was
erased by trying likely names. An earlier release wrote the first 16 hex digits of the plain
SHA-256 and kept them forever: those are still read (the later of both marks counts), never written.
A mark is labelled with the id of the secret's key it was made under (`key`), looked for under
every key the secret's ring holds, and re-keyed to the current key when found under a previous one
(services/keyed_digests.py), so a rotated secret loses no erasure. A process lacking a key the marks
may be under cannot read them: the store's check of the keys (`KeyCheck`, read with the marks) makes
it forget the erasures until then, as the sweep does below, so work queued before that moment writes
nothing drawn from a person.

Only work queued before an erasure needs its mark, and such work may wait long (a stopped server's
queue), so no lifetime bounds it by itself. A mark lives LIFETIME from its erasure; before the index
sweep removes it, it records the latest erasure whose mark goes (`since` under `meta`), and from
then on any work queued before that moment is taken for erased work, in every brain (`actor_since`
and `scope_since` answer it when no mark is later): it writes nothing drawn from a person. So a
mark is kept only as long as no work could bring the subject's data back without meeting it, and
work that waited past it loses at most what it would have written, never brings back what went.
The earlier release's marks get LIFETIME from the sweep that adopts them (services/mark_lifetimes.py,
the audit's marks' machinery, made again daily for a process of that release still running).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from contextlib import suppress
from datetime import UTC, datetime, timedelta

from cairn.domain.errors import Conflict, Unavailable
from cairn.domain.key_rings import KeyRing
from cairn.domain.paths import AGENT_PREFIX
from cairn.domain.subjects import SubjectKind
from cairn.ports.clock import Clock
from cairn.ports.records import Delete, Item, Put, RecordStore, ScanPage
from cairn.ports.store_secret import StoreSecret
from cairn.services.erasure.subjects import Subject
from cairn.services.keyed_digests import FamilyKey, FamilyKeys, KeyCheck
from cairn.services.mark_lifetimes import MARKS_PER_WRITE, Family, HeldUnder, MarkLifetimes

PK = "erased"
LIFETIME = timedelta(days=30)
"""How long a subject's mark is kept after its erasure."""
_EXPIRY_PK = "erased-expiry"
_FORGOTTEN = ("meta", "erased-subjects-forgotten")
_ADOPTED_SK = "erased-subjects-adopted"
_CHECK_SK = "erased-subjects-key"
_PURPOSE = b"cairn erased subjects"


class ErasedSubjects:
    def __init__(self, records: RecordStore, clock: Clock, secret: StoreSecret) -> None:
        self.records = records
        self.clock = clock
        self.secret = secret
        self.check = KeyCheck(
            records, _CHECK_SK, "erased subjects' marks", self._forget_until_now, secret, _PURPOSE
        )
        self.lifetimes = MarkLifetimes(
            records,
            clock,
            Family(
                name="erased subjects' marks",
                expiry_pk=_EXPIRY_PK,
                adopted_sk=_ADOPTED_SK,
                lifetime=LIFETIME,
                listing=_listing,
                tag=lambda _pk, sk: sk,
                before_removing=self._removing,
            ),
        )

    def mark(self, subject: Subject, brain_ids: Sequence[str]) -> None:
        """Before anything of `subject` is removed from `brain_ids`: its session-actor identity and
        its agent scope are erased there from now (`any` erases both); other brains (another
        tenant's agent of the same name) are not its. Unavailable (and nothing marked) without
        the store's secret."""
        self.check.mark_under_current(lambda key: self._mark(key, subject, brain_ids), "the erased subjects'")

    def _mark(self, key: FamilyKey, subject: Subject, brain_ids: Sequence[str]) -> None:
        since = {"since": self.clock.now().isoformat(), "key": key.id}
        until = self.lifetimes.until()
        kinds = [SubjectKind.session_actor] if subject.covers(SubjectKind.session_actor) else []
        kinds += [SubjectKind.agent_scope] if subject.scope is not None else []
        marks = [
            Item(PK, _keyed(key, brain_id, Subject(kind, subject.value)), since)
            for brain_id in brain_ids
            for kind in kinds
        ]
        for start in range(0, len(marks), MARKS_PER_WRITE):
            ops: list[Put | Delete] = []
            for item in marks[start : start + MARKS_PER_WRITE]:
                ops += self.lifetimes.puts(item, until)
            self.records.transact(ops)

    def scope_since(self, brain_id: str, path: str) -> datetime | None:
        """When the agent scope holding `path` (`memory/agent/<agent>/…`) was last erased in the
        brain (None: never, or a path in no agent's scope); at least when the latest erasure whose
        mark is gone ran."""
        if not path.startswith(AGENT_PREFIX) or "/" not in path[len(AGENT_PREFIX) :]:
            return None
        agent = path[len(AGENT_PREFIX) :].split("/", 1)[0]
        return self._since(brain_id, Subject(SubjectKind.agent_scope, agent))

    def actor_since(self, brain_id: str, actor_id: str | None) -> datetime | None:
        """When the actor was last erased in the brain (None: never); at least when the latest
        erasure whose mark is gone ran."""
        if not actor_id:
            return None
        return self._since(brain_id, Subject(SubjectKind.session_actor, actor_id))

    def sweep(self, stop: Callable[[], bool] = lambda: False) -> int:
        """The index sweep's chore: marks past their lifetime go, an earlier release's get one."""
        return self.lifetimes.sweep(stop)

    def _since(self, brain_id: str, subject: Subject) -> datetime | None:
        keys = self.check.keys()
        for _ in range(3):
            keyed = {(PK, _keyed(k, brain_id, subject)): k for k in keys.all}
            wanted = [*keyed, (PK, f"{brain_id}#{_unkeyed(subject)}"), _FORGOTTEN]
            found = self.records.get_many([*wanted, self.check.key])
            confirmed, other = self.check.confirm(keys, found.pop(self.check.key, None), read=False)
            if confirmed is keys:
                break
            keys = confirmed  # rotated elsewhere: look again under the keys the ring holds now
        else:
            raise Unavailable("the erased subjects' key check kept changing; try again")
        if other:
            found = {k: v for k, v in found.items() if k != _FORGOTTEN}
            if (forgotten := self.records.get(*_FORGOTTEN)) is not None:
                found[_FORGOTTEN] = forgotten
        self._rekey(found, keyed, keys)
        times = [t for t in (_moment(item.data.get("since")) for item in found.values()) if t is not None]
        return max(times) if times else None

    def held_under_previous_keys(self, ring: KeyRing) -> HeldUnder:
        """The marks still under a previous key of `ring` (services/secret_rotation.py)."""
        return self.lifetimes.held_under(ring.current.id, {k.id for k in ring.previous})

    def _rekey(
        self, found: dict[tuple[str, str], Item], keyed: dict[tuple[str, str], FamilyKey], keys: FamilyKeys
    ) -> None:
        """Move the marks found under a previous key to the current one; one the store refuses now
        is moved at its next lookup."""
        current = next(k for k, key in keyed.items() if key is keys.current)
        for at, key in keyed.items():
            if key is keys.current or at not in found:
                continue
            ops = self.lifetimes.rekeyed(found[at], *current, keys.current.id, found.get(current))
            if ops:
                with suppress(Conflict, Unavailable):
                    self.records.transact(ops)

    def _removing(self, gone: list[Item]) -> None:
        """Before marks go: the latest erasure they stand for, so work queued before it stays stopped."""
        times = [t for t in (_moment(mark.data.get("since")) for mark in gone) if t is not None]
        if not times:
            return
        self._forget_since(max(times))

    def _forget_until_now(self) -> None:
        self._forget_since(self.clock.now())

    def _forget_since(self, latest: datetime) -> None:
        """Record that work queued before `latest` is to be taken for erased work."""
        for _ in range(8):
            held = self.records.get(*_FORGOTTEN)
            before = _moment(held.data.get("since")) if held is not None else None
            if before is not None and before >= latest:
                return
            with suppress(Conflict):
                self.records.put(
                    Item(*_FORGOTTEN, {"since": latest.isoformat()}), held.version if held else 0
                )
                return
        raise Conflict("the erased subjects' forgotten erasures kept changing; the next sweep tries again")


def _keyed(key: FamilyKey, brain_id: str, subject: Subject) -> str:
    return f"{brain_id}#{key.digest(_named(subject))}"


def _unkeyed(subject: Subject) -> str:
    """An earlier release's digest of the subject (read, never written)."""
    return hashlib.sha256(_named(subject).encode()).hexdigest()[:16]


def _named(subject: Subject) -> str:
    return f"{subject.kind}\x00{subject.value}"


def _moment(value: object) -> datetime | None:
    """A mark's `since` (UTC when it names no offset); None for anything but a time."""
    if not isinstance(value, str):
        return None
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _listing(records: RecordStore, cursor: str | None) -> ScanPage:
    page = records.query(PK, after=cursor, limit=1000)
    return ScanPage(page.items, page.next_after)
