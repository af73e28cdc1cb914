"""Rotating the store's secret (services/secret_rotation.py) against what an operator meets later:
marks left under a key already dropped by force (unreadable, already forgotten) do not hold back
the next rotation's drop, and a drop that a second `cairn secret rotate` overtook drops nothing the
new ring's marks are under."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any, cast

import pytest

from cairn.domain.errors import Conflict
from cairn.domain.key_rings import KeyRing, SecretKey
from cairn.ports.records import Item, RecordStore
from cairn.services.audit import AuditLog
from cairn.services.erasure.erased import ErasedSubjects
from cairn.services.erasure.subjects import Subject
from cairn.services.keyed_digests import KeyCheck
from cairn.services.mark_lifetimes import HeldUnder
from cairn.services.secret_rotation import MarkFamily, SecretRotation
from tests.contract.test_secret_rotation_contract import ALICE, BOB, START, rotation
from tests.fakes.clock import FakeClock
from tests.fakes.store_secret import FakeStoreSecret

BEA = Subject.of("session_actor", "bea")


def forgotten(records: RecordStore) -> list[object]:
    found = [records.get("meta", sk) for sk in ("erased-subjects-forgotten", "audit-marks-forgotten")]
    return [item.data if item is not None else None for item in found]


def test_marks_under_a_key_dropped_by_force_do_not_hold_back_the_next_drop(
    records: RecordStore, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock(start=START, tick=timedelta(0))
    kept = FakeStoreSecret()
    ErasedSubjects(records, clock, kept.shared()).mark(ALICE, ["brn_1"])
    operator = rotation(records, clock, kept.shared())
    operator.rotate()
    clock.advance(60)
    operator.drop_previous(force=True)  # the key leaked: gone now, the erasures until now forgotten
    after_force = forgotten(records)

    status = operator.status()
    # alice's mark is under a key no ring holds: not "under a previous key", and nothing to wait for
    assert status.previous == () and status.held == 0
    assert [f.held.lost for f in status.families] == [0, 1]

    clock.advance(60)
    erased = ErasedSubjects(records, clock, kept.shared())
    erased.mark(BEA, ["brn_1"])
    assert operator.rotate().held == 1  # bea's, under the key just made previous
    assert erased.actor_since("brn_1", "bea") == START + timedelta(seconds=120)  # re-keyed
    assert operator.status().held == 0
    assert operator.drop_previous().previous == ()  # no --force, nothing more forgotten
    assert forgotten(records) == after_force
    assert ErasedSubjects(records, clock, kept.shared()).actor_since("brn_1", "bea") == START + timedelta(
        seconds=120
    )
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


def test_a_drop_counts_marks_under_a_key_the_checks_still_name_as_held_once_forgotten(
    records: RecordStore, caplog: pytest.LogCaptureFixture
) -> None:
    """The ring lost a key the checks name (rotated twice by hand, `AWSPREVIOUS` removed): a drop
    without --force may go on, but the erasures until then are forgotten first, as the next process
    would, never left for the narrowed check to hide."""
    clock = FakeClock(start=START, tick=timedelta(0))
    kept = FakeStoreSecret()
    ErasedSubjects(records, clock, kept.shared()).mark(ALICE, ["brn_1"])
    operator = rotation(records, clock, kept.shared())
    operator.rotate()  # checks: the new key, the old one held
    kept.kept.ring = KeyRing(kept.kept.ring.current).rotated(SecretKey(b"a third key, 32 bytes at least"))
    # the ring now holds a third key and the second, not the first that alice's mark is under

    clock.advance(60)
    operator.drop_previous()
    alone = ErasedSubjects(records, clock, kept.shared())
    assert alone.actor_since("brn_1", "alice") == START + timedelta(seconds=60)  # forgotten: stopped
    assert forgotten(records)[0] is not None


class RotatedMeanwhile:
    """A family whose count is overtaken by another operator's `cairn secret rotate`."""

    def __init__(self, family: MarkFamily, rotate: SecretRotation) -> None:
        self.family = family
        self.other = rotate
        self.done = False

    @property
    def check(self) -> KeyCheck:
        return self.family.check

    def held_under_previous_keys(self, *ring: KeyRing) -> HeldUnder:
        held = self.family.held_under_previous_keys(*ring)
        if not self.done:
            self.done = True
            self.other.rotate()
        return held


