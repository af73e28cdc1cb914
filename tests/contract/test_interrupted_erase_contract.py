"""An erase's receipt counts what it removed, and an erase stopped half-way is finished by the
sweep, on every record store (services/documents/writes.py ERASES, services/erasure/interrupted.py).

A writer replacing a document's text between the erasure's read of its chunks and its erase makes
the erase commit against the new version: the receipt counts that version's chunks, and their
concept links go too. A process stopped between removing a document's bytes and its record (a
fault raised there stands for the kill) leaves the erase's mark, and one settle of the pending
marks (the sweep's) finishes it: record, id pointer, chunks, links and companions; a document
written again at that path since is left whole, and a subject's erasure still running finishes its
own document and counts it on its receipt, once."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from cairn import faults
from cairn.auth import access
from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.domain.models import Brain, Document
from cairn.entrypoints.cli.check import settle
from cairn.ports.records import Item, RecordStore
from cairn.services.documents.blob_keys import own_folder
from cairn.services.documents.writes import ERASES
from cairn.services.erasure.interrupted import WRITERS_S
from cairn.services.thoughtmcp.brain import thought_brain
from cairn.services.thoughtmcp.models import NewMemory
from cairn.services.thoughtmcp.rows import rows_pk
from tests.fakes.blobs import MemoryBlobStore
from tests.fakes.clock import FakeClock
from tests.fakes.container import fake_adapters

PATH = "notes/lamp.md"
PARAGRAPH = (
    "The Harbour Trust moved billing to PostgreSQL on Kubernetes after the Fog Horn review in Lisbon. "
)
SHORT = PARAGRAPH.encode()
LONG = "\n\n".join(f"## Part {i}\n\n" + PARAGRAPH * 6 for i in range(6)).encode()


@pytest.fixture
def two(records: RecordStore, tmp_path: Path) -> tuple[Container, Container]:
    """Two processes over the same stores (each its own services and path locks)."""
    adapters = replace(fake_adapters(), records=records)
    settings = Settings(data_dir=tmp_path / "data")
    return build_container(settings, adapters), build_container(settings, adapters)


def linked(c: Container, brain: Brain, text: bytes) -> Document:
    """The note written with `text` and its chunks' concept links made (as an ingest makes them)."""
    c.documents.write(brain, PATH, text)
    doc = c.documents.repo.stored(brain.id, PATH)
    assert doc is not None and own_folder(doc) is not None
    assert c.concepts.index_document(brain.id, doc.id, text.decode()) > 0
    return doc


def concept_links(c: Container, brain: Brain) -> int:
    """Every link a concept node holds in the brain (the in-partitions of the text's concepts)."""
    names = ("fog horn", "harbour trust", "kubernetes", "lisbon", "postgresql")
    return sum(len(c.entities.links.incoming(brain.id, f"concept:{name}")) for name in names)


def erase_marks(c: Container) -> list[str]:
    return [m.memory_id for m in c.pending_links.pending() if m.kind == ERASES]


def a_minute_later(c: Container) -> None:
    """Past the time an erase's mark is its writer's (the stopped process's erase, here)."""
    clock = c.adapters.clock
    assert isinstance(clock, FakeClock)
    clock.advance(WRITERS_S + 1)


def assert_erased(c: Container, brain: Brain, doc: Document) -> None:
    blobs = c.adapters.blobs
    folder = own_folder(doc)
    assert isinstance(blobs, MemoryBlobStore) and folder is not None
    assert c.documents.repo.stored_by_id(doc.id) is None
    assert c.documents.repo.stored(brain.id, doc.path) is None
    assert [key for key in blobs.items if key.startswith(folder)] == []
    assert c.adapters.chunks.get_chunks(brain.id, doc.id) == []
    assert concept_links(c, brain) == 0
    assert erase_marks(c) == []


