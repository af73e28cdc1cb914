"""The erasure log (services/erasure/log.py) on every record store: one record per erasure or brain
deletion under `erasures`, written before anything is removed and read back whole, started once,
each brain's counts added exactly once however many finish it at the same time, from what a
killed attempt kept of them (its progress record, dropped as the brain is counted), the subject's name
dropped before the record is finished, and the unfinished ones listed (in id order) for a resume."""

from __future__ import annotations

import json
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from cairn.domain.errors import Conflict, NotFound
from cairn.ports.records import Item, RecordStore
from cairn.services.erasure.log import (
    PK,
    PROGRESS_PK,
    REMOVED_KINDS,
    ErasureLog,
    Receipt,
    empty_counts,
    progress_key,
)
from tests.fakes.clock import FakeClock

SUBJECT = "alice@example.com"


def receipt(erasure_id: str, clock: FakeClock, brains: tuple[str, ...] = ("brn_1", "brn_2")) -> Receipt:
    return Receipt(
        id=erasure_id,
        kind="thoughtmcp_user",
        subject_digest="sha256:" + "ab" * 32,
        brains=list(brains),
        removed=empty_counts(),
        status="running",
        by="tenant_1/user_1",
        started_at=clock.now(),
    )


def test_an_erasure_is_read_back_whole_and_started_only_once(records: RecordStore) -> None:
    clock = FakeClock()
    log = ErasureLog(records, clock)
    with pytest.raises(NotFound):
        log.get("era_1")

    asked = receipt("era_1", clock)
    started = log.start(asked, SUBJECT)
    got = log.get("era_1")
    assert got == started and got.receipt == asked  # datetimes and counts read back as written
    assert got.subject == SUBJECT and got.done == [] and got.receipt.finished_at is None
    assert list(got.receipt.removed) == list(REMOVED_KINDS)

    with pytest.raises(Conflict):  # a second start of the same erasure writes nothing
        log.start(asked.model_copy(update={"kind": "brain"}), "someone else")
    assert log.get("era_1").subject == SUBJECT
    with pytest.raises(NotFound):
        log.advance("era_none", "brn_1", log.progress("era_none", "brn_1"))


