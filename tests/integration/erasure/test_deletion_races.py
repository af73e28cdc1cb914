"""Work that read a brain before its deletion marked it and writes after the deletion's purge
leaves nothing of the brain once the deletion has settled (services/erasure/settling.py): every
background writer and an ordinary write, each raced with `delete_brain` at its first and second
write to the brain's records, on the fakes, the embedded store and the AWS adapters (DynamoDB and
S3 under moto, the OpenSearch fake). Then every store is searched for the brain: every record
(but its nameless mark, the receipt and the audit), the chunk index, the blob store, the job log."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from cairn.adapters.aws.s3_blobs import S3BlobStore
from cairn.adapters.local.file_blobs import FileBlobStore
from cairn.bootstrap import Adapters, Container, index_sweeper
from cairn.domain.errors import CairnError
from cairn.domain.models import Brain, MemoryType
from cairn.ports.records import MAX_SCAN_PREFIXES, Delete, Item, Put, RecordStore
from cairn.services.documents.current_memories import ENTRIES_BUDGET_S
from cairn.services.erasure.settling import SETTLE_S
from cairn.services.memory.memory_model import MemoryInput
from cairn.services.repositories import documents_pk
from cairn.services.thoughtmcp.models import NewMemory
from tests.contract.aws_storage import BUCKET
from tests.fakes.blobs import MemoryBlobStore
from tests.fakes.clock import FakeClock
from tests.fakes.jobs import MemoryJobRunner
from tests.support.shapes import adapters_for, process

TEXT = "Maria keeps the harbour ledger in the blue cabinet since March 2021 and logs the fog horn."
EVERY_KEY = [chr(c) for c in range(33, 127)]
KEPT = ("brains", "erasures")  # its nameless record (the mark late writers meet) and the receipt


class Racing:
    """The record store, running `then` (once) just before the first write to the brain's records
    after `skip` of them: the writer read the brain before the deletion and writes after it."""

    def __init__(self, records: RecordStore) -> None:
        self.records = records
        self.brain_id: str | None = None
        self.skip = 0
        self.then: Callable[[], None] | None = None

    def _reached(self, touched: Sequence[Item | tuple[str, str]]) -> None:
        if self.then is None or self.brain_id is None:
            return
        text = json.dumps([[t.pk, t.sk, t.data] if isinstance(t, Item) else list(t) for t in touched])
        if self.brain_id not in text:
            return
        if self.skip:
            self.skip -= 1
            return
        then, self.then = self.then, None
        then()

    def put(self, item: Item, expected_version: int | None = None) -> Any:
        self._reached([item])
        return self.records.put(item, expected_version)

    def delete(self, pk: str, sk: str, expected_version: int | None = None) -> Any:
        self._reached([(pk, sk)])
        return self.records.delete(pk, sk, expected_version)

    def transact(self, ops: Sequence[Put | Delete]) -> Any:
        self._reached([op.item if isinstance(op, Put) else (op.pk, op.sk) for op in ops])
        return self.records.transact(ops)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.records, name)


@dataclass
class World:
    adapters: Adapters
    writer: Container  # the process whose work races the deletion
    deleter: Container  # another process, deleting the brain
    racing: Racing
    brain: Brain


@pytest.fixture(params=("fakes", "embedded", "aws"))
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    with adapters_for(request.param, request, tmp_path) as adapters:
        deleter = process(adapters, tmp_path)
        racing = Racing(adapters.records)
        writer = process(replace(adapters, records=racing), tmp_path)  # last: its job handlers run
        brain = writer.brains.create("Harbour", slug="harbour")
        yield World(adapters, writer, deleter, racing, brain)


def memory(text: str = TEXT) -> MemoryInput:
    return MemoryInput(type=MemoryType.event, content=text, client_id="harbour-trust")


def _document_write(w: World) -> Callable[[], object]:
    return lambda: w.writer.documents.write(w.brain, "notes/late.md", TEXT.encode())


def _typed_memory(w: World) -> Callable[[], object]:
    return lambda: w.writer.memories.store(w.brain, memory())


def _thought(w: World) -> Callable[[], object]:
    w.writer.thoughts.remember(
        w.brain, NewMemory(content=TEXT, user_id="ada", session_id="s1", sector="semantic")
    )
    said = NewMemory(content=TEXT + " Again, at noon.", user_id="ada", session_id="s1", sector="semantic")
    return lambda: w.writer.thoughts.remember(w.brain, said)


def _session_created(w: World) -> Callable[[], object]:
    return lambda: w.writer.sessions.create(w.brain, actor_id="ines")


def _session_append(w: World) -> Callable[[], object]:
    session = w.writer.sessions.create(w.brain, actor_id="ines")
    return lambda: w.writer.sessions.append(w.brain, session.id, "user", TEXT)


def _entries_build(w: World) -> Callable[[], object]:
    """The sweep's build of the current memories' entries of a brain written before them, which
    listed the brains before the deletion."""
    for n in range(3):
        w.writer.memories.store(w.brain, memory(f"{TEXT} Entry {n}."))
    pk = documents_pk(w.brain.id)
    for sk in ("current-memories", *(i.sk for i in w.adapters.records.query(pk, "cur#").items)):
        w.adapters.records.delete(pk, sk)
    current = w.writer.documents.repo.current
    current._built.clear()
    current.step_records = 1
    return lambda: current.carry_on([pk], budget_s=ENTRIES_BUDGET_S)


def _extraction_job(w: World) -> Callable[[], object]:
    session = w.writer.sessions.create(w.brain, actor_id="ines")
    w.writer.sessions.append(w.brain, session.id, "user", TEXT)
    w.writer.extraction.queue_session(w.brain, w.writer.sessions.session(w.brain, session.id), upto=1)
    return w.writer.jobs.run_pending


def _consolidation_job(w: World) -> Callable[[], object]:
    for n in range(3):
        w.writer.memories.store(w.brain, memory(f"{TEXT} Noted {n}."))
    w.writer.consolidation.queue(w.brain)
    return w.writer.jobs.run_pending


WRITERS: dict[str, Callable[[World], Callable[[], object]]] = {
    "document write": _document_write,
    "typed memory": _typed_memory,
    "thoughtmcp remember": _thought,
    "session created": _session_created,
    "session append": _session_append,
    "current memories build": _entries_build,
    "extraction job": _extraction_job,
    "consolidation job": _consolidation_job,
}


def records_holding(records: RecordStore, needle: str) -> list[tuple[str, str]]:
    found = []
    for start in range(0, len(EVERY_KEY), MAX_SCAN_PREFIXES):
        cursor: str | None = None
        while True:
            page = records.scan(EVERY_KEY[start : start + MAX_SCAN_PREFIXES], cursor=cursor)
            found += [(i.pk, i.sk) for i in page.items if needle in i.pk + i.sk + json.dumps(i.data)]
            if page.cursor is None:
                break
            cursor = page.cursor
    return [k for k in found if k[0] not in KEPT and not k[0].startswith("audit")]


def blob_keys(adapters: Adapters) -> list[str]:
    blobs = adapters.blobs
    if isinstance(blobs, MemoryBlobStore):
        return list(blobs.items)
    if isinstance(blobs, FileBlobStore):
        return [str(p.relative_to(blobs.root)) for p in blobs.root.rglob("*") if p.is_file()]
    assert isinstance(blobs, S3BlobStore)
    pages = blobs.client.get_paginator("list_object_versions").paginate(Bucket=BUCKET)
    return [v["Key"] for page in pages for v in page.get("Versions", [])]


def held(w: World) -> dict[str, object]:
    """Everything of the brain any store still holds."""
    brain_id = w.brain.id
    runner = w.adapters.jobs
    assert isinstance(runner, MemoryJobRunner)
    return {
        "records": records_holding(w.adapters.records, brain_id),
        "chunks": w.adapters.chunks.count(brain_id),
        "blobs": [k for k in blob_keys(w.adapters) if brain_id in k],
        "jobs": [r.id for r in runner.store.rows.values() if r.brain_id == brain_id],
    }


NOTHING = {"records": [], "chunks": 0, "blobs": [], "jobs": []}


@pytest.mark.parametrize("at", [0, 1], ids=["first write", "second write"])
@pytest.mark.parametrize("writer", list(WRITERS))
def test_nothing_of_a_deleted_brain_is_left_by_work_racing_its_deletion(
    world: World, writer: str, at: int
) -> None:
    w = world
    work = WRITERS[writer](w)
    receipts = []
    w.racing.brain_id, w.racing.skip = w.brain.id, at
    w.racing.then = lambda: receipts.append(w.deleter.erasure.delete_brain(w.brain.id))
    with suppress(CairnError):  # refused: its brain went meanwhile
        work()
    if not receipts:
        pytest.skip(f"{writer} writes the brain's records fewer than {at + 1} times")
    assert receipts[0].status == "completed"
    clock = w.adapters.clock
    assert isinstance(clock, FakeClock)

    sweeper = index_sweeper(w.deleter)
    sweeper.grace_s = 0.0
    w.writer.jobs.run_pending()  # a job queued meanwhile runs, and finds its brain gone
    sweeper.tick()  # within the settling time: whatever landed so far goes
    assert [s.brain_id for s in w.deleter.erasure.settling.standing()] == [w.brain.id]
    clock.advance(SETTLE_S + 1)
    sweeper.tick()  # past it: the last look, and the deletion has settled

    assert held(w) == NOTHING
    assert list(w.deleter.erasure.settling.standing()) == []
