"""The audit's erasure marks (services/audit_marks.py) on every record store: keyed with the store's
secret, so a mark is no dictionary-reversible digest of the name it stands for; removed by the
index sweep once past their lifetime (and kept within it), an entry that waited through an erasure
whose marks are gone written with its names redacted; and the plain SHA-256 marks an earlier
release wrote still honoured, given a lifetime once by the sweep, and then removed too."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from cairn.auth.principal import WRITE, Principal, Via
from cairn.domain.errors import Unavailable
from cairn.ports.records import Item, RecordStore
from cairn.services.audit import REDACTED, AuditEntry, AuditLog
from cairn.services.audit_marks import LIFETIME, SKEW
from cairn.services.keyed_digests import keyed_digest
from tests.contract.test_audit_keys_contract import Busy
from tests.fakes.clock import FakeClock
from tests.fakes.store_secret import SECRET, FakeStoreSecret

START = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
BOB = Principal("acme", "bob", frozenset({WRITE}), Via.api_key)
DAY = 86_400.0
OTHER = FakeStoreSecret(b"another store's secret, 32 bytes!!")


def marks(records: RecordStore) -> dict[tuple[str, str], Item]:
    found: dict[tuple[str, str], Item] = {}
    cursor: str | None = None
    while True:
        page = records.scan(["audit-erased"], cursor=cursor)
        found.update({(item.pk, item.sk): item for item in page.items})
        if page.cursor is None:
            return found
        cursor = page.cursor


def erase(log: AuditLog, target: str) -> None:
    log.redact(tenants=["acme"], brain_ids=["brn_1"], targets=[target])


def kept(clock: FakeClock, records: RecordStore, target: str) -> tuple[AuditLog, Busy, AuditEntry]:
    """Another process that keeps an entry naming `target` (the store refuses it as busy)."""
    busy = Busy(records)
    writer = AuditLog(busy, clock, secret=SECRET)  # type: ignore[arg-type]
    return writer, busy, writer.record(BOB, "doc.write", brain_id="brn_1", target=target)


def written(log: AuditLog, entry: AuditEntry) -> AuditEntry:
    (stored,) = [e for e in log.query(brain_id="brn_1", since=START)[0] if e.id == entry.id]
    return stored


def test_a_mark_is_keyed_no_digest_of_the_name_and_unreadable_without_the_secret(
    records: RecordStore,
) -> None:
    clock = FakeClock(start=START)
    erase(AuditLog(records, clock, secret=SECRET), "people/alice.md")

    made = marks(records)
    plain = hashlib.sha256(b"people/alice.md").hexdigest()
    assert [sk for pk, sk in made if pk.startswith("audit-erased#")] == ["target#b#brn_1", "target#t#acme"]
    assert not any(plain in pk or plain in sk for pk, sk in made)
    assert not any("alice" in str(item) for item in made.values())

    stranger = AuditLog(records, clock, secret=OTHER)
    entry = stranger.record(BOB, "doc.write", brain_id="brn_1", target="people/alice.md")
    assert AuditLog(records, clock, secret=SECRET).erased.fields([entry]) == [{"target"}]
    theirs = f"audit-erased#{keyed_digest(stranger.erased.check.keys().current.key, 'people/alice.md')}"
    assert not any(pk == theirs for pk, _ in made)  # the marks mean nothing without the secret


def waited_through_an_erasure_under_another_secret(
    records: RecordStore, clock: FakeClock, meanwhile: Callable[[], object] = lambda: None
) -> tuple[AuditLog, AuditEntry]:
    """A process keyed with OTHER (a data directory restored without its key) keeps an entry naming
    people/alice.md while the store is busy; that name is erased under SECRET (`meanwhile` runs
    next); a minute later the store takes writes again. The process and its waiting entry."""
    busy = Busy(records)
    restored = AuditLog(busy, clock, secret=OTHER)  # type: ignore[arg-type]
    waited = restored.record(BOB, "doc.write", brain_id="brn_1", target="people/alice.md")
    clock.advance(1)
    erase(AuditLog(records, clock, secret=SECRET), "people/alice.md")  # under the lost secret
    meanwhile()
    clock.advance(60)
    busy.held = False
    return restored, waited


def test_a_process_with_another_secret_writes_what_waited_redacted_and_says_so(
    records: RecordStore, caplog: pytest.LogCaptureFixture
) -> None:
    """A data directory restored without its store-secret.key makes a new one: the marks made under
    the old one cannot be read with it, so an entry that waited through their erasure is written
    with its names redacted; the marks made from then on are keyed with the new one."""
    clock = FakeClock(start=START)
    restored, waited = waited_through_an_erasure_under_another_secret(records, clock)

    assert restored.close() == 0
    assert (written(restored, waited).subject, written(restored, waited).target) == (REDACTED, REDACTED)
    warned = [r.getMessage() for r in caplog.records if "not the one" in r.getMessage()]
    assert warned and not any(OTHER.secret.decode() in m or SECRET.secret.decode() in m for m in warned)

    clock.advance(SKEW.total_seconds() + 60)
    erase(restored, "people/bea.md")  # marked under the new secret, and read with it
    entry = restored.record(BOB, "doc.write", brain_id="brn_1", target="people/bea.md")
    assert restored.erased.fields([entry]) == [{"target"}]
    fresh = restored.record(BOB, "doc.write", brain_id="brn_1", target="people/carl.md")
    assert restored.erased.fields([fresh]) == [set()]  # later entries are not redacted wholesale


def test_an_erasure_without_its_secret_is_unavailable_and_changes_nothing(records: RecordStore) -> None:
    clock = FakeClock(start=START)
    secret = FakeStoreSecret()
    log = AuditLog(records, clock, secret=secret)
    entry = log.record(BOB, "doc.write", brain_id="brn_1", target="people/alice.md")
    secret.refusing = True
    with pytest.raises(Unavailable, match="secret"):
        erase(log, "people/alice.md")
    assert marks(records) == {} and written(log, entry) == entry


def test_a_mark_past_its_lifetime_is_removed_by_the_sweep_and_one_within_it_is_kept(
    records: RecordStore,
) -> None:
    clock = FakeClock(start=START)
    eraser = AuditLog(records, clock, secret=SECRET)
    early_writer, early_busy, early = kept(clock, records, "people/ann.md")  # waits through both erasures
    erase(eraser, "people/ann.md")
    clock.advance(20 * DAY)
    writer, busy, later = kept(clock, records, "people/ann.md")  # after ann's erasure
    clock.advance(1)
    erase(eraser, "people/bea.md")
    clock.advance(LIFETIME.total_seconds() - 15 * DAY)  # ann's marks are 5 days past it, bea's 15 within

    assert eraser.erased.expire() == 2
    left = {sk for pk, sk in marks(records) if pk.startswith("audit-erased#")}
    assert left == {"target#b#brn_1", "target#t#acme"} and len(marks(records)) == 2 + 2  # bea's and expiries
    assert eraser.erased.expire() == 0
    bea = eraser.record(BOB, "doc.write", brain_id="brn_1", target="people/bea.md")
    assert eraser.erased.fields([bea]) == [{"target"}]  # still marked

    busy.held = early_busy.held = False
    assert writer.close() == 0 and early_writer.close() == 0
    assert written(eraser, later).target == "people/ann.md"  # after the erasure its marks stood for
    assert (written(eraser, early).subject, written(eraser, early).target) == (REDACTED, REDACTED)


def test_a_mark_is_kept_for_its_lifetime_from_the_erasures_last_pass(records: RecordStore) -> None:
    clock = FakeClock(start=START)
    eraser = AuditLog(records, clock, secret=SECRET)
    erase(eraser, "people/ann.md")
    clock.advance(25 * DAY)
    erase(eraser, "people/ann.md")  # erased again: the marks live on from here
    clock.advance(10 * DAY)
    assert eraser.erased.expire() == 0
    entry = eraser.record(BOB, "doc.write", brain_id="brn_1", target="people/ann.md")
    assert eraser.erased.fields([entry]) == [{"target"}]
    clock.advance(LIFETIME.total_seconds() - 10 * DAY)
    assert eraser.erased.expire() == 2 and marks(records) == {}


def test_unkeyed_marks_of_an_earlier_release_are_honoured_then_given_a_lifetime(records: RecordStore) -> None:
    clock = FakeClock(start=START)
    plain = hashlib.sha256(b"people/ann.md").hexdigest()
    records.put(Item(f"audit-erased#{plain}", "target#b#brn_1", {}))  # as an earlier release wrote it
    writer, busy, entry = kept(clock, records, "people/ann.md")
    busy.held = False
    assert writer.close() == 0
    sweeper = AuditLog(records, clock, secret=SECRET).erased
    assert written(writer, entry).target == REDACTED

    assert sweeper.expire() == 0 and sweeper.adopt_unkeyed() == 1
    assert sweeper.adopt_unkeyed() == 0  # once per store
    assert AuditLog(records, clock, secret=SECRET).erased.adopt_unkeyed() == 0
    clock.advance(LIFETIME.total_seconds() - DAY)
    assert sweeper.expire() == 0 and f"audit-erased#{plain}" in {pk for pk, _ in marks(records)}
    clock.advance(2 * DAY)
    assert sweeper.expire() == 1
    assert not any(pk.startswith("audit-erased#") for pk, _ in marks(records))


def test_a_plain_mark_written_after_the_adoption_gets_a_lifetime_at_the_next_daily_pass(
    records: RecordStore,
) -> None:
    clock = FakeClock(start=START)
    sweeper = AuditLog(records, clock, secret=SECRET).erased
    assert sweeper.sweep() == 0  # the pass after the upgrade: nothing of an earlier release
    plain = hashlib.sha256(b"people/ann.md").hexdigest()
    straggler = (f"audit-erased#{plain}", "target#b#brn_1")  # by a process of that release still running
    records.put(Item(*straggler, {}))
    clock.advance(DAY / 2)
    assert sweeper.sweep() == 0 and AuditLog(records, clock, secret=SECRET).erased.sweep() == 0

    clock.advance(DAY / 2 + 1)
    assert AuditLog(records, clock, secret=SECRET).erased.sweep() == 1
    assert "until" in marks(records)[straggler].data
    clock.advance(LIFETIME.total_seconds() + 1)
    assert sweeper.sweep() == 1 and straggler not in marks(records)


class SweptMeanwhile(Busy):
    """The writer's view of the store: the index sweep of another process runs just after the
    writer first reads what the sweeps forgot; every audit entry the writer writes is noted."""

    def __init__(self, records: RecordStore, sweep: Callable[[], object]) -> None:
        super().__init__(records)
        self.sweep: Callable[[], object] | None = sweep
        self.landed: list[dict[str, Any]] = []

    def get(self, pk: str, sk: str) -> Item | None:
        item = self.records.get(pk, sk)
        if (pk, sk) == ("meta", "audit-marks-forgotten") and self.sweep is not None:
            then, self.sweep = self.sweep, None
            then()
        return item

    def transact(self, ops: list[Any]) -> object:
        done = super().transact(ops)
        self.landed += [op.item.data for op in ops if "target" in op.item.data]
        return done


def test_an_entry_never_lands_unredacted_while_the_sweep_removes_its_marks(records: RecordStore) -> None:
    """The marks are read before what the sweep forgot, which it records before they go: an entry
    that waited through its erasure is redacted as it is first written, however the two interleave."""
    clock = FakeClock(start=START)
    sweeper = AuditLog(records, clock, secret=SECRET)
    view = SweptMeanwhile(records, lambda: sweeper.erased.expire())
    writer = AuditLog(cast(RecordStore, view), clock, secret=SECRET)
    entry = writer.record(BOB, "doc.write", brain_id="brn_1", target="people/ann.md")
    erase(sweeper, "people/ann.md")
    clock.advance(LIFETIME.total_seconds() + DAY)
    view.held = False

    assert writer.close() == 0
    assert view.sweep is None and not any(pk.startswith("audit-erased#") for pk, _ in marks(records))
    assert [d["target"] for d in view.landed if d["id"] == entry.id] == [REDACTED, REDACTED]


def test_without_the_secret_only_the_waiting_entries_wait_and_new_ones_are_written(
    records: RecordStore,
) -> None:
    """A waiting entry cannot be checked against the marks without the store's secret (a damaged
    key file), so it waits; the entries recorded meanwhile, which a store that takes them needs no
    mark to write (an erasure finds them), are written as ever, not kept behind it until the
    process drops them."""
    clock = FakeClock(start=START)
    secret = FakeStoreSecret()
    busy = Busy(records)
    log = AuditLog(busy, clock, secret=secret)  # type: ignore[arg-type]
    waiting = log.record(BOB, "doc.write", brain_id="brn_1", target="people/ann.md")
    busy.held, secret.refusing = False, True

    later = [log.record(BOB, "doc.write", brain_id="brn_1", target=f"notes/{i}.md") for i in range(3)]

    assert [written(log, e) for e in later] == later
    assert [e.id for e, _ in log._kept] == [waiting.id]
    secret.refusing = False
    log.record(BOB, "doc.write", brain_id="brn_1", target="notes/last.md")
    assert not log._kept and written(log, waiting) == waiting


@pytest.mark.parametrize("damaged", [{"check": 7}, {"checksum": "x"}, {}])
def test_a_damaged_key_check_is_no_check_of_this_key(
    records: RecordStore, damaged: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    """A key check of the wrong type or with no `check` is not taken for this process's key: the
    erasures until then are forgotten (an entry of before is written redacted), it warns, and the
    check is made anew, with no error."""
    clock = FakeClock(start=START)
    erase(AuditLog(records, clock, secret=SECRET), "people/alice.md")
    records.put(Item("meta", "audit-marks-key", damaged), records.get("meta", "audit-marks-key").version)
    reader = AuditLog(records, clock, secret=SECRET)
    entry = reader.record(BOB, "doc.write", brain_id="brn_1", target="people/zoe.md")
    clock.advance(60)

    assert reader.erased.fields([entry]) == [{"subject", "target"}]
    assert any("not the one" in r.getMessage() for r in caplog.records)
    assert isinstance(records.get("meta", "audit-marks-key").data["check"], str)


@pytest.mark.parametrize("damaged", ["zzz", "9", 99, None])
def test_a_damaged_record_of_what_was_forgotten_is_written_over_by_a_process_keyed_otherwise(
    records: RecordStore, damaged: object
) -> None:
    """The record of the erasures no longer checkable, damaged (not a time), is no later time than
    any: a process keyed otherwise records its forgetting over it, so an entry that waited through
    an erasure under the other key is written redacted, not with its names."""
    clock = FakeClock(start=START)
    restored, waited = waited_through_an_erasure_under_another_secret(
        records, clock, lambda: records.put(Item("meta", "audit-marks-forgotten", {"erased_at": damaged}), 0)
    )

    assert restored.close() == 0
    assert (written(restored, waited).subject, written(restored, waited).target) == (REDACTED, REDACTED)
