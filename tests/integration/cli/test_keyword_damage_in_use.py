"""A brain's keyword index damaged under a serving process (adapters/local/fts_damage.py): every
search of it is refused as `damaged_store` naming the brain (a 503 through REST), never a raw
SQLite error (a 500), whether the damage was there when the process started or came while it
served; the damage is reported once to the repairer, which `cairn serve` runs in the background,
so the brain answers as before without a restart; a rebuild that leaves it damaged starts no other."""

from __future__ import annotations

import contextlib
import copy
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from cairn.adapters.local import chunk_reads, fts_damage, fts_health
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.container import Container
from cairn.domain.errors import CairnError, DamagedStore
from cairn.domain.models import Brain
from cairn.entrypoints.http import create_app
from cairn.ports.chunks import ChunkFilter, ChunkQuery, Discarded
from tests.integration.cli.test_cli_keyword_index import DAMAGE, Hits, T, close, hits, made, opened, sql
from tests.support.store_copies import closed, copied

ALL_DAMAGE: dict[str, Callable[[Path], None]] = {
    **DAMAGE,
    "config dropped": lambda d: sql(d, f"DROP TABLE {T}_config"),
    "docsize dropped": lambda d: sql(d, f"DROP TABLE {T}_docsize"),
    "content dropped": lambda d: sql(d, f"DROP TABLE {T}_content"),
}
# Damage SQLite raises an error for on the next read (the rest only a probe finds). A connection
# already open keeps the `_config` version it read, and reads on: changed, it is found at the start.
RAISING = [
    "data table dropped",
    "data rows deleted",
    "data blobs scribbled",
    "config version changed",
    "config dropped",
    "docsize dropped",
    "content dropped",
]
SEARCHES = ("zebra3 river3", '"eats grass" AND heron2', "grass -zebra5")  # ranked; query language


@pytest.fixture(scope="module")
def made_once(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Brain, Hits]:
    data, brain, before = made(tmp_path_factory.mktemp("made"))
    return closed(data), brain, before


@pytest.fixture
def kept(made_once: tuple[Path, Brain, Hits], tmp_path: Path) -> tuple[Path, Brain, Hits]:
    """`made`, copied for the test from the module's one."""
    data, brain, before = made_once
    return copied(data, tmp_path / "data"), brain, copy.deepcopy(before)


def told_of(container: Container) -> list[str]:
    told: list[str] = []
    index = container.adapters.chunks
    assert isinstance(index, SqliteChunkIndex)
    index.on_damage(told.append)
    return told


def refused(container: Container, brain: Brain) -> None:
    for query in SEARCHES:
        with pytest.raises(DamagedStore, match=f"the keyword index of brain {brain.id} cannot be read"):
            container.search.search(brain, query)
    with pytest.raises(DamagedStore, match=brain.id):
        container.search.search(brain, "grass", tags=["notes"])  # tag words are keyword terms too
    with TestClient(
        create_app(container), base_url="http://localhost", raise_server_exceptions=False
    ) as client:
        answer = client.post(f"/v1/brains/{brain.slug}/search", json={"query": "heron3 meadow"})
    assert answer.status_code == 503, answer.text
    assert answer.json()["code"] == "damaged_store" and brain.id in answer.json()["detail"]


@pytest.mark.parametrize("damage", list(ALL_DAMAGE))
def test_a_brain_damaged_before_the_start_is_refused_as_damaged(
    kept: tuple[Path, Brain, Hits], damage: str
) -> None:
    data, brain, _ = kept
    ALL_DAMAGE[damage](data)
    container = opened(data)
    told = told_of(container)
    refused(container, brain)
    assert told == [brain.id]  # once, however many searches
    close(container)


@pytest.mark.parametrize("damage", [d for d in RAISING if d != "config version changed"])
def test_a_brain_damaged_while_serving_is_refused_as_damaged(
    kept: tuple[Path, Brain, Hits], damage: str
) -> None:
    data, brain, before = kept
    container = opened(data)
    told = told_of(container)
    assert hits(container, brain) == before  # probed sound, and searched
    document = container.search.search(brain, "zebra3 river3").hits[0].document_id
    ALL_DAMAGE[damage](data)
    refused(container, brain)
    try:  # a chunk's text is read through the keyword table: refused where it cannot be read
        container.adapters.chunks.get_chunks(brain.id, document)
    except DamagedStore as exc:
        assert brain.id in exc.message
    assert told == [brain.id]
    close(container)


@pytest.mark.parametrize("damage", RAISING)
def test_a_write_to_a_damaged_brain_is_refused_as_damaged(
    kept: tuple[Path, Brain, Hits], damage: str
) -> None:
    """The FTS5 table is written with the chunks: what cannot be read cannot be written either."""
    data, brain, _ = kept
    container = opened(data)
    told = told_of(container)
    ALL_DAMAGE[damage](data)
    with pytest.raises(DamagedStore, match=f"the keyword index of brain {brain.id} cannot be read"):
        container.documents.write(brain, "notes/new.md", b"# New\n\nzebra99 eats grass near river99.\n")
    assert told == [brain.id]
    close(container)