def test_the_receipt_counts_and_unlinks_the_chunks_of_the_version_erased(
    two: tuple[Container, Container],
) -> None:
    c, other = two
    brain = c.brains.create("Shore", slug="shore")
    doc = linked(c, brain, SHORT)
    assert len(c.adapters.chunks.get_chunks(brain.id, doc.id)) == 1

    def replaced() -> None:  # another process's ingest of a longer text, between the read and the erase
        linked(other, brain, LONG)

    with faults.armed("documents.bytes_erased", action=replaced), access.as_system():
        counts = c.erasure.eraser.erase(brain, [doc], [])
    assert counts["documents"] == 1
    assert counts["chunks"] == 6  # the longer version's, which the erase removed; 1 was read before
    assert_erased(c, brain, doc)


def test_an_erase_stopped_between_its_bytes_and_its_record_is_finished_by_one_settle(
    two: tuple[Container, Container],
) -> None:
    c, other = two
    brain = c.brains.create("Shore", slug="shore")
    doc = linked(c, brain, LONG)
    with faults.armed("documents.bytes_erased"), pytest.raises(faults.InjectedFault):
        c.documents.erase(brain, PATH)
    assert c.documents.repo.stored_by_id(doc.id) is not None  # half-erased: its record, no bytes
    assert erase_marks(c) == [doc.id]

    assert other.pending_links.settle_counted().total == 0  # its writer's for a minute
    a_minute_later(c)
    settled = other.pending_links.settle_counted()  # another process's sweep

    assert settled.erased == 1
    assert_erased(c, brain, doc)
    assert other.pending_links.settle_counted().total == 0  # nothing left to do


def test_the_next_process_opening_the_data_finishes_it_and_says_so(
    two: tuple[Container, Container], capsys: pytest.CaptureFixture[str]
) -> None:
    c, other = two
    brain = c.brains.create("Shore", slug="shore")
    doc = linked(c, brain, SHORT)
    with faults.armed("documents.bytes_erased"), pytest.raises(faults.InjectedFault):
        c.documents.erase(brain, PATH)
    capsys.readouterr()
    a_minute_later(c)

    settle(other)  # what `cairn serve`, `cairn mcp` and the CLI do on opening the data

    assert "finished erasing 1 documents a stopped process had left half-erased" in capsys.readouterr().err
    assert_erased(c, brain, doc)


def test_a_document_written_again_since_is_left_whole(two: tuple[Container, Container]) -> None:
    c, other = two
    brain = c.brains.create("Shore", slug="shore")
    doc = linked(c, brain, SHORT)
    with faults.armed("documents.bytes_erased"), pytest.raises(faults.InjectedFault):
        c.documents.erase(brain, PATH)
    other.documents.write(brain, PATH, LONG)  # written again whole before any sweep came
    a_minute_later(c)

    settled = other.pending_links.settle_counted()

    assert (settled.erased, settled.dropped) == (0, 1)  # its mark only
    again = c.documents.repo.stored(brain.id, PATH)
    assert again is not None and again.id == doc.id
    assert c.documents.read(brain, PATH) == LONG
    assert len(c.adapters.chunks.get_chunks(brain.id, doc.id)) == 6
    assert erase_marks(c) == []


def test_a_forget_stopped_half_way_loses_its_row_too(two: tuple[Container, Container]) -> None:
    """A ThoughtMCP hard forget commits the memory's row with its record: the settle removes both."""
    c, other = two
    brain = thought_brain(c.brains, None, create=True)
    memory_id = c.thoughts.remember(
        brain, NewMemory("The keeper logged the fog at six.", "u", "s", "semantic")
    )["memoryId"]
    doc = c.documents.repo.stored_by_id(memory_id)
    assert doc is not None
    with faults.armed("documents.bytes_erased"), pytest.raises(faults.InjectedFault):
        c.thoughts.forget(brain, memory_id, "u")
    assert c.adapters.records.get(rows_pk(brain.id, "u"), memory_id) is not None
    a_minute_later(c)

    assert other.pending_links.settle_counted().erased == 1

    assert c.documents.repo.stored_by_id(memory_id) is None
    assert c.adapters.chunks.get_chunks(brain.id, memory_id) == []
    assert c.adapters.records.get(rows_pk(brain.id, "u"), memory_id) is None
    assert erase_marks(c) == []


