"""The index checked against the records and rebuilt from them, on the fakes, the embedded store and
the AWS adapters: chunks missing, left behind by a deleted document, or an older version's (as many
as the new one's, which only a deep check sees); on the embedded store also the chunk database
deleted outright and a damaged vector file. Whatever was wrong, the repaired index answers every
query as the undamaged one did, and searches of the brain are refused while it is rebuilt."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from cairn.bootstrap import Adapters, Container, build_container
from cairn.config import Settings
from cairn.domain.errors import DamagedContent, Unavailable
from cairn.domain.models import Brain, Chunk
from cairn.ports.chunks import ChunkFilter, ChunkQuery, Stop
from cairn.ports.clock import SystemClock
from cairn.ports.records import Delete, Item, Put
from cairn.services.documents.rebuilding import Progress
from cairn.services.repositories import doc_id_key, doc_key
from tests.support.index_check import index_problems
from tests.support.shapes import adapters_for, embedded, process

SHAPES = ("fakes", "embedded", "aws")
NOTES = {
    f"notes/{n}.md": f"# Note {n}\n\n{text}"
    for n, text in enumerate(
        [
            "The heron waits by the weir at dawn.",
            "Tide tables for the estuary are printed weekly.",
            "The lighthouse keeper logs every passing ship.",
            "Salt marsh grasses flood twice a day.",
            "Oystercatchers nest on the shingle spit.",
            "The ferry to the island leaves at nine.",
        ]
    )
}
QUERIES = ["heron weir", "when does the ferry leave", "marsh flooding", "who logs the ships", "tide"]


@pytest.fixture(params=SHAPES)
def adapters(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Adapters]:
    with adapters_for(request.param, request, tmp_path) as built:
        yield built


def answers(container: Container, brain: Brain) -> list[dict[str, tuple[float, float]]]:
    """What each leg of the index scores every chunk with, per query: what a repaired index must
    give back exactly (fused ranks also depend on the order ties were inserted in, and the search
    service weighs in reads, which every search records)."""
    found = []
    for text in QUERIES:
        vector = container.adapters.embedder.embed([text])[0].tolist()
        query = ChunkQuery(text=text, vector=vector, filter=ChunkFilter(brain_ids=(brain.id,)), top_k=50)
        found.append(
            {
                h.chunk.path: (round(h.bm25_score or 0.0, 4), round(h.vector_similarity or 0.0, 4))
                for h in container.search.chunks.search(query)
            }
        )
    return found


@pytest.fixture
def world(adapters: Adapters, tmp_path: Path) -> tuple[Container, Brain, Brain, list[list[str]]]:
    container = process(adapters, tmp_path)
    brain = container.brains.create("Shore", slug="shore")
    other = container.brains.create("Other", slug="other")
    for path, body in NOTES.items():
        container.documents.write(brain, path, body.encode())
    container.documents.write(other, "x.md", b"# X\n\nAn unrelated brain about the heron too.")
    return container, brain, other, answers(container, brain)


def test_a_sound_brain_checks_sound_and_nothing_is_repaired(
    world: tuple[Container, Brain, Brain, list[list[str]]],
) -> None:
    container, brain, _, _ = world
    found = container.repair.check(brain, deep=True)
    assert found.sound and found.repaired == 0
    assert (found.documents, found.chunks) == (len(NOTES), len(NOTES))


def test_missing_ghost_and_older_chunks_are_found_and_rebuilt(
    world: tuple[Container, Brain, Brain, list[list[str]]],
) -> None:
    container, brain, other, before = world
    chunks = container.adapters.chunks
    docs = {d.path: d for d in container.documents.documents(brain)}
    chunks.delete_document(brain.id, docs["notes/0.md"].id)  # missing
    old = chunks.get_chunks(brain.id, docs["notes/1.md"].id)[0]
    stale = old.model_copy(update={"text": "Nothing about tides at all.", "fingerprint": "x:y"})
    vector = container.adapters.embedder.embed(["Nothing about tides at all."])
    chunks.upsert([stale], vector)  # an older version's chunk, as many as the record says
    ghost = Chunk.model_validate({**old.model_dump(), "id": "chk_ghost_0", "document_id": "doc_ghost"})
    chunks.upsert([ghost], vector)  # a document no record knows

    shallow = container.repair.compare(brain)
    assert shallow.stale == (docs["notes/0.md"].id,) and shallow.ghosts == ("doc_ghost",)
    deep = container.repair.compare(brain, deep=True)
    assert set(deep.stale) == {docs["notes/0.md"].id, docs["notes/1.md"].id}
    repaired = container.repair.repair(deep)
    assert repaired.repaired == 3 and not repaired.failed
    assert index_problems(container) == []
    assert container.repair.check(brain, deep=True).unrecorded == ("doc_ghost",)  # no record: reported on
    assert container.repair.forget_lost(brain.id) == 1 and container.repair.check(brain, deep=True).sound
    assert answers(container, brain) == before
    assert container.repair.check(other).sound  # the other brain was never touched


@pytest.mark.parametrize("damage", ["emptied", "rewritten", "removed"])
def test_damaged_stored_content_is_reported_never_served_nor_indexed_from(
    world: tuple[Container, Brain, Brain, list[list[str]]], damage: str
) -> None:
    container, brain, _, before = world
    doc = container.documents.get(brain, "notes/0.md")
    blobs = container.adapters.blobs
    if damage == "removed":
        blobs.delete(doc.blob_key)
    else:
        blobs.put(doc.blob_key, b"" if damage == "emptied" else b"# Note 0\n\nSomething else entirely.")

    with pytest.raises(DamagedContent, match=r"notes/0\.md"):
        container.documents.read(brain, "notes/0.md")
    assert container.documents.read(brain, "notes/1.md") == NOTES["notes/1.md"].encode()  # the rest reads
    found = container.repair.check(brain, deep=True)

    assert found.damaged == ("notes/0.md",) and not found.sound
    assert found.stale == () and found.repaired == 0
    assert answers(container, brain) == before  # its chunks, the last copy of its text, are kept
    assert container.repair.check(brain).sound  # a shallow check reads no blob
    container.documents.write(brain, "notes/0.md", NOTES["notes/0.md"].encode())  # written again: whole
    assert container.documents.read(brain, "notes/0.md") == NOTES["notes/0.md"].encode()
    assert container.repair.check(brain, deep=True).sound


def test_records_lost_from_under_their_chunks_are_reported_as_lost_not_as_deleted(
    world: tuple[Container, Brain, Brain, list[list[str]]], caplog: pytest.LogCaptureFixture
) -> None:
    container, brain, _, _ = world
    lost = container.documents.get(brain, "notes/2.md")
    container.documents.delete(brain, "notes/3.md")  # deleted properly: not a loss
    records = container.adapters.records
    records.transact([Delete(*doc_key(brain.id, lost.path)), Delete(*doc_id_key(lost.id))])  # a torn WAL

    found = container.repair.compare(brain)

    assert found.unrecorded == (lost.id,) and not found.sound
    assert "have no record at all" in caplog.text and lost.id in caplog.text
    repaired = container.repair.repair(found)
    assert not any(h.document_id == lost.id for h in container.search.search(brain, "lighthouse keeper").hits)
    assert container.adapters.blobs.exists(lost.blob_key)  # its content is kept for a restore
    assert repaired.unrecorded == (lost.id,)  # still said after the repair: the loss is not repaired
    # and by every later check, though its chunks are gone, until the records are restored
    later = container.repair.compare(brain)
    assert later.unrecorded == (lost.id,) and not later.sound and later.ghosts == ()
    assert container.repair.forget_lost(brain.id) == 1  # or the operator stops it being reported
    assert container.repair.compare(brain).sound


def test_a_lost_document_restored_is_no_longer_reported(
    world: tuple[Container, Brain, Brain, list[list[str]]],
) -> None:
    container, brain, _, _ = world
    lost = container.documents.get(brain, "notes/2.md")
    records = container.adapters.records
    kept = [records.get(*doc_key(brain.id, lost.path)), records.get(*doc_id_key(lost.id))]
    records.transact([Delete(*doc_key(brain.id, lost.path)), Delete(*doc_id_key(lost.id))])
    container.repair.check(brain)
    assert container.repair.compare(brain).unrecorded == (lost.id,)
    records.transact([Put(item) for item in kept if item is not None])  # the backup put back
    restored = container.repair.check(brain)  # its chunks indexed again, the note forgotten
    assert restored.unrecorded == () and container.repair.compare(brain).sound
    assert container.search.search(brain, "lighthouse keeper").hits[0].document_id == lost.id


def test_a_brain_being_rebuilt_refuses_its_searches_and_only_its_own(
    world: tuple[Container, Brain, Brain, list[list[str]]],
) -> None:
    container, brain, other, before = world
    container.adapters.chunks.drop_brain(brain.id)  # every chunk gone: every document stale
    found = container.repair.compare(brain)
    assert len(found.stale) == len(NOTES)
    started, release = threading.Event(), threading.Event()
    reconcile = container.documents.reconcile

    def slow(brain_id: str, doc_id: str, *, context: str | None = None) -> bool:
        started.set()
        assert release.wait(30)
        return reconcile(brain_id, doc_id, context=context)

    container.documents.reconcile = slow  # type: ignore[method-assign]
    container.repair.start([found])
    try:
        assert started.wait(30)
        with pytest.raises(Unavailable) as refused:
            container.search.search(brain, "heron")
        assert 2 <= refused.value.retry_after_s <= 300 and "rebuilt" in refused.value.message
        assert container.search.search(other, "heron").hits  # another brain answers meanwhile
        assert set(container.health.check().rebuilding) == {brain.id}
        assert container.health.check().status == "degraded"
    finally:
        release.set()
        _until(lambda: container.repair.rebuilding.now() == {})  # a stop would leave the rest
        container.repair.stop()
    assert answers(container, brain) == before
    assert index_problems(container) == []


def test_a_stop_ends_a_repair_after_the_document_it_is_indexing(
    world: tuple[Container, Brain, Brain, list[list[str]]],
) -> None:
    """The process stopping does not wait for (nor leave a thread inside) the rest of a long
    rebuild: the documents not yet indexed are found stale by the next start's comparison."""
    container, brain, _, before = world
    container.adapters.chunks.drop_brain(brain.id)
    found = container.repair.compare(brain)
    started, release = threading.Event(), threading.Event()
    reconcile = container.documents.reconcile
    indexed: list[str] = []

    def slow(brain_id: str, doc_id: str, *, context: str | None = None) -> bool:
        started.set()
        assert release.wait(30)
        indexed.append(doc_id)
        return reconcile(brain_id, doc_id, context=context)

    container.documents.reconcile = slow  # type: ignore[method-assign]
    container.repair.start([found])
    assert started.wait(30)
    stopping = threading.Thread(target=container.repair.stop)
    stopping.start()
    _until(lambda: container.repair.stopping)
    release.set()
    stopping.join(30)
    assert not stopping.is_alive()
    assert len(indexed) == 1  # the one under way when the stop came; the others left
    assert container.repair.rebuilding.now() == {}
    left = container.repair.compare(brain)
    assert len(left.stale) == len(NOTES) - 1
    container.documents.reconcile = reconcile  # type: ignore[method-assign]
    container.repair.start([left])  # the next start's
    _until(lambda: container.repair.rebuilding.now() == {})
    container.repair.stop()
    assert answers(container, brain) == before
    assert index_problems(container) == []


