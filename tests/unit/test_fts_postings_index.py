"""Through SqliteChunkIndex: every write that changes a brain's FTS5 text (upserts, re-upserts of
the same ids, chunk and document deletes, a document's context written later) keeps its term
postings in step, so the BM25 leg stays exactly FTS5's ranking of every match, per brain and
merged over two brains. The small-table shortcut is turned off so the term
postings are what answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cairn.adapters.local import chunk_schema as schema
from cairn.adapters.local import fts_search
from cairn.adapters.local.brain_rows import FilterMasks
from cairn.adapters.local.chunk_reads import bm25_leg
from cairn.adapters.local.fts_query import or_expression
from cairn.adapters.local.fts_search import ranked_matches
from cairn.adapters.local.sqlite_chunks import DEFAULT_BM25_WEIGHTS, SqliteChunkIndex
from cairn.ports.chunks import ChunkFilter
from tests.contract.test_chunk_index_contract import DIM, chunk

WORDS = [f"w{i}x" for i in range(400)]


def _text(rng: np.random.Generator, count: int) -> str:
    p = 1.0 / np.arange(1, len(WORDS) + 1)
    return " ".join(rng.choice(WORDS, size=count, p=p / p.sum()).tolist())


def _reference(index: SqliteChunkIndex, brain: str, terms: list[str], pool: int) -> list[tuple[int, float]]:
    conn = index._db.get()
    state = schema.brain_state(conn, brain)
    assert state is not None
    table = schema.fts_table(state[0])
    return ranked_matches(
        conn, table, DEFAULT_BM25_WEIGHTS, [f"{table} MATCH ?"], [or_expression(terms)], None, pool
    )


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SqliteChunkIndex:
    monkeypatch.setattr(fts_search, "SMALL_TABLE", 0)

    def refuse(*args: object, **kwargs: object) -> list[tuple[int, float]]:
        raise AssertionError("ranked every match instead of the term postings")

    monkeypatch.setattr(fts_search, "ranked_matches", refuse)
    return SqliteChunkIndex(tmp_path / "chunks.db", tmp_path / "vectors", DIM)


def test_every_write_keeps_the_leg_exact(index: SqliteChunkIndex) -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((300, DIM)).astype(np.float32)
    chunks = [
        chunk(
            f"c{n}",
            _text(rng, int(rng.integers(3, 80))),
            brain_id="b1" if n % 3 else "b2",
            document_id=f"d{n // 5}",
            ordinal=n % 5,
            title=_text(rng, 2),
        )
        for n in range(300)
    ]
    for first in range(0, 300, 60):
        index.upsert(chunks[first : first + 60], vectors[first : first + 60])
    again = [c.model_copy(update={"text": _text(rng, 40)}) for c in chunks[10:40]]
    index.upsert(again, vectors[10:40])  # same ids: old rows removed, new rowids
    index.delete_chunks("b1", [f"c{n}" for n in range(100, 160) if n % 3])
    index.delete_document("b2", "d30")
    index.set_context("b1", "d2", _text(rng, 30))
    index.set_context("b2", "d40", _text(rng, 12))

    queries = [[WORDS[0], WORDS[1]], [WORDS[3], WORDS[150], WORDS[390]], [WORDS[7]], [WORDS[2], WORDS[2]]]
    queries += [rng.choice(WORDS[:200], size=3, replace=False).tolist() for _ in range(20)]
    conn = index._db.get()
    brains = {b: schema.brain_state(conn, b) for b in ("b1", "b2")}
    for terms in queries:
        for brain, state in brains.items():
            assert state is not None
            table = schema.fts_table(state[0])
            got = fts_search.bm25_ranked(conn, table, terms, DEFAULT_BM25_WEIGHTS, None, 10)
            assert got == _reference(index, brain, terms, 10), (brain, terms)
        merged = bm25_leg(
            conn,
            index._searcher.rows_of(conn),
            DEFAULT_BM25_WEIGHTS,
            terms,
            None,
            FilterMasks(conn, ChunkFilter(brain_ids=("b1", "b2"))),
            brains,  # type: ignore[arg-type]
            10,
        )
        expected = sorted(
            _reference(index, "b1", terms, 10) + _reference(index, "b2", terms, 10),
            key=lambda p: (-p[1], p[0]),
        )[:10]
        assert list(merged.items()) == expected, terms


def test_postings_are_made_when_a_brain_grows_past_the_small_table_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cairn.adapters.local import fts_postings

    monkeypatch.setattr(fts_search, "SMALL_TABLE", 50)
    index = SqliteChunkIndex(tmp_path / "chunks.db", tmp_path / "vectors", DIM)
    rng = np.random.default_rng(4)
    chunks = [chunk(f"c{n}", _text(rng, 30), document_id=f"d{n}") for n in range(120)]
    vectors = rng.standard_normal((120, DIM)).astype(np.float32)
    conn = index._db.get()
    index.upsert(chunks[:40], vectors[:40])
    state = schema.brain_state(conn, "b1")
    assert state is not None
    table = schema.fts_table(state[0])
    assert not fts_postings.exists(conn, table)  # a small brain pays nothing for them
    index.upsert(chunks[40:80], vectors[40:80])  # past 50 rows: made from every row, in this write
    assert fts_postings.exists(conn, table)
    index.upsert(chunks[80:], vectors[80:])
    index.delete_chunks("b1", ["c3", "c90"])

    def refuse(*args: object, **kwargs: object) -> list[tuple[int, float]]:
        raise AssertionError("ranked every match instead of the term postings")

    for terms in ([WORDS[0], WORDS[5]], [WORDS[2]], [WORDS[9], WORDS[30], WORDS[99]]):
        expected = _reference(index, "b1", terms, 20)
        monkeypatch.setattr(fts_search, "ranked_matches", refuse)
        got = fts_search.bm25_ranked(conn, table, terms, DEFAULT_BM25_WEIGHTS, None, 20, table_rows=118)
        monkeypatch.setattr(fts_search, "ranked_matches", ranked_matches)
        assert got == expected

    # a brain already past the size without postings (made by an older version) gets them from
    # the maintenance hook, as `cairn compact` runs it
    conn.execute(f"DROP TABLE {fts_postings.names(table)[0]}")
    conn.execute(f"DROP TABLE {fts_postings.names(table)[1]}")
    assert not fts_postings.exists(conn, table)
    index.compact("b1")
    assert fts_postings.exists(conn, table)
    index.close()


def test_a_postings_build_the_lock_refuses_leaves_the_write_done_and_the_next_write_builds_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build after a write's commit is an optimisation of its keyword ranking: a lock another
    process holds past the wait refuses it, and the write, stored and searchable, still answers
    done (refused, its caller would be told it could not be indexed)."""
    from cairn.adapters.local import fts_postings, fts_postings_build
    from cairn.domain.errors import Unavailable

    monkeypatch.setattr(fts_search, "SMALL_TABLE", 50)
    index = SqliteChunkIndex(tmp_path / "chunks.db", tmp_path / "vectors", DIM)
    rng = np.random.default_rng(5)
    chunks = [chunk(f"c{n}", _text(rng, 30), document_id=f"d{n}") for n in range(90)]
    vectors = rng.standard_normal((90, DIM)).astype(np.float32)
    index.upsert(chunks[:40], vectors[:40])
    real = fts_postings_build.step

    def refused(*args: object, **kwargs: object) -> None:
        raise Unavailable("the chunk index was kept busy by another writer")

    monkeypatch.setattr(fts_postings_build, "step", refused)
    index.upsert(chunks[40:80], vectors[40:80])  # past the size: the build is refused
    conn = index._db.get()
    state = schema.brain_state(conn, "b1")
    assert state is not None
    table = schema.fts_table(state[0])
    assert not fts_postings.exists(conn, table)
    assert len(index.fingerprints("b1", "d60")) == 1
    monkeypatch.setattr(fts_postings_build, "step", real)
    index.upsert(chunks[80:], vectors[80:])
    assert fts_postings.exists(conn, table)
    index.close()


