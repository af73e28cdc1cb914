"""The audit log: every mutation appended once, queryable by tenant and by brain, newest first."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cairn.auth.principal import WRITE, Principal, Via
from cairn.domain.errors import Conflict, InvalidInput, Unavailable
from cairn.services import audit as audit_module
from cairn.services.audit import REDACTED, AuditLog
from tests.fakes.audit_spill import MemoryAuditSpill
from tests.fakes.clock import FakeClock
from tests.fakes.records import MemoryRecordStore
from tests.fakes.store_secret import SECRET

START = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
ALICE = Principal("acme", "alice", frozenset({WRITE}), Via.jwt)
BOB = Principal("globex", "bob", frozenset({WRITE}), Via.api_key)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=START)


@pytest.fixture
def log(clock: FakeClock) -> AuditLog:
    return AuditLog(MemoryRecordStore(), clock, secret=SECRET)


def test_an_entry_records_who_did_what_to_which_brain_and_when(log: AuditLog, clock: FakeClock) -> None:
    entry = log.record(ALICE, "doc.write", brain_id="brn_1", target="memory/global/a.md", detail={"v": 2})

    assert (entry.tenant, entry.subject, entry.via) == ("acme", "alice", "jwt")
    assert (entry.action, entry.brain_id, entry.target, entry.outcome) == (
        "doc.write",
        "brn_1",
        "memory/global/a.md",
        "ok",
    )
    assert entry.at == clock.current and entry.detail == {"v": 2}
    by_tenant, _ = log.query(tenant="acme")
    by_brain, _ = log.query(brain_id="brn_1")
    assert by_tenant == [entry] and by_brain == [entry]


def test_the_system_records_as_system(log: AuditLog) -> None:
    entry = log.record(None, "job.consolidate", brain_id="brn_1")

    assert (entry.tenant, entry.subject, entry.via) == ("system", "system", "system")
    assert log.query(tenant="system")[0] == [entry]


def test_detail_values_keep_their_types(log: AuditLog) -> None:
    log.record(ALICE, "doc.write", detail={"flag": True, "n": 1, "s": "x"})

    (entry,), _ = log.query(tenant="acme")

    assert entry.detail == {"flag": True, "n": 1, "s": "x"}
    assert type(entry.detail["flag"]) is bool and type(entry.detail["n"]) is int


def test_tenants_and_brains_see_only_their_own_entries(log: AuditLog) -> None:
    a = log.record(ALICE, "doc.write", brain_id="brn_a")
    b = log.record(BOB, "doc.write", brain_id="brn_b")
    no_brain = log.record(ALICE, "key.create", target="key_x")

    assert log.query(tenant="acme")[0] == [no_brain, a]
    assert log.query(tenant="globex")[0] == [b]
    assert log.query(brain_id="brn_a")[0] == [a]
    assert log.query(brain_id="brn_b")[0] == [b]
    assert log.query(tenant="nobody")[0] == []


def test_a_brain_query_can_be_narrowed_to_a_tenant(log: AuditLog) -> None:
    mine = log.record(ALICE, "doc.write", brain_id="brn_shared")
    log.record(BOB, "doc.write", brain_id="brn_shared")

    assert log.query(brain_id="brn_shared", tenant="acme")[0] == [mine]
    assert len(log.query(brain_id="brn_shared")[0]) == 2


def test_entries_come_newest_first(log: AuditLog) -> None:
    written = [log.record(ALICE, "doc.write", target=f"p{i}") for i in range(5)]

    entries, cursor = log.query(tenant="acme")

    assert entries == list(reversed(written)) and cursor is None


def test_the_cursor_pages_through_everything_once(log: AuditLog, clock: FakeClock) -> None:
    written = []
    for i in range(7):
        written.append(log.record(ALICE, "doc.write", brain_id="brn_1", target=f"p{i}"))
        clock.advance(6 * 3600)  # spread over several day partitions

    for query in ({"tenant": "acme"}, {"brain_id": "brn_1"}):
        pages, after = [], None
        while True:
            page, after = log.query(**query, limit=3, after=after)  # type: ignore[arg-type]
            pages.append(page)
            if after is None:
                break
        assert [len(p) for p in pages] == [3, 3, 1]
        assert [e for p in pages for e in p] == list(reversed(written))


def test_a_full_last_page_has_no_cursor(log: AuditLog) -> None:
    for _ in range(4):
        log.record(ALICE, "doc.write")

    first, after = log.query(tenant="acme", limit=2)
    second, after2 = log.query(tenant="acme", limit=2, after=after)

    assert len(first) == len(second) == 2 and after is not None and after2 is None


def test_entries_land_in_the_day_partition_of_their_utc_time(log: AuditLog, clock: FakeClock) -> None:
    # Given entries at the last millisecond of a UTC day and at the next midnight (the clock ticks 1 ms)
    midnight = datetime(2026, 3, 11, tzinfo=UTC)
    clock.current = midnight - timedelta(milliseconds=2)
    before = log.record(ALICE, "doc.write", brain_id="brn_1")
    after = log.record(ALICE, "doc.write", brain_id="brn_1")
    assert (before.at, after.at) == (midnight - timedelta(milliseconds=1), midnight)

    # Then each is stored under its own day, for the tenant and for the brain
    rows = log.records.rows  # type: ignore[attr-defined]
    assert {pk for pk, _ in rows} == {
        "audit#acme#2026-03-10",
        "audit#acme#2026-03-11",
        "audit-brain#brn_1#2026-03-10",
        "audit-brain#brn_1#2026-03-11",
    }
    # And a window across midnight returns both, newest first
    window = {"since": datetime(2026, 3, 10, 23, tzinfo=UTC), "until": datetime(2026, 3, 11, 1, tzinfo=UTC)}
    assert log.query(tenant="acme", **window)[0] == [after, before]  # type: ignore[arg-type]
    # And windows ending just before or starting at midnight split them
    assert log.query(tenant="acme", until=midnight - timedelta(microseconds=1))[0] == [before]
    assert log.query(tenant="acme", since=midnight, until=midnight)[0] == [after]


def test_since_and_until_are_inclusive_and_default_to_the_last_seven_days(
    log: AuditLog, clock: FakeClock
) -> None:
    old = log.record(ALICE, "doc.write")
    clock.advance(8 * 86400)
    recent = log.record(ALICE, "doc.write")

    assert log.query(tenant="acme")[0] == [recent]
    assert log.query(tenant="acme", since=old.at, until=old.at)[0] == [old]
    assert log.query(tenant="acme", since=old.at)[0] == [recent, old]
    assert log.query(tenant="acme", since=old.at, until=recent.at - timedelta(microseconds=1))[0] == [old]


def test_since_cuts_inside_a_day(log: AuditLog, clock: FakeClock) -> None:
    early = log.record(ALICE, "doc.write", brain_id="brn_1")
    clock.advance(3600)
    late = log.record(ALICE, "doc.write", brain_id="brn_1")

    assert log.query(tenant="acme", since=early.at + timedelta(microseconds=1))[0] == [late]
    assert log.query(brain_id="brn_1", since=late.at, until=late.at + timedelta(hours=1))[0] == [late]


def test_naive_datetimes_are_taken_as_utc(log: AuditLog) -> None:
    entry = log.record(ALICE, "doc.write")
    naive = entry.at.replace(tzinfo=None)

    assert log.query(tenant="acme", since=naive, until=naive)[0] == [entry]


def test_recording_never_modifies_an_existing_item(log: AuditLog) -> None:
    log.record(ALICE, "doc.write", brain_id="brn_1", target="a")
    before = dict(log.records.rows)  # type: ignore[attr-defined]

    log.record(ALICE, "doc.write", brain_id="brn_1", target="a")

    after = log.records.rows  # type: ignore[attr-defined]
    assert all(after[key] == row for key, row in before.items())
    assert len(after) == len(before) + 2
    assert {version for _, version in after.values()} == {1}


def test_two_entries_in_the_same_millisecond_are_both_kept() -> None:
    log = AuditLog(MemoryRecordStore(), FakeClock(start=START, tick=timedelta(0)), secret=SECRET)

    first = log.record(ALICE, "doc.write", brain_id="brn_1")
    second = log.record(ALICE, "doc.write", brain_id="brn_1")

    assert first.at == second.at and first.id != second.id
    assert {e.id for e in log.query(tenant="acme")[0]} == {first.id, second.id}
    assert {e.id for e in log.query(brain_id="brn_1")[0]} == {first.id, second.id}


def test_a_colliding_key_is_refused_not_overwritten(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given ids that repeat and a clock that stands still, so two entries get the same key
    log = AuditLog(MemoryRecordStore(), FakeClock(start=START, tick=timedelta(0)), secret=SECRET)
    monkeypatch.setattr(audit_module, "new_id", lambda prefix: f"{prefix}_{'0' * 26}")
    first = log.record(ALICE, "doc.write", brain_id="brn_1", target="first")

    # When a second entry would take the same key / Then it is refused and nothing changes
    with pytest.raises(Conflict):
        log.record(ALICE, "doc.write", brain_id="brn_1", target="second")
    assert log.query(tenant="acme")[0] == [first]
    assert log.query(brain_id="brn_1")[0] == [first]


def test_long_values_are_truncated(log: AuditLog) -> None:
    entry = log.record(ALICE, "doc.write", target="p" * 5000, detail={"title": "t" * 5000})

    assert len(entry.target or "") == 512 and len(str(entry.detail["title"])) == 512
    assert log.query(tenant="acme")[0] == [entry]


@pytest.mark.parametrize("key", ["token", "api_token", "Secret", "password", "Authorization", "apiKey"])
def test_detail_keys_that_name_secrets_are_refused(log: AuditLog, key: str) -> None:
    with pytest.raises(InvalidInput):
        log.record(ALICE, "doc.write", detail={key: "x"})
    assert log.records.rows == {}  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("action", "outcome", "detail"),
    [
        ("", "ok", {}),
        ("Doc Write", "ok", {}),
        ("doc.write", "", {}),
        ("doc.write", "ok", {"bad key": 1}),
        ("doc.write", "ok", {"f": 1.5}),
        ("doc.write", "ok", {f"k{i}": i for i in range(33)}),
    ],
)
def test_bad_entries_are_refused_and_write_nothing(
    log: AuditLog, action: str, outcome: str, detail: dict[str, object]
) -> None:
    with pytest.raises(InvalidInput):
        log.record(ALICE, action, outcome=outcome, detail=detail)  # type: ignore[arg-type]
    assert log.records.rows == {}  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "query",
    [
        {},
        {"tenant": "acme", "limit": 0},
        {"tenant": "acme", "limit": 1001},
        {"tenant": "acme", "since": START, "until": START - timedelta(seconds=1)},
        {"tenant": "acme", "since": START - timedelta(days=93), "until": START},
        {"tenant": "acme", "after": "not a cursor"},
        {"tenant": "acme", "after": "YWJj"},  # base64 of "abc": decodes, but is no cursor
        {"brain_id": ""},
    ],
)
def test_bad_queries_are_refused(log: AuditLog, query: dict[str, object]) -> None:
    with pytest.raises(InvalidInput):
        log.query(**query)  # type: ignore[arg-type]


def test_limits_at_the_edges_are_accepted(log: AuditLog) -> None:
    log.record(ALICE, "doc.write")

    assert len(log.query(tenant="acme", limit=1)[0]) == 1
    assert len(log.query(tenant="acme", limit=1000)[0]) == 1
    assert log.query(tenant="acme", since=START - timedelta(days=92), until=START)[1] is None


def test_an_entry_the_busy_store_refuses_is_kept_and_written_with_the_next(
    log: AuditLog, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The action it records has happened: the entry is neither raised nor lost. One warning, no
    traceback; the next entry, once the store takes it, writes the kept one first, with its time."""
    transact = log.records.transact
    held = True

    def locked(ops: Any) -> Any:
        if held:
            raise Unavailable("the record store is busy (its writer lock is held)")
        return transact(ops)

    monkeypatch.setattr(log.records, "transact", locked)
    caplog.set_level(logging.WARNING)
    kept = log.record(ALICE, "doc.write", brain_id="brn_1", target="memory/global/a.md")
    assert [(r.levelno, r.exc_info) for r in caplog.records] == [(logging.WARNING, None)]
    assert kept.id in caplog.records[0].getMessage()
    assert log.query(tenant="acme")[0] == []
    held = False
    clock.advance(5)
    later = log.record(ALICE, "doc.delete", brain_id="brn_1", target="memory/global/b.md")
    assert [e.id for e in log.query(tenant="acme")[0]] == [later.id, kept.id]
    assert [e.at for e in log.query(brain_id="brn_1")[0]] == [later.at, kept.at]
    assert len(caplog.records) == 1