def test_a_stop_ends_a_big_brains_comparison_at_once(
    world: tuple[Container, Brain, Brain, list[list[str]]],
) -> None:
    """Comparing a big brain after the start reads every record of it (about 9 s at a million
    chunks): a stop of the process ends the comparison there, recording nothing, rather than
    holding the clean stop until it is done."""
    container, brain, _, before = world
    started = threading.Event()
    raw = container.documents.repo.raw

    def slow(brain_id: str, prefix: str = "") -> Iterator[Item]:
        for _ in range(1_000):  # the same records over and over: a brain far bigger than it is
            for item in raw(brain_id, prefix):
                started.set()
                time.sleep(0.01)
                yield item

    container.documents.repo.raw = slow  # type: ignore[method-assign]
    container.repair.start(unchecked=[brain])
    assert started.wait(30)
    began = time.monotonic()
    container.repair.stop()
    assert time.monotonic() - began < 5  # a minute of records was left
    assert container.repair.rebuilding.now() == {}
    container.documents.repo.raw = raw  # type: ignore[method-assign]
    assert container.repair.compare(brain).indexed_right
    assert answers(container, brain) == before


def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_a_big_brain_is_compared_after_the_start_and_refused_until_then(
    world: tuple[Container, Brain, Brain, list[list[str]]],
) -> None:
    container, brain, other, before = world
    first, later = container.repair.at_start([brain, other], later_above=len(NOTES) - 1)
    assert [f.brain_id for f in first] == [other.id] and later == [brain]  # above the bound: later
    assert container.repair.at_start([brain, other], budget_s=-1) == ([], [brain, other])  # no time left
    container.adapters.chunks.delete_document(brain.id, container.documents.documents(brain)[0].id)
    started, release = threading.Event(), threading.Event()
    compare = container.repair.compare

    def slow(on: Brain, *, deep: bool = False, reread: bool = True, stop: Stop | None = None) -> object:
        started.set()
        assert release.wait(30)
        return compare(on, deep=deep, reread=reread, stop=stop)

    container.repair.compare = slow  # type: ignore[method-assign]
    container.repair.start(first, later)
    try:
        assert started.wait(30)
        with pytest.raises(Unavailable) as refused:
            container.search.search(brain, "heron")
        assert "being checked" in refused.value.message and refused.value.retry_after_s == 4
        assert container.search.search(other, "heron").hits  # compared before: answers
        (progress,) = container.health.check().rebuilding.values()
        assert progress.checking
    finally:
        release.set()
        _until(lambda: container.repair.rebuilding.now() == {})  # compared, found stale, rebuilt
        container.repair.stop()
    assert answers(container, brain) == before
    assert index_problems(container) == []


