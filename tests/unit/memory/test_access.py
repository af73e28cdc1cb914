"""Access counts: cheap to record, flushed without losing a count, and honoured by pruning."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

import pytest

from cairn.bootstrap import Container
from cairn.domain.errors import Unavailable
from cairn.domain.models import Brain, DocumentSource, MemoryFacet, MemoryType
from cairn.ports.records import Delete, Item, Put
from cairn.services.documents.inputs import DocumentInput
from cairn.services.search import access
from cairn.services.search.access import AccessLog
from tests.fakes.clock import FakeClock
from tests.fakes.records import MemoryRecordStore


def test_counts_add_up_across_flushes_and_pending() -> None:
    log = AccessLog(MemoryRecordStore(), FakeClock(), flush_at=1000)
    log.saw("b", ["d1", "d2", "d1"])  # one call counts a document once
    log.flush()
    log.saw("b", ["d1"])
    got = log.get("b", "d1")
    assert got.count == 2 and got.last is not None
    assert log.get("b", "d2").count == 1 and log.get("b", "d3").count == 0
    assert log.get("other", "d1").count == 0


def test_concurrent_flushers_lose_no_count() -> None:
    records = MemoryRecordStore()
    logs = [AccessLog(records, FakeClock(), flush_at=1) for _ in range(8)]

    def hammer(log: AccessLog) -> None:
        for _ in range(50):
            log.saw("b", ["hot"])

    threads = [threading.Thread(target=hammer, args=(log,)) for log in logs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for log in logs:
        log.flush()  # what background flushes had not written yet
    assert AccessLog(records, FakeClock()).get("b", "hot").count == 400


def test_a_flush_writes_a_hundred_documents_a_transaction_and_survives_a_lost_race() -> None:
    records = MemoryRecordStore()
    log = AccessLog(records, FakeClock(), flush_at=10_000)
    log.saw("b", [f"d{i}" for i in range(250)])
    log.flush()
    calls: list[int] = []
    real = records.transact

    def transact(ops: Sequence[Put | Delete]) -> list[Item]:
        calls.append(len(ops))
        if len(calls) == 2:  # another process counted d150 meanwhile: this batch's condition fails
            other = AccessLog(records, FakeClock())
            other.saw("b", ["d150"])
            other._add("b", "d150", 1, FakeClock().now())
        return real(ops)

    records.transact = transact  # type: ignore[method-assign]
    log.saw("b", [f"d{i}" for i in range(250)])
    log.flush()
    # the failed batch was then written one document at a time (the fake's put is a transaction)
    assert calls[:2] == [100, 100] and calls[-1] == 50 and set(calls[2:-1]) == {1}
    fresh = AccessLog(records, FakeClock())
    assert [fresh.get("b", f"d{i}").count for i in (0, 99, 100, 149, 249)] == [2, 2, 2, 2, 2]
    assert fresh.get("b", "d150").count == 3


def test_counts_a_refused_flush_did_not_write_wait_for_the_next_and_it_is_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The record store unavailable (another process holds its writer lock): the batches written
    stay written, the rest stay pending, and the background flush logs the refusal once."""
    records = MemoryRecordStore()
    clock = FakeClock()
    log = AccessLog(records, clock, flush_at=10_000)
    real = records.transact
    refusing = [2]  # the batch calls refused: the second of this flush

    def transact(ops: Sequence[Put | Delete]) -> list[Item]:
        refusing[0] -= 1
        if refusing[0] <= 0:
            raise Unavailable("the record store is busy")
        return real(ops)

    records.transact = transact  # type: ignore[method-assign]
    log.saw("b", [f"d{i}" for i in range(250)])
    with pytest.raises(Unavailable):
        log.flush()
    log.saw("b", ["d0", "d200"])  # seen while the counts wait
    log.flush_at = 1
    with caplog.at_level(logging.WARNING, logger="cairn.services.search.access"):
        for _ in range(2):  # two background flushes, both refused
            clock.advance(access.RETRY_S)
            log.saw("b", ["d1"])
            deadline = time.monotonic() + 10
            while log._flushing and time.monotonic() < deadline:
                time.sleep(0.01)
    assert len([r for r in caplog.records if "read counts" in r.getMessage()]) == 1
    refusing[0] = 10**9
    log.flush()
    counts = AccessLog(records, FakeClock()).get_many("b", [f"d{i}" for i in range(250)])
    expected = {f"d{i}": 1 for i in range(250)} | {"d0": 2, "d200": 2, "d1": 3}
    assert {doc_id: seen.count for doc_id, seen in counts.items()} == expected