def test_a_drop_overtaken_by_a_rotation_drops_no_key_the_marks_are_under(
    records: RecordStore, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock(start=START, tick=timedelta(0))
    kept = FakeStoreSecret()
    first = rotation(records, clock, kept.shared())
    first.rotate()
    clock.advance(60)
    ErasedSubjects(records, clock, kept.shared()).mark(BEA, ["brn_1"])  # under the new key

    audit = AuditLog(records, clock, secret=kept.shared())
    erased = ErasedSubjects(records, clock, kept.shared())
    dropping = SecretRotation(
        kept.shared(), [audit.erased, RotatedMeanwhile(erased, rotation(records, clock, kept.shared()))]
    )
    with pytest.raises(Conflict, match="rotated meanwhile"):
        dropping.drop_previous()
    assert len(kept.kept.ring.previous) == 2  # nothing dropped

    clock.advance(60)
    reader = ErasedSubjects(records, clock, kept.shared())
    assert reader.actor_since("brn_1", "bea") == START + timedelta(seconds=60)
    assert reader.actor_since("brn_1", "carl") is None and forgotten(records) == [None, None]
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


class Meanwhile:
    """One process's view of the store: `then` (another process's work) runs just before its next
    transaction, after it checked the keys its marks are made under."""

    def __init__(self, records: RecordStore, then: Callable[[], object]) -> None:
        self.records = records
        self.then: Callable[[], object] | None = then

    def __getattr__(self, name: str) -> object:
        return getattr(self.records, name)

    def transact(self, ops: list[Any]) -> object:
        if self.then is not None:
            then, self.then = self.then, None
            then()
        return self.records.transact(ops)


def rotated_and_dropped(
    records: RecordStore, clock: FakeClock, kept: FakeStoreSecret
) -> Callable[[], object]:
    """`cairn secret rotate && cairn secret drop-previous`, at once: no mark is under the old key yet."""

    def run() -> None:
        operator = rotation(records, clock, kept.shared())
        operator.rotate()
        operator.drop_previous()

    return run


def test_an_erasure_marked_while_the_secret_is_rotated_and_dropped_is_not_lost(
    records: RecordStore, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock(start=START, tick=timedelta(0))
    kept = FakeStoreSecret()
    erasing = ErasedSubjects(records, clock, kept.shared())
    erasing.actor_since("brn_1", "bea")  # this process read the ring (and the check) before
    erasing.records = cast(RecordStore, Meanwhile(records, rotated_and_dropped(records, clock, kept)))
    erasing.mark(ALICE, ["brn_1"])

    clock.advance(60)
    reader = ErasedSubjects(records, clock, kept.shared())
    assert reader.actor_since("brn_1", "alice") == START
    assert reader.actor_since("brn_1", "carl") is None and forgotten(records) == [None, None]
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


def test_an_audit_mark_made_while_the_secret_is_rotated_and_dropped_is_not_lost(
    records: RecordStore, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock(start=START, tick=timedelta(0))
    kept = FakeStoreSecret()
    erasing = AuditLog(records, clock, secret=kept.shared())
    erasing.erased.usable()  # this process read the ring before
    erasing.erased.check.confirm(erasing.erased.check.keys())
    erasing.erased.records = cast(RecordStore, Meanwhile(records, rotated_and_dropped(records, clock, kept)))
    erasing.erased.mark(tenants=["acme"], brain_ids=[], subjects=[], targets=["people/alice.md"])

    clock.advance(60)
    reader = AuditLog(records, clock, secret=kept.shared())
    late = reader.record(BOB, "doc.write", target="people/alice.md")
    assert reader.erased.fields([late]) == [{"target"}]
    assert forgotten(records) == [None, None]
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


class Gate:
    """A process's view of the store whose next transaction waits until `go` (it checked the keys
    its marks are made under before then, and says so with `arrived`)."""

    def __init__(self, records: RecordStore) -> None:
        self.records = records
        self.arrived = threading.Event()
        self.go = threading.Event()

    def __getattr__(self, name: str) -> object:
        return getattr(self.records, name)

    def transact(self, ops: list[Any]) -> object:
        if not self.go.is_set():
            self.arrived.set()
            assert self.go.wait(10)
        return self.records.transact(ops)


class CountedThen:
    """A family whose count is followed by `then` (another process's work), before the drop goes on."""

    def __init__(self, family: MarkFamily, then: Callable[[], object]) -> None:
        self.family = family
        self.then = then

    @property
    def check(self) -> KeyCheck:
        return self.family.check

    def held_under_previous_keys(self, *ring: KeyRing) -> HeldUnder:
        held = self.family.held_under_previous_keys(*ring)
        then, self.then = self.then, lambda: None
        then()
        return held


def test_a_mark_made_between_the_drops_count_and_its_narrowing_holds_the_key_back(
    records: RecordStore, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock(start=START, tick=timedelta(0))
    kept = FakeStoreSecret()
    erasing = ErasedSubjects(records, clock, kept.shared())
    gate = Gate(records)
    erasing.records = cast(RecordStore, gate)
    marking = threading.Thread(target=erasing.mark, args=(ALICE, ["brn_1"]))
    marking.start()
    assert gate.arrived.wait(10)  # the erasure checked the keys: the old one, alone
    rotation(records, clock, kept.shared()).rotate()

    def mark_now() -> None:
        gate.go.set()
        marking.join(10)

    audit = AuditLog(records, clock, secret=kept.shared())
    dropping = SecretRotation(
        kept.shared(), [audit.erased, CountedThen(ErasedSubjects(records, clock, kept.shared()), mark_now)]
    )
    with pytest.raises(Conflict, match="still under a previous key"):
        dropping.drop_previous()  # counted none, but alice's mark came before the check was narrowed
    assert not marking.is_alive() and len(kept.kept.ring.previous) == 1

    clock.advance(60)
    reader = ErasedSubjects(records, clock, kept.shared())
    assert reader.actor_since("brn_1", "alice") == START
    assert reader.actor_since("brn_1", "carl") is None and forgotten(records) == [None, None]
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


def test_a_mark_whose_key_label_is_damaged_is_counted_as_held(records: RecordStore) -> None:
    clock = FakeClock(start=START, tick=timedelta(0))
    kept = FakeStoreSecret()
    operator = rotation(records, clock, kept.shared())
    operator.rotate()
    records.put(
        Item("erased", "brn_1#damaged", {"since": "x", "until": "2026-04-09T12:00:00Z", "key": ["x"]})
    )
    assert operator.status().held == 1  # whichever key it is under: not dropped unasked
    with pytest.raises(Conflict, match="still under a previous key"):
        operator.drop_previous()