def test_the_retry_estimate_follows_progress() -> None:
    progress = Progress(total=100)
    assert progress.retry_after_s() == 10  # nothing done yet: a guess
    progress.done = 50
    progress.started -= 5.0  # 50 done in 5 s: 50 more take about 5 s
    assert 4 <= progress.retry_after_s() <= 6


# -- the embedded store's own files --------------------------------------------------------------


@pytest.fixture
def on_disk(tmp_path: Path) -> tuple[Path, Container, Brain, list[list[str]]]:
    data = tmp_path / "data"
    container = build_container(Settings(data_dir=data), embedded(data))
    brain = container.brains.create("Shore", slug="shore")
    for path, body in NOTES.items():
        container.documents.write(brain, path, body.encode())
    return data, container, brain, answers(container, brain)


def reopened(data: Path) -> Container:
    return build_container(Settings(data_dir=data), embedded(data))


def test_a_deleted_chunk_database_is_rebuilt_from_the_records(
    on_disk: tuple[Path, Container, Brain, list[list[str]]],
) -> None:
    data, first, brain, before = on_disk
    first.adapters.chunks.close()  # type: ignore[attr-defined]
    for path in data.glob("chunks.sqlite3*"):
        path.unlink()
    shutil.rmtree(data / "vectors")
    again = reopened(data)
    found = again.repair.compare(brain)
    assert len(found.stale) == len(NOTES) and found.chunks == 0
    again.repair.repair(found)
    assert index_problems(again) == []
    assert answers(again, brain) == before


