"""The audit log (services/audit.py) and API keys (auth/api_keys.py) on every record store.

Each audit entry is kept twice, in a day partition of its tenant and, when it names one, of its
brain, both written in one transaction that never overwrites; queries walk day partitions newest
first with a cursor, and an erasure rewrites the entries found by a scan of partition prefixes.
An API key is a record under `apikeys` holding only the hash of the key, revoked and trimmed by
conditional rewrites. This suite pins what depends on the store: pages across day partitions
and across entries of other tenants, inclusive time bounds at microseconds, the all-or-nothing
entry, prefixes that must not reach a neighbouring tenant or brain, and the keys' round trips,
listing, and a revocation that loses a race to another.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from cairn.auth.api_keys import KEYS_PK, ApiKeyService
from cairn.auth.principal import ADMIN, READ, WRITE, Principal, Via
from cairn.domain.errors import Conflict, Unavailable
from cairn.ports.records import RecordStore
from cairn.services import audit as audit_module
from cairn.services.audit import REDACTED, AuditEntry, AuditLog
from tests.fakes.clock import FakeClock
from tests.fakes.store_secret import SECRET

START = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
ALICE = Principal("acme", "alice", frozenset({WRITE}), Via.jwt)
BOB = Principal("acme", "bob", frozenset({WRITE}), Via.api_key)
CAROL = Principal("globex", "carol", frozenset({WRITE}), Via.jwt)
NEIGHBOUR = Principal("acme-labs", "alice", frozenset({WRITE}), Via.jwt)


def all_pages(log: AuditLog, limit: int, **query: str) -> list[list[AuditEntry]]:
    pages: list[list[AuditEntry]] = []
    after: str | None = None
    while True:
        page, after = log.query(**query, since=START, limit=limit, after=after)  # type: ignore[arg-type]
        pages.append(page)
        if after is None:
            return pages


# -- audit ---------------------------------------------------------------------------------------


def test_entries_page_newest_first_across_days_and_past_other_tenants(records: RecordStore) -> None:
    clock = FakeClock(start=START)
    log = AuditLog(records, clock, secret=SECRET)
    mine: list[AuditEntry] = []
    for i in range(7):
        mine.append(log.record(ALICE, "doc.write", brain_id="brn_1", target=f"p{i}", detail={"i": i}))
        log.record(CAROL, "doc.write", brain_id="brn_1", target=f"q{i}")  # the same brain, another tenant
        clock.advance(6 * 3600)  # spread over three day partitions

    newest_first = mine[::-1]
    by_tenant = all_pages(log, 3, tenant="acme")
    assert [len(p) for p in by_tenant] == [3, 3, 1] and [e for p in by_tenant for e in p] == newest_first
    narrowed = all_pages(log, 3, brain_id="brn_1", tenant="acme")  # pages full though half is globex's
    assert [len(p) for p in narrowed] == [3, 3, 1] and [e for p in narrowed for e in p] == newest_first
    whole = all_pages(log, 4, brain_id="brn_1")
    assert [len(p) for p in whole] == [4, 4, 4, 2] and len({e.id for p in whole for e in p}) == 14
    assert all_pages(log, 7, tenant="acme") == [newest_first]  # a full last page has no cursor
    assert all_pages(log, 3, tenant="acme-labs") == [[]] and all_pages(log, 3, brain_id="brn_10") == [[]]


def test_a_window_across_midnight_is_inclusive_to_the_microsecond(records: RecordStore) -> None:
    midnight = datetime(2026, 3, 11, tzinfo=UTC)
    clock = FakeClock(start=midnight - timedelta(milliseconds=2))
    log = AuditLog(records, clock, secret=SECRET)
    before = log.record(ALICE, "doc.write", brain_id="brn_1")
    after = log.record(ALICE, "doc.write", brain_id="brn_1")
    assert (before.at, after.at) == (midnight - timedelta(milliseconds=1), midnight)

    for query in ({"tenant": "acme"}, {"brain_id": "brn_1"}):
        window = log.query(**query, since=before.at, until=after.at)  # type: ignore[arg-type]
        assert window == ([after, before], None)
        assert log.query(**query, since=midnight, until=midnight)[0] == [after]  # type: ignore[arg-type]
        tick = timedelta(microseconds=1)
        assert log.query(**query, since=before.at, until=midnight - tick)[0] == [before]  # type: ignore[arg-type]
        assert log.query(**query, since=before.at + tick, until=midnight - tick)[0] == []  # type: ignore[arg-type]


def test_an_entry_whose_key_is_taken_writes_neither_copy(
    records: RecordStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = AuditLog(
        records, FakeClock(start=START, tick=timedelta(0)), secret=SECRET
    )  # the clock stands still
    monkeypatch.setattr(audit_module, "new_id", lambda prefix: f"{prefix}_{'0' * 26}")  # ids repeat
    first = log.record(ALICE, "doc.write", target="first")  # under the tenant only

    with pytest.raises(Conflict):  # its tenant copy would overwrite the first: its brain copy goes too
        log.record(ALICE, "doc.write", brain_id="brn_1", target="second")
    assert log.query(tenant="acme")[0] == [first] and log.query(brain_id="brn_1")[0] == []


def test_redaction_rewrites_both_copies_of_what_names_the_subject_and_nothing_next_door(
    records: RecordStore,
) -> None:
    log = AuditLog(records, FakeClock(start=START), secret=SECRET)
    by_alice = log.record(ALICE, "doc.write", brain_id="brn_1", target="notes/a.md")
    about_alice = log.record(BOB, "doc.write", brain_id="brn_1", target="people/alice.md")
    unrelated = log.record(BOB, "key.create", target="key_1")
    neighbour = log.record(NEIGHBOUR, "doc.write", brain_id="brn_10", target="people/alice.md")

    assert (
        log.redact(tenants=["acme"], brain_ids=["brn_1"], subjects=["alice"], targets=["people/alice.md"])
        == 2
    )
    erased = [
        about_alice.model_copy(update={"target": REDACTED}),
        by_alice.model_copy(update={"subject": REDACTED}),
    ]
    assert log.query(tenant="acme")[0] == [unrelated, *erased]
    assert log.query(brain_id="brn_1")[0] == erased
    assert log.query(tenant="acme-labs")[0] == [neighbour] and log.query(brain_id="brn_10")[0] == [neighbour]
    assert (
        log.redact(tenants=["acme"], brain_ids=["brn_1"], subjects=["alice"], targets=["people/alice.md"])
        == 0
    )  # nothing names them now


class Busy:
    """A record store shared by two processes' audit logs: the writer's view refuses entries as
    busy while `held`, and runs `meanwhile` (another process's erasure) just before the first
    entry it then takes."""

    def __init__(self, records: RecordStore) -> None:
        self.records = records
        self.held = True
        self.meanwhile: Callable[[], object] | None = None

    def __getattr__(self, name: str) -> object:
        return getattr(self.records, name)

    def transact(self, ops: list[Any]) -> object:
        if self.held:
            raise Unavailable("the record store is busy (its writer lock is held)")
        if self.meanwhile is not None:
            then, self.meanwhile = self.meanwhile, None
            then()
        return self.records.transact(ops)


def _kept_by_another(records: RecordStore, clock: FakeClock) -> tuple[AuditLog, Busy, AuditEntry, AuditEntry]:
    """A writer that kept an entry naming an erased path and one naming another path."""
    busy = Busy(records)
    writer = AuditLog(cast(RecordStore, busy), clock, secret=SECRET)  # the writer process's view of the store
    named = writer.record(BOB, "doc.write", brain_id="brn_1", target="people/alice.md")
    other = writer.record(BOB, "doc.write", brain_id="brn_1", target="notes/b.md")
    return writer, busy, named, other


def test_an_entry_another_process_kept_through_an_erasure_is_written_redacted(records: RecordStore) -> None:
    """The erasure's scan of the store cannot see an entry another process keeps: the names it
    erased are marked in the store, and that process redacts the entry as it writes it."""
    clock = FakeClock(start=START)
    writer, busy, named, other = _kept_by_another(records, clock)
    eraser = AuditLog(records, clock, secret=SECRET)
    assert (
        eraser.redact(tenants=["acme"], brain_ids=["brn_1"], subjects=["alice"], targets=["people/alice.md"])
        == 0
    )
    busy.held = False
    assert writer.close() == 0
    expected = [other, named.model_copy(update={"target": REDACTED})]
    assert eraser.query(brain_id="brn_1")[0] == expected
    assert eraser.query(tenant="acme")[0] == expected


def test_an_entry_written_just_after_an_erasure_scanned_the_store_is_redacted_where_it_landed(
    records: RecordStore,
) -> None:
    """The erasure marks and scans between the writer's check of the marks and its write: the
    writer reads the marks again once written, and redacts the copies it wrote."""
    clock = FakeClock(start=START)
    writer, busy, named, other = _kept_by_another(records, clock)
    eraser = AuditLog(records, clock, secret=SECRET)
    busy.held = False
    busy.meanwhile = lambda: eraser.redact(tenants=["acme"], brain_ids=["brn_1"], targets=["people/alice.md"])
    assert writer.close() == 0
    expected = [other, named.model_copy(update={"target": REDACTED})]
    assert eraser.query(brain_id="brn_1")[0] == expected
    assert eraser.query(tenant="acme")[0] == expected


# -- API keys ------------------------------------------------------------------------------------


class MeddlingClock:
    """A clock that, the next time it is read, first lets `meddle` run: another writer landing
    between a read-modify-write's read and its write."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.meddle: Callable[[], object] | None = None

    def now(self) -> datetime:
        meddle, self.meddle = self.meddle, None
        if meddle is not None:
            meddle()
        return self.clock.now()


def test_a_key_authenticates_from_the_store_which_keeps_only_its_hash(records: RecordStore) -> None:
    keys = ApiKeyService(records, FakeClock())
    made = keys.create(name="ci bot", tenant="acme", scopes=[READ, WRITE, READ], brains=["brn_1", "brn_1"])

    principal = ApiKeyService(records, FakeClock()).authenticate(made.plaintext)  # another process
    assert principal == Principal(
        "acme", f"key:{made.key.id}", frozenset({READ, WRITE}), Via.api_key, frozenset({"brn_1"})
    )
    stored = records.get(KEYS_PK, f"key#{made.key.id}")
    assert stored is not None and stored.data["key_sha256"] == made.key.key_sha256
    secret = made.plaintext.removeprefix(f"cairn_{made.key.id}_")
    assert len(secret) == 43 and secret not in repr(stored.data)
    assert keys.list() == [made.key]  # created_at, scopes and brains survive the round trip


def test_keys_list_in_creation_order_by_tenant_and_a_revoked_key_stops_working(records: RecordStore) -> None:
    clock = MeddlingClock(FakeClock())
    keys = ApiKeyService(records, clock)
    made = [keys.create(name=f"k{i}", tenant=("acme", "globex")[i % 2], scopes=[READ]) for i in range(5)]
    assert [k.name for k in keys.list()] == ["k0", "k1", "k2", "k3", "k4"]
    assert [k.name for k in keys.list("acme")] == ["k0", "k2", "k4"] and keys.list("acm") == []

    revoked = keys.revoke(made[2].key.id)
    assert revoked.revoked_at is not None and keys.authenticate(made[2].plaintext) is None
    assert keys.revoke(made[2].key.id) == revoked  # again: the same revocation
    assert [k.active for k in keys.list("acme")] == [True, False, True]
    assert keys.authenticate(made[0].plaintext) is not None

    # a revocation that loses a race to another takes the other's
    other = ApiKeyService(records, FakeClock(start=datetime(2026, 2, 1, tzinfo=UTC)))
    clock.meddle = lambda: other.revoke(made[4].key.id)
    late = keys.revoke(made[4].key.id)
    assert late.revoked_at == datetime(2026, 2, 1, 0, 0, 0, 1000, tzinfo=UTC)
    assert keys.list("acme")[-1] == late and keys.authenticate(made[4].plaintext) is None


def test_forgetting_a_brain_takes_it_off_every_key_that_named_it(records: RecordStore) -> None:
    clock = MeddlingClock(FakeClock())
    keys = ApiKeyService(records, clock)
    both = keys.create(name="both", tenant="acme", scopes=[READ], brains=["brn_1", "brn_2"])
    only = keys.create(name="only", tenant="globex", scopes=[READ], brains=["brn_1"])
    anywhere = keys.create(name="anywhere", tenant="acme", scopes=[ADMIN])

    assert keys.forget_brain("brn_1") == 2 and keys.forget_brain("brn_1") == 0
    listed = {k.name: k.brains for k in keys.list()}
    assert listed == {"both": ["brn_2"], "only": [], "anywhere": None}
    reads_none = keys.authenticate(only.plaintext)
    assert reads_none is not None and reads_none.brains == frozenset()  # an empty list reads nothing
    still = keys.authenticate(both.plaintext)
    assert still is not None and still.brains == frozenset({"brn_2"})
    any_brain = keys.authenticate(anywhere.plaintext)
    assert any_brain is not None and any_brain.brains is None
