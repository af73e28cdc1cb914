"""Rotating the store's secret (services/secret_rotation.py) on every record store: an erased
subject's marks and the audit's erasure marks made under the old key still match after a rotation,
in a process that read the ring before it and in one that reads it after; a lookup re-keys what it
finds to the new key; the previous key may be dropped once no mark is under it, and the erasures
still match then, nothing forgotten. Dropping it while marks are left is refused, or, forced,
forgets the erasures until then (work queued before still stopped). A rotation killed after the new
ring was written, before any check named it, leaves everything checkable."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import cast

import pytest

from cairn.auth.principal import WRITE, Principal, Via
from cairn.domain.errors import Conflict
from cairn.ports.records import RecordStore
from cairn.services.audit import REDACTED, AuditLog
from cairn.services.erasure.erased import LIFETIME, ErasedSubjects
from cairn.services.erasure.subjects import Subject
from cairn.services.secret_rotation import SecretRotation
from tests.contract.test_audit_keys_contract import Busy
from tests.fakes.clock import FakeClock
from tests.fakes.store_secret import FakeStoreSecret

START = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
BOB = Principal("acme", "bob", frozenset({WRITE}), Via.api_key)
ALICE = Subject.of("session_actor", "alice")


def rotation(records: RecordStore, clock: FakeClock, secret: FakeStoreSecret) -> SecretRotation:
    """The operator's `cairn secret`, a process of its own."""
    audit = AuditLog(records, clock, secret=secret)
    return SecretRotation(secret, [audit.erased, ErasedSubjects(records, clock, secret)])


def forgotten(records: RecordStore) -> list[object]:
    return [records.get("meta", sk) for sk in ("erased-subjects-forgotten", "audit-marks-forgotten")]