def test_a_chunk_database_restored_from_before_writes_of_as_many_chunks_is_found_and_rebuilt(
    on_disk: tuple[Path, Container, Brain, list[list[str]]], tmp_path: Path
) -> None:
    """Writes that leave a document as many chunks (new words, a rename) change no count: the
    index's record of when it last wrote the brain shows which records it may not reflect."""
    data, first, brain, _ = on_disk
    first.adapters.chunks.close()  # type: ignore[attr-defined]
    backup = tmp_path / "backup"
    backup.mkdir()
    for path in data.glob("chunks.sqlite3*"):
        shutil.copy2(path, backup / path.name)
    shutil.copytree(data / "vectors", backup / "vectors")
    # Given writes after the backup: new words in one note, another renamed
    later = build_container(Settings(data_dir=data), replace(embedded(data), clock=SystemClock()))
    later.documents.write(brain, "notes/0.md", b"# Note 0\n\nThe egret fishes by the sluice at dusk.")
    later.documents.rename(brain, "notes/5.md", "notes/ferry.md")
    after = answers(later, brain)
    later.adapters.chunks.close()  # type: ignore[attr-defined]
    # When the chunk database and vector files are put back as they were before them
    for path in data.glob("chunks.sqlite3*"):
        path.unlink()
    for path in backup.glob("chunks.sqlite3*"):
        shutil.copy2(path, data / path.name)
    shutil.rmtree(data / "vectors")
    shutil.copytree(backup / "vectors", data / "vectors")
    # Then the check finds both, though every count agrees, and the rebuild answers as before it
    again = reopened(data)
    found = again.repair.compare(brain)
    stale = {again.documents.repo.get_by_id(i).path for i in found.stale}  # type: ignore[union-attr]
    assert stale == {"notes/0.md", "notes/ferry.md"}
    again.repair.repair(found)
    assert index_problems(again) == []
    assert answers(again, brain) == after
    assert again.search.search(brain, "egret sluice").hits[0].path == "notes/0.md"
    assert reopened(data).repair.compare(brain).sound