def test_a_subject_erasure_still_running_finishes_its_own_document_once(
    two: tuple[Container, Container],
) -> None:
    """Stopped in its document's erase, the subject's erasure is still running: the settle leaves
    the document to it, and its resume erases it and counts it on its receipt."""
    c, other = two
    brain = thought_brain(c.brains, None, create=True)
    c.thoughts.remember(brain, NewMemory("The keeper logged the fog at six.", "victor", "s", "semantic"))
    with faults.armed("documents.bytes_erased"), pytest.raises(faults.InjectedFault):
        c.erasure.erase("thoughtmcp_user", "victor")
    assert len(erase_marks(c)) == 1
    a_minute_later(c)

    assert other.pending_links.settle_counted().total == 0  # left to the erasure
    assert len(erase_marks(c)) == 1

    (receipt,) = other.erasure.resume()
    assert receipt.removed["documents"] == 1  # counted once: the settle erased nothing
    assert erase_marks(c) == []
    assert list(other.documents.repo.list(brain.id)) == []
    assert list(c.adapters.records.query(rows_pk(brain.id, "victor")).items) == []


def test_a_settle_beside_an_erase_under_way_leaves_it_to_its_writer(two: tuple[Container, Container]) -> None:
    """Another process settling every mark (`cairn check`, one opening the data) while the erase is
    between its bytes and its record: neither erases the document from under it nor drops its mark."""
    c, other = two
    brain = c.brains.create("Shore", slug="shore")
    doc = linked(c, brain, SHORT)
    seen: list[int] = []

    def settling() -> None:
        assert erase_marks(c) == [doc.id]
        seen.append(other.pending_links.settle_counted(0.0).total)
        assert c.documents.repo.stored_by_id(doc.id) is not None and erase_marks(c) == [doc.id]

    with faults.armed("documents.bytes_erased", action=settling):
        erased = c.documents.erase(brain, PATH)
    assert seen == [0]
    assert erased is not None and erased.document is not None and erased.document.id == doc.id
    assert c.documents.repo.stored_by_id(doc.id) is None and erase_marks(c) == []


@pytest.mark.parametrize("at", ["yesterday", None, [1.0], "nan"])
def test_a_mark_whose_time_is_damaged_is_settled_as_an_old_one(
    two: tuple[Container, Container], at: object, capsys: pytest.CaptureFixture[str]
) -> None:
    """A mark whose `at` is no time (a damaged record) neither stops the settle of every mark (the
    process opening the data, the sweep) nor stands forever: it is finished as an old one."""
    c, other = two
    brain = c.brains.create("Shore", slug="shore")
    doc = linked(c, brain, SHORT)
    with faults.armed("documents.bytes_erased"), pytest.raises(faults.InjectedFault):
        c.documents.erase(brain, PATH)
    (mark,) = [m for m in c.pending_links.pending() if m.kind == ERASES]
    held = c.adapters.records.get(*mark.key)
    assert held is not None
    c.adapters.records.put(replace(held, data={**held.data, "at": at}), held.version)
    capsys.readouterr()

    settle(other)  # what a process opening the data does

    assert "finished erasing 1 documents" in capsys.readouterr().err
    assert_erased(c, brain, doc)