def _refusing(log: AuditLog, monkeypatch: pytest.MonkeyPatch) -> dict[str, bool]:
    """The log's store refuses every write as busy while the returned switch's `held` is True."""
    transact = log.records.transact
    switch = {"held": True}

    def locked(ops: Any) -> Any:
        if switch["held"]:
            raise Unavailable("the record store is busy (its writer lock is held)")
        return transact(ops)

    monkeypatch.setattr(log.records, "transact", locked)
    return switch


def test_a_stop_writes_what_the_busy_store_refused_once_it_takes_it(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    spill = MemoryAuditSpill()
    log = AuditLog(MemoryRecordStore(), clock, spill, secret=SECRET)
    switch = _refusing(log, monkeypatch)
    kept = log.record(ALICE, "doc.write", brain_id="brn_1", target="memory/global/a.md")
    switch["held"] = False
    assert log.close() == 0
    assert [e.id for e in log.query(brain_id="brn_1")[0]] == [kept.id]
    assert [e.id for e in AuditLog(log.records, clock, spill, secret=SECRET).query(tenant="acme")[0]] == [
        kept.id
    ]


def test_entries_still_refused_at_a_stop_are_found_after_the_next_start(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Refused at the stop too: they go to the spill, which the next log on the store writes at
    its start, each entry once, under its tenant and its brain, with its own time."""
    records, spill = MemoryRecordStore(), MemoryAuditSpill()
    log = AuditLog(records, clock, spill, secret=SECRET)
    _refusing(log, monkeypatch)
    first = log.record(ALICE, "doc.write", brain_id="brn_1", target="memory/global/a.md")
    second = log.record(BOB, "key.create")
    assert log.close() == 2
    monkeypatch.undo()
    clock.advance(60)
    reopened = AuditLog(records, clock, spill, secret=SECRET)
    assert reopened.take_spilled() == 0  # its sweep, or its stop
    assert spill.entries == []
    assert [(e.id, e.at, e.target) for e in reopened.query(brain_id="brn_1")[0]] == [
        (first.id, first.at, first.target)
    ]
    assert [e.id for e in reopened.query(tenant="acme")[0]] == [first.id]
    assert [e.id for e in reopened.query(tenant="globex")[0]] == [second.id]


def test_a_start_on_a_store_still_busy_keeps_the_spill_and_writes_it_later(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the start took from the spill is put back while the store refuses it, so a process
    killed before its next write loses nothing; a later write takes it, and a second stop adds no
    second copy to the spill."""
    records, spill = MemoryRecordStore(), MemoryAuditSpill()
    log = AuditLog(records, clock, spill, secret=SECRET)
    switch = _refusing(log, monkeypatch)
    kept = log.record(ALICE, "doc.write", brain_id="brn_1")
    log.close()
    reopened = AuditLog(records, clock, spill, secret=SECRET)
    assert reopened.take_spilled() == 1
    assert [e["id"] for e in spill.entries] == [kept.id]
    assert reopened.close() == 1
    assert [e["id"] for e in spill.entries] == [kept.id]
    switch["held"] = False
    later = reopened.record(ALICE, "doc.delete", brain_id="brn_1")
    assert [e.id for e in reopened.query(brain_id="brn_1")[0]] == [later.id, kept.id]
    assert (
        AuditLog(records, clock, spill, secret=SECRET).query(brain_id="brn_1")[0]
        == reopened.query(brain_id="brn_1")[0]
    )


def test_an_erasure_redacts_the_entries_still_waiting_for_the_busy_store(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry naming an erased path that the store refused waits in this process (and, after a
    stop, in the spill) where the erasure's scan of the store cannot see it: it is redacted there,
    so it is written redacted; an entry of another brain is left as it is."""
    records, spill = MemoryRecordStore(), MemoryAuditSpill()
    log = AuditLog(records, clock, spill, secret=SECRET)
    switch = _refusing(log, monkeypatch)
    spilled = log.record(ALICE, "doc.write", brain_id="brn_1", target="memory/agent/scout/a.md")
    log.close()  # still refused: in the spill
    reopened = AuditLog(records, clock, spill, secret=SECRET)
    assert reopened.take_spilled() == 1  # takes it back, still refused: kept and spilled
    kept = reopened.record(ALICE, "doc.write", brain_id="brn_1", target="memory/agent/scout/b.md")
    other = reopened.record(ALICE, "doc.write", brain_id="brn_2", target="memory/agent/scout/b.md")
    erased = {"memory/agent/scout/a.md", "memory/agent/scout/b.md"}

    switch["held"] = False  # the erasure's own writes go in; the entries still wait where they were
    changed = reopened.redact(tenants=[], brain_ids=["brn_1"], targets=erased)

    assert changed == 2
    assert all(e["target"] == REDACTED for e in spill.entries)
    assert reopened.close() == 0
    written = {e.id: e.target for e in reopened.query(brain_id="brn_1")[0]}
    assert written == {spilled.id: REDACTED, kept.id: REDACTED}
    assert [e.target for e in reopened.query(brain_id="brn_2")[0]] == [other.target]