@pytest.mark.parametrize("ring", ["kept", "aged out"])
@pytest.mark.parametrize("cut_rows", [1, 0.5, 3])
def test_a_vector_file_short_of_rows_is_rebuilt_and_answers_as_before(
    on_disk: tuple[Path, Container, Brain, list[list[str]]], cut_rows: float, ring: str
) -> None:
    """The notes were written in a burst, so each carries its predecessor's excerpt as index-only
    context; rebuilt, they carry it again (BM25 scores equal), even once the folder's recent
    siblings no longer record it (the rebuild reads it from the chunks it discards)."""
    data, first, brain, before = on_disk
    if ring == "aged out":
        assert first.adapters.records.delete(f"brain#{brain.id}", "siblings#notes/")
    first.adapters.chunks.close()  # type: ignore[attr-defined]
    (vectors,) = (data / "vectors").glob("*.f32")
    row = 4 * first.adapters.embedder.dimension
    with vectors.open("r+b") as fh:
        fh.truncate(vectors.stat().st_size - int(cut_rows * row))
    again = reopened(data)
    found = again.repair.compare(brain)
    assert found.unsound_chunks == int(np.ceil(cut_rows))  # each note its own commit: its own sum
    with pytest.raises(Unavailable):  # the vector leg will not read a damaged file
        again.search.search(brain, "heron")
    repaired = again.repair.repair(found)
    assert repaired.repaired == int(np.ceil(cut_rows))
    assert index_problems(again) == []
    assert answers(again, brain) == before
    assert reopened(data).repair.compare(brain).sound