def test_a_settle_of_many_interrupted_erases_reads_the_erasure_log_once_and_scans_nothing(
    two: tuple[Container, Container], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The erasure log keeps every receipt: the finisher asks which erasures still run once for a
    settle of many marks, not once a mark (each read was the whole log); and the eraser scans the
    brain's raw rows only for an older layout's raw bytes, which these documents have none of."""
    c, other = two
    brain = thought_brain(c.brains, None, create=True)
    c.thoughts.remember(brain, NewMemory("The keeper logged the fog at six.", "victor", "s", "semantic"))
    c.erasure.erase("thoughtmcp_user", "victor")  # a finished erasure on record
    docs = []
    for i in range(4):
        c.documents.write(brain, f"notes/n{i}.md", f"note {i} of the lamp".encode())
        docs.append(c.documents.repo.stored(brain.id, f"notes/n{i}.md"))
        with faults.armed("documents.bytes_erased"), pytest.raises(faults.InjectedFault):
            c.documents.erase(brain, f"notes/n{i}.md")
    a_minute_later(c)
    records = other.adapters.records
    asked: list[str] = []
    scanned: list[object] = []
    query, scan = records.query, records.scan

    def counted(pk: str, *args: object, **kwargs: object) -> object:
        asked.append(pk)
        return query(pk, *args, **kwargs)  # type: ignore[arg-type]

    def scanning(prefixes: object, **kwargs: object) -> object:
        scanned.append(prefixes)
        return scan(prefixes, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(records, "query", counted)
    monkeypatch.setattr(records, "scan", scanning)
    assert other.pending_links.settle_counted().erased == 4

    assert asked.count("erasures") == 1
    assert scanned == []  # no Scan (the whole table on DynamoDB) for raw rows' bytes it holds none of
    for doc in docs:
        assert doc is not None and c.documents.repo.stored_by_id(doc.id) is None


def test_an_erase_slow_before_its_bytes_then_stopped_is_still_finished(
    two: tuple[Container, Container],
) -> None:
    """An erase still under way a minute after its mark, its bytes not removed yet (a slow store),
    that then stops between its bytes and its record: a settle that came meanwhile found the bytes
    whole at the version the erase read, which is no rewrite, and must not have dropped its mark."""
    c, other = two
    brain = c.brains.create("Shore", slug="shore")
    doc = linked(c, brain, SHORT)

    def slow() -> None:
        a_minute_later(c)
        other.pending_links.settle_counted()  # another process's sweep, a minute into the erase

    with (
        faults.armed("documents.erase_marked", action=slow),
        faults.armed("documents.bytes_erased"),
        pytest.raises(faults.InjectedFault),
    ):
        c.documents.erase(brain, PATH)
    a_minute_later(c)
    other.pending_links.settle_counted()

    assert_erased(c, brain, doc)


def test_an_erase_stopped_before_its_bytes_is_finished(two: tuple[Container, Container]) -> None:
    """Stopped after its mark, before its bytes went: the document is whole at the version the erase
    read, not written again, so the settle finishes the erase it was asked for."""
    c, other = two
    brain = c.brains.create("Shore", slug="shore")
    doc = linked(c, brain, SHORT)
    with faults.armed("documents.erase_marked"), pytest.raises(faults.InjectedFault):
        c.documents.erase(brain, PATH)
    assert c.documents.read(brain, PATH) == SHORT
    a_minute_later(c)

    assert other.pending_links.settle_counted().erased == 1
    assert_erased(c, brain, doc)


def test_a_damaged_erasure_record_stops_neither_the_settle_nor_the_resume(
    two: tuple[Container, Container], capsys: pytest.CaptureFixture[str]
) -> None:
    """The finisher asks which erasures still run: an erasure record that is no erasure (damaged)
    is left as it is and said in the log, and the process opening the data still finishes the
    erase (before, its settle raised and the process did not start)."""
    c, other = two
    brain = c.brains.create("Shore", slug="shore")
    doc = linked(c, brain, SHORT)
    with faults.armed("documents.bytes_erased"), pytest.raises(faults.InjectedFault):
        c.documents.erase(brain, PATH)
    c.adapters.records.put(Item("erasures", "era_damaged", {"receipt": {"status": "running", "id": 5}}), 0)
    a_minute_later(c)
    capsys.readouterr()

    settle(other)

    assert "finished erasing 1 documents" in capsys.readouterr().err
    assert_erased(c, brain, doc)
    assert other.erasure.resume() == []
    assert c.adapters.records.get("erasures", "era_damaged") is not None  # left for an operator