def test_the_maintenance_worker_makes_the_postings_of_a_brain_it_keeps_not_the_writes_caller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A brain as big as the worker indexes gets its term postings from the worker: the write that
    carried it past the size answers without waiting the seconds they take (7-9 s at 20,000
    chunks), and its keyword leg is ranked exactly meanwhile."""
    import threading
    import time

    from cairn.adapters.local import fts_postings, fts_postings_build

    monkeypatch.setattr(fts_search, "SMALL_TABLE", 50)
    index = SqliteChunkIndex(tmp_path / "chunks.db", tmp_path / "vectors", DIM, ann_min_rows=60)
    rng = np.random.default_rng(6)
    chunks = [chunk(f"c{n}", _text(rng, 30), document_id=f"d{n}") for n in range(80)]
    vectors = rng.standard_normal((80, DIM)).astype(np.float32)
    index.upsert(chunks[:40], vectors[:40])
    real = fts_postings_build.step
    builders: set[str] = set()
    built = threading.Event()

    def step(*args: object, **kwargs: object) -> bool:
        builders.add(threading.current_thread().name)
        whole = real(*args, **kwargs)  # type: ignore[arg-type]
        if whole:
            built.set()
        return whole

    monkeypatch.setattr(fts_postings_build, "step", step)
    index.upsert(chunks[40:80], vectors[40:80])  # past both sizes
    assert threading.current_thread().name not in builders
    assert built.wait(30)
    conn = index._db.get()
    state = schema.brain_state(conn, "b1")
    assert state is not None
    deadline = time.monotonic() + 30  # the worker's last step commits after `step` returns
    while not fts_postings.exists(conn, schema.fts_table(state[0])):
        assert time.monotonic() < deadline, "the worker never made the term postings"
        time.sleep(0.01)
    assert builders == {"cairn-vector-maintenance"}
    index.close()


def test_a_damaged_keyword_index_leaves_the_worker_keeping_the_brain_s_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The worker makes a big brain's term postings before it keeps its vectors: postings it
    cannot make (its keyword index found damaged, said where searches meet it) only cost the
    keyword leg's speed, so the brain's vector index is still built, and no traceback logged."""
    import logging
    import time

    from cairn.adapters.local import fts_postings_build
    from cairn.adapters.local.fts_damage import KeywordsDamaged
    from cairn.ports.chunks import ANN_OK

    monkeypatch.setattr(fts_search, "SMALL_TABLE", 50)
    index = SqliteChunkIndex(tmp_path / "chunks.db", tmp_path / "vectors", DIM, ann_min_rows=60)
    rng = np.random.default_rng(7)
    chunks = [chunk(f"c{n}", _text(rng, 30), document_id=f"d{n}") for n in range(80)]
    vectors = rng.standard_normal((80, DIM)).astype(np.float32)

    def damaged(*args: object, **kwargs: object) -> None:
        raise KeywordsDamaged("b1", "database disk image is malformed")

    monkeypatch.setattr(fts_postings_build, "step", damaged)
    caplog.set_level(logging.WARNING)
    index.upsert(chunks, vectors)  # past both sizes: the worker's
    conn = index._db.get()
    deadline = time.monotonic() + 30
    while index._maintenance.ann_state("b1", schema.vector_epoch(conn, "b1")) != ANN_OK:
        assert time.monotonic() < deadline, "the worker never built the brain's vector index"
        time.sleep(0.02)
    assert not any(r.exc_info for r in caplog.records)
    index.close()