def test_a_refused_background_flush_is_not_tried_again_by_every_search() -> None:
    """A store that refuses at once (DynamoDB throttled past its retries): each search past
    `flush_at` started a flush sending every pending count again; the next waits `RETRY_S`."""
    records = MemoryRecordStore()
    clock = FakeClock()
    log = AccessLog(records, clock, flush_at=1)
    real = records.transact
    tried: list[int] = []
    refusing = [True]

    def transact(ops: Sequence[Put | Delete]) -> list[Item]:
        tried.append(len(ops))
        if refusing[0]:
            raise Unavailable("throttled")
        return real(ops)

    records.transact = transact  # type: ignore[method-assign]

    def search(doc_id: str) -> None:
        log.saw("b", [doc_id])
        deadline = time.monotonic() + 10
        while log._flushing and time.monotonic() < deadline:
            time.sleep(0.001)

    for i in range(20):
        search(f"d{i}")
    assert len(tried) == 1
    refusing[0] = False
    clock.advance(access.RETRY_S)
    search("d0")
    assert len(tried) == 2 and tried[-1] == 20
    assert AccessLog(records, FakeClock()).get("b", "d0").count == 2
    search("d1")  # written: the next flush starts at once
    assert len(tried) == 3


def test_search_counts_what_it_returns_but_dedupe_does_not(container: Container, brain: Brain) -> None:
    doc = container.ingest.remember(brain, "The boiler is serviced in March.")
    # the whole text: a good match whatever the random suffix of the path embedded with it
    container.search.search(brain, "The boiler is serviced in March")
    container.search.search(brain, "The boiler is serviced in March", count_access=False)
    assert container.search.access is not None
    assert container.search.access.get(brain.id, doc.id).count == 1


def test_a_weak_hit_handed_back_is_not_counted_as_read(container: Container, brain: Brain) -> None:
    doc = container.ingest.remember(brain, "The boiler is serviced in March.")
    weak = container.search.search(brain, "quantum chromodynamics lecture notes")
    assert [h.document_id for h in weak.hits] == [doc.id]  # handed back, as the nearest there is
    assert container.search.access is not None
    assert container.search.access.get(brain.id, doc.id).count == 0  # but no good match: not a read
    container.search.search(brain, "The boiler is serviced in March")
    assert container.search.access.get(brain.id, doc.id).count == 1


def test_a_recently_recalled_episode_is_not_pruned(
    container: Container, brain: Brain, clock: FakeClock
) -> None:
    info = DocumentInput(
        source=DocumentSource.reflect,
        metadata={"kind": "episode"},
        memory=MemoryFacet(type=MemoryType.event, importance=0.1, sector="episodic"),
    )
    used = container.documents.write(brain, "memory/global/episodes/a.md", b"We tuned the sourdough.", info)
    unused = container.documents.write(brain, "memory/global/episodes/b.md", b"We fixed the gutter.", info)
    clock.advance(45 * 86400)
    container.search.search(brain, "sourdough", path_prefix="memory/global/episodes/a")  # a hit on a only

    job = container.consolidation.queue(brain)
    container.jobs.run_pending()

    assert container.jobs.status(job.id).result["prune"] == {"pruned": 1, "events_expired": 0}  # type: ignore[index]
    assert container.documents.get_by_id(brain, used.document.id).deleted_at is None
    assert container.documents.record_by_id(brain, unused.document.id).deleted_reason == "pruned"