@pytest.mark.parametrize("damage", list(ALL_DAMAGE))
def test_a_write_to_a_brain_found_damaged_stores_nothing(kept: tuple[Path, Brain, Hits], damage: str) -> None:
    """Refused before its commit: nothing the writer was refused is visible, or left to index."""
    data, brain, _ = kept
    ALL_DAMAGE[damage](data)
    container = opened(data)
    told = told_of(container)
    before = container.documents.get(brain, "notes/n3.md")
    with pytest.raises(DamagedStore, match=brain.id):
        container.documents.write(brain, "notes/new.md", b"# New\n\nzebra99 eats grass near river99.\n")
    with pytest.raises(DamagedStore, match=brain.id):
        container.documents.append(brain, "notes/n3.md", b"\nheron99 came back.\n")
    assert not container.documents.exists(brain, "notes/new.md")
    assert "notes/new.md" not in [d.path for d in container.documents.documents(brain, "notes/")]
    assert container.documents.get(brain, "notes/n3.md") == before
    assert list(container.documents.repo.intents.pending()) == []
    assert told == [brain.id]
    close(container)


def test_a_brain_the_start_found_sound_is_not_probed_again_by_its_first_write_or_search(
    kept: tuple[Path, Brain, Hits], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A serving process's start compares every brain (IndexRepair.at_start), which probes its
    keyword index: the brain's first write and search take that finding instead of probing again
    (about 45-85 ms at 100,000 chunks, bench/keyword_check_100k.py)."""
    data, brain, _ = kept
    container = opened(data)
    (found,), later = container.repair.at_start([brain])
    assert found.sound and not later
    probes: list[str] = []
    probe = fts_health.problem

    def counted(conn: sqlite3.Connection, brain_id: str, **how: bool) -> str:
        probes.append(brain_id)
        return probe(conn, brain_id, **how)

    monkeypatch.setattr(fts_health, "problem", counted)
    container.documents.write(brain, "notes/new.md", b"# New\n\nokapi77 grazes by lagoon77.\n")
    assert container.search.search(brain, "okapi77 lagoon77").hits[0].path == "notes/new.md"
    assert probes == []
    close(container)


@pytest.mark.parametrize("damage", ["idx emptied", "postings scribbled", "data blobs scribbled"])
def test_a_write_to_a_brain_the_start_found_damaged_stores_nothing(
    kept: tuple[Path, Brain, Hits], damage: str
) -> None:
    """The start's finding of damage has the first write probe and be refused before its commit."""
    data, brain, _ = kept
    ALL_DAMAGE[damage](data)
    container = opened(data)
    told = told_of(container)
    (found,), _ = container.repair.at_start([brain])
    assert found.keywords
    with pytest.raises(DamagedStore, match=brain.id):
        container.documents.write(brain, "notes/new.md", b"# New\n\nzebra99 eats grass near river99.\n")
    assert not container.documents.exists(brain, "notes/new.md")
    assert list(container.documents.repo.intents.pending()) == []
    assert told == [brain.id]
    close(container)


def test_a_write_refused_after_its_commit_is_indexed_by_the_rebuild(kept: tuple[Path, Brain, Hits]) -> None:
    """A brain probed sound whose damage the write's own index write meets: its record is stored
    (refused, as any write whose indexing failed after its commit), and the running server's
    rebuild indexes it, found by either leg with no write again."""
    data, brain, _ = kept
    container = opened(data)
    container.repair.start()
    try:
        assert container.search.search(brain, "zebra3 river3").hits  # probed sound
        ALL_DAMAGE["data blobs scribbled"](data)
        with pytest.raises(DamagedStore, match=brain.id):
            container.documents.write(brain, "notes/new.md", b"# New\n\nokapi77 grazes by lagoon77.\n")
        written = container.documents.get(brain, "notes/new.md").id
        for text, vector in (("okapi77 lagoon77", False), ("okapi77 grazes by lagoon77", True)):
            query = ChunkQuery(
                text="" if vector else text,
                vector=container.adapters.embedder.embed([text])[0].tolist() if vector else None,
                filter=ChunkFilter((brain.id,)),
                top_k=3,
            )
            found = _eventually(lambda q=query: container.adapters.chunks.search(q))
            assert isinstance(found, list) and found[0].chunk.document_id == written
        # its intent is settled after its chunks are searchable (the rebuild's reconcile)
        assert _eventually(lambda: list(container.documents.repo.intents.pending()) == [])
    finally:
        container.repair.stop()
        close(container)


@pytest.mark.parametrize(
    ("when", "damage"),
    [
        ("before the start", "config version changed"),
        ("before the start", "idx emptied"),
        ("before the start", "postings scribbled"),
        ("while serving", "config dropped"),
        ("while serving", "data blobs scribbled"),
        ("while serving", "docsize dropped"),
    ],
)
def test_the_running_server_rebuilds_it_and_the_brain_answers_as_before(
    kept: tuple[Path, Brain, Hits], damage: str, when: str
) -> None:
    data, brain, before = kept
    if when == "before the start":
        ALL_DAMAGE[damage](data)
    container = opened(data)
    container.repair.start()  # as `cairn serve` runs it, once its start-up comparison is done
    try:
        if when == "while serving":
            assert hits(container, brain) == before
            ALL_DAMAGE[damage](data)
        with pytest.raises(DamagedStore):
            container.search.search(brain, "zebra3 river3")
        assert _eventually(lambda: hits(container, brain)) == before
        assert container.repair.compare(brain, deep=True).sound
    finally:
        container.repair.stop()
        close(container)


@pytest.mark.parametrize("damage", ["idx emptied", "postings scribbled"])
def test_damage_that_raises_nothing_done_while_serving_is_found_and_rebuilt(
    kept: tuple[Path, Brain, Hits], damage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the brain's first search: found by the probe run again in the background."""
    monkeypatch.setattr(fts_damage, "REPROBE_S", 0.0)  # 300 s in a release
    data, brain, before = kept
    container = opened(data)
    told = told_of(container)
    container.repair.start()
    try:
        assert hits(container, brain) == before  # probed sound
        ALL_DAMAGE[damage](data)

        def searched_until_told() -> list[str]:
            with contextlib.suppress(CairnError):
                container.search.search(brain, "zebra3 river3")
            return told

        assert _eventually(searched_until_told, timeout_s=10) == [brain.id]
        assert _eventually(lambda: hits(container, brain) == before)
        assert container.repair.compare(brain, deep=True).sound
    finally:
        container.repair.stop()
        close(container)


def test_a_rebuild_that_leaves_the_damage_starts_no_other(
    kept: tuple[Path, Brain, Hits], monkeypatch: pytest.MonkeyPatch
) -> None:
    data, brain, _ = kept
    ALL_DAMAGE["config version changed"](data)
    container = opened(data)
    index = container.adapters.chunks
    assert isinstance(index, SqliteChunkIndex)
    rebuilds: list[str] = []

    def rebuild_in_vain(brain_id: str) -> dict[str, Discarded]:
        rebuilds.append(brain_id)
        return {}

    monkeypatch.setattr(index, "rebuild_keywords", rebuild_in_vain)
    container.repair.start()
    try:
        with pytest.raises(DamagedStore):
            container.search.search(brain, "grass")
        _eventually(lambda: rebuilds or None)
        _eventually(lambda: _searched_damaged(container, brain))  # the repair is over
        for _ in range(5):
            with pytest.raises(DamagedStore):
                container.search.search(brain, "grass")
        time.sleep(0.5)
        assert rebuilds == [brain.id]
    finally:
        container.repair.stop()
        close(container)


def test_an_error_of_the_moment_or_on_a_sound_brain_is_not_damage(
    kept: tuple[Path, Brain, Hits], monkeypatch: pytest.MonkeyPatch
) -> None:
    data, brain, _ = kept
    container = opened(data)
    told = told_of(container)
    for message, code in (
        ("database is locked", sqlite3.SQLITE_BUSY),
        ("SQL logic error", sqlite3.SQLITE_ERROR),
    ):
        failure = sqlite3.OperationalError(message)
        failure.sqlite_errorcode = code  # type: ignore[attr-defined]

        def failing(*args: object, failure: Exception = failure) -> object:
            raise failure

        monkeypatch.setattr(chunk_reads, "bm25_leg", failing)
        with pytest.raises(sqlite3.OperationalError, match=message):
            container.adapters.chunks.search(_query(brain))
    assert told == []
    close(container)


def test_the_probe_lets_an_error_of_the_moment_through(
    kept: tuple[Path, Brain, Hits], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A probe that meets a lock reports no damage: it raises what it met."""
    data, brain, _ = kept
    locked = sqlite3.OperationalError("database is locked")
    locked.sqlite_errorcode = sqlite3.SQLITE_BUSY  # type: ignore[attr-defined]

    def busy(*args: object) -> str:
        raise locked

    monkeypatch.setattr(fts_health, "_probe", busy)
    conn = sqlite3.connect(data / "chunks.sqlite3")
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            fts_health.problem(conn, brain.id)
    finally:
        conn.close()


def _query(brain: Brain) -> ChunkQuery:
    return ChunkQuery(text="grass", vector=None, filter=ChunkFilter((brain.id,)), top_k=8)


def _searched_damaged(container: Container, brain: Brain) -> bool | None:
    try:
        container.search.search(brain, "grass")
    except DamagedStore:
        return True
    except CairnError:  # refused as being rebuilt meanwhile
        return None
    return None


def _eventually(attempt: Callable[[], object], timeout_s: float = 60) -> object:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            found = attempt()
        except CairnError:  # refused while the brain is rebuilt
            found = None
        if found:
            return found
        assert time.monotonic() < deadline, "the brain was not rebuilt in time"
        time.sleep(0.05)
