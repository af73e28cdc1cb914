"""Two small per-brain logs on every record store.

The access log (services/search/access.py) keeps how often and when last each document was handed
back, one item per document under `access#<brain>`: counts seen and flushed add up with those still
pending, several logs flushing the same documents at once lose no count, the newest time wins, and
forgetting removes the stored count and the pending one.

The item status log (services/mnemosyne/item_status.py) keeps where a queued ingest stands, one item
per document under `pending#<brain>`: a mark read back whole and overwritten by the next, a brain's
pending items in document-id order, a completed item really gone, and queuing a path again forgets
what an earlier document at that path left.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from cairn.ports.records import RecordStore
from cairn.services.mnemosyne import item_status
from cairn.services.mnemosyne.item_status import FAILED, PROCESSING, QUEUED, ItemStatusLog, pending_pk
from cairn.services.search.access import AccessLog, access_pk
from tests.fakes.clock import FakeClock

NEVER = 1_000_000  # flush_at: no background flush, every write is an explicit flush


# -- AccessLog ---------------------------------------------------------------------------------


def test_stored_and_pending_counts_add_up_per_brain_and_the_newest_time_wins(records: RecordStore) -> None:
    clock = FakeClock()
    log = AccessLog(records, clock, flush_at=NEVER)
    log.saw("brn_1", ["doc_1", "doc_2", "doc_1"])  # one call counts a document once
    first = clock.current
    assert log.flush() == 2
    assert log.flush() == 0  # nothing left pending

    clock.advance(60)
    log.saw("brn_1", ["doc_1"])  # pending, not yet stored
    later = clock.current
    log.saw("brn_2", ["doc_1"])

    got = log.get("brn_1", "doc_1")
    assert got.count == 2 and got.last == later
    # another log over the same store sees only what was flushed, read back to the microsecond
    other = AccessLog(records, FakeClock(), flush_at=NEVER)
    assert other.get("brn_1", "doc_1").count == 1 and other.get("brn_1", "doc_1").last == first
    assert other.get("brn_2", "doc_1").count == 0  # brn_2's count is still pending in `log`

    log.flush()
    assert other.get("brn_1", "doc_1").count == 2 and other.get("brn_1", "doc_1").last == later
    assert other.get("brn_2", "doc_1").count == 1
    assert other.get("brn_1", "doc_3").count == 0 and other.get("brn_1", "doc_3").last is None
    assert other.get("brn_3", "doc_1").count == 0  # per brain


def test_get_many_answers_as_get_does_for_every_document_asked(records: RecordStore) -> None:
    log = AccessLog(records, FakeClock(), flush_at=NEVER)
    log.saw("brn_1", ["doc_1", "doc_2"])
    log.flush()
    log.saw("brn_1", ["doc_2", "doc_3"])  # doc_3 only pending
    log.saw("brn_2", ["doc_4"])
    log.flush()
    log.saw("brn_1", ["doc_1"])

    asked = ["doc_3", "doc_1", "doc_none", "doc_1", "doc_2", "doc_4"]
    many = log.get_many("brn_1", asked)
    assert list(many) == ["doc_3", "doc_1", "doc_none", "doc_2", "doc_4"]  # once each, in asked order
    assert many == {doc_id: log.get("brn_1", doc_id) for doc_id in asked}
    assert [many[d].count for d in ("doc_1", "doc_2", "doc_3", "doc_none", "doc_4")] == [2, 2, 1, 0, 0]
    assert log.get_many("brn_1", []) == {}


def test_a_flush_larger_than_one_transaction_writes_every_document(records: RecordStore) -> None:
    log = AccessLog(records, FakeClock(), flush_at=NEVER)
    ids = [f"doc_{i:03d}" for i in range(130)]  # more than the 100 documents of one transaction
    log.saw("brn_1", ids)
    assert log.flush() == 130
    log.saw("brn_1", ids[90:110])  # a second flush straddling the batch boundary adds, not replaces
    assert log.flush() == 20

    counts = AccessLog(records, FakeClock()).get_many("brn_1", ids)
    assert [counts[d].count for d in ids] == [1] * 90 + [2] * 20 + [1] * 20
    stored = records.query(access_pk("brn_1"), limit=1000).items
    assert [item.sk for item in stored] == ids  # one item per document, nothing else


def test_logs_flushing_the_same_documents_at_once_lose_no_count(records: RecordStore) -> None:
    clock = FakeClock()  # shared, so the newest reading of all is known
    logs = [AccessLog(records, clock, flush_at=NEVER) for _ in range(4)]
    rounds = 6
    start = threading.Barrier(len(logs))

    def hammer(i: int) -> None:
        start.wait()
        for _ in range(rounds):
            logs[i].saw("brn_1", ["hot", "warm", f"own_{i}"])  # batches that overlap others' batches
            logs[i].flush()

    with ThreadPoolExecutor(len(logs)) as pool:
        for future in [pool.submit(hammer, i) for i in range(len(logs))]:
            future.result()

    fresh = AccessLog(records, FakeClock())
    got = fresh.get_many("brn_1", ["hot", "warm", *(f"own_{i}" for i in range(len(logs)))])
    assert got["hot"].count == got["warm"].count == rounds * len(logs)
    assert all(got[f"own_{i}"].count == rounds for i in range(len(logs)))
    assert got["hot"].last == clock.current  # whichever flush came last, the newest time is kept


def test_forgetting_removes_stored_and_pending_counts_and_nothing_else(records: RecordStore) -> None:
    log = AccessLog(records, FakeClock(), flush_at=NEVER)
    log.saw("brn_1", ["doc_1", "doc_2", "doc_3"])
    log.saw("brn_2", ["doc_1"])
    log.flush()
    log.saw("brn_1", ["doc_1", "doc_4"])  # pending for a stored document and for a new one

    assert log.forget("brn_1", ["doc_1", "doc_4", "doc_none", "doc_1"]) == 1  # only doc_1 was stored
    assert records.get(access_pk("brn_1"), "doc_1") is None
    assert log.get("brn_1", "doc_1").count == 0 and log.get("brn_1", "doc_4").count == 0
    assert log.flush() == 0  # the pending counts went too: nothing writes them back
    assert records.get(access_pk("brn_1"), "doc_4") is None

    assert [log.get("brn_1", d).count for d in ("doc_2", "doc_3")] == [1, 1]
    assert log.get("brn_2", "doc_1").count == 1  # the same id in another brain stays
    assert log.forget("brn_1", ["doc_1"]) == 0


# -- ItemStatusLog -----------------------------------------------------------------------------


def test_a_mark_is_read_back_whole_and_the_next_mark_replaces_it(records: RecordStore) -> None:
    clock = FakeClock()
    status = ItemStatusLog(records, clock)
    assert status.get("brn_1", "doc_1") is None

    status.mark("brn_1", "doc_1", "items/a.md", QUEUED, job_id="job_1")
    queued = status.get("brn_1", "doc_1")
    assert queued is not None
    assert (queued.brain_id, queued.document_id, queued.path) == ("brn_1", "doc_1", "items/a.md")
    assert (queued.status, queued.job_id, queued.error) == (QUEUED, "job_1", None)
    assert queued.updated_at == clock.current  # a timezone-aware time, read back exactly

    clock.advance(5)
    status.mark("brn_1", "doc_1", "items/a.md", PROCESSING, job_id="job_1")
    clock.advance(5)
    status.mark("brn_1", "doc_1", "items/a.md", FAILED, error="ö" * (item_status.MAX_ERROR + 50))
    failed = status.get("brn_1", "doc_1")
    assert failed is not None and failed.status == FAILED and failed.job_id is None
    assert failed.error == "ö" * item_status.MAX_ERROR  # cut to MAX_ERROR characters, any alphabet
    assert failed.updated_at == clock.current
    assert failed.updated_at - queued.updated_at > timedelta(seconds=10)
    assert status.get("brn_2", "doc_1") is None  # per brain


def test_pending_lists_a_brains_items_in_document_order_and_completed_removes_one(
    records: RecordStore,
) -> None:
    status = ItemStatusLog(records, FakeClock())
    for doc_id, path in [("doc_c", "c.md"), ("doc_a", "a.md"), ("doc_b", "b.md")]:
        status.mark("brn_1", doc_id, path, QUEUED)
    status.mark("brn_2", "doc_x", "x.md", PROCESSING)

    assert [(p.document_id, p.path) for p in status.pending("brn_1")] == [
        ("doc_a", "a.md"), ("doc_b", "b.md"), ("doc_c", "c.md"),
    ]  # fmt: skip
    assert [p.document_id for p in status.pending("brn_2")] == ["doc_x"]
    assert status.pending("brn_3") == []

    status.completed("brn_1", "doc_b")
    status.completed("brn_1", "doc_none")  # completing what has no record is no error
    status.completed("brn_2", "doc_a")  # nor is another brain's id
    assert records.get(pending_pk("brn_1"), "doc_b") is None  # gone, not marked
    assert [p.document_id for p in status.pending("brn_1")] == ["doc_a", "doc_c"]
    assert [p.document_id for p in status.pending("brn_2")] == ["doc_x"]


def test_queuing_a_path_again_forgets_what_another_document_there_left(records: RecordStore) -> None:
    status = ItemStatusLog(records, FakeClock())
    status.mark("brn_1", "doc_old", "items/a.md", FAILED, error="boom")
    status.mark("brn_1", "doc_b", "items/b.md", FAILED, error="boom")
    status.mark("brn_2", "doc_old2", "items/a.md", FAILED, error="boom")

    status.mark("brn_1", "doc_new", "items/a.md", PROCESSING)  # only queuing clears
    assert status.get("brn_1", "doc_old") is not None

    status.mark("brn_1", "doc_new", "items/a.md", QUEUED)
    assert status.get("brn_1", "doc_old") is None and records.get(pending_pk("brn_1"), "doc_old") is None
    assert [(p.document_id, p.status) for p in status.pending("brn_1")] == [
        ("doc_b", FAILED), ("doc_new", QUEUED),
    ]  # fmt: skip
    assert status.get("brn_2", "doc_old2") is not None  # the same path in another brain stays

    status.mark("brn_1", "doc_new", "items/a.md", QUEUED)  # queuing the same document again keeps it
    assert [p.document_id for p in status.pending("brn_1")] == ["doc_b", "doc_new"]


def test_a_failure_is_recorded_only_over_its_own_jobs_record(records: RecordStore) -> None:
    status = ItemStatusLog(records, FakeClock())
    status.mark("brn_1", "doc_1", "items/a.md", PROCESSING, job_id="job_1")
    assert status.failed("brn_1", "doc_1", "items/a.md", job_id="job_1", error="boom")
    failed = status.get("brn_1", "doc_1")
    assert failed is not None and (failed.status, failed.job_id, failed.error) == (FAILED, "job_1", "boom")

    status.mark("brn_1", "doc_2", "items/b.md", QUEUED, job_id="job_2")
    status.completed("brn_1", "doc_2")  # another attempt of job_2 completed the item
    assert not status.failed("brn_1", "doc_2", "items/b.md", job_id="job_2", error="stale")
    assert status.get("brn_1", "doc_2") is None and records.get(pending_pk("brn_1"), "doc_2") is None

    status.mark("brn_1", "doc_3", "items/c.md", QUEUED, job_id="job_4")  # queued anew by another job
    assert not status.failed("brn_1", "doc_3", "items/c.md", job_id="job_3", error="stale")
    queued = status.get("brn_1", "doc_3")
    assert queued is not None and (queued.status, queued.job_id, queued.error) == (QUEUED, "job_4", None)