def test_an_erased_subject_stays_erased_through_a_rotation_a_rekeying_and_the_drop(
    records: RecordStore, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock(start=START, tick=timedelta(0))
    kept = FakeStoreSecret()
    before = ErasedSubjects(records, clock, kept.shared())  # a process that read the ring before
    before.mark(ALICE, ["brn_1"])
    assert before.actor_since("brn_1", "alice") == START

    clock.advance(60)
    status = rotation(records, clock, kept.shared()).rotate()
    assert len(status.previous) == 1 and status.held == 1  # alice's mark, still under the old key

    after = ErasedSubjects(records, clock, kept.shared())  # one that reads the rotated ring
    after.mark(Subject.of("session_actor", "bea"), ["brn_1"])
    # the process that read the ring before finds bea's mark, made under a key it never read
    assert before.actor_since("brn_1", "bea") == clock.now()
    assert rotation(records, clock, kept.shared()).status().held == 1  # alice's alone

    assert after.actor_since("brn_1", "alice") == START  # matched under the old key, and re-keyed
    assert rotation(records, clock, kept.shared()).status().held == 0
    dropped = rotation(records, clock, kept.shared()).drop_previous()
    assert dropped.previous == () and dropped.current == status.current

    alone = ErasedSubjects(records, clock, kept.shared())  # a process with the current key alone
    assert alone.actor_since("brn_1", "alice") == START
    assert alone.actor_since("brn_1", "bea") == START + timedelta(seconds=60)
    assert alone.actor_since("brn_1", "carl") is None  # nothing was forgotten
    assert before.actor_since("brn_1", "alice") == START  # reads the ring again: still erased
    assert forgotten(records) == [None, None]
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


def test_the_audit_marks_match_through_a_rotation_and_are_rekeyed(records: RecordStore) -> None:
    clock = FakeClock(start=START)
    kept = FakeStoreSecret()
    busy = Busy(records)
    writer = AuditLog(cast(RecordStore, busy), clock, secret=kept.shared())  # keeps its entry meanwhile
    waited = writer.record(BOB, "doc.write", brain_id="brn_1", target="people/alice.md")
    clock.advance(1)
    AuditLog(records, clock, secret=kept.shared()).redact(
        tenants=["acme"], brain_ids=["brn_1"], targets=["people/alice.md"]
    )
    status = rotation(records, clock, kept.shared()).rotate()
    assert status.held == 2  # alice's path, in the tenant and in the brain
    clock.advance(60)
    busy.held = False

    assert writer.close() == 0  # the writer read the ring before the rotation
    (stored,) = [e for e in writer.query(brain_id="brn_1", since=START)[0] if e.id == waited.id]
    assert stored.target == REDACTED and stored.subject == "bob"
    # both its marks (the tenant's and the brain's) were looked up, so both are re-keyed
    assert rotation(records, clock, kept.shared()).status().held == 0

    rotation(records, clock, kept.shared()).drop_previous()
    reader = AuditLog(records, clock, secret=kept.shared())
    late = reader.record(BOB, "doc.write", target="people/alice.md")
    assert reader.erased.fields([late]) == [{"target"}]
    assert forgotten(records) == [None, None]


def test_a_previous_key_is_not_dropped_while_marks_are_under_it_unless_forced(
    records: RecordStore, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock(start=START, tick=timedelta(0))
    kept = FakeStoreSecret()
    ErasedSubjects(records, clock, kept.shared()).mark(ALICE, ["brn_1"])
    operator = rotation(records, clock, kept.shared())
    ring = operator.rotate()

    with pytest.raises(Conflict, match="still under a previous key") as refused:
        operator.drop_previous()
    assert kept.secret.hex() not in str(refused.value) and "alice" not in str(refused.value)
    assert kept.kept.ring.previous and operator.status().held == 1  # nothing changed

    clock.advance(60)
    assert operator.drop_previous(force=True).previous == ()
    alone = ErasedSubjects(records, clock, kept.shared())
    # alice's mark can no longer be read, but the erasures until the drop are forgotten: work queued
    # before it is stopped, whoever it is for
    assert alone.actor_since("brn_1", "alice") == START + timedelta(seconds=60)
    assert alone.actor_since("brn_1", "carl") == START + timedelta(seconds=60)
    assert ring.current == operator.status().current
    assert not [r for r in caplog.records if r.levelname == "WARNING"]  # forgotten on purpose, not found


def test_marks_no_lookup_meets_expire_and_then_the_key_may_go(records: RecordStore) -> None:
    clock = FakeClock(start=START, tick=timedelta(0))
    kept = FakeStoreSecret()
    erased = ErasedSubjects(records, clock, kept.shared())
    erased.mark(ALICE, ["brn_1"])
    operator = rotation(records, clock, kept.shared())
    status = operator.rotate()
    assert status.held == 1 and status.last_until is not None

    clock.advance(LIFETIME.total_seconds() + 1)
    assert ErasedSubjects(records, clock, kept.shared()).sweep() == 1
    assert operator.status().held == 0
    operator.drop_previous()
    assert forgotten(records)[0] is not None  # the sweep's, as for any mark that expires
    assert ErasedSubjects(records, clock, kept.shared()).actor_since("brn_1", "alice") == START


def test_a_rotation_killed_after_the_new_ring_was_written_leaves_everything_checkable(
    records: RecordStore, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock(start=START, tick=timedelta(0))
    kept = FakeStoreSecret()
    stale = ErasedSubjects(records, clock, kept.shared())
    stale.mark(ALICE, ["brn_1"])
    kept.shared().rotate()  # the ring is written; the process died before any check named it

    clock.advance(60)
    stale.mark(Subject.of("session_actor", "bea"), ["brn_1"])  # still under the old key: held
    fresh = ErasedSubjects(records, clock, kept.shared())
    assert fresh.actor_since("brn_1", "alice") == START
    assert fresh.actor_since("brn_1", "bea") == START + timedelta(seconds=60)
    fresh.mark(Subject.of("session_actor", "carl"), ["brn_1"])
    assert stale.actor_since("brn_1", "carl") == START + timedelta(seconds=60)
    assert stale.actor_since("brn_1", "dan") is None and forgotten(records) == [None, None]
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