def test_each_brain_is_counted_once_from_the_progress_kept_and_its_progress_goes_with_it(
    records: RecordStore, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    log = ErasureLog(records, clock)
    log.start(receipt("era_1", clock), SUBJECT)

    first = log.progress("era_1", "brn_1")
    assert first.counts == Counter()
    first.counts.update(documents=2, chunks=5)
    first.save()
    resumed = log.progress("era_1", "brn_1")  # a resume after the process was killed
    assert resumed.counts == Counter(documents=2, chunks=5)
    log.advance("era_1", "brn_1", resumed)
    again = log.advance("era_1", "brn_1", resumed)  # a resume re-reporting it
    assert again.receipt.removed["documents"] == 2 and again.done == ["brn_1"]
    late = log.progress("era_1", "brn_1")  # one that starts once the brain is done finds nothing
    assert late.counts == Counter() and log.advance("era_1", "brn_1", late) == again
    assert records.get(*progress_key("era_1", "brn_1")) is None  # dropped as the brain was counted

    held = {"removed": {"documents": 1, "blobs": 4, "not_a_kind": 7, "chunks": "five"}}
    records.put(Item(*progress_key("era_1", "brn_2"), held))  # only the kinds a receipt counts
    log.advance("era_1", "brn_2", log.progress("era_1", "brn_2"))
    records.put(Item(*progress_key("era_1", "brn_3"), {"removed": "damaged"}))
    assert log.progress("era_1", "brn_3").counts == Counter()  # counted afresh, said in the log
    assert "its progress in brain brn_3 is damaged" in caplog.text

    got = log.get("era_1")
    assert got.done == ["brn_1", "brn_2"]
    counted = {"documents": 3, "chunks": 5, "blobs": 4}
    assert got.receipt.removed == {**empty_counts(), **counted}
    assert got.receipt.status == "running" and got.subject == SUBJECT
    assert [i.sk for i in records.query(PROGRESS_PK, "").items] == ["era_1#brn_3"]


def test_brains_finished_at_the_same_time_are_each_counted_exactly_once(records: RecordStore) -> None:
    clock = FakeClock()
    log = ErasureLog(records, clock)
    brains = ("brn_1", "brn_2", "brn_3")
    log.start(receipt("era_1", clock, brains), SUBJECT)
    reports = [*brains, "brn_1"]  # brn_1 finished twice, by two resuming processes
    start = threading.Barrier(len(reports))

    def report(brain_id: str) -> None:
        elsewhere = ErasureLog(records, clock)
        progress = elsewhere.progress("era_1", brain_id)
        start.wait()
        elsewhere.advance("era_1", brain_id, progress)

    for brain_id in brains:  # what each brain's attempts kept before they were killed
        progress = log.progress("era_1", brain_id)
        progress.counts.update(documents=1, records=10)
        progress.save()
    with ThreadPoolExecutor(len(reports)) as pool:
        for future in [pool.submit(report, b) for b in reports]:
            future.result()
    got = log.get("era_1")
    assert sorted(got.done) == list(brains)
    assert got.receipt.removed["documents"] == 3 and got.receipt.removed["records"] == 30
    assert records.query(PROGRESS_PK, "").items == []


def test_two_resumes_of_a_brain_at_once_each_have_what_they_removed_counted_once(
    records: RecordStore,
) -> None:
    """Both read the brain's progress before either wrote it: each write adds to what the other
    wrote (a document's commit too), and the brain counted by one, what the other removed after is
    added to the receipt when it finishes the brain."""
    clock = FakeClock()
    log = ErasureLog(records, clock)
    log.start(receipt("era_1", clock), SUBJECT)
    kept = log.progress("era_1", "brn_1")
    kept.counts.update(documents=1, chunks=1)
    kept.save()  # a killed attempt's

    one, other = log.progress("era_1", "brn_1"), ErasureLog(records, clock).progress("era_1", "brn_1")
    one.counts.update(audit_entries=2)
    one.save()
    other.counts.update(memory_rows=3)
    other.save()  # it read the record before `one` wrote it
    with pytest.raises(Conflict):  # a document's erase commit it rides loses: `other` wrote since
        records.transact([one.op(Counter(documents=1, chunks=4, blobs=1))])
    one.refresh()  # the erase reads the record again, and its next try commits
    records.transact([one.op(Counter(documents=1, chunks=4, blobs=1))])
    one.landed()
    one.counts.update(documents=1, chunks=4, blobs=1)
    stale = other.op(Counter(documents=1, chunks=2))
    with pytest.raises(Conflict):  # its document's commit loses: the erase reads the record again
        records.transact([stale])
    other.refresh()
    records.transact([other.op(Counter(documents=1, chunks=2))])
    other.landed()
    other.counts.update(documents=1, chunks=2, links=5)
    log.advance("era_1", "brn_1", other)  # `other` finishes the brain first
    one.counts.update(links=7)  # `one` removed more meanwhile
    log.advance("era_1", "brn_1", one)
    log.advance("era_1", "brn_1", other)  # again: nothing more

    got = log.get("era_1")
    assert got.done == ["brn_1"]
    counted = {"documents": 3, "chunks": 7, "blobs": 1, "links": 12, "memory_rows": 3, "audit_entries": 2}
    assert got.receipt.removed == {**empty_counts(), **counted}
    assert records.query(PROGRESS_PK, "").items == []


def test_many_resumes_saving_at_once_lose_no_count(records: RecordStore) -> None:
    clock = FakeClock()
    log = ErasureLog(records, clock)
    log.start(receipt("era_1", clock, ("brn_1",)), SUBJECT)
    resumes, steps = 4, 10
    start = threading.Barrier(resumes)

    def resume() -> None:
        elsewhere = ErasureLog(records, clock)
        progress = elsewhere.progress("era_1", "brn_1")
        start.wait()
        for _ in range(steps):
            progress.counts.update(records=1)
            progress.save()
        elsewhere.advance("era_1", "brn_1", progress)

    with ThreadPoolExecutor(resumes) as pool:
        for future in [pool.submit(resume) for _ in range(resumes)]:
            future.result()
    assert log.get("era_1").receipt.removed["records"] == resumes * steps
    assert records.query(PROGRESS_PK, "").items == []


def test_finishing_adds_what_another_attempt_saved_after_the_brain_was_done(records: RecordStore) -> None:
    """`other` finishes the brain; `one`, which began before, saves what it removed since, then the
    erasure is finished: the receipt holds `one`'s counts and no progress record is left, and
    `one`'s own advance later adds nothing more."""
    clock = FakeClock()
    log = ErasureLog(records, clock)
    log.start(receipt("era_1", clock, ("brn_1",)), SUBJECT)
    one, other = log.progress("era_1", "brn_1"), ErasureLog(records, clock).progress("era_1", "brn_1")
    other.counts.update(documents=2)
    log.advance("era_1", "brn_1", other)
    one.counts.update(blobs=3)
    one.save()
    finished = log.finish("era_1")
    assert finished.status == "completed" and finished.removed["blobs"] == 3
    assert records.query(PROGRESS_PK, "").items == []
    one.counts.update(links=4)  # and it removed more before it got to its advance
    assert log.advance("era_1", "brn_1", one).receipt.removed == {
        **empty_counts(),
        "documents": 2,
        "blobs": 3,
        "links": 4,
    }
    assert log.finish("era_1").removed["blobs"] == 3


def test_a_progress_record_left_once_the_erasure_finished_is_folded_into_the_receipt(
    records: RecordStore,
) -> None:
    """An attempt killed between its last save and its advance, after another finished the
    erasure: `left_over` names the erasure and `fold` adds the counts once; a running erasure's
    brain not done keeps its record (its attempt advances it)."""
    clock = FakeClock()
    log = ErasureLog(records, clock)
    log.start(receipt("era_1", clock, ("brn_1",)), SUBJECT)
    log.start(receipt("era_2", clock, ("brn_1", "brn_2")), SUBJECT)
    late, other = log.progress("era_1", "brn_1"), log.progress("era_1", "brn_1")
    log.advance("era_1", "brn_1", other)
    log.finish("era_1")
    late.counts.update(chunks=5)
    late.save()  # killed here, before its advance
    running = log.progress("era_2", "brn_2")
    running.counts.update(chunks=1)
    running.save()
    assert list(log.left_over()) == ["era_1"]
    assert log.fold("era_1").receipt.removed["chunks"] == 5
    assert log.fold("era_1").receipt.removed["chunks"] == 5  # once
    assert list(log.left_over()) == []
    assert log.fold("era_2").receipt.removed["chunks"] == 0
    assert [i.sk for i in records.query(PROGRESS_PK, "").items] == ["era_2#brn_2"]


def test_finishing_with_more_progress_records_left_than_one_write_holds_adds_them_all(
    records: RecordStore,
) -> None:
    clock = FakeClock()
    log = ErasureLog(records, clock)
    brains = tuple(f"brn_{n:03d}" for n in range(70))
    log.start(receipt("era_1", clock, brains), SUBJECT)
    for brain_id in brains:
        late, other = log.progress("era_1", brain_id), log.progress("era_1", brain_id)
        log.advance("era_1", brain_id, other)
        late.counts.update(records=1)
        late.save()
    assert log.finish("era_1").removed["records"] == 70
    assert records.query(PROGRESS_PK, "").items == []


def test_the_subject_leaves_the_record_before_it_is_finished_and_the_receipt_stays(
    records: RecordStore,
) -> None:
    clock = FakeClock()
    log = ErasureLog(records, clock)
    log.start(receipt("era_1", clock), SUBJECT)
    progress = log.progress("era_1", "brn_1")
    progress.counts.update(documents=1)
    log.advance("era_1", "brn_1", progress)

    unnamed = log.unname("era_1")
    assert unnamed.subject is None and unnamed.receipt.status == "running" and unnamed.done == ["brn_1"]
    assert [p.receipt.id for p in log.running()] == ["era_1"]  # still to be finished by a resume
    stored = records.get(PK, "era_1")
    assert stored is not None and SUBJECT not in json.dumps(stored.data)  # gone from the store itself
    assert log.unname("era_1") == unnamed  # again: nothing to change

    clock.advance(30)
    finished = log.finish("era_1")
    assert finished.status == "completed" and finished.finished_at == clock.current
    assert finished.removed["documents"] == 1 and finished.subject_digest == "sha256:" + "ab" * 32
    assert log.get("era_1").receipt == finished
    clock.advance(30)
    assert log.finish("era_1") == finished  # finishing again keeps the first finish time
    assert list(log.running()) == []


def test_running_lists_only_unfinished_erasures_in_id_order(records: RecordStore) -> None:
    clock = FakeClock()
    log = ErasureLog(records, clock)
    assert list(log.running()) == []
    for erasure_id in ("era_3", "era_1", "era_4", "era_2"):
        log.start(receipt(erasure_id, clock), SUBJECT)
    log.finish("era_2")
    log.unname("era_4")  # unnamed but not finished: a resume must still carry it to its end

    running = list(log.running())
    assert [p.receipt.id for p in running] == ["era_1", "era_3", "era_4"]
    assert [p.subject for p in running] == [SUBJECT, SUBJECT, None]
    elsewhere = ErasureLog(records, FakeClock())  # another process reads the same
    assert elsewhere.get("era_2").receipt.status == "completed"
